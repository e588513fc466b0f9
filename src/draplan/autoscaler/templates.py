"""Stamp out new nodes from a NodePool: the Node, the ResourceSlices its drivers will publish
($NODE_NAME substituted, pool completeness set), and its topology domain labels."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from draplan.api.codec import convert, decode, to_builtins
from draplan.api.core_v1 import Node, NodeSpec, NodeStatus, Pod
from draplan.api.draplan_v1alpha1 import NODE_NAME_PLACEHOLDER, NodePool
from draplan.api.errors import BadInput
from draplan.api.meta import ObjectMeta
from draplan.api.nodepool import slice_documents, substitute
from draplan.api.resource_v1 import ResourceSlice
from draplan.autoscaler.drain import MIRROR, controller_of
from draplan.cluster.nodepools import POOL_LABEL, node_pool
from draplan.cluster.state import ClusterState

TEMPLATE_LABEL = "cluster-autoscaler.kubernetes.io/template-node"  # as CA marks templates


@dataclass(frozen=True)
class NewNode:
    node: Node
    slices: tuple[ResourceSlice, ...]
    # Bound to the node when it is added: the donor's DaemonSet and static pods, copied.
    pods: tuple[Pod, ...] = ()


def node_daemons(state: ClusterState, source: Node, name: str) -> tuple[Pod, ...]:
    """The pods a copy of `source` called `name` starts with: as Cluster Autoscaler builds a
    template from an example node (simulator's TemplateNodeInfoFromExampleNodeInfo), the
    example's DaemonSet pods and mirror pods, renamed for the new node. They hold the node's
    host ports and requests from the start."""
    out = []
    for pod in state.pods_on(source.metadata.name):
        meta = pod.metadata
        owner = controller_of(pod)
        daemon = owner is not None and owner[0] == "DaemonSet"
        if not daemon and MIRROR not in meta.annotations:
            continue
        out.append(
            msgspec.structs.replace(
                pod,
                metadata=msgspec.structs.replace(meta, name=f"{meta.name}-{name}", uid=""),
                spec=msgspec.structs.replace(pod.spec, node_name=name),
            )
        )
    return tuple(out)


def pool_members(state: ClusterState, pool: NodePool) -> list[Node]:
    """The pool's existing nodes, by the one rule of `cluster.nodepools` (so Karpenter- or
    provider-labelled nodes count toward maxNodes, as their autoscaler counts them)."""
    name = pool.metadata.name
    return [
        n
        for _, n in sorted(state.nodes.items())
        if (found := node_pool(state, n)) is not None and found.metadata.name == name
    ]


def pool_size(state: ClusterState, pool: NodePool, sizes: Mapping[str, int] | None = None) -> int:
    """The pool's existing nodes: as `sizes` counts them, if the caller counted every pool's
    (`cluster.nodepools.pool_sizes`), else `pool_members`'."""
    if sizes is None:
        return len(pool_members(state, pool))
    return sizes.get(pool.metadata.name, 0)


