"""Which autoscaler grows a pool, and the node selector that picks the pool's nodes alone: what
a plan written for that autoscaler (`scale -o yaml`) and `draplan pools` say about each pool.

The owner follows where the pool came from (`autoscaler.derived`'s `draplan.io/derived-from`):
Cluster API MachineDeployments and MachinePools, and EKS and GKE node groups, are grown by
Cluster Autoscaler; Karpenter NodePools and nodes labelled `karpenter.sh/nodepool` by Karpenter.
A NodePool given by hand is Karpenter's when a Karpenter NodePool of its name is in the input or
its nodes carry Karpenter's label, Cluster Autoscaler's otherwise.

The selector is one label every node of the pool carries (and a new one will), and no node or
pool template outside it: a node-group label first (`karpenter.sh/nodepool`,
`eks.amazonaws.com/nodegroup`, `cloud.google.com/gke-nodepool`), then draplan's
`draplan.io/node-pool`, then labels Cluster API propagates from a MachineDeployment
(`node.cluster.x-k8s.io/...`), then labels whose key names a pool or group, then any other.
"""

from __future__ import annotations

from collections.abc import Iterator

from draplan.api.core_v1 import Node
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.karpenter import NODEPOOL_LABEL, KarpenterNodePool
from draplan.autoscaler.derived import KARPENTER_NODEPOOL, LABEL, Origin, origin
from draplan.cluster.nodepools import NODE_GROUP_LABELS, POOL_LABEL, node_pool
from draplan.cluster.state import ClusterState

CLUSTER_AUTOSCALER = "cluster-autoscaler"
KARPENTER = "karpenter"
# Labels that name one node, never a group of them.
_PER_NODE = ("kubernetes.io/hostname",)
CAPI_NODE_LABELS = "node.cluster.x-k8s.io/"  # propagated from the Machine to its Node
# kubeadm's role labels of a control-plane node (`master`: before 1.24).
CONTROL_PLANE_ROLES = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")


def source(pool: NodePool) -> str:
    """Where the pool came from: the node group it was derived from, or `NodePool` (given)."""
    return str(origin(pool) or "NodePool")


def owner(state: ClusterState, pool: NodePool) -> str:
    """The autoscaler that grows `pool`: CLUSTER_AUTOSCALER or KARPENTER."""
    where = origin(pool)
    if where is not None:
        karpenter = where.kind == KARPENTER_NODEPOOL or where == Origin(LABEL, NODEPOOL_LABEL)
        return KARPENTER if karpenter else CLUSTER_AUTOSCALER
    name = pool.metadata.name
    if any(isinstance(o, KarpenterNodePool) and o.metadata.name == name for o in state.others):
        return KARPENTER
    return KARPENTER if NODEPOOL_LABEL in template_labels(state, pool) else CLUSTER_AUTOSCALER


def is_control_plane(node: Node) -> bool:
    return any(role in node.metadata.labels for role in CONTROL_PLANE_ROLES)


def karpenter_nodes(state: ClusterState) -> set[str]:
    """The nodes Karpenter owns: those of its pools, and those labelled `karpenter.sh/nodepool`
    that no pool claims; never a control-plane node."""
    owners: dict[str, str] = {}
    out = set()
    for name, node in state.nodes.items():
        labels = node.metadata.labels
        if is_control_plane(node):
            continue
        pool = node_pool(state, node)
        if pool is None:
            if NODEPOOL_LABEL in labels:
                out.add(name)
            continue
        key = pool.metadata.name
        if key not in owners:
            owners[key] = owner(state, pool)
        if owners[key] == KARPENTER:
            out.add(name)
    return out


def template_labels(state: ClusterState, pool: NodePool) -> dict[str, str]:
    """The labels a new node of `pool` carries: its copied node's, else its template's."""
    if pool.spec.from_node and pool.spec.from_node in state.nodes:
        return dict(state.nodes[pool.spec.from_node].metadata.labels)
    if pool.spec.template is not None:
        return dict(pool.spec.template.metadata.labels)
    return {}


def _rank(key: str) -> tuple[int, str]:
    if key in NODE_GROUP_LABELS:
        return 0, f"{NODE_GROUP_LABELS.index(key)}"
    if key == POOL_LABEL:
        return 1, key
    if key.startswith(CAPI_NODE_LABELS):
        return 2, key
    name = key.rpartition("/")[2].lower()
    return (3 if "pool" in name or "group" in name else 4), key


def _candidates(state: ClusterState, pool: NodePool) -> Iterator[tuple[str, str]]:
    labels = template_labels(state, pool)
    for key in sorted(labels, key=_rank):
        value = labels[key]
        if key not in _PER_NODE and value != pool.spec.from_node:
            yield key, value


def selector(state: ClusterState, pool: NodePool) -> dict[str, str]:
    """One label that selects the pool's nodes and no other node or pool; {} if none does."""
    members: list[dict[str, str]] = []
    outside: list[dict[str, str]] = []  # the labels of every node and template not `pool`'s
    for node in state.nodes.values():
        (members if node_pool(state, node) is pool else outside).append(node.metadata.labels)
    outside += (template_labels(state, o) for o in state.node_pools.values() if o is not pool)
    for key, value in _candidates(state, pool):
        if all(labels.get(key) == value for labels in members) and not any(
            labels.get(key) == value for labels in outside
        ):
            return {key: value}
    return {}
