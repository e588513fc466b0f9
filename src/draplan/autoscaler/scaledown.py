"""Scale-down as Cluster Autoscaler 1.36 decides it, in one pass: which nodes it would remove,
and for every node it keeps, the rule that kept it.

CA's rules, in its order (`core/scaledown/eligibility/eligibility.go`, `unremovableReason…`;
`processors/nodes/pre_filtering_processor.go`; `core/scaledown/unneeded/nodes.go`,
`RemovableAt`; `simulator/cluster.go`, `FindNodesToRemove`): only nodes of node groups CA
manages (NotAutoscaled: a control-plane node, nodes of no group; Karpenter's nodes are left to
`autoscaler.karpenter_disruption`, which judges them after this pass), not one being
deleted (CurrentlyBeingDeleted), not one annotated
`cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"` (ScaleDownDisabledAnnotation),
an unready one only with `--scale-down-unready-enabled` (ScaleDownUnreadyDisabled), only below
`--scale-down-utilization-threshold` (or the GPU threshold for a node with accelerators;
NotUnderutilized: utilization at or above it), never taking a group below its min size
(NodeGroupMinSizeReached), not one whose pods block (BlockedByPod: `drain`), and only when its
pods fit elsewhere (NoPlaceToMovePods); a node is removed once unneeded for
`--scale-down-unneeded-time` (10 min), an unready one `--scale-down-unready-time` (20 min).
DaemonSet pods are evicted with the node, mirror pods ignored; the rest are placed on other
existing nodes by the same scheduler, claims included. A group that is one multi-host slice
(`draplan.io/slice-nodes`) is removed whole or kept whole (CA's atomic node groups:
AtomicScaleDownFailed).

CA packs the pending pods that fit existing nodes onto them before anything else
(core/podlistprocessor/filter_out_schedulable.go), so the room they take is not unneeded; its
RunOnce (core/static_autoscaler.go) returns right after a successful scale-up ("No scale down in
this iteration") and then waits --scale-down-delay-after-add (10 minutes) before removing
anything; pods evicted by a scale-down may only go to registered nodes, never to upcoming ones
(its podDestinations exclude them). One pass of draplan reports both halves, so it keeps them
consistent: nodes of a pool or shape the pass adds to are kept, and so are nodes the pass's
pending pods are placed on or could use; moved pods go to existing nodes only, and removals in a
pass that adds nodes are marked as coming after the delay. CA has no rule for a gang's pods
(simulator/drainability/rules/rules.go: Default lists none), so under a kube-scheduler profile a
gang member is drained like any other pod and put back pod by pod; draplan's own profile
(`--profile draplan`) also keeps every node running a member of a group it recognises
(GangMember), a rule of its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from draplan.api.core_v1 import Node, Pod
from draplan.api.resource_v1 import ResourceClaim
from draplan.autoscaler.ca import managed, readiness
from draplan.autoscaler.derived import SLICE_NODES
from draplan.autoscaler.drain import Budgets, Drain, DrainOptions, drain
from draplan.autoscaler.options import EXPENDABLE_CUTOFF
from draplan.autoscaler.owners import CLUSTER_AUTOSCALER, is_control_plane, karpenter_nodes
from draplan.autoscaler.scaleup import expendable
from draplan.autoscaler.shapes import node_shape
from draplan.autoscaler.templates import NewNode, add_new_node
from draplan.autoscaler.utilization import scale_down_utilization
from draplan.cluster.nodepools import node_pool, pool_name, pool_sizes
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import PodResult, Scheduler
from draplan.scheduler.claims import pod_claims, release_claims
from draplan.scheduler.evaluations import shareable
from draplan.scheduler.gangs import find_gangs

DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler"  # CA's taint on a node it is deleting
NAMED = 3  # pending pods named in a removal's reason at most
MEMO_ENTRIES = 1 << 18  # answers a ScaleDownMemo keeps at most; a full memo starts over

Version = tuple[int, int]


@dataclass(frozen=True)
class ScaleDownOptions:
    """Cluster Autoscaler's scale-down flags, with its defaults."""

    utilization_threshold: float = 0.5  # --scale-down-utilization-threshold
    gpu_utilization_threshold: float = 0.5  # --scale-down-gpu-utilization-threshold
    unneeded_time: timedelta = timedelta(minutes=10)  # --scale-down-unneeded-time
    unready_time: timedelta = timedelta(minutes=20)  # --scale-down-unready-time
    unready_enabled: bool = True  # --scale-down-unready-enabled
    drain: DrainOptions = field(default_factory=DrainOptions)