def _template_from_node(
    state: ClusterState, pool: NodePool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`fromNode`: copy an existing node and its node-local slices, as Cluster Autoscaler
    builds a template from a real node of the group."""
    source = state.nodes.get(pool.spec.from_node)
    if source is None:
        raise BadInput(
            f"fromNode {pool.spec.from_node!r} is not in the input",
            source=state.source_of(pool),
            kind="NodePool",
            name=pool.metadata.name,
            path="spec.fromNode",
        )
    return node_copy(state, source)


def node_copy(state: ClusterState, source: Node) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`source` without its name, and its node-local slices' specs, "$NODE_NAME" for the name."""
    old = source.metadata.name
    node = {
        "metadata": {
            "labels": {
                k: v for k, v in source.metadata.labels.items() if k != "kubernetes.io/hostname"
            }
        },
        "spec": to_builtins(source.spec),
        # A new node reports conditions of its own.
        "status": {k: v for k, v in to_builtins(source.status).items() if k != "conditions"},
    }
    slices = []
    for rs in state.node_slices(old):
        spec = to_builtins(rs.spec)
        spec["nodeName"] = NODE_NAME_PLACEHOLDER
        # Every copied pool gets the new node's name, or the copies would publish into the
        # donor's pool and leave it incomplete (Cluster Autoscaler renames them all).
        pool_name = spec["pool"]["name"]
        spec["pool"]["name"] = (
            pool_name.replace(old, NODE_NAME_PLACEHOLDER)
            if old in pool_name
            else f"{pool_name}-{NODE_NAME_PLACEHOLDER}"
        )
        slices.append(spec)
    return node, slices


# What a new node is made from besides its pool: for a `fromNode` pool, the donor Node (None:
# gone) and its slices (by identity: a fork may change them), else nothing.
Donor = tuple[()] | tuple[Node | None, tuple[ResourceSlice, ...]]
_MADE: dict[tuple[int, str, tuple[tuple[str, str], ...]], tuple[NodePool, Donor, NewNode]] = {}
_SAFE_NAME = re.compile(r"[a-z0-9.-]+")  # node names that need no escaping inside JSON


@dataclass(frozen=True)
class _Prototype:
    """A pool's node and slices with "$NODE_NAME" still in place, its slices as JSON."""

    pool: NodePool
    donor: Donor
    spec: NodeSpec
    status: NodeStatus
    labels: dict[str, str]
    annotations: dict[str, str]
    slices: bytes


_PROTOTYPES: dict[int, _Prototype] = {}


def _donor(state: ClusterState, pool: NodePool) -> Donor:
    if not pool.spec.from_node:
        return ()
    return (state.nodes.get(pool.spec.from_node), tuple(state.node_slices(pool.spec.from_node)))


def _same(a: Donor, b: Donor) -> bool:
    if not a or not b:
        return not a and not b
    return (
        a[0] is b[0]
        and len(a[1]) == len(b[1])
        and all(x is y for x, y in zip(a[1], b[1], strict=True))
    )


def make_node(state: ClusterState, pool: NodePool, name: str, labels: dict[str, str]) -> NewNode:
    """One new node of `pool` called `name`, with extra (topology) labels. Planning forks stamp
    out the same names again and again, so results are cached (the objects are immutable);
    after a pool's first node (decoded and validated in full) the others are its JSON with
    the name put in, since a name cannot make a valid slice invalid. A `fromNode` pool's are
    kept while its donor node and the donor's slices stay the same objects."""
    donor = _donor(state, pool)
    new = _stamped(state, pool, donor, name, labels)
    if donor and donor[0] is not None:
        new = NewNode(new.node, new.slices, node_daemons(state, donor[0], name))
    return new


def _stamped(
    state: ClusterState, pool: NodePool, donor: Donor, name: str, labels: dict[str, str]
) -> NewNode:
    key = (id(pool), name, tuple(sorted(labels.items())))
    hit = _MADE.get(key)
    if hit is not None and hit[0] is pool and _same(hit[1], donor):
        return hit[2]
    proto = _PROTOTYPES.get(id(pool))
    if not _SAFE_NAME.fullmatch(name) or (donor and donor[0] is None):
        new = _make_node(state, pool, name, labels)
    elif proto is None or proto.pool is not pool or not _same(proto.donor, donor):
        template, docs = _documents(state, pool)
        new = _make_node(state, pool, name, labels, (template, docs))
        _PROTOTYPES[id(pool)] = _Prototype(
            pool,
            donor,
            new.node.spec,
            new.node.status,
            template.get("metadata", {}).get("labels", {}),
            new.node.metadata.annotations,
            msgspec.json.encode(docs),
        )
    else:
        docs = msgspec.json.decode(proto.slices.replace(_PLACEHOLDER, name.encode()))
        node = _node(pool, name, labels, proto.labels, proto.annotations, proto.spec, proto.status)
        new = NewNode(node, tuple(convert(d, ResourceSlice) for d in docs))
    if len(_MADE) > 65536:
        _MADE.clear()
    _MADE[key] = (pool, donor, new)
    return new


_PLACEHOLDER = NODE_NAME_PLACEHOLDER.encode()


def _node(
    pool: NodePool,
    name: str,
    extra: dict[str, str],
    labels: dict[str, str],
    annotations: dict[str, str],
    spec: NodeSpec,
    status: NodeStatus,
) -> Node:
    """The Node called `name`: the template's labels, then its hostname and pool, then the
    `extra` (topology) labels."""
    return Node(
        metadata=ObjectMeta(
            name=name,
            labels={
                **labels,
                "kubernetes.io/hostname": name,
                POOL_LABEL: pool.metadata.name,
                **extra,
            },
            annotations=annotations,
        ),
        spec=spec,
        status=status,
    )


def _documents(state: ClusterState, pool: NodePool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The node template and the ResourceSlice documents, "$NODE_NAME" still in them."""
    if pool.spec.from_node:
        template, slice_specs = _template_from_node(state, pool)
    else:
        assert pool.spec.template is not None
        template = to_builtins(pool.spec.template)
        slice_specs = [to_builtins(s) for s in pool.spec.resource_slices]
    docs = slice_documents(slice_specs)
    return template, docs


def _make_node(
    state: ClusterState,
    pool: NodePool,
    name: str,
    labels: dict[str, str],
    documents: tuple[dict[str, Any], list[dict[str, Any]]] | None = None,
) -> NewNode:
    """The node decoded and validated in full, from `documents` (`_documents`) if given."""
    template, docs = documents if documents is not None else _documents(state, pool)
    meta = template.get("metadata", {})
    node = _node(
        pool,
        name,
        labels,
        meta.get("labels", {}),
        meta.get("annotations", {}),
        convert(template.get("spec", {}), NodeSpec),
        convert(template.get("status", {}), NodeStatus),
    )
    slices = []
    for i, doc in enumerate(docs):
        try:
            rs = decode(substitute(doc, name))
        except BadInput as err:
            # A fromNode pool's slices are the donor's; a template's are the pool's own.
            inner = err.path.removeprefix("spec").lstrip(".")
            raise BadInput(
                err.message,
                source=state.source_of(pool),
                kind="NodePool",
                name=pool.metadata.name,
                path=f"spec.resourceSlices[{i}]" + (f".{inner}" if inner else ""),
            ) from None
        assert isinstance(rs, ResourceSlice)
        slices.append(rs)
    return NewNode(node, tuple(slices))


class NodeNamer:
    """Names and topology domains for new nodes: domains fill up to nodesPerDomain, then a new
    domain opens. Existing nodes of the pool count toward their domains. A name is new if no
    node of the state has it and it was not given before (while it is used, the state's nodes
    change only by the nodes it names: read in place, not copied, as it is made many times
    per plan on thousands of nodes)."""

    def __init__(self, state: ClusterState, pool: NodePool) -> None:
        self.pool = pool
        self.nodes = state.nodes
        self.given: set[str] = set()
        self.counter = 0
        self.fill: dict[str, Counter[str]] = {}
        for topo in pool.spec.topology:
            self.fill[topo.key] = Counter(
                n.metadata.labels[topo.key]
                for n in pool_members(state, pool)
                if topo.key in n.metadata.labels
            )

    def next(self, domains: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
        """A new node's name and domain labels: the domain `domains` names for a key, else
        the first one with room, else a new one."""
        base = self.pool.metadata.name
        while (name := f"{base}-{self.counter}") in self.given or name in self.nodes:
            self.counter += 1
        self.given.add(name)
        labels = {}
        for topo in self.pool.spec.topology:
            fill = self.fill[topo.key]
            domain = (domains or {}).get(topo.key) or next(
                (
                    d
                    for d in sorted(fill)
                    if not topo.nodes_per_domain or fill[d] < topo.nodes_per_domain
                ),
                None,
            )
            if domain is None:
                domain = self._new_domain(topo.key)
            fill[domain] += 1
            labels[topo.key] = domain
        return name, labels

    def _new_domain(self, key: str) -> str:
        fill = self.fill[key]
        k = len(fill)
        while f"{self.pool.metadata.name}-{k}" in fill:
            k += 1
        return f"{self.pool.metadata.name}-{k}"

    def domain_for(self, key: str, need: int, pinned: str | None = None) -> str | None:
        """A `key` domain with room for `need` more nodes (a gang's): `pinned` or nothing if
        given; else the fullest partly filled domain that has the room (best fit), else a
        new one."""
        topo = next(t for t in self.pool.spec.topology if t.key == key)
        per = topo.nodes_per_domain
        fill = self.fill[key]
        if pinned is not None:
            return pinned if not per or fill[pinned] + need <= per else None
        fitting = [d for d in sorted(fill) if fill[d] and (not per or fill[d] + need <= per)]
        if fitting:
            return max(fitting, key=lambda d: fill[d])  # max keeps the first of equals
        return self._new_domain(key) if not per or need <= per else None


def add_new_node(state: ClusterState, new: NewNode) -> None:
    state.add_node(new.node)
    for rs in new.slices:
        state.add_slice(rs)
    for pod in new.pods:
        state.put_pod(pod)
