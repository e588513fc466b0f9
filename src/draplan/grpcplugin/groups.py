"""A Cluster Autoscaler node group as a draplan NodePool: draplan's own view of the group's
devices wherever it has one.

CA's request carries each group's template Node and no ResourceSlices (its protocol has no
field for them), and a template is built from a real node only after the node has been Ready
for a minute (`processors/nodeinfosprovider/mixed_nodeinfos_processor.go`,
`isNodeGoodTemplateCandidate`), else from the provider's description (clusterapi: the
capacity annotations, devices only with `dra-driver`). So the group is found by its id
(`ids`), in this order: the pool that carries the id (`draplan.io/node-group-id`, set on the
pools derived from Cluster API); the NodePool named by the id, or by the group's own name
where the id is not Cluster API's; the pool of the provider's node-group label the id's
naming implies (an EKS node group's ASG, a GKE node pool's MIG, an AKS node pool's scale
set); the pool the template node's labels name; a copy of an existing node of the group with
its ResourceSlices; else CA's template itself, which shows no devices."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import msgspec

from draplan.api.clusterapi import OWNER_NAME
from draplan.api.core_v1 import Node
from draplan.api.draplan_v1alpha1 import (
    PRICE_LABEL,
    NodePool,
    NodePoolSpec,
    NodeTemplate,
    NodeTemplateMeta,
)
from draplan.api.meta import ObjectMeta
from draplan.autoscaler.derived import LABEL, NODE_GROUP_ID, origin
from draplan.autoscaler.templates import pool_size
from draplan.cluster.nodepools import (
    NODE_GROUP_LABELS,
    POOL_LABEL,
    PROVIDER_POOL_LABELS,
    price_per_hour,
)
from draplan.cluster.state import ClusterState
from draplan.grpcplugin.ids import AKS_AGENTPOOL, GroupId

TEMPLATE = "Cluster Autoscaler's template node (no ResourceSlices: CA sends none)"
_LABEL_KEYS = (*NODE_GROUP_LABELS, AKS_AGENTPOOL, "agentpool")
_NOT_A_LABEL = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True)
class GroupView:
    """What draplan judges a node group with: a NodePool (None: nothing says what a node of
    the group looks like), how it was found, and whether the view of the group's devices is
    draplan's own (a pool or a real node's copy) or only CA's template."""

    pool: NodePool | None
    how: str
    own: bool


def _with_room(
    state: ClusterState, pool: NodePool, room: int, sizes: Mapping[str, int] | None
) -> NodePool:
    """`pool` allowed `room` nodes more than it has (CA has checked its own limits)."""
    most = pool_size(state, pool, sizes) + room
    return msgspec.structs.replace(pool, spec=msgspec.structs.replace(pool.spec, max_nodes=most))


def _price(state: ClusterState, node: Node) -> str:
    price = price_per_hour(state, node)
    return repr(price) if price is not None else node.metadata.labels.get(PRICE_LABEL, "0")


def _local_name(gid: GroupId) -> str:
    """A pool name for the id (ids are not object names): its name part as a DNS label, and
    a digest of the whole id, so two ids never share one."""
    stem = _NOT_A_LABEL.sub("-", gid.name.lower()).strip("-")[:40].strip("-") or "group"
    return f"{stem}-{hashlib.sha256(gid.raw.encode()).hexdigest()[:8]}"


def _labelled(pool: NodePool) -> tuple[str, str] | None:
    """The node-group label a pool was derived from, as (key, value)."""
    source = origin(pool)
    return (
        (source.name, pool.metadata.name) if source is not None and source.kind == LABEL else None
    )


def _by_id(state: ClusterState, gid: GroupId) -> Iterator[tuple[NodePool, str]]:
    pools = [p for _, p in sorted(state.node_pools.items())]
    for pool in pools:
        if pool.metadata.annotations.get(NODE_GROUP_ID) == gid.raw:
            yield pool, f"pool {pool.metadata.name} derived from {origin(pool)}"
    own_name = gid.raw if gid.provider == "clusterapi" else gid.name
    named = state.node_pools.get(own_name) or state.node_pools.get(gid.raw)
    if named is not None and NODE_GROUP_ID not in named.metadata.annotations:
        yield named, f"NodePool {named.metadata.name}"
    # A MIG's name, `gke-<cluster>-<node pool>-…`, may end in more than one pool's name: the
    # longest is the node pool's.
    labelled = [(pool, label) for pool in pools if (label := _labelled(pool)) is not None]
    for pool, (key, value) in sorted(labelled, key=lambda p: -len(p[1][1])):
        if gid.node_group_label(key, value):
            yield pool, f"pool {pool.metadata.name} (its nodes' {key} label)"


def _by_template(state: ClusterState, template: Node) -> NodePool | None:
    """The pool the template's labels name (not Cluster API's owner annotation, which lacks
    the namespace an id has)."""
    labels = template.metadata.labels
    for key in (POOL_LABEL, *PROVIDER_POOL_LABELS):
        pool = state.node_pools.get(labels.get(key, ""))
        if pool is not None:
            return pool
    return None


def _member(state: ClusterState, gid: GroupId, node: Node) -> bool:
    """Whether an existing node belongs to the group by what the id says."""
    if gid.provider == "clusterapi":
        owner = node.metadata.annotations.get(OWNER_NAME, "")
        if gid.kind == "MachineDeployment":
            return owner.rpartition("-")[0] == gid.name
        return owner == gid.name
    labels = node.metadata.labels
    return any(
        labels.get(k) and (labels[k] == gid.name or gid.node_group_label(k, labels[k]))
        for k in _LABEL_KEYS
    )


def node_group_view(
    state: ClusterState,
    gid: GroupId,
    template: Node | None,
    room: int,
    sizes: Mapping[str, int] | None = None,
) -> GroupView:
    """The view of group `gid` (CA's `template`, if sent), as a NodePool allowed `room` new
    nodes; `sizes`: each pool's existing nodes, if the caller counted them (`pool_sizes`)."""
    found = next(_by_id(state, gid), None)
    if found is None and template is not None:
        pool = _by_template(state, template)
        if pool is not None:
            found = pool, f"pool {pool.metadata.name} (the template node's labels)"
    if found is not None:
        return GroupView(_with_room(state, found[0], room, sizes), found[1], True)
    meta = ObjectMeta(name=_local_name(gid))
    sibling = next((n for _, n in sorted(state.nodes.items()) if _member(state, gid, n)), None)
    if sibling is not None:
        spec = NodePoolSpec(price_per_hour=_price(state, sibling), from_node=sibling.metadata.name)
        pool = _with_room(state, NodePool(metadata=meta, spec=spec), room, sizes)
        how = f"a copy of its node {sibling.metadata.name} and its ResourceSlices"
        return GroupView(pool, how, True)
    if template is None:
        return GroupView(None, "", False)
    labels = {k: v for k, v in template.metadata.labels.items() if k != "kubernetes.io/hostname"}
    node = NodeTemplate(
        metadata=NodeTemplateMeta(labels=labels, annotations=template.metadata.annotations),
        spec=template.spec,
        status=template.status,
    )
    spec = NodePoolSpec(max_nodes=room, price_per_hour=_price(state, template), template=node)
    return GroupView(NodePool(metadata=meta, spec=spec), TEMPLATE, False)
