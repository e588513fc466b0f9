"""Which node shapes could ever host a pod: every kind of existing node and every NodePool's
template, empty, asked of the real scheduler with the pod's node constraints (taints, node
selector and affinity, cordon) set aside; then which of them those constraints admit.

Nodes of one kind (the same in what the scheduler reads of a Node object, their names aside;
the same devices but their identities) share one check, so a large cluster of few node types
costs a few scheduling cycles per pod shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from draplan.allocator import AllocationError, allocate, shape_groups
from draplan.allocator.types import TIMEOUT
from draplan.api.core_v1 import Node, Pod, Taint, Toleration
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.resource_v1 import ResourceClaim
from draplan.audit.contents import same_pools
from draplan.audit.fixes import twin_pool
from draplan.autoscaler.templates import NewNode, NodeNamer, add_new_node, make_node
from draplan.cluster.devices import Pool
from draplan.cluster.nodepools import price_per_hour
from draplan.cluster.podresources import pod_requests
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import Profile, Scheduler
from draplan.scheduler.framework import CycleState, PodInfo
from draplan.scheduler.plugins import names
from draplan.scheduler.plugins.nodeaffinity import pod_matches_node
from draplan.scheduler.plugins.tainttoleration import tolerates
from draplan.scheduler.unread import HOSTNAME, node_as_read, profile_reads_only_known

# Device attributes that name one physical device, not its kind (NVIDIA's DRA driver).
IDENTITY_ATTRIBUTES = frozenset({"uuid", "parentUUID", "serialNumber"})
MAX_NAME_SETS = 1 << 12  # sets of attribute names remembered (then forgotten at once)
CONSTRAINT_PLUGINS = (
    names.NODE_UNSCHEDULABLE,
    names.NODE_NAME,
    names.TAINT_TOLERATION,
    names.NODE_AFFINITY,
)
# Tolerates every taint, the cordon's too (core/v1: an empty key with Exists matches all).
EVERY_TAINT = Toleration(operator="Exists")


def relaxed(pod: Pod) -> Pod:
    """`pod` without its node constraints: tolerating every taint, any node selected."""
    spec = msgspec.structs.replace(
        pod.spec, tolerations=(EVERY_TAINT,), node_selector={}, affinity=None
    )
    return msgspec.structs.replace(pod, spec=spec)


@dataclass(frozen=True)
class Blocks:
    """What of a pod's node constraints excludes a node: the filters' messages, the
    untolerated taints, a selector or affinity that does not match, a cordon."""

    reasons: tuple[str, ...]
    taints: tuple[Taint, ...] = ()
    selector: bool = False
    cordoned: bool = False


@dataclass
class Host:
    """An existing node (`pool` "") or a NodePool's template node, an empty copy of which
    holds the pod when its node constraints are set aside."""

    node: str
    pool: str = ""
    blocks: Blocks | None = None  # None: its constraints admit the pod too
    price: float | None = None


@dataclass
class Reach:
    hosts: list[Host] = field(default_factory=list)  # admitted first, then by price and name
    groups: list[dict[str, Any]] = field(default_factory=list)  # constraint groups, largest
    shapes: int = 0  # node kinds and templates looked at
    # NodePools whose nodes the pod's node selector and affinity admit: the ones it asks for.
    chosen: list[str] = field(default_factory=list)
    # ... and of those, the ones its claims cannot be evaluated on (a CEL runtime error).
    unevaluable: list[str] = field(default_factory=list)

    @property
    def admitted(self) -> list[Host]:
        return [h for h in self.hosts if h.blocks is None]

    def short_group(self) -> dict[str, Any] | None:
        """A claim constraint no node or template shape can ever meet, if any."""
        return next((g for g in self.groups if g["largestGroup"] < g["needed"]), None)


def node_blocks(profile: Profile, state: ClusterState, pod: Pod, node: Node) -> Blocks | None:
    """What of the pod's node constraints excludes `node` (the profile's filters), or None."""
    info = PodInfo(pod, key_of(pod), pod_requests(pod, state.features), b"", state.features)
    reasons: list[str] = []
    failed: set[str] = set()
    for plugin in profile.filters:
        if plugin.name not in CONSTRAINT_PLUGINS:
            continue
        status = plugin.filter(state, CycleState(), info, node)
        if not status.ok:
            failed.add(plugin.name)
            reasons.extend(status.reasons or (plugin.name,))
    if not failed:
        return None
    taints: tuple[Taint, ...] = ()
    if names.TAINT_TOLERATION in failed:
        taints = tuple(
            t
            for t in node.spec.taints
            if t.effect in ("NoSchedule", "NoExecute")
            and not any(tolerates(tol, t) for tol in pod.spec.tolerations)
        )
    return Blocks(
        tuple(reasons),
        taints,
        names.NODE_AFFINITY in failed,
        names.NODE_UNSCHEDULABLE in failed,
    )


NodeKinds = dict[str, tuple[Node, tuple[Pool, ...], bytes]]
"""Each node's kind, with the Node object and the pools it was read from."""


