"""Per-node filter and score results, cached per pod shape and node version, and shared
between identical nodes.

Pods of one shape (same requests, selectors, tolerations and claim specs: typically one
template) get the same answer from a node until that node changes, so each node is evaluated
once per shape and re-evaluated only when the cluster state's change log names it. A heap of
(-score, node) gives the best node without scanning all nodes for every pod.

Unallocated claims that no pod reserves count by their spec alone, named or generated: a
node's answer does not depend on which claim it is (Reserve applies it to the pod's own
claims), so pods that each name their own claim of one spec share evaluations too.

Identical nodes share answers. A node's answer depends on its Node object (name and hostname
label aside; with kube-scheduler's own plugins only, what they read of it: labels, taints,
unschedulable, capacity, allocatable), the requests of its pods, its devices and their
ledgers, and what a plugin declares with `signature(state, node)`; nodes equal in all of that
(the empty nodes of one type, say) are evaluated once per shape. Devices of one pool with the
same spec (name aside, and attributes nothing reads: `scheduler.unread`) are interchangeable,
so only how many of them are in each ledger state counts; a score must not depend on which of
them is free. The filters that read only the Node object are evaluated
once per shape and Node object kind; DynamicResources' answer depends only on the claims and
the devices, so it is shared between nodes and shapes with the same ones, unless a score plugin
reads the allocation itself. Shapes that name nodes (nodeName, hostname or field selectors,
claims already allocated) never share. A shared answer may name other devices than this node's
own choice (`NodeEval.origin`): the scheduler evaluates the chosen node itself before Reserve,
and a failure's allocator evidence is recomputed for the nodes it is shown for.

Choosing the node is kube-scheduler's: the nodes are tried in its order from where the last
cycle stopped (scheduler.nodeorder) until `num_feasible_to_find` pass every filter — the
cached node-local answers, then the cluster plugins' filters, which are never cached (see
scheduler.framework) — and only those are scored: the node-local scores cached per node (a
weighted sum, and the raw scores of the plugins that normalize), the cluster plugins' scores
computed then, NormalizeScore over the nodes scored, the weighted sum. Ties between the best
nodes go to the smallest node name, or (profile.ties "random") to a uniformly random one, as
kube-scheduler's selectHost does, drawn from a generator seeded with the profile's seed and
the pod.
"""

from __future__ import annotations

import random
from bisect import bisect_left, insort
from collections import Counter, deque
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import attrgetter, eq
from typing import Any, NamedTuple, TypeVar

import msgspec

from draplan.allocator import Reason
from draplan.allocator.types import NO_MATCHING_DEVICE
from draplan.api.core_v1 import Node, Pod
from draplan.api.resource_v1 import POD_CLAIM_ANNOTATION, ResourceClaim
from draplan.cluster.devices import Pool
from draplan.cluster.state import ClusterState, ObjectKey, SharedUse, key_of
from draplan.scheduler.extended import needs_dra
from draplan.scheduler.framework import (
    Code,
    CycleState,
    NodeScore,
    PodInfo,
    Status,
    encode_shape,
    is_cluster,
)
from draplan.scheduler.nodeorder import NodeOrder, num_feasible_to_find
from draplan.scheduler.nominated import nominees, with_nominated
from draplan.scheduler.plugins import names
from draplan.scheduler.profile import Profile
from draplan.scheduler.reasons import FitReason, aggregate, fit_error, tally
from draplan.scheduler.unread import (
    HOSTNAME,
    AttributeReads,
    merge,
    node_as_read,
    profile_reads_only_known,
    state_reads,
)

# Score plugins that read DynamicResources' allocation (the devices chosen on this node).
READS_ALLOCATION = frozenset({names.TOPOLOGY_LOCALITY})
# Filters whose answer depends only on the pod and the Node object.
NODE_OBJECT_FILTERS = frozenset(
    {names.NODE_UNSCHEDULABLE, names.NODE_NAME, names.TAINT_TOLERATION, names.NODE_AFFINITY}
)
# Filters under which a node that only gets fuller (same Node object, more requested, more
# device usage) never starts to fit a pod it did not fit.
MONOTONE_FILTERS = NODE_OBJECT_FILTERS | {
    names.NODE_RESOURCES_FIT,
    names.DYNAMIC_RESOURCES,
    names.NODE_PORTS,  # more pods on a node hold more host ports
}
MEMO_ENTRIES = 1 << 16  # per table; a full table is dropped at once
PAST = 3  # answers (per shape) and signatures kept per node for versions a revert brings back
SAMPLE = 3  # failures with allocator evidence that fit_error shows

_SCORE = attrgetter("score")  # a NodeEval's cached node-local score
_SPEC_ENCODER = msgspec.msgpack.Encoder(enc_hook=str)  # a device's spec as bytes, to compare

DraMemo = dict[tuple[int, int], tuple[Status, str]]
T = TypeVar("T", str, int)


@dataclass(slots=True)
class NodeEval:
    version: tuple[int, int]
    status: Status
    score: float = 0.0  # the weighted sum of the node-local scores that do not normalize
    raw: tuple[int, ...] = ()  # the raw scores of those that do (Profile.normalized_scores)
    details: dict[str, Any] = field(default_factory=dict)
    # Set when the answer was computed for another identical node or another pod shape on
    # identical devices (its allocation may differ from this node's own): that node's name.
    origin: str = ""
    pod: ObjectKey | None = None  # the pod it was computed for
    usage: Usage | None = None  # what the node gave out then (kept for failures)
    exact: bool = True  # False: known not to fit, but the status is another filter's


@dataclass(frozen=True)
class Selection:
    """A cycle's outcome: the node chosen (None: no feasible node), how many nodes the search
    for feasible ones went through (kube-scheduler's processedNodes), the cluster filters'
    failures found on the way, and a plugin's error (PreScore) if one stopped the cycle."""

    node: str | None
    processed: int
    failed: dict[str, Status] = field(default_factory=dict)
    error: Status | None = None


