"""Stamp out new nodes from a NodePool: the Node, the ResourceSlices its drivers will publish
($NODE_NAME substituted, pool completeness set), and its topology domain labels."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from draplan.api.codec import convert, decode, to_builtins
from draplan.api.core_v1 import Node, NodeSpec, NodeStatus
from draplan.api.draplan_v1alpha1 import NODE_NAME_PLACEHOLDER, NodePool
from draplan.api.errors import BadInput
from draplan.api.meta import ObjectMeta
from draplan.api.resource_v1 import ResourceSlice
from draplan.cluster.state import ClusterState

POOL_LABEL = "draplan.io/node-pool"
TEMPLATE_LABEL = "cluster-autoscaler.kubernetes.io/template-node"  # as CA marks templates


@dataclass(frozen=True)
class NewNode:
    node: Node
    slices: tuple[ResourceSlice, ...]


def _substitute(value: Any, name: str) -> Any:
    if isinstance(value, str):
        return value.replace(NODE_NAME_PLACEHOLDER, name)
    if isinstance(value, list):
        return [_substitute(v, name) for v in value]
    if isinstance(value, dict):
        return {_substitute(k, name): _substitute(v, name) for k, v in value.items()}
    return value


def pool_members(state: ClusterState, pool: NodePool) -> list[Node]:
    name = pool.metadata.name
    return [n for _, n in sorted(state.nodes.items()) if n.metadata.labels.get(POOL_LABEL) == name]


def _template_from_node(
    state: ClusterState, pool: NodePool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`fromNode`: copy an existing node and its node-local slices, as Cluster Autoscaler
    builds a template from a real node of the group."""
    source = state.nodes.get(pool.spec.from_node)
    if source is None:
        raise BadInput(
            f"fromNode {pool.spec.from_node!r} is not in the input",
            kind="NodePool",
            name=pool.metadata.name,
            path="spec.fromNode",
        )
    old = source.metadata.name
    node = {
        "metadata": {
            "labels": {
                k: v for k, v in source.metadata.labels.items() if k != "kubernetes.io/hostname"
            }
        },
        "spec": to_builtins(source.spec),
        "status": to_builtins(source.status),
    }
    slices = []
    for rs in state.slices.values():
        if rs.spec.node_name == old:
            spec = to_builtins(rs.spec)
            spec["nodeName"] = NODE_NAME_PLACEHOLDER
            if spec["pool"]["name"] == old:
                spec["pool"]["name"] = NODE_NAME_PLACEHOLDER
            slices.append(spec)
    return node, slices


_MADE: dict[tuple[int, str, tuple[tuple[str, str], ...]], tuple[NodePool, NewNode]] = {}


def make_node(state: ClusterState, pool: NodePool, name: str, labels: dict[str, str]) -> NewNode:
    """One new node of `pool` called `name`, with extra (topology) labels. Planning forks stamp
    out the same names again and again, so results are cached (the objects are immutable)."""
    key = (id(pool), name, tuple(sorted(labels.items())))
    hit = _MADE.get(key)
    if hit is not None and hit[0] is pool and not pool.spec.from_node:
        return hit[1]
    new = _make_node(state, pool, name, labels)
    if len(_MADE) > 65536:
        _MADE.clear()
    _MADE[key] = (pool, new)
    return new


def _make_node(state: ClusterState, pool: NodePool, name: str, labels: dict[str, str]) -> NewNode:
    if pool.spec.from_node:
        template, slice_specs = _template_from_node(state, pool)
    else:
        assert pool.spec.template is not None
        template = to_builtins(pool.spec.template)
        slice_specs = [to_builtins(s) for s in pool.spec.resource_slices]
    meta = template.get("metadata", {})
    node = Node(
        metadata=ObjectMeta(
            name=name,
            labels={
                **meta.get("labels", {}),
                "kubernetes.io/hostname": name,
                POOL_LABEL: pool.metadata.name,
                **labels,
            },
            annotations=meta.get("annotations", {}),
        ),
        spec=convert(template.get("spec", {}), NodeSpec),
        status=convert(template.get("status", {}), NodeStatus),
    )
    specs = [_substitute(s, name) for s in slice_specs]
    # Every slice of a pool must state how many slices the pool has, or the allocator treats
    # the pool as incomplete and nothing ever scales from zero (autoscaler#10199).
    per_pool = Counter((s.get("driver"), s.get("pool", {}).get("name")) for s in specs)
    slices = []
    for i, spec in enumerate(specs):
        pool_ref = spec.setdefault("pool", {})
        if not pool_ref.get("resourceSliceCount"):
            pool_ref["resourceSliceCount"] = per_pool[(spec.get("driver"), pool_ref.get("name"))]
        doc = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-{spec.get('driver', 'driver')}-{i}"},
            "spec": spec,
        }
        try:
            rs = decode(doc)
        except BadInput as err:
            raise BadInput(
                err.message,
                kind="NodePool",
                name=pool.metadata.name,
                path=f"spec.resourceSlices[{i}].{err.path}".rstrip("."),
            ) from None
        assert isinstance(rs, ResourceSlice)
        slices.append(rs)
    return NewNode(node, tuple(slices))


class NodeNamer:
    """Names and topology domains for new nodes: domains fill up to nodesPerDomain, then a new
    domain opens. Existing nodes of the pool count toward their domains."""

    def __init__(self, state: ClusterState, pool: NodePool) -> None:
        self.pool = pool
        self.taken = set(state.nodes.keys())
        self.counter = 0
        self.fill: dict[str, Counter[str]] = {}
        for topo in pool.spec.topology:
            self.fill[topo.key] = Counter(
                n.metadata.labels[topo.key]
                for n in pool_members(state, pool)
                if topo.key in n.metadata.labels
            )

    def next(self) -> tuple[str, dict[str, str]]:
        base = self.pool.metadata.name
        while f"{base}-{self.counter}" in self.taken:
            self.counter += 1
        name = f"{base}-{self.counter}"
        self.taken.add(name)
        labels = {}
        for topo in self.pool.spec.topology:
            fill = self.fill[topo.key]
            domain = next(
                (
                    d
                    for d in sorted(fill)
                    if not topo.nodes_per_domain or fill[d] < topo.nodes_per_domain
                ),
                None,
            )
            if domain is None:
                k = len(fill)
                while f"{base}-{k}" in fill:
                    k += 1
                domain = f"{base}-{k}"
            fill[domain] += 1
            labels[topo.key] = domain
        return name, labels


def add_new_node(state: ClusterState, new: NewNode) -> None:
    state.add_node(new.node)
    for rs in new.slices:
        state.add_slice(rs)