@dataclass(frozen=True)
class Removal:
    """A node an autoscaler removes: Cluster Autoscaler's scale-down, or Karpenter's
    consolidation (`rule`: its disruption reason, Empty or Underutilized; `method`: the
    consolidation that chose it, Karpenter's ConsolidationType: empty, multi or single)."""

    node: str
    reason: str
    pool: str = ""
    delayed: bool = False  # after --scale-down-delay-after-add: the same pass adds nodes
    after: str = ""  # CA: how long it must stay unneeded first; Karpenter: its validation wait
    autoscaler: str = CLUSTER_AUTOSCALER
    rule: str = ""
    method: str = ""
    replaced_by: tuple[str, str, float] | None = None  # Karpenter's new node, pool, price

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"node": self.node, "autoscaler": self.autoscaler}
        if self.rule:
            out["disruptionReason"] = self.rule
            out["consolidation"] = self.method
        if self.replaced_by is not None:
            node, pool, price = self.replaced_by
            out["replacement"] = {"node": node, "pool": pool, "costPerHour": round(price, 4)}
        out["reason"] = self.reason
        if self.pool:
            out["pool"] = self.pool
        if self.after:
            out["unneededFor" if self.autoscaler == CLUSTER_AUTOSCALER else "after"] = self.after
        if self.delayed:
            out["delayedByScaleUp"] = True
        return out


@dataclass(frozen=True)
class Kept:
    """A node scale-down keeps: CA's UnremovableReason (or draplan's own rule), or what keeps
    Karpenter from disrupting it, and why."""

    node: str
    reason: str
    message: str
    pool: str = ""
    autoscaler: str = CLUSTER_AUTOSCALER

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "node": self.node,
            "autoscaler": self.autoscaler,
            "reason": self.reason,
        }
        if self.pool:
            out["pool"] = self.pool
        out["message"] = self.message
        return out


@dataclass
class ScaleDown:
    removals: list[Removal] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)


@dataclass(frozen=True)
class Needs:
    """What the same pass's scale-up needs kept."""

    added: frozenset[str] = frozenset()  # nodes the pass adds
    used: frozenset[str] = frozenset()  # existing nodes its pending pods or moves use
    pending: Sequence[Pod] = field(default_factory=tuple)  # pods that still pend after it
    # Pods below it (Cluster Autoscaler's expendable pods) neither block a removal nor move.
    expendable_cutoff: int = EXPENDABLE_CUTOFF


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


def _minutes(t: timedelta) -> str:
    return f"{int(t.total_seconds() // 60)}m"


def _has_accelerators(state: ClusterState, node: Node) -> bool:
    return bool(state.node_slices(node.metadata.name))