@dataclass
class ShapeEvaluations:
    cursor: int = -1
    evals: dict[str, NodeEval] = field(default_factory=dict)
    # The nodes every node-local filter passes, their places in the node order (sorted, for
    # that order's `epoch`), and how many of them have each vector of raw normalized scores.
    feasible: set[str] = field(default_factory=set)
    places: list[int] = field(default_factory=list)
    epoch: int = -1
    raws: Counter[tuple[int, ...]] = field(default_factory=Counter)
    shared: bool = False  # may identical nodes share this shape's answers
    merged: bool = False  # pods of this shape name different claims
    claims: int = -1  # the claims of the shape, for DynamicResources' shared answers
    claimed: bool = False  # the shape has claims to allocate
    # By node signature: the answer (its version, pod and usage aside), computed on which
    # node, and whether that answer was itself borrowed.
    memo: dict[int, tuple[NodeEval, str, bool]] = field(default_factory=dict)
    node_object: dict[int, Status | None] = field(default_factory=dict)  # by Node object kind
    # Failures counted as fit_error counts them, kept up to date as nodes change.
    printed: Counter[str] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    # Failing with allocator evidence, in name order (fit_error shows the first ones).
    reasoned: list[str] = field(default_factory=list)
    # Failing nodes that changed but only got fuller: still failing, status not recomputed.
    stale: set[str] = field(default_factory=set)
    # Answers replaced since (the newest last), by node: a version is unique to what the node
    # held, so when a fork is reverted (a plan's, a trial move's) its answers are valid again.
    past: dict[str, deque[NodeEval]] = field(default_factory=dict)
    # Nodes that can never host the shape while their Node object and pools stay (a
    # Node-object filter fails, or too few devices match the selectors): those two, by name.
    impossible: dict[str, tuple[Node, tuple[Pool, ...]]] = field(default_factory=dict)


def evaluate_node(
    profile: Profile, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node
) -> NodeEval:
    """Run every node-local filter (stopping at the first failure), then the node-local
    scores."""
    return _evaluate(profile, state, cycle, pod, node, 0, None, None)


def _evaluate(
    profile: Profile,
    state: ClusterState,
    cycle: CycleState,
    pod: PodInfo,
    node: Node,
    start: int,
    dra: tuple[DraMemo, tuple[int, int]] | None,
    version: tuple[int, int] | None,
) -> NodeEval:
    """Node-local filters from index `start` (those before it passed), then the node-local
    scores; DynamicResources' answer from `dra` (memo, key) when given."""
    name = node.metadata.name
    if version is None:
        version = state.version(name)
    details: dict[str, Any] = {}
    origin = ""
    filters = profile.local_filters
    for i in range(start, len(filters)):
        plugin = filters[i]
        if dra is not None and plugin is profile.dra:
            memo, key = dra
            hit = memo.get(key)
            if hit is None:
                status = plugin.filter(state, cycle, pod, node)
                if not status.ok:
                    status = status.with_plugin(plugin.name)
                if len(memo) >= MEMO_ENTRIES * 4:
                    memo.clear()
                memo[key] = (status, name)
            else:
                status, origin = hit  # borrowed even from this node: the pod may differ
        else:
            status = plugin.filter(state, cycle, pod, node)
        if not status.ok:
            if status.plugin != plugin.name:
                status = status.with_plugin(plugin.name)
            return NodeEval(version, status, origin=origin)
        if status.detail is not None:
            details[plugin.name] = status.detail
            cycle.data[(plugin.name, name)] = status.detail
    score = sum(
        weight * plugin.score(state, cycle, pod, node) for plugin, weight in profile.plain_scores
    )
    raw = tuple(int(p.score(state, cycle, pod, node)) for p, _ in profile.normalized_scores)
    return NodeEval(version, Status(), score, raw, details, origin)


def _recalled(ev: ShapeEvaluations, name: str, version: tuple[int, int]) -> NodeEval | None:
    """The node's answer at `version` if one replaced since is kept (taken out of the past)."""
    kept = ev.past.get(name)
    if kept:
        for i in range(len(kept) - 1, -1, -1):
            if kept[i].version == version:
                found = kept[i]
                del kept[i]
                return found
    return None


def _add(names: list[str], name: str) -> None:
    """Add `name` to the sorted list `names` (once)."""
    i = bisect_left(names, name)
    if i == len(names) or names[i] != name:
        names.insert(i, name)


def _discard(items: list[T], item: T) -> None:
    """Remove `item` from the sorted list `items` if there."""
    i = bisect_left(items, item)
    if i < len(items) and items[i] == item:
        del items[i]


def _final(status: Status) -> bool:
    """A failure that more usage cannot undo (not an error, not a search timeout)."""
    if status.code not in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
        return False
    return not (isinstance(status.detail, Reason) and status.detail.code == "Timeout")


def evaluation_key(pod: PodInfo, claims: Sequence[ResourceClaim]) -> bytes:
    """`pod.shape`, except that unallocated claims that no pod reserves count by their spec
    alone (the scheduler's shape keeps named claims apart; their evaluation need not)."""
    local = pod.local_shape or pod.shape
    if not any(_anonymous_named(c) for c in claims):
        return local
    claim_shapes = [
        ("allocated", key_of(c), c.status.allocation.node_selector)
        if c.status.allocation is not None
        else ("pending", None if not c.status.reserved_for else key_of(c), c.spec)
        for c in claims
    ]
    # What the node-local plugins add (pod_shape) keeps pods apart; the claims' names do not
    # (the local shape names them, so appending it kept every named claim a shape of its own).
    return b"m" + encode_shape(pod.pod, pod.requests, pod.nonzero, claim_shapes, pod.local_extra)


def _anonymous_named(claim: ResourceClaim) -> bool:
    return (
        claim.status.allocation is None
        and not claim.status.reserved_for
        and POD_CLAIM_ANNOTATION not in claim.metadata.annotations
    )


