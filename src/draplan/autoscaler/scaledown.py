"""Scale-down: remove under-utilized nodes only when every pod on them, claims included, can be
placed elsewhere by the same scheduler; never break a running gang; honour safe-to-evict; never
remove what the same pass's scale-up needs.

Cluster Autoscaler packs the pending pods that fit existing nodes onto them in its snapshot
before anything else (core/podlistprocessor/filter_out_schedulable.go), so the room they take
is not unneeded; its RunOnce (core/static_autoscaler.go) returns right after a successful
scale-up ("No scale down in this iteration") and then waits --scale-down-delay-after-add
(10 minutes) before removing anything; pods evicted by a scale-down may only go to registered
nodes, never to upcoming ones (its podDestinations exclude them). One pass of draplan reports
both halves, so it keeps the halves consistent: nodes of a pool or shape the pass adds to are
never removed, nor nodes the pass's pending pods were placed on or could use, moved pods go to
existing nodes only, and removals in a pass that adds nodes are marked as coming after the
delay.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from draplan.api.core_v1 import Node, Pod
from draplan.api.resource_v1 import ResourceClaim
from draplan.autoscaler.shapes import node_shape
from draplan.autoscaler.utilization import scale_down_utilization
from draplan.cluster.nodepools import node_pool, pool_name
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import Scheduler
from draplan.scheduler.claims import pod_claims, release_claims
from draplan.scheduler.evaluations import shareable
from draplan.scheduler.gangs import find_gangs

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
THRESHOLD = 0.5  # --scale-down-utilization-threshold and --scale-down-gpu-utilization-threshold
NAMED = 3  # pending pods named in a removal's reason at most
MEMO_ENTRIES = 1 << 18  # answers a ScaleDownMemo keeps at most; a full memo starts over

Version = tuple[int, int]


@dataclass(frozen=True)
class Removal:
    node: str
    reason: str
    pool: str = ""
    delayed: bool = False  # after --scale-down-delay-after-add: the same pass adds nodes

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"node": self.node, "reason": self.reason}
        if self.pool:
            out["pool"] = self.pool
        if self.delayed:
            out["delayedByScaleUp"] = True
        return out


@dataclass(frozen=True)
class Needs:
    """What the same pass's scale-up needs kept."""

    added: frozenset[str] = frozenset()  # nodes the pass adds
    used: frozenset[str] = frozenset()  # existing nodes its pending pods or moves use
    pending: Sequence[Pod] = field(default_factory=tuple)  # pods that still pend after it


class ScaleDownMemo:
    """What scale-down learnt of single nodes, kept between passes over one state (an
    autoscaler's life): a node's utilization and whether a pending pod's shape fits it, each
    under the node's version, which names what the node held (a state's versions are unique
    over its life, and a reverted fork restores the version of what it restores)."""

    def __init__(self) -> None:
        self._state: ClusterState | None = None
        self.utilization: dict[str, tuple[Version, float]] = {}
        # (node, pod shape, PreFilter passed) -> (version, fits, the scheduler's reasons).
        self.fits: dict[tuple[str, bytes, bool], tuple[Version, bool, tuple[str, ...] | None]] = {}

    def of(self, state: ClusterState) -> ScaleDownMemo:
        """The memo for `state`: what was learnt on another state is forgotten."""
        if state is not self._state or len(self.fits) > MEMO_ENTRIES:
            self._state = state
            self.utilization.clear()
            self.fits.clear()
        return self

    def node_utilization(self, state: ClusterState, node: Node) -> float:
        name = node.metadata.name
        version = state.version(name)
        hit = self.utilization.get(name)
        if hit is not None and hit[0] == version:
            return hit[1]
        value = scale_down_utilization(state, node)
        self.utilization[name] = (version, value)
        return value


def plan_scale_down(
    state: ClusterState,
    scheduler: Scheduler,
    needs: Needs | None = None,
    memo: ScaleDownMemo | None = None,
) -> list[Removal]:
    """Candidates in name order; each accepted removal is kept in `state` for the next one.
    `memo` (kept by the caller for `scheduler`'s profile) spares re-judging unchanged nodes."""
    needs = needs or Needs()
    memo = (memo or ScaleDownMemo()).of(state)
    removals: list[Removal] = []
    gangs = find_gangs(state)
    added = [state.nodes[n] for n in sorted(needs.added) if n in state.nodes]
    added_pools = {pool_name(state, n) for n in added} - {""}
    added_shapes = [node_shape(state, n) for n in added]
    pending = _distinct(state, scheduler, needs.pending)
    alike: dict[tuple[int, bytes], tuple[bool, tuple[str, ...] | None]] = {}
    # Nodes per pool, counted when a pool's minimum is first looked at (removals so far are
    # gone from the state by then) and kept up to date after.
    members: Counter[str] | None = None
    index = _Index(state)
    for name in sorted(state.nodes.keys()):
        if name in needs.added or name in needs.used:
            continue
        node = state.nodes[name]
        utilization = memo.node_utilization(state, node)
        if utilization > THRESHOLD:
            continue
        group = pool_name(state, node)
        if group in added_pools:
            continue
        if added_shapes and any(node_shape(state, node).matches(s) for s in added_shapes):
            continue
        pool = node_pool(state, node)
        if pool is not None:
            if members is None:
                members = Counter(pool_name(state, n) for n in state.nodes.values())
            if members[group] <= pool.spec.min_nodes:
                continue
        pods = index.pods.get(name, [])
        if any(p.metadata.annotations.get(SAFE_TO_EVICT) == "false" for p in pods):
            continue
        if any(key_of(p) in gangs for p in pods):
            continue  # never break a running gang
        unusable = _unusable(state, scheduler, name, pending, memo, alike)
        if unusable is None:
            continue  # a pending pod fits there: capacity the pass's pods need
        keys = {key_of(p) for p in pods}
        with state.forked():
            if release_claims(state, keys, index.claims_of(keys)):
                continue
            for pod in pods:
                state.unbind_pod(pod)
            state.remove_node(name)
            targets = sorted(set(state.nodes) - needs.added) if needs.added else None
            moved = all(
                scheduler.schedule_pod(state, state.pods[k], targets).node for k in sorted(keys)
            )
            if moved:
                state.commit()
                state.fork()
        if moved:
            what = f"{len(pods)} pod(s) fit elsewhere" if pods else "no pod uses it"
            reason = f"utilization {utilization:.2f} <= {THRESHOLD}; {what}{unusable}"
            removals.append(Removal(name, reason, group, bool(needs.added)))
            if members is not None:
                members[group] -= 1
            index.moved(state, name, keys)
    return removals


