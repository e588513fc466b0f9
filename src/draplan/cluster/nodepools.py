"""Which pool a node belongs to, and what it costs per hour.

One rule for every command (metrics, why's move ranking, scale-down, the simulator): a node
belongs to the NodePool its `draplan.io/node-pool` label names, else to the NodePool it is the
`fromNode` of, else to the NodePool named by its provider's node-group label, else to the
NodePool named after its Cluster API owner (a MachinePool, or the MachineDeployment whose
MachineSet `<deployment>-<suffix>` owns its Machine: pools derived from CA's clusterapi node
groups carry those names), else to the one of the MachinePool whose `spec.providerIDList` has
its `spec.providerID` (as `autoscaler.derived` finds the group's nodes). With no NodePool to
match, the provider label's value itself names the node's pool, so clusters without NodePools
still group their nodes as their autoscaler does.
"""

from __future__ import annotations

from draplan.api.clusterapi import OWNER_NAME, MachinePool
from draplan.api.core_v1 import Node
from draplan.api.draplan_v1alpha1 import PRICE_LABEL as PRICE_LABEL  # read beside the rule
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.cluster.podsmemo import PodsMemo
from draplan.cluster.state import ClusterState

POOL_LABEL = "draplan.io/node-pool"
EKS_NODEGROUP = "eks.amazonaws.com/nodegroup"
GKE_NODEPOOL = "cloud.google.com/gke-nodepool"
# Node-group labels of Karpenter, EKS managed node groups and GKE node pools.
NODE_GROUP_LABELS = ("karpenter.sh/nodepool", EKS_NODEGROUP, GKE_NODEPOOL)
# The instance type last, since it groups nodes of one shape when nothing better names the
# group (it names a pool, but no pool is derived from it: it is not a group an autoscaler has).
PROVIDER_POOL_LABELS = (*NODE_GROUP_LABELS, "node.kubernetes.io/instance-type")


def node_pool(state: ClusterState, node: Node) -> NodePool | None:
    """The NodePool `node` belongs to, if any."""
    return _node_pool(state, node, _copied(state))


def pool_sizes(state: ClusterState) -> dict[str, int]:
    """Each pool's existing nodes (`node_pool`'s rule) counted in one pass over the nodes, for
    callers that need many pools' counts of one state."""
    copied = _copied(state)
    sizes: dict[str, int] = {}
    for node in state.nodes.values():
        pool = _node_pool(state, node, copied)
        if pool is not None:
            sizes[pool.metadata.name] = sizes.get(pool.metadata.name, 0) + 1
    return sizes


def _copied(state: ClusterState) -> dict[str, NodePool]:
    """The pools by the node they copy (`fromNode`), the first of several."""
    out: dict[str, NodePool] = {}
    for pool in state.node_pools.values():
        if pool.spec.from_node:
            out.setdefault(pool.spec.from_node, pool)
    return out


def _node_pool(state: ClusterState, node: Node, copied: dict[str, NodePool]) -> NodePool | None:
    labels = node.metadata.labels
    named = state.node_pools.get(labels.get(POOL_LABEL, ""))
    if named is not None:
        return named
    copying = copied.get(node.metadata.name)
    if copying is not None:
        return copying
    for key in PROVIDER_POOL_LABELS:
        by_label = state.node_pools.get(labels.get(key, ""))
        if by_label is not None:
            return by_label
    owner = node.metadata.annotations.get(OWNER_NAME, "")
    if owner:
        # CAPI names a MachineSet after its MachineDeployment plus a generated suffix.
        return state.node_pools.get(owner) or state.node_pools.get(owner.rpartition("-")[0])
    provider = node.spec.provider_id
    res = _MACHINE_POOLS(state).get(provider) if provider else None
    if res is not None:
        # CA's clusterapi provider finds a MachinePool's nodes by its spec.providerIDList.
        name, pools = res.metadata.name, state.node_pools
        return pools.get(name) or pools.get(f"{name}.{res.metadata.namespace}")
    return None


def _machine_pools(state: ClusterState) -> dict[str, MachinePool]:
    """The MachinePools by the provider ids they list, the first to list one."""
    out: dict[str, MachinePool] = {}
    for res in state.others:
        if isinstance(res, MachinePool):
            for provider in res.spec.provider_id_list:
                out.setdefault(provider, res)
    return out


_MACHINE_POOLS = PodsMemo(_machine_pools, pods=False)


def pool_name(state: ClusterState, node: Node) -> str:
    """The name of the node's pool: its NodePool's, else its provider label's; "" if none."""
    pool = node_pool(state, node)
    if pool is not None:
        return pool.metadata.name
    labels = node.metadata.labels
    return next((labels[k] for k in (POOL_LABEL, *PROVIDER_POOL_LABELS) if labels.get(k)), "")


def price_per_hour(state: ClusterState, node: Node) -> float | None:
    """The node's price: its NodePool's, else its price label; None when nothing says."""
    pool = node_pool(state, node)
    if pool is not None:
        return float(pool.spec.price_per_hour)
    text = node.metadata.labels.get(PRICE_LABEL, "")
    # Node validation rejected a label that is not a price.
    return float(text) if text else None