@dataclass
class ReachMemo:
    """What a Reacher keeps between audits of one changing state: each node's kind, and the
    reach per pod shape while nothing it was read from changed (no node object or pools, no
    device class, device taint rule or NodePool)."""

    kinds: NodeKinds = field(default_factory=dict)
    nodes: int = 0
    inputs: list[object] = field(default_factory=list)
    pools: list[NodePool] = field(default_factory=list)
    reaches: dict[bytes, Reach] = field(default_factory=dict)


class Reacher:
    """Reach per pod shape, over the kinds of the state's nodes (grouped once). A `memo` kept
    between audits of one changing state spares reading again the nodes that did not change,
    and the reach of every shape while no node changed its kind."""

    def __init__(
        self, state: ClusterState, profile: Profile, memo: ReachMemo | None = None
    ) -> None:
        self.state = state
        self.profile = profile
        self.scheduler = Scheduler(profile)
        self._kinds: list[list[str]] | None = None
        self._missed = False
        self._keep = memo if memo is not None else ReachMemo()
        self._kind_memo = self._keep.kinds
        self._memo: dict[bytes, Reach] = {}
        self._reads_known = profile_reads_only_known(profile)
        self._kept: dict[tuple[str, ...], tuple[str, ...]] = {}

    def blocks(self, pod: Pod, node: str) -> Blocks | None:
        return node_blocks(self.profile, self.state, pod, self.state.nodes[node])

    def kinds(self) -> list[list[str]]:
        """The state's nodes grouped by kind, each group in name order."""
        if self._kinds is None:
            groups: dict[bytes, list[str]] = {}
            nodes = sorted(self.state.nodes.items())
            if len(self._kind_memo) > 2 * len(nodes) + 1000:  # many nodes gone since
                kept = {name for name, _ in nodes}
                for name in [n for n in self._kind_memo if n not in kept]:
                    del self._kind_memo[name]
            self._missed = False
            for name, node in nodes:
                groups.setdefault(self._kind_of(node), []).append(name)
            self._kinds = list(groups.values())
            self._keep_reaches(len(nodes))
        return self._kinds

    def _keep_reaches(self, nodes: int) -> None:
        """Take the reaches of the last audit if what they were read from is the same."""
        keep, state = self._keep, self.state
        inputs: list[object] = [*state.device_classes.values(), *state.taint_rules.values()]
        pools = list(state.node_pools.values())
        same = (
            not self._missed
            and nodes == keep.nodes
            and len(inputs) == len(keep.inputs)
            and all(a is b for a, b in zip(inputs, keep.inputs, strict=True))
            and pools == keep.pools  # derived pools are made again, equal, every audit
        )
        if not same:
            keep.reaches.clear()
        keep.nodes, keep.inputs, keep.pools = nodes, inputs, pools
        self._memo = keep.reaches

    def _kind_of(self, node: Node) -> bytes:
        name = node.metadata.name
        pools = self.state.pools_for_node(node)
        hit = self._kind_memo.get(name)
        if hit is not None and hit[0] is node and same_pools(hit[1], pools):
            return hit[2]
        self._missed = True
        kind = self._kind(node)
        self._kind_memo[name] = (node, pools, kind)
        return kind

    def _kind(self, node: Node) -> bytes:
        meta = node.metadata
        parts: list[Any] = [node_as_read(node, self._reads_known)]
        for pool in self.state.pools_for_node(node):
            local = all(v.node_name == meta.name for v in pool.devices)
            devices = []
            for v in pool.devices:
                attributes = v.device.attributes
                kept = self._kept_names(tuple(attributes))
                devices.append(
                    msgspec.structs.replace(v.device, attributes={k: attributes[k] for k in kept})
                )
            parts.append([pool.id[0] if local else list(pool.id), devices, pool.incomplete])
        data = msgspec.msgpack.encode(parts, enc_hook=str)
        return data.replace(meta.name.encode(), b"$NODE") if meta.name else data

    def _kept_names(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """The attribute names a kind keeps: all but those that identify a device (once per
        set of names: every device of a model has the same)."""
        kept = self._kept.get(names)
        if kept is None:
            kept = tuple(k for k in names if k.rsplit("/", 1)[-1] not in IDENTITY_ATTRIBUTES)
            if len(self._kept) >= MAX_NAME_SETS:
                self._kept.clear()
            self._kept[names] = kept
        return kept

    def reach(self, shape: bytes, pod: Pod, claims: list[ResourceClaim]) -> Reach:
        """Memoised per shape: pods of one shape have the same reach."""
        self.kinds()
        found = self._memo.get(shape)
        if found is None:
            found = self._memo[shape] = self._reach(pod, claims)
        return found

    def _reach(self, pod: Pod, claims: list[ResourceClaim]) -> Reach:
        state = self.state
        free = relaxed(pod)
        out = Reach()
        best: dict[int, dict[str, Any]] = {}
        pending = [c for c in claims if c.status.allocation is None]
        named = _names_nodes(pod)
        for members in self.kinds():
            like = state.nodes[members[0]]
            with state.forked():
                pool = twin_pool(like.metadata.name)
                name, labels = NodeNamer(state, pool).next()
                new = make_node(state, pool, name, labels)
                hosts = self._hosts(free, new, pending, best)
            out.shapes += 1
            if not hosts:
                continue
            # Nodes of a kind differ only in their names: unless the pod selects nodes by
            # name, one answers for all.
            shared = None if named else node_blocks(self.profile, state, pod, like)
            for member in members:
                node = state.nodes[member]
                found = node_blocks(self.profile, state, pod, node) if named else shared
                out.hosts.append(Host(member, "", found, price_per_hour(state, node)))
        for pool_name, nodepool in sorted(state.node_pools.items()):
            with state.forked():
                name, labels = NodeNamer(state, nodepool).next()
                new = make_node(state, nodepool, name, labels)
                hosts = self._hosts(free, new, pending, best)
                template = node_blocks(self.profile, state, pod, new.node)
                chosen = pod_matches_node(pod, new.node)
                if (
                    chosen
                    and not hosts
                    and allocation_error(state, new.node, pending, self.profile)
                ):
                    out.unevaluable.append(pool_name)
            out.shapes += 1
            if chosen:
                out.chosen.append(pool_name)
            if hosts:
                out.hosts.append(Host(name, pool_name, template, _pool_price(nodepool)))
        # A pool's new node before a copy of an existing node of the same price.
        out.hosts.sort(key=lambda h: (h.blocks is not None, _rank(h.price), not h.pool, h.node))
        out.groups = [best[i] for i in sorted(best)]
        return out

    def _hosts(
        self,
        pod: Pod,
        new: NewNode,
        claims: list[ResourceClaim],
        best: dict[int, dict[str, Any]],
    ) -> bool:
        """Add the new empty node `new` (in the caller's fork); whether it holds `pod`. Its
        constraint groups raise `best` (the largest per claim constraint seen so far)."""
        state = self.state
        node = new.node
        add_new_node(state, new)
        try:
            groups = shape_groups(state, node, claims, self.profile.options) if claims else []
        except AllocationError:
            groups = []
        for i, row in enumerate(groups):
            if i not in best or row["largestGroup"] > best[i]["largestGroup"]:
                best[i] = {k: v for k, v in row.items() if k not in ("largestFreeGroup", "value")}
        result = self.scheduler.schedule_pod(state, pod, [node.metadata.name])
        # A search that ran out of budget proves nothing: count the node as a host.
        return result.node is not None or (
            result.reason is not None and TIMEOUT in result.reason.nodes
        )


def allocation_error(
    state: ClusterState, node: Node, claims: list[ResourceClaim], profile: Profile
) -> str:
    """The allocator's fatal error for `claims` on `node` (e.g. a CEL runtime error on one of
    its devices, where upstream's scheduler returns an error), if it has one."""
    if not claims:
        return ""
    try:
        allocate(state, node, claims, profile.options)
    except AllocationError as err:
        return str(err)
    return ""


def _names_nodes(pod: Pod) -> bool:
    """Whether the pod's node selection can tell nodes of one kind apart (by hostname or
    by field)."""
    return HOSTNAME in pod.spec.node_selector or pod.spec.affinity is not None


def _pool_price(pool: NodePool) -> float:
    return float(pool.spec.price_per_hour)


def _rank(price: float | None) -> tuple[int, float]:
    """Priced nodes first, cheapest first; nodes nothing prices after them."""
    return (0, price) if price is not None else (1, 0.0)