class _Index:
    """Each node's pods and each pod's claims, in the state's order, as one scan finds them
    (scanning every pod and claim per candidate node is quadratic on a large cluster)."""

    def __init__(self, state: ClusterState) -> None:
        self.pods: dict[str, list[Pod]] = {}
        for p in state.pods.values():
            if p.spec.node_name and not is_terminal(p):
                self.pods.setdefault(p.spec.node_name, []).append(p)
        self._claims: dict[ObjectKey, list[tuple[int, ResourceClaim]]] = {}
        for i, claim in enumerate(state.claims.values()):
            if claim.status.allocation is None:
                continue
            for ref in claim.status.reserved_for:
                key = (claim.metadata.namespace, ref.name)
                self._claims.setdefault(key, []).append((i, claim))

    def moved(self, state: ClusterState, node: str, keys: set[ObjectKey]) -> None:
        """`node` is gone and its pods `keys` run elsewhere, their claims allocated again
        (a replaced claim keeps its place in the state's order)."""
        self.pods.pop(node, None)
        for key in sorted(keys):
            pod = state.pods[key]
            self.pods.setdefault(pod.spec.node_name, []).append(pod)
            self._claims[key] = [
                (i, state.claims.get(key_of(c)) or c) for i, c in self._claims.get(key, [])
            ]

    def claims_of(self, pods: set[ObjectKey]) -> list[ResourceClaim]:
        """The allocated claims some of `pods` use, in the state's order."""
        found = {i: c for key in pods for i, c in self._claims.get(key, [])}
        return [found[i] for i in sorted(found)]


@dataclass(frozen=True)
class _Pending:
    """One pod of a scheduling shape that still pends (pods of one shape fit the same nodes)."""

    pod: Pod
    shape: bytes
    admitted: bool  # PreFilter passes it
    shared: bool  # it names no node: identical nodes give it one answer (scheduler.evaluations)


def _distinct(state: ClusterState, scheduler: Scheduler, pods: Sequence[Pod]) -> list[_Pending]:
    seen: set[bytes] = set()
    out = []
    for pod in sorted(pods, key=key_of):
        shape, admitted = scheduler.admits(state, pod)
        if shape not in seen:
            seen.add(shape)
            shared = admitted and shareable(pod, pod_claims(state, pod))
            out.append(_Pending(pod, shape, admitted, shared))
    return out


def _unusable(
    state: ClusterState,
    scheduler: Scheduler,
    name: str,
    pending: list[_Pending],
    memo: ScaleDownMemo,
    alike: dict[tuple[int, bytes], tuple[bool, tuple[str, ...] | None]],
) -> str | None:
    """None when one of the pending pods fits on node `name` as it is; else why none can
    use it (the scheduler's reasons on that node), as a clause for the removal's reason.
    `alike`: the answers of this pass by node signature, for pods that name no node (the
    scheduler gives identical nodes one answer, its reason codes included)."""
    why: list[str] = []
    version = state.version(name)
    signature = None
    for p in pending:
        hit = memo.fits.get((name, p.shape, p.admitted))
        if hit is not None and hit[0] == version:
            found = hit[1], hit[2]
        else:
            if p.shared and signature is None:
                signature = scheduler.evaluator.signature(state, state.nodes[name], version)[0]
            same = alike.get((signature, p.shape)) if p.shared and signature is not None else None
            if same is None:
                with state.forked():
                    result = scheduler.schedule_pod(state, p.pod, [name])
                reasons = tuple(result.reason.nodes) if result.reason is not None else None
                same = (result.node is not None, reasons)
                if p.shared and signature is not None:
                    alike[signature, p.shape] = same
            found = same
            memo.fits[(name, p.shape, p.admitted)] = (version, *found)
        fits, reasons = found
        if fits:
            return None
        if reasons is not None and len(why) < NAMED:
            key = key_of(p.pod)
            why.append(f"{key[0]}/{key[1]}: {', '.join(reasons)}")
    if not why:
        return ""
    more = f"; {len(pending) - len(why)} more" if len(pending) > len(why) else ""
    return f"; no pending pod can use it ({'; '.join(why)}{more})"