def shareable(pod: Pod, claims: Iterable[ResourceClaim]) -> bool:
    """Whether the pod's answers can be shared between identical nodes: it names no node."""
    spec = pod.spec
    if spec.node_name or HOSTNAME in spec.node_selector:
        return False
    aff = spec.affinity.node_affinity if spec.affinity is not None else None
    if aff is not None:
        required = aff.required_during_scheduling_ignored_during_execution
        terms = [
            *(required.node_selector_terms if required is not None else ()),
            *(p.preference for p in aff.preferred_during_scheduling_ignored_during_execution),
        ]
        for term in terms:
            if term.match_fields or any(r.key == HOSTNAME for r in term.match_expressions):
                return False
    return all(claim.status.allocation is None for claim in claims)


_NO_SHARES: tuple[int, tuple[tuple[str, int], ...]] = (0, ())


def _shared_use(use: SharedUse | None) -> tuple[int, tuple[tuple[str, int], ...]]:
    return _NO_SHARES if use is None else (use.shares, tuple(sorted(use.consumed.items())))


class Usage(NamedTuple):
    """What is taken from a node: its pods (their requests, and which they are: a pod that
    left frees its host ports even if another of the same requests took its place) and, per
    pool, each device's ledger entry (exclusive holders; shares and consumed capacity) and the
    counters used."""

    node: Node
    requested: dict[str, int]
    pods: frozenset[ObjectKey]
    pools: tuple[
        tuple[
            int, tuple[tuple[int, tuple[int, tuple[tuple[str, int], ...]]], ...], tuple[int, ...]
        ],
        ...,
    ]


def fuller(now: Usage, before: Usage) -> bool:
    """Whether the node is the same Node object and nothing it gave out has come back since
    `before`: then a pod that did not fit still does not (the filters are monotone)."""
    if now.node is not before.node or len(now.pools) != len(before.pools):
        return False
    if not now.pods >= before.pods:
        return False
    requested = now.requested
    for key, amount in before.requested.items():
        if requested.get(key, 0) < amount:
            return False
    for (t_now, l_now, c_now), (t_before, l_before, c_before) in zip(
        now.pools, before.pools, strict=True
    ):
        if t_now != t_before:
            return False
        if l_now != l_before:
            for (x_now, (s_now, cap_now)), (x_before, (s_before, cap_before)) in zip(
                l_now, l_before, strict=True
            ):
                if x_now < x_before or s_now < s_before:
                    return False
                if cap_now != cap_before:
                    used = dict(cap_now)
                    if any(used.get(k, 0) < v for k, v in cap_before):
                        return False
        if any(a < b for a, b in zip(c_now, c_before, strict=True)):
            return False
    return True