class _Pass:
    """One scale-down simulation: candidates in name order, each accepted removal kept in the
    state for the next one, every other node kept with its reason."""

    def __init__(
        self,
        state: ClusterState,
        scheduler: Scheduler,
        needs: Needs,
        memo: ScaleDownMemo,
        options: ScaleDownOptions,
        now: datetime,
    ) -> None:
        self.state, self.scheduler, self.needs = state, scheduler, needs
        self.memo, self.options, self.now = memo, options, now
        self.out = ScaleDown()
        # GangMember is draplan's rule, its profile's; CA drains gang members like any pod.
        self.gangs = {} if scheduler.profile.kube else find_gangs(state)
        added = [state.nodes[n] for n in sorted(needs.added) if n in state.nodes]
        self.added_pools = {pool_name(state, n) for n in added} - {""}
        self.added_shapes = [node_shape(state, n) for n in added]
        self.pending = distinct_pending(state, scheduler, needs.pending)
        self.alike: dict[tuple[int, bytes], tuple[bool, tuple[str, ...] | None]] = {}
        self.members = Counter(pool_sizes(state))  # node_pool's rule, the pools found once
        self.index = Index(state)
        self.budgets = Budgets(state)

    def keep(self, name: str, reason: str, message: str, group: str = "") -> None:
        self.out.kept.append(Kept(name, reason, message, group))

    def eligible(self, name: str) -> tuple[str, str] | None:
        """Why node `name` is no candidate (reason, message), or None."""
        state, node = self.state, self.state.nodes[name]
        if is_control_plane(node):
            return "NotAutoscaled", "a control-plane node"
        pool = node_pool(state, node)
        if pool is None:
            return "NotAutoscaled", "not in a node group Cluster Autoscaler manages"
        if any(t.key == TO_BE_DELETED for t in node.spec.taints):
            return "CurrentlyBeingDeleted", "Cluster Autoscaler is deleting it"
        if node.metadata.annotations.get(DISABLED) == "true":
            return "ScaleDownDisabledAnnotation", f'annotated {DISABLED}: "true"'
        group = pool.metadata.name
        if name in self.needs.used:
            return "UsedByPendingPods", "this pass's pending pods are placed or nominated on it"
        if group in self.added_pools or (
            self.added_shapes and any(node_shape(state, node).matches(s) for s in self.added_shapes)
        ):
            return "PoolGrowing", "this pass adds nodes of its pool or shape"
        ready, _ = readiness(node)
        if not ready and not self.options.unready_enabled:
            return "ScaleDownUnreadyDisabled", "unready, and --scale-down-unready-enabled=false"
        utilization = self.memo.node_utilization(state, node)
        if _has_accelerators(state, node):
            flag, threshold = "gpu-utilization", self.options.gpu_utilization_threshold
        else:
            flag, threshold = "utilization", self.options.utilization_threshold
        if utilization >= threshold:
            text = f"utilization {utilization:.2f} >= --scale-down-{flag}-threshold {threshold}"
            return "NotUnderutilized", text
        if self.members[group] <= pool.spec.min_nodes:
            return "NodeGroupMinSizeReached", f"{group} is at its min size {pool.spec.min_nodes}"
        return None

    def run(self, karpenter: Collection[str]) -> ScaleDown:
        """`karpenter`: the nodes Karpenter's disruption judges instead."""
        state = self.state
        slices: dict[str, list[str]] = {}
        for name in sorted(set(state.nodes.keys()) - self.needs.added - set(karpenter)):
            pool = node_pool(state, state.nodes[name])
            if pool and pool.metadata.annotations.get(SLICE_NODES) and managed(state, pool):
                slices.setdefault(pool.metadata.name, []).append(name)
                continue
            self.node(name)
        for group, hosts in sorted(slices.items()):
            self.whole(group, hosts)
        return self.out

    def node(self, name: str) -> None:
        """One candidate: kept with its reason, or removed and kept so in the state."""
        group = pool_name(self.state, self.state.nodes[name])
        why = self.eligible(name)
        if why is not None:
            self.keep(name, *why, group)
            return
        removed = self.remove([name])
        if isinstance(removed, Kept):
            self.out.kept.append(removed)
        else:
            self.out.removals.append(removed[0])

    def whole(self, group: str, hosts: list[str]) -> None:
        """A multi-host slice: every host removed together, or every one kept."""
        held = [(h, why) for h in hosts if (why := self.eligible(h)) is not None]
        unfit = [h for h, (r, _) in held if r != "NodeGroupMinSizeReached"]
        pool = self.state.node_pools.get(group)
        low = pool.spec.min_nodes if pool is not None else 0
        result: list[Removal] | Kept | None = None
        if not unfit and low == 0:
            result = self.remove(hosts)
        if isinstance(result, list):
            self.out.removals.extend(result)
            return
        cause = (
            f"host {unfit[0]}: {dict(held)[unfit[0]][1]}"
            if unfit
            else (result.message if isinstance(result, Kept) else f"min size {low}")
        )
        for host in hosts:
            self.keep(
                host,
                "AtomicScaleDownFailed",
                f"{group} is one multi-host slice, removed only whole; {cause}",
                group,
            )

    def remove(self, names: list[str]) -> list[Removal] | Kept:
        """Drain `names` together in a fork: the removals (committed to the state), or why the
        first of them is kept."""
        state, index = self.state, self.index
        first = names[0]
        group = pool_name(state, state.nodes[first])
        drains: list[Drain] = []
        killed: list[set[ObjectKey]] = []  # expendable pods, which go with their node
        for name in names:
            on_node = index.pods.get(name, [])
            pods = [p for p in on_node if not expendable(state, p, self.needs.expendable_cutoff)]
            killed.append({key_of(p) for p in on_node} - {key_of(p) for p in pods})
            if any(key_of(p) in self.gangs for p in pods):
                gang = next(self.gangs[key_of(p)].label for p in pods if key_of(p) in self.gangs)
                return Kept(
                    first,
                    "GangMember",
                    f"runs a member of gang {gang} (draplan keeps running gangs whole; "
                    "Cluster Autoscaler itself would drain it)",
                    group,
                )
            plan = drain(pods, self.options.drain, self.budgets, self.now)
            if plan.blocked is not None:
                b = plan.blocked
                return Kept(first, "BlockedByPod", f"{b.reason}: {b.message}", group)
            drains.append(plan)
        moving = [p for d in drains for p in d.move]
        broken = self.budgets.blocking(moving)
        if broken is not None:
            budget = key_of(broken)[1]
            message = f"NotEnoughPdb: moving its pods would break PodDisruptionBudget {budget}"
            return Kept(first, "BlockedByPod", message, group)
        useless = ""
        for name in names:
            found = unusable(state, self.scheduler, name, self.pending, self.memo, self.alike)
            if found is None:
                why = "a pending pod fits there as it is"
                return Kept(first, "UsedByPendingPods", why, group)
            useless = useless or found
        keys = {key_of(p) for d in drains for p in (*d.move, *d.evict)}
        evicted = {key_of(p) for d in drains for p in d.evict}.union(*killed)
        keys |= evicted
        before = [
            (n, self.memo.node_utilization(state, state.nodes[n]), readiness(state.nodes[n])[0], d)
            for n, d in zip(names, drains, strict=True)
        ]
        moved = sorted(keys - evicted)
        failed = drain_nodes(state, self.scheduler, index, names, moved, evicted, self.needs.added)
        if failed is not None:
            why = failed if isinstance(failed, str) else "its pods fit no other existing node"
            return Kept(first, "NoPlaceToMovePods", why, group)
        self.budgets.take(moving)
        out = []
        for (name, use, ready, plan), gone in zip(before, killed, strict=True):
            what = f"{len(plan.move)} pod(s) move elsewhere" if plan.move else "no pod to move"
            evict = f", {len(plan.evict)} DaemonSet pod(s) go with it" if plan.evict else ""
            evict += f", {len(gone)} expendable pod(s) go with it" if gone else ""
            reason = f"utilization {use:.2f}; {what}{evict}{useless}"
            wait = self.options.unneeded_time if ready else self.options.unready_time
            out.append(Removal(name, reason, group, bool(self.needs.added), _minutes(wait)))
            self.members[group] -= 1
        return out


