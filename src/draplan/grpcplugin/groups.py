"""A Cluster Autoscaler node group as a draplan NodePool.

CA names a node group by its id and sends its template node. The NodePool is, in order: the
NodePool of that name; the NodePool the template node belongs to by the one rule of
`cluster.nodepools`; a `fromNode` copy of an existing node of the group (the same pool name by
that rule), so the new node publishes the ResourceSlices its siblings do (CA's gRPC protocol
carries no slices); else the template node itself, with no devices. Each is capped at the
option's node count: CA adds that many, whatever draplan would have chosen."""

from __future__ import annotations

import msgspec

from draplan.api.core_v1 import Node
from draplan.api.draplan_v1alpha1 import (
    PRICE_LABEL,
    NodePool,
    NodePoolSpec,
    NodeTemplate,
    NodeTemplateMeta,
)
from draplan.api.meta import ObjectMeta
from draplan.autoscaler.templates import pool_members
from draplan.cluster.nodepools import node_pool, pool_name, price_per_hour
from draplan.cluster.state import ClusterState


def _capped(state: ClusterState, pool: NodePool, count: int) -> NodePool:
    room = len(pool_members(state, pool)) + count
    return msgspec.structs.replace(pool, spec=msgspec.structs.replace(pool.spec, max_nodes=room))


def _price(state: ClusterState, node: Node) -> str:
    price = price_per_hour(state, node)
    return repr(price) if price is not None else node.metadata.labels.get(PRICE_LABEL, "0")


def node_group_pool(
    state: ClusterState, group_id: str, template: Node | None, count: int
) -> tuple[NodePool | None, str]:
    """The NodePool standing for node group `group_id` (at most `count` new nodes) and how it
    was found; None when neither a NodePool, a member node nor a template says what a node of
    the group looks like."""
    named = state.node_pools.get(group_id)
    if named is not None:
        return _capped(state, named, count), "NodePool"
    if template is not None:
        owner = node_pool(state, template)
        if owner is not None:
            return _capped(state, owner, count), "template's NodePool"
    wanted = {group_id}
    if template is not None and pool_name(state, template):
        wanted.add(pool_name(state, template))
    sibling = next(
        (n for _, n in sorted(state.nodes.items()) if pool_name(state, n) in wanted), None
    )
    meta = ObjectMeta(name=group_id)
    if sibling is not None:
        spec = NodePoolSpec(
            max_nodes=count,
            price_per_hour=_price(state, sibling),
            from_node=sibling.metadata.name,
        )
        return NodePool(metadata=meta, spec=spec), f"fromNode {sibling.metadata.name}"
    if template is None:
        return None, ""
    labels = {k: v for k, v in template.metadata.labels.items() if k != "kubernetes.io/hostname"}
    node = NodeTemplate(
        metadata=NodeTemplateMeta(labels=labels, annotations=template.metadata.annotations),
        spec=template.spec,
        status=template.status,
    )
    spec = NodePoolSpec(max_nodes=count, price_per_hour=_price(state, template), template=node)
    return NodePool(metadata=meta, spec=spec), "template node"