class Evaluator:
    """Keeps ShapeEvaluations for every shape seen; answers "best node" and "why not"."""

    def __init__(self, profile: Profile, explain: bool = True) -> None:
        self.profile = profile
        self.explain_failures = explain
        self.shapes: dict[bytes, ShapeEvaluations] = {}
        self.random_ties = profile.ties == "random"
        self._dra_shared = not any(p.name in READS_ALLOCATION for p, _ in profile.scores)
        self._extra = [
            p.signature
            for p in (*profile.filters, *(p for p, _ in profile.scores))
            if not is_cluster(p) and callable(getattr(p, "signature", None))
        ]
        local = profile.local_filters
        prefix = 0
        while prefix < len(local) and local[prefix].name in NODE_OBJECT_FILTERS:
            prefix += 1
        self._prefix = prefix  # the leading filters that read only the Node object
        # A node that only gets fuller never starts to fit (true of these filters).
        self._monotone = all(p.name in MONOTONE_FILTERS for p in local)
        self.filter_place = {p.name: i for i, p in enumerate(profile.filters)}
        self._order = NodeOrder()
        self._state: ClusterState | None = None
        self._ids: dict[Hashable, int] = {}
        # Per node, its signatures at its last few versions (newest last): forks and their
        # reverts take nodes back and forth between versions.
        self._signatures: dict[str, deque[tuple[tuple[int, int], tuple[int, int, int], Usage]]] = {}
        self._statics: dict[str, tuple[Node, int]] = {}
        self._pools: dict[int, tuple[Pool, int, tuple[tuple[int, ...], ...]]] = {}
        self._dra: DraMemo = {}  # DynamicResources' answers by (claims, devices)
        # Device attributes that tell devices apart (the others are read by nothing); None:
        # all of them.
        self._reads_known = profile_reads_only_known(profile)
        self._attributes: AttributeReads | None = None
        self._read: dict[tuple[str, tuple[str, ...]], tuple[str, ...] | None] = {}

    def attach(self, state: ClusterState) -> None:
        """Learn on `state` from now on (`reset`, unless it is the state learnt on already):
        done ahead of the first pod, it is not that pod's time."""
        if state is not self._state:
            self.reset(state)

    def reset(self, state: ClusterState) -> None:
        """Forget everything learnt on another ClusterState."""
        self._state = state
        self._signatures.clear()
        self._statics.clear()
        self._pools.clear()
        self._read.clear()
        self._ids.clear()
        self._dra.clear()
        self.shapes.clear()
        self._attributes = state_reads(state) if self._reads_known else None

    # --- signatures of nodes ---------------------------------------------------------------

    def _intern(self, key: Hashable) -> int:
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._ids)
        return found

    def _static(self, node: Node) -> int:
        """The Node object without its identity (name, uid, hostname label)."""
        name = node.metadata.name
        hit = self._statics.get(name)
        if hit is not None and hit[0] is node:
            return hit[1]
        seen = node_as_read(node, self._reads_known)
        key = self._intern(msgspec.msgpack.encode(seen, enc_hook=str))
        self._statics[name] = (node, key)
        return key

    def _pool_template(self, pool: Pool, node: str) -> tuple[int, tuple[tuple[int, ...], ...]]:
        """(id of the pool's content without its name when it belongs to this node only,
        the indexes of its devices grouped by identical spec)."""
        hit = self._pools.get(id(pool))
        if hit is not None and hit[0] is pool:
            return hit[1], hit[2]
        local = bool(pool.devices) and all(v.node_name == node for v in pool.devices)
        groups: dict[bytes, list[int]] = {}
        # A pool's devices mostly carry the same attribute names: what is read of them is
        # looked up once per set of names.
        reads: dict[tuple[str, ...], tuple[str, ...] | None] = {}
        encode = _SPEC_ENCODER.encode
        replace = msgspec.structs.replace
        for i, v in enumerate(pool.devices):
            attributes = v.device.attributes
            names = tuple(attributes)
            if names in reads:
                read = reads[names]
            else:
                read = reads[names] = self._read_names(v.driver, names)
            if read is None:
                device = replace(v.device, name="")
            else:
                device = replace(v.device, name="", attributes={k: attributes[k] for k in read})
            # The spec and how the device is bound to this node, as one key.
            spec = encode((device, v.node_name == node, v.all_nodes, v.node_term))
            if spec in groups:
                groups[spec].append(i)
            else:
                groups[spec] = [i]
        template = (
            None if local else pool.id,
            pool.id[0],
            pool.incomplete,
            pool.invalid,
            tuple(sorted(pool.counters.items())),
            tuple((spec, len(members)) for spec, members in groups.items()),
        )
        key = self._intern(template)
        indexes = tuple(tuple(members) for members in groups.values())
        self._pools[id(pool)] = (pool, key, indexes)
        return key, indexes

    def _read_names(self, driver: str, names: tuple[str, ...]) -> tuple[str, ...] | None:
        """Which of a device's attributes the run reads (None: all of them), worked out once
        per driver and attribute names: every device of a model has the same names."""
        key = (driver, names)
        if key in self._read:
            return self._read[key]
        reads = self._attributes
        found: tuple[str, ...] | None = None
        if reads is not None:
            found = tuple(k for k in names if reads.read(k, driver))
            if len(found) == len(names):
                found = None
        if len(self._read) >= MEMO_ENTRIES:
            self._read.clear()
        self._read[key] = found
        return found

    def _usage(self, state: ClusterState, node: Node) -> tuple[Usage, Hashable]:
        """What the node's pods and claims use (per device, in pool order), and the devices'
        canonical key: per group of identical devices, the sorted ledger states."""
        name = node.metadata.name
        exclusive = state.exclusive
        shared = state.shared
        any_shared = bool(shared)  # most clusters share no device: one lookup per device then
        raw = []
        parts = []
        for pool in state.pools_for_node(node):
            template, groups = self._pool_template(pool, name)
            if any_shared:
                ledger = tuple(
                    (exclusive.get(v.id) or 0, _shared_use(shared.get(v.id))) for v in pool.devices
                )
            else:
                ledger = tuple((exclusive.get(v.id) or 0, _NO_SHARES) for v in pool.devices)
            counters = tuple(state.counter_used(pool.id, k) for k in sorted(pool.counters))
            raw.append((template, ledger, counters))
            canonical = tuple(tuple(sorted(ledger[i] for i in group)) for group in groups)
            parts.append((template, canonical, counters))
        usage = Usage(
            node,
            dict(state.requested(name)),
            frozenset(state.node_pods.get(name) or ()),
            tuple(raw),
        )
        return usage, tuple(parts)

    def _node_state(
        self, state: ClusterState, node: Node, version: tuple[int, int] | None = None
    ) -> tuple[tuple[int, int, int], Usage]:
        name = node.metadata.name
        if version is None:
            version = state.version(name)
        kept = self._signatures.get(name)
        if kept is not None:
            for hit in reversed(kept):
                if hit[0] == version:
                    return hit[1], hit[2]
        static = self._static(node)
        usage, devices = self._usage(state, node)
        full = (
            static,
            tuple(sorted(usage.requested.items())),
            devices,
            tuple(sig(state, node) for sig in self._extra),
        )
        ids = (self._intern(full), self._intern(devices), static)
        if kept is None:
            kept = self._signatures[name] = deque(maxlen=PAST)
        kept.append((version, ids, usage))
        return ids, usage

    def _dra_devices(self, cycle: CycleState, node: Node, devices: int) -> int:
        """What DynamicResources' answer reads of the node: its devices and, for a pod asking
        extended resources a DeviceClass serves (KEP-5004), which of them the node's device
        plugins serve instead (those stay out of the claim it allocates there)."""
        served = getattr(cycle.data.get(names.DYNAMIC_RESOURCES), "served", ())
        if not served:
            return devices
        return self._intern((devices, tuple(sorted(r for r in served if not needs_dra(node, r)))))

    def signature(
        self, state: ClusterState, node: Node, version: tuple[int, int] | None = None
    ) -> tuple[int, int, int]:
        """(everything the plugins see of the node, its devices, its Node object) as small
        ids, equal for identical nodes; cached per node version."""
        return self._node_state(state, node, version)[0]

    # --- evaluation ------------------------------------------------------------------------

    def _evaluate(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        node: Node,
        ev: ShapeEvaluations,
        version: tuple[int, int],
        exact: bool = False,
    ) -> NodeEval:
        """The node's answer for the shape, from identical nodes where possible. Unless
        `exact`, a node whose devices are known not to host the claims is answered with that
        failure (`exact` False) without running the filters before DynamicResources."""
        if not ev.shared:
            result = _evaluate(self.profile, state, cycle, pod, node, 0, None, version)
            result.pod = pod.key
            return result
        name = node.metadata.name
        (full, devices, static), usage = self._node_state(state, node, version)
        hit = ev.memo.get(full)
        if hit is not None:
            known, source, borrowed = hit
            origin = source if borrowed or source != name else ""
            kept = usage if not known.status.ok else None
            return NodeEval(
                version,
                known.status,
                known.score,
                known.raw,
                known.details,
                origin,
                known.pod,
                kept,
            )
        failed: Status | None = None
        if self._prefix:
            if static in ev.node_object:
                failed = ev.node_object[static]
            else:
                for plugin in self.profile.local_filters[: self._prefix]:
                    status = plugin.filter(state, cycle, pod, node)
                    if not status.ok:
                        failed = status.with_plugin(plugin.name)
                        break
                ev.node_object[static] = failed
        if failed is not None:
            result = NodeEval(version, failed)
        elif self._dra_shared:
            key = (ev.claims, self._dra_devices(cycle, node, devices))
            shared = self._dra.get(key) if not exact and ev.claimed else None
            if shared is not None and _final(shared[0]):
                return NodeEval(
                    version, shared[0], origin=shared[1], pod=pod.key, usage=usage, exact=False
                )
            dra = (self._dra, key)
            result = _evaluate(self.profile, state, cycle, pod, node, self._prefix, dra, version)
        else:
            result = _evaluate(self.profile, state, cycle, pod, node, self._prefix, None, version)
        result.pod = pod.key
        if not result.status.ok:
            result.usage = usage
        if len(ev.memo) >= MEMO_ENTRIES:
            ev.memo.clear()
        ev.memo[full] = (result, result.origin or name, bool(result.origin))
        return result

    def _store(self, ev: ShapeEvaluations, name: str, result: NodeEval | None) -> None:
        """Set (or, with None, drop) a node's result, count its failure and index it."""
        ev.stale.discard(name)
        old = ev.evals.pop(name, None) if result is None else ev.evals.get(name)
        if old is not None and (result is None or old.version != result.version):
            kept = ev.past.get(name)
            if kept is None:
                kept = ev.past[name] = deque(maxlen=PAST)
            kept.append(old)
        if old is not None and not old.status.ok:
            if old.status is not (result.status if result is not None else None):
                if self.explain_failures:
                    tally(ev.printed, ev.codes, old.status, -1)
                    _discard(ev.reasoned, name)
            elif result is not None:
                ev.evals[name] = result  # the same failure (a shared status): counts stay
                return
        if result is not None:
            ev.evals[name] = result
            if self.explain_failures and not result.status.ok:
                tally(ev.printed, ev.codes, result.status, 1)
                if isinstance(result.status.detail, Reason):
                    _add(ev.reasoned, name)
        was = old is not None and old.status.ok
        now = result is not None and result.status.ok
        if was:
            assert old is not None
            ev.raws[old.raw] -= 1
            if not ev.raws[old.raw]:
                del ev.raws[old.raw]
        if now:
            assert result is not None
            ev.raws[result.raw] += 1
        if was == now:
            return
        if now:
            ev.feasible.add(name)
        else:
            ev.feasible.discard(name)
        if ev.epoch == self._order.epoch:
            place = self._order.position.get(name)
            if place is None:
                ev.epoch = -1  # a node the order does not have yet: placed when it does
            elif now:
                insort(ev.places, place)
            else:
                _discard(ev.places, place)

    def refresh(self, state: ClusterState, cycle: CycleState, pod: PodInfo) -> ShapeEvaluations:
        self.attach(state)
        ev = self.of(cycle, pod)
        changed = state.changed_since(ev.cursor)
        if changed is None:
            todo = list(state.nodes.keys())
            ev.evals.clear()
            ev.feasible.clear()
            ev.places.clear()
            ev.raws.clear()
            ev.printed.clear()
            ev.codes.clear()
            ev.reasoned.clear()
            ev.stale.clear()
            ev.past.clear()
            ev.impossible.clear()
        else:
            todo = changed
        ev.cursor = len(state.change_log)
        everywhere = state.version("*")[0]  # read once: every node's version starts with it
        for name in todo:
            self._refresh_node(state, cycle, pod, ev, name, everywhere)
        return ev

    def _refresh_node(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        ev: ShapeEvaluations,
        name: str,
        everywhere: int,
    ) -> None:
        node = state.nodes.get(name)
        if node is None:
            if name in ev.evals:
                self._store(ev, name, None)
            return
        version = (everywhere, state.node_version.get(name) or 0)
        current = ev.evals.get(name)
        if current is not None and current.version == version:
            return
        # A version that came back (a reverted fork) has its answer kept: the cheapest way.
        result = _recalled(ev, name, version) if ev.past else None
        if result is None and current is not None:
            hardware = ev.impossible.get(name)
            if (
                hardware is not None
                and hardware[0] is node
                and hardware[1] is state.pools_for_node(node)
            ):
                ev.stale.add(name)  # cheaper than `fuller`: usage does not matter
                return
            if (
                current.usage is not None
                and self._monotone
                and current.version[0] == version[0]  # no cluster-wide change since
                and _final(current.status)
                and fuller(self._node_state(state, node, version)[1], current.usage)
            ):
                ev.stale.add(name)  # still does not fit; why is recomputed when asked
                return
        if result is None:
            result = self._evaluate(state, cycle, pod, node, ev, version)
        self._store(ev, name, result)
        self._settle(state, ev, name, node, result)

    def _settle(
        self, state: ClusterState, ev: ShapeEvaluations, name: str, node: Node, result: NodeEval
    ) -> None:
        """Note what a node's new result says beyond its status: known only to fail, or
        failing for good while the node's hardware stays."""
        if not result.exact:
            ev.stale.add(name)
        if not result.status.ok and self._monotone and self._static_failure(result.status):
            ev.impossible[name] = (node, state.pools_for_node(node))
        else:
            ev.impossible.pop(name, None)

    def _static_failure(self, status: Status) -> bool:
        """Whether a failure is one that no change of usage undoes: a filter that reads only
        the Node object, or DynamicResources finding fewer matching devices than needed."""
        if status.plugin in NODE_OBJECT_FILTERS:
            return True
        detail = status.detail
        return (
            status.plugin == self.profile.dra.name
            and isinstance(detail, Reason)
            and detail.code == NO_MATCHING_DEVICE
        )

    def refresh_only(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, names: Iterable[str]
    ) -> ShapeEvaluations:
        """Bring only `names` up to date: O(len(names)), not O(nodes), for callers that pin a
        pod to a few nodes (the autoscaler's estimator). The change-log cursor stays put, so
        the next full refresh still visits every node changed since (those done here are
        skipped by their version)."""
        self.attach(state)
        ev = self.of(cycle, pod)
        everywhere = state.version("*")[0]
        for name in names:
            self._refresh_node(state, cycle, pod, ev, name, everywhere)
        return ev

    def freshen(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, ev: ShapeEvaluations
    ) -> None:
        """Recompute the statuses of failing nodes skipped because they only got fuller."""
        for name in sorted(ev.stale):
            node = state.nodes.get(name)
            if node is None:
                continue
            version = state.version(name)
            self._store(ev, name, self._evaluate(state, cycle, pod, node, ev, version, True))
        ev.stale.clear()

    def of(self, cycle: CycleState, pod: PodInfo) -> ShapeEvaluations:
        """The evaluations kept for pods like `pod` (PreFilter has run in `cycle`)."""
        dra = cycle.data.get(names.DYNAMIC_RESOURCES)
        claims = getattr(dra, "claims", ())
        key = evaluation_key(pod, claims)
        ev = self.shapes.get(key)
        if ev is None:
            ev = self.shapes[key] = ShapeEvaluations()
            ev.shared = shareable(pod.pod, claims)
            ev.merged = key != (pod.local_shape or pod.shape)
            if ev.shared:
                self._note_reads(claims)
                specs = msgspec.msgpack.encode([c.spec for c in claims], enc_hook=str)
                ev.claims = self._intern((b"claims", specs))
                ev.claimed = any(c.status.allocation is None for c in claims)
        return ev

    def _note_reads(self, claims: Sequence[ResourceClaim]) -> None:
        """Count the attributes a new shape's claims read (claims made after `reset`); node
        signatures are recomputed if that tells devices apart that were alike."""
        if self._attributes is None or self._state is None:
            return
        classes = self._state.device_classes.values()
        selectors = [s for dc in classes for s in dc.spec.selectors]
        wider = merge(self._attributes, selectors, [c.spec for c in claims])
        if not self._attributes.covers(wider):
            self._attributes = wider
            self._signatures.clear()
            self._pools.clear()
            self._read.clear()

    # --- the best node ---------------------------------------------------------------------

    def _places(self, ev: ShapeEvaluations) -> list[int]:
        """The places in the node order of the nodes every node-local filter passes."""
        order = self._order
        if ev.epoch != order.epoch:
            position = order.position
            ev.places = sorted(position[name] for name in ev.feasible if name in position)
            ev.epoch = order.epoch
        return ev.places

    def _pick(self, tied: Sequence[str], pod: PodInfo) -> str:
        """A uniformly random one of `tied` (sorted): drawn from a generator seeded with the
        profile's seed and the pod, so the choice does not depend on the order nodes were
        evaluated in or on how many answers were shared."""
        draw = random.Random(f"{self.profile.seed}/{pod.key[0]}/{pod.key[1]}")
        return tied[draw.randrange(len(tied))]

    def cluster_status(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        node: Node,
        before: int | None = None,
    ) -> Status | None:
        """The first failure of the cluster filters this pod runs (those placed before the
        filter numbered `before` only), or None."""
        for place, plugin in self.profile.cluster_filters:
            if before is not None and place >= before:
                break
            if plugin.name in cycle.skip_filter:
                continue
            status: Status = plugin.filter(state, cycle, pod, node)
            if not status.ok:
                return status if status.plugin == plugin.name else status.with_plugin(plugin.name)
        return None

    def _search(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        names: Sequence[str],
        places: list[int],
        start: int,
        wanted: int,
    ) -> tuple[list[str], int, dict[str, Status]]:
        """The first `wanted` feasible nodes from `start` on (their places sorted in
        `places`), how many nodes the search went through, and the cluster filters' failures
        on the way."""
        n = len(names)
        m = len(places)
        i = bisect_left(places, start)
        held = nominees(state)
        active = held or self.cluster_active(cycle)
        if not active:
            if m <= wanted:
                return list(map(names.__getitem__, places)), n, {}
            chosen = places[i : i + wanted]
            if len(chosen) < wanted:
                chosen += places[: wanted - len(chosen)]
            return list(map(names.__getitem__, chosen)), (chosen[-1] - start) % n + 1, {}
        found: list[str] = []
        failed: dict[str, Status] = {}
        nodes = state.nodes
        for j in range(m):
            place = places[(i + j) % m]
            name = names[place]
            status = self.nominated_status(state, cycle, pod, nodes[name]) if held else None
            status = status or self.cluster_status(state, cycle, pod, nodes[name])
            if status is not None:
                failed[name] = status
                continue
            found.append(name)
            if len(found) == wanted:
                return found, (place - start) % n + 1, failed
        return found, n, failed

    def select(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        ev: ShapeEvaluations,
        candidates: Sequence[str] | None = None,
    ) -> Selection:
        """The node kube-scheduler binds `pod` to (see the module's note), with the evaluations
        of `ev` up to date. `candidates`: only those nodes, tried in that order from the first
        (draplan's own trials: a template node, a topology domain); otherwise every node in
        the scheduler's order from where the last cycle stopped."""
        evals = ev.evals
        if candidates is None:
            self._order.sync(state)
            names: Sequence[str] = self._order.names
            start = (state.search_start.get(self.profile.name) or 0) % max(len(names), 1)
            places = self._places(ev)
        else:
            names, start = candidates, 0
            places = [i for i, name in enumerate(names) if (e := evals.get(name)) and e.status.ok]
        wanted = num_feasible_to_find(self.profile.percentage, len(names))
        if not self.profile.scores:
            wanted = min(wanted, 1)  # nothing to score: the first feasible node
        found, processed, failed = self._search(state, cycle, pod, names, places, start, wanted)
        if len(found) <= 1:
            return Selection(found[0] if found else None, processed, failed)
        tied = self._best(state, cycle, pod, ev, found)
        if isinstance(tied, Status):
            return Selection(None, processed, failed, tied)
        node = self._pick(tied, pod) if self.random_ties and len(tied) > 1 else tied[0]
        return Selection(node, processed, failed)

    def _best(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        ev: ShapeEvaluations,
        found: list[str],
    ) -> list[str] | Status:
        """PreScore, Score, NormalizeScore and the weighted sum over the nodes `found`: those
        with the highest total, sorted by name. Totals are in `found`'s order; while only
        node-local scores count, each is worked out once per distinct cached score (the 500
        nodes kube-scheduler scores at 10,000 read a handful), adding up in the same order."""
        records = list(map(ev.evals.__getitem__, found))
        totals: list[float] = list(map(_SCORE, records))
        normalized = self.profile.normalized_scores
        if normalized and len(ev.raws) > 1:
            for j, (plugin, weight) in enumerate(normalized):
                scores = [NodeScore(name, r.raw[j]) for name, r in zip(found, records, strict=True)]
                plugin.normalize_score(state, cycle, pod, scores)
                totals = [t + weight * item.score for t, item in zip(totals, scores, strict=True)]
        elif normalized:
            # Equal raw scores normalize to equal values: one node tells them all.
            adds = []
            for j, (plugin, weight) in enumerate(normalized):
                one = [NodeScore(found[0], records[0].raw[j])]
                plugin.normalize_score(state, cycle, pod, one)
                adds.append(weight * one[0].score)
            folded = {}
            for score in set(totals):
                total = score
                for add in adds:
                    total += add
                folded[score] = total
            totals = list(map(folded.__getitem__, totals))
        cluster = self.profile.cluster_scores
        if cluster:
            nodes: Sequence[Node] = _Nodes(state, found)
            for plugin, _ in cluster:
                if callable(getattr(plugin, "pre_score", None)):
                    status: Status = plugin.pre_score(state, cycle, pod, nodes)
                    if status.code == Code.SKIP:
                        cycle.skip_score.add(plugin.name)
                    elif not status.ok:
                        return status.with_plugin(plugin.name)
            if any(plugin.name not in cycle.skip_score for plugin, _ in cluster):
                nodes = list(nodes)
            for plugin, weight in cluster:
                if plugin.name in cycle.skip_score:
                    continue
                scores = [
                    NodeScore(node.metadata.name, int(plugin.score(state, cycle, pod, node)))
                    for node in nodes
                ]
                if callable(getattr(plugin, "normalize_score", None)):
                    plugin.normalize_score(state, cycle, pod, scores)
                totals = [t + weight * item.score for t, item in zip(totals, scores, strict=True)]
        best = max(totals)
        return sorted(compress(found, map(eq, totals, repeat(best))))

    # --- answers of the node itself --------------------------------------------------------

    def confirm(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        ev: ShapeEvaluations,
        name: str,
        alike: dict[Hashable, Status] | None = None,
    ) -> None:
        """Evaluate `name` itself (not an identical node): before Reserve, and for evidence.
        A shared answer that passed the filters before DynamicResources still does (they
        were evaluated for an identical node): only DynamicResources runs again. `alike`:
        the allocator's failures for this pod on nodes already confirmed in this state, by
        what DynamicResources reads of a node; a node that reads alike gets the same
        failure, worded for it, without another search."""
        node = state.nodes[name]
        current = ev.evals.get(name)
        dra = self.profile.dra
        if (
            current is not None
            and current.exact
            and (current.status.ok or current.status.plugin == dra.name)
            and not any(p.name in READS_ALLOCATION for p, _ in self.profile.scores)
        ):
            status = self._dra_status(state, cycle, pod, ev, node, current, alike)
            if status.ok == current.status.ok:
                details = dict(current.details)
                if status.detail is not None:
                    details[dra.name] = status.detail
                    cycle.data[(dra.name, name)] = status.detail
                if not status.ok:
                    status = status.with_plugin(dra.name)
                result = NodeEval(
                    current.version, status, current.score, current.raw, details, pod=pod.key
                )
                if not status.ok:
                    result.usage = current.usage
                self._store(ev, name, result)
                return
        result = evaluate_node(self.profile, state, cycle, pod, node)
        result.pod = pod.key
        self._store(ev, name, result)

    def _dra_status(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        ev: ShapeEvaluations,
        node: Node,
        current: NodeEval,
        alike: dict[Hashable, Status] | None,
    ) -> Status:
        """DynamicResources' Filter on `node`, or a failure `alike` holds for a node that
        reads alike (the same key as its shared answers) worded for this one."""
        dra = self.profile.dra
        if alike is None or current.status.ok or not ev.shared or not self._dra_shared:
            return dra.filter(state, cycle, pod, node)
        (_, devices, _), _ = self._node_state(state, node)
        key = self._dra_devices(cycle, node, devices)
        seen = alike.get(key)
        if seen is not None and isinstance(seen.detail, Reason):
            reason = seen.detail.on_node(node.metadata.name)
            if reason is not None:
                return Status(seen.code, seen.reasons, seen.plugin, reason)
        status = dra.filter(state, cycle, pod, node)
        detail = status.detail
        if not status.ok and isinstance(detail, Reason) and _final(status):
            alike[key] = status
        return status

    def _borrowed(self, ev: ShapeEvaluations, e: NodeEval, pod: PodInfo) -> bool:
        return bool(e.origin) or (ev.merged and e.pod != pod.key)

    def explain(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        ev: ShapeEvaluations,
        names: list[str] | None = None,
        sample: int | None = None,
    ) -> None:
        """Recompute shared allocator failures of `names` (default: every node) on the node
        itself, so that their evidence names it and the pod's claims. With `sample`, only
        the first that many in name order (what fit_error shows)."""
        self.freshen(state, cycle, pod, ev)
        exact = 0
        alike: dict[Hashable, Status] = {}
        for name in sorted(names if names is not None else ev.evals):
            e = ev.evals.get(name)
            if e is None or e.status.ok or not isinstance(e.status.detail, Reason):
                continue
            if self._borrowed(ev, e, pod) and name in state.nodes:
                self.confirm(state, cycle, pod, ev, name, alike)
                e = ev.evals[name]
                if e.status.ok or not isinstance(e.status.detail, Reason):
                    continue
            exact += 1
            if sample is not None and exact >= sample:
                return

    def fit_error(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        ev: ShapeEvaluations,
        total: int,
        failed: Mapping[str, Status],
    ) -> FitReason:
        """scheduler.reasons.fit_error over every node, from the failure counts kept as nodes
        change and the first failures with allocator evidence (recomputed if shared); with
        cluster filters in the cycle, from every node's status in profile order (`failed`:
        their failures the search found). With explanations off, only the number of nodes."""
        if not self.explain_failures:
            return FitReason(f"0/{total} nodes are available.")
        self.freshen(state, cycle, pod, ev)
        if self.cluster_active(cycle) or nominees(state):
            self.explain(state, cycle, pod, ev, sample=SAMPLE)
            statuses = NodeStatuses(self, state, cycle, pod, ev, list(ev.evals), failed)
            return fit_error(total, {n: st for n, st in statuses.items() if not st.ok})
        evidence: dict[str, Any] = {}
        # The first failures in name order (a copy: confirming a node may drop it).
        for name in list(ev.reasoned):
            e = ev.evals[name]
            if self._borrowed(ev, e, pod):
                self.confirm(state, cycle, pod, ev, name)
                e = ev.evals[name]
                if e.status.ok or not isinstance(e.status.detail, Reason):
                    continue
            evidence[name] = e.status.detail.to_dict()
            if len(evidence) >= SAMPLE:
                break
        return aggregate(total, ev.printed, ev.codes, evidence)

    def fit_error_among(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        ev: ShapeEvaluations,
        candidates: list[str],
        failed: Mapping[str, Status],
        total: int | None = None,
        absent: Status | None = None,
    ) -> FitReason:
        """`fit_error` over `candidates` only (counted from their statuses); out of `total`
        nodes, the others counted with the status `absent`."""
        total = len(candidates) if total is None else total
        if not self.explain_failures:
            return FitReason(f"0/{total} nodes are available.")
        self.explain(state, cycle, pod, ev, candidates, sample=SAMPLE)
        statuses = NodeStatuses(self, state, cycle, pod, ev, candidates, failed)
        failing = {n: st for n, st in statuses.items() if not st.ok}
        return fit_error(total, failing, absent=absent)

    def nominated_status(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node
    ) -> Status | None:
        """The first failure with the pods nominated to `node` added (scheduler.nominated:
        the first of RunFilterPluginsWithNominatedPods' two runs), or None."""
        status = with_nominated(self.profile.filters, state, cycle, pod, node)
        return None if status.ok else status

    def cluster_active(self, cycle: CycleState) -> bool:
        return any(p.name not in cycle.skip_filter for _, p in self.profile.cluster_filters)

    @staticmethod
    def failures(ev: ShapeEvaluations, only: list[str] | None = None) -> dict[str, Status]:
        names = only if only is not None else list(ev.evals)
        return {
            n: ev.evals[n].status
            for n in names
            if n in ev.evals and ev.evals[n].status.code != Code.SUCCESS
        }