def drain_nodes(
    state: ClusterState,
    scheduler: Scheduler,
    index: Index,
    names: Sequence[str],
    moved: Sequence[ObjectKey],
    gone: set[ObjectKey],
    added: frozenset[str],
    retry: bool = False,
    keep: bool = True,
    spare: NewNode | None = None,
) -> PodResult | str | None:
    """Remove nodes `names`, their pods `gone` with them and `moved` (in that order) placed on
    other nodes that exist (not those in `added`), by `scheduler`, claims allocated again:
    None when every pod found a place (the state keeps the result, `index` follows), else the
    state as it was and why: a pod's failed result, or why its claims cannot move. `retry`
    tries the pods that did not fit again while others still find places (Karpenter's
    scheduling queue, `pkg/controllers/provisioning/scheduling/queue.go`); `keep=False` only
    asks, leaving the state as it was either way. `spare`: a new node added for the pods the
    others do not hold (Karpenter's replacement), tried after them."""
    keys = {*moved, *gone}
    failed: PodResult | str | None = None
    with state.forked():
        why = release_claims(state, keys, index.claims_of(keys))
        if why:
            return "its pods' claims cannot be released"
        for key in sorted(keys):
            state.unbind_pod(state.pods[key])
        for name in names:
            state.remove_node(name)
        for key in sorted(gone):
            state.remove_pod(key)  # a DaemonSet pod goes with its node
        targets = sorted(set(state.nodes) - added) if added else None
        left = list(moved)
        misses: list[PodResult] = []
        while left:
            misses = []
            for key in left:
                result = scheduler.schedule_pod(state, state.pods[key], targets)
                if result.node is None:
                    misses.append(result)
                    if not retry:
                        break
            if not misses or not retry or len(misses) == len(left):
                break
            left = [r.key for r in misses]
        if misses and spare is not None:
            add_new_node(state, spare)
            only = [spare.node.metadata.name]
            misses = [
                r
                for r in misses
                if scheduler.schedule_pod(state, state.pods[r.key], only).node is None
            ]
        failed = misses[0] if misses else None
        if failed is None and keep:
            state.commit()
            state.fork()
    if failed is None and keep:
        index.moved(state, list(names), set(moved))
    return failed