class NodeStatuses(Mapping[str, Status]):
    """Each node's Filter status as kube-scheduler reports it — the first failure in the
    profile's order, node-local (cached) or cluster (`failed`, else run when asked) —
    computed when asked, so that a PostFilter plugin reading a few nodes costs only those."""

    def __init__(
        self,
        evaluator: Evaluator,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        ev: ShapeEvaluations,
        names: Sequence[str] | None,
        failed: Mapping[str, Status],
    ) -> None:
        """`names`: the nodes to report, those evaluated among them; None: every node
        evaluated."""
        self._evaluator, self._state, self._cycle, self._pod = evaluator, state, cycle, pod
        self._ev = ev
        evals = ev.evals
        self._names = list(evals) if names is None else [n for n in names if n in evals]
        self._known = dict(failed)
        self._active = evaluator.cluster_active(cycle)
        self._held = nominees(state)

    def __getitem__(self, name: str) -> Status:
        known = self._known.get(name)
        if known is not None:
            return known
        node = self._state.nodes.get(name)
        if self._held and node is not None:
            first = self._evaluator.nominated_status(self._state, self._cycle, self._pod, node)
            if first is not None:
                self._known[name] = first
                return first
        status = self._ev.evals[name].status
        if self._active and node is not None:
            before = None if status.ok else self._evaluator.filter_place.get(status.plugin)
            earlier = self._evaluator.cluster_status(
                self._state, self._cycle, self._pod, node, before
            )
            status = earlier or status
        self._known[name] = status
        return status

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class _Nodes(Sequence[Node]):
    """The Node objects of `names`, looked up when read: a PreScore plugin that skips reads
    none of them."""

    def __init__(self, state: ClusterState, names: Sequence[str]) -> None:
        self._nodes = state.nodes
        self._names = names

    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._nodes[n] for n in self._names[i]]
        return self._nodes[self._names[i]]

    def __iter__(self) -> Iterator[Node]:
        nodes = self._nodes
        return (nodes[n] for n in self._names)