def plan_scale_down(
    state: ClusterState,
    scheduler: Scheduler,
    now: datetime,
    needs: Needs | None = None,
    memo: ScaleDownMemo | None = None,
    options: ScaleDownOptions | None = None,
    karpenter: Collection[str] | None = None,
) -> ScaleDown:
    """The nodes CA would remove and every node it keeps, with why, at `now`. `memo` (kept by
    the caller for `scheduler`'s profile) spares re-judging unchanged nodes; `karpenter`:
    `owners.karpenter_nodes` if the caller has it."""
    memo = (memo or ScaleDownMemo()).of(state)
    options = options or ScaleDownOptions()
    if karpenter is None:
        karpenter = karpenter_nodes(state)
    return _Pass(state, scheduler, needs or Needs(), memo, options, now).run(karpenter)


class Index:
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

    def moved(self, state: ClusterState, nodes: list[str], keys: set[ObjectKey]) -> None:
        """`nodes` are gone and their pods `keys` run elsewhere, their claims allocated again
        (a replaced claim keeps its place in the state's order)."""
        for node in nodes:
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
class Pending:
    """One pod of a scheduling shape that still pends (pods of one shape fit the same nodes)."""

    pod: Pod
    shape: bytes
    admitted: bool  # PreFilter passes it
    shared: bool  # it names no node: identical nodes give it one answer (scheduler.evaluations)


def distinct_pending(
    state: ClusterState, scheduler: Scheduler, pods: Sequence[Pod]
) -> list[Pending]:
    seen: set[bytes] = set()
    out = []
    for pod in sorted(pods, key=key_of):
        shape, admitted = scheduler.admits(state, pod)
        if shape not in seen:
            seen.add(shape)
            shared = admitted and shareable(pod, pod_claims(state, pod))
            out.append(Pending(pod, shape, admitted, shared))
    return out


def unusable(
    state: ClusterState,
    scheduler: Scheduler,
    name: str,
    pending: list[Pending],
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
