"""Karpenter's consolidation of the nodes it owns, in one pass: which it would delete, and for
every node it keeps, what keeps it, in Karpenter's own terms.

Modelled on kubernetes-sigs/karpenter v1 (the `karpenter.sh/v1` API `api.karpenter` reads; read
at the v1.14 line, the newest release the sources at hand show):

- Candidates (`pkg/controllers/disruption/types.go` NewCandidate; `pkg/controllers/state/
  statenode.go` ValidateNodeDisruptable, ValidatePodsDisruptable): a node of a NodeClaim, labelled
  `karpenter.sh/initialized: "true"`, not deleting or marked for deletion, not nominated for a
  pending pod, not annotated `karpenter.sh/do-not-disrupt: "true"`, of a NodePool that exists;
  no active pod annotated `karpenter.sh/do-not-disrupt: "true"` (`pkg/utils/pod` IsDisruptable);
  no evictable pod under a PodDisruptionBudget that allows no disruption now
  (`pkg/utils/pdb` CanEvictPods, IsEvictable; unhealthy pods under `AlwaysAllow` excepted).
- A candidate's reschedulable pods (`pkg/utils/pod` IsReschedulable: active, or a terminating
  StatefulSet pod; not a DaemonSet's, not a mirror pod) must all fit elsewhere; the rest go
  with the node. Its disruption cost (`pkg/utils/disruption` ReschedulingCost × LifetimeRemaining)
  orders the candidates, cheapest first.
- consolidateAfter (`pkg/controllers/nodeclaim/disruption/consolidation.go`): a NodeClaim is
  Consolidatable once consolidateAfter has passed since its last pod event
  (`status.lastPodEventTime`, else when it became Initialized); `Never` disables consolidation.
- Budgets (`pkg/apis/v1/nodepool.go` GetAllowedDisruptionsByReason, Budget.GetAllowedDisruptions
  and IsActive; `pkg/controllers/disruption/helpers.go` BuildDisruptionBudgetMapping): per
  NodePool and disruption reason, the fewest nodes any active budget allows (a percentage of
  the pool's initialized nodes rounded up), less the nodes NotReady or being deleted.
- The methods, in the disruption controller's order (`controller.go`): Emptiness
  (`emptiness.go`: every empty Consolidatable candidate the Empty budget allows, for both
  policies), multi-node consolidation (`multinodeconsolidation.go`: the candidates with pods,
  cheapest first, within the Underutilized budget, at most 100; a binary search for the longest
  prefix whose pods all fit elsewhere), single-node consolidation
  (`singlenodeconsolidation.go`: one candidate at a time, NodePools interleaved), the last two
  only under `WhenEmptyOrUnderutilized` (`consolidation.go` ShouldDisrupt). The pods are placed
  (`helpers.go` SimulateScheduling) on the other nodes that exist and are initialized, never
  on the pass's new nodes, by draplan's scheduler with its allocator, DRA claims included, in
  Karpenter's queue order (most CPU, then memory, first).

- Replacement (`consolidation.go` computeConsolidation): where the pods do not all fit the
  nodes left, one new node may take the rest: of the first Karpenter NodePool by weight whose
  node holds them, below its limit, cheaper than the candidates (for several, than any of
  them of its own instance type: `filterOutSameInstanceType`), never spot for spot
  (SpotToSpotConsolidation is off by default). A NodePool's node here is its one template
  (draplan's pool), where Karpenter weighs every instance type the NodePool allows: the
  replacement is the cheapest node of the pool's one shape, not of its instance families.

One pass repeats the controller's loop until no method finds a command, the nodes already
chosen counted as being deleted, so the removals are what Karpenter disrupts while the first
ones still drain. Not modelled: drift and expiration, the 15 s validation's re-check of
churn; the order among equal disruption costs and among NodePools is Go's map order upstream,
node and pool names here; a candidate whose pods did not fit is not
tried again in a later loop (removing nodes only takes room away). What the input cannot show
is assumed and each answer says so: a node without a NodeClaim in the input has one, and with
no pod event in the input its consolidateAfter has passed.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property

from draplan.api.core_v1 import Node, Pod, Taint
from draplan.api.duration import parse_duration
from draplan.api.karpenter import (
    CAPACITY_TYPE_LABEL,
    NODEPOOL_LABEL,
    WHEN_UNDERUTILIZED,
    Budget,
    KarpenterNodePool,
    NodeClaim,
)
from draplan.autoscaler.ca import readiness
from draplan.autoscaler.derived import INSTANCE_TYPE
from draplan.autoscaler.drain import MIRROR, Budgets
from draplan.autoscaler.owners import KARPENTER, karpenter_nodes, owner
from draplan.autoscaler.provreq import format_time, parse_time
from draplan.autoscaler.scaledown import (
    Index,
    Kept,
    Needs,
    Pending,
    Removal,
    ScaleDown,
    ScaleDownMemo,
    distinct_pending,
    drain_nodes,
    unusable,
)
from draplan.autoscaler.templates import NewNode, NodeNamer, make_node, pool_size
from draplan.cluster.nodepools import pool_name, pool_sizes, price_per_hour
from draplan.cluster.podresources import is_terminal, pod_requests
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import PodResult, Scheduler
from draplan.scheduler.gangs import find_gangs
from draplan.scheduler.plugins.tainttoleration import tolerates

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
INITIALIZED = "karpenter.sh/initialized"
# v1.DisruptedNoScheduleTaint: on a node Karpenter is disrupting.
DISRUPTED = Taint(key="karpenter.sh/disrupted", effect="NoSchedule")
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
VALIDATION_WAIT = "15s"  # consolidation.go consolidationTTL: a command is checked again after it
MAX_PARALLEL = 100  # multinodeconsolidation.go: the most candidates one command considers
EMPTY, UNDERUTILIZED = "Empty", "Underutilized"
# ConsolidationType, as Karpenter's metrics and logs name each method.
EMPTINESS, MULTI, SINGLE = "empty", "multi", "single"
METHODS = {
    EMPTINESS: "emptiness",
    MULTI: "multi-node consolidation",
    SINGLE: "single-node consolidation",
}
_UNBOUNDED = (1 << 31) - 1  # math.MaxInt32: no active budget limits the reason


@dataclass(frozen=True)
class PoolRules:
    """A Karpenter NodePool's disruption settings, defaulted as the CRD defaults them."""

    name: str
    policy: str
    consolidate_after: timedelta | None  # None: Never
    budgets: tuple[Budget, ...]
    expire_after: timedelta | None  # None: Never

    @staticmethod
    def of(pool: KarpenterNodePool) -> PoolRules:
        disruption = pool.spec.disruption
        return PoolRules(
            pool.metadata.name,
            disruption.consolidation_policy or WHEN_UNDERUTILIZED,
            _after(disruption.consolidate_after or "0s"),
            disruption.budgets or (Budget(),),
            _after(pool.spec.template.spec.expire_after or "720h"),
        )

    def allowed(self, nodes: int, reason: str, now: datetime) -> int:
        """GetAllowedDisruptionsByReason: the fewest disruptions an active budget for `reason`
        allows a pool of `nodes` initialized nodes."""
        out = _UNBOUNDED
        for budget in self.budgets:
            if not budget.reasons or reason in budget.reasons:
                out = min(out, budget_allows(budget, nodes, now))
        return out


def budget_allows(budget: Budget, nodes: int, now: datetime) -> int:
    """Budget.GetAllowedDisruptions: unbounded while its schedule is inactive; a percentage
    of `nodes` is rounded up (intstr.GetScaledValueFromIntOrPercent)."""
    if budget.schedule:
        from croniter import croniter  # a budget schedule is rare: most runs never import it

        if not croniter.is_valid(budget.schedule):
            return 0  # a schedule cron cannot read: the budget fails closed, as upstream's
        window = timedelta(seconds=parse_duration(budget.duration))
        # IsActive: the schedule's first hit after now - duration is not after now.
        hit = croniter(budget.schedule, now - window).get_next(datetime)
        if hit > now:
            return _UNBOUNDED
    if budget.nodes.endswith("%"):
        return math.ceil(int(budget.nodes[:-1]) * nodes / 100)
    return int(budget.nodes)


def _after(text: str) -> timedelta | None:
    return None if text == "Never" else timedelta(seconds=parse_duration(text))


def eviction_cost(pod: Pod) -> float:
    """`pkg/utils/disruption` EvictionCost: 1, moved by the pod-deletion-cost annotation and
    the pod's priority, within [-10, 10]."""
    cost = 1.0
    text = pod.metadata.annotations.get(DELETION_COST)
    if text is not None:
        with contextlib.suppress(ValueError):  # upstream logs the error, keeps the cost
            cost += float(text) / 2.0**27
    if pod.spec.priority is not None:
        cost += pod.spec.priority / 2.0**25
    return min(max(cost, -10.0), 10.0)


def _owned_by(pod: Pod, api_version: str, kind: str) -> bool:
    refs = pod.metadata.owner_references
    return any(r.api_version == api_version and r.kind == kind for r in refs)


def is_mirror(pod: Pod) -> bool:
    """IsOwnedByNode: a static pod, which kubelet owns."""
    return _owned_by(pod, "v1", "Node") or MIRROR in pod.metadata.annotations


def is_active(pod: Pod) -> bool:
    return not is_terminal(pod) and not pod.metadata.deletion_timestamp


def is_reschedulable(pod: Pod) -> bool:
    """IsReschedulable: pods Karpenter must find a place for when it removes their node."""
    stateful = _owned_by(pod, "apps/v1", "StatefulSet") and bool(pod.metadata.deletion_timestamp)
    return (
        (is_active(pod) or stateful)
        and not _owned_by(pod, "apps/v1", "DaemonSet")
        and not is_mirror(pod)
    )


def do_not_disrupt(pod: Pod) -> bool:
    """HasDoNotDisrupt on an active pod (IsDisruptable's converse)."""
    return is_active(pod) and pod.metadata.annotations.get(DO_NOT_DISRUPT) == "true"


def is_evictable(pod: Pod) -> bool:
    """IsEvictable: the pods Karpenter calls the eviction API for."""
    return (
        is_active(pod)
        and not any(tolerates(t, DISRUPTED) for t in pod.spec.tolerations)
        and not is_mirror(pod)
        and pod.metadata.annotations.get(DO_NOT_DISRUPT) != "true"
    )


def _unready(pod: Pod) -> bool:
    return any(c.type == "Ready" and c.status == "False" for c in pod.status.conditions)


def _condition(claim: NodeClaim | None, kind: str) -> tuple[bool, str | None]:
    if claim is None:
        return False, None
    for cond in claim.status.conditions:
        if cond.type == kind:
            return cond.status == "True", cond.last_transition_time
    return False, None


def _ago(t: timedelta) -> str:
    seconds = int(t.total_seconds())
    if seconds % 3600 == 0 and seconds:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0 and seconds:
        return f"{seconds // 60}m"
    return f"{seconds}s"


@dataclass(frozen=True)
class _Replacement:
    """One new node of `pool` in place of the candidates (price: its, before: theirs)."""

    pool: str
    node: NewNode
    price: float
    before: float


@dataclass
class _Candidate:
    name: str
    pool: str
    rules: PoolRules
    reschedulable: list[Pod]
    gone: list[Pod]  # go with the node: DaemonSet, mirror and terminating pods
    cost: float
    since: str  # when it became Consolidatable, as the input shows it (or that it does not)

    @property
    def empty(self) -> bool:
        return not self.reschedulable


# A command: the candidates, the method that chose them, the node replacing them if any.
_Command = tuple[list[_Candidate], str, _Replacement | None]


@dataclass
class _Pass:
    """One pass of Karpenter's disruption controller over the nodes it owns."""

    state: ClusterState
    scheduler: Scheduler
    now: datetime
    needs: Needs
    memo: ScaleDownMemo
    out: ScaleDown = field(default_factory=ScaleDown)

    def __post_init__(self) -> None:
        state = self.state
        self.alike: dict[tuple[int, bytes], tuple[bool, tuple[str, ...] | None]] = {}
        self.pools = {
            o.metadata.name: PoolRules.of(o)
            for o in state.others
            if isinstance(o, KarpenterNodePool)
        }
        self.claims: dict[str, NodeClaim] = {}
        for o in state.others:
            if isinstance(o, NodeClaim) and o.status.node_name:
                self.claims.setdefault(o.status.node_name, o)
        self.pdbs = Budgets(state)
        # GangMember is draplan's rule under its own profile, as in Cluster Autoscaler's pass.
        self.gangs = {} if self.scheduler.profile.kube else find_gangs(state)
        self.removed: dict[str, int] = {}  # per NodePool, the nodes this pass deletes
        self.launched: set[str] = set()  # replacements: never initialized within the pass
        # Replacement candidates, by weight then name; their sizes and one spare node each,
        # kept until a command changes the state.
        self.karpenter_pools = sorted(
            (p for p in state.node_pools.values() if owner(state, p) == KARPENTER),
            key=lambda p: (-p.spec.priority, p.metadata.name),
        )
        self._sizes: dict[str, int] | None = None
        self._spares: dict[str, NewNode] = {}
        self.nodes: dict[str, int] = {}  # per NodePool, initialized nodes (budgets' base)
        self.disrupting: dict[str, int] = {}  # per NodePool, NotReady or being deleted

    @cached_property
    def index(self) -> Index:
        """Each node's pods and each pod's claims: built once a node needs them (most nodes of
        a large cluster are kept before their pods are read)."""
        return Index(self.state)

    @cached_property
    def pending(self) -> list[Pending]:
        return distinct_pending(self.state, self.scheduler, self.needs.pending)

    def keep(self, name: str, reason: str, message: str, pool: str) -> None:
        self.out.kept.append(Kept(name, reason, message, pool, KARPENTER))

    def pool_of(self, node: Node) -> str:
        return node.metadata.labels.get(NODEPOOL_LABEL) or pool_name(self.state, node)

    def deleting(self, node: Node) -> bool:
        """MarkedForDeletion: the node or its NodeClaim is being deleted, or Karpenter has
        tainted it for a disruption already under way."""
        claim = self.claims.get(node.metadata.name)
        return bool(
            node.metadata.deletion_timestamp
            or (claim is not None and claim.metadata.deletion_timestamp)
            or _condition(claim, "InstanceTerminating")[0]
            or any((t.key, t.effect) == (DISRUPTED.key, DISRUPTED.effect) for t in node.spec.taints)
        )

    def count(self, names: Iterable[str]) -> None:
        """BuildDisruptionBudgetMapping's census: initialized nodes per pool, and those
        NotReady or being deleted."""
        for name in names:
            node = self.state.nodes[name]
            if node.metadata.labels.get(INITIALIZED) != "true":
                continue
            if _condition(self.claims.get(name), "InstanceTerminating")[0]:
                continue
            pool = self.pool_of(node)
            self.nodes[pool] = self.nodes.get(pool, 0) + 1
            if not readiness(node)[0] or self.deleting(node):
                self.disrupting[pool] = self.disrupting.get(pool, 0) + 1

    def budget(self, pool: str, reason: str) -> int:
        rules = self.pools[pool]
        allowed = rules.allowed(self.nodes.get(pool, 0), reason, self.now)
        taken = self.disrupting.get(pool, 0) + self.removed.get(pool, 0)
        return max(allowed - taken, 0)

    def candidate(self, name: str) -> _Candidate | Kept:
        """NewCandidate and the methods' ShouldDisrupt: the candidate, or why it is none."""
        state, node = self.state, self.state.nodes[name]
        pool = self.pool_of(node)

        def kept(reason: str, message: str) -> Kept:
            return Kept(name, reason, message, pool, KARPENTER)

        claim = self.claims.get(name)
        if node.metadata.labels.get(INITIALIZED) != "true":
            return kept("NotInitialized", f'node isn\'t initialized (no {INITIALIZED}: "true")')
        if self.deleting(node):
            return kept("MarkedForDeletion", "node is deleting or marked for deletion")
        if name in self.needs.used:
            return kept(
                "Nominated",
                "node is nominated for a pending pod (this pass places one, or it waits "
                "there for its victims)",
            )
        if node.metadata.annotations.get(DO_NOT_DISRUPT) == "true":
            return kept("DoNotDisrupt", f'node annotated {DO_NOT_DISRUPT}: "true"')
        rules = self.pools.get(pool)
        if rules is None:
            return kept(
                "NodePoolNotFound",
                f"no karpenter.sh/v1 NodePool {pool!r} in the input: Karpenter skips a node "
                "whose NodePool it cannot find",
            )
        pods = self.index.pods.get(name, [])
        blocker = next((p for p in pods if do_not_disrupt(p)), None)
        if blocker is not None:
            who = "/".join(key_of(blocker))
            return kept("DoNotDisrupt", f'pod {who} annotated {DO_NOT_DISRUPT}: "true"')
        for pod in pods:
            if not is_evictable(pod):
                continue
            for pdb in self.pdbs.matching(pod):
                always = pdb.spec.unhealthy_pod_eviction_policy == "AlwaysAllow"
                if self.pdbs.left[key_of(pdb)] <= 0 and not (always and _unready(pod)):
                    who = "/".join(key_of(pdb))
                    return kept(
                        "PodDisruptionBudget",
                        f"PodDisruptionBudget {who} allows no eviction of "
                        f"{'/'.join(key_of(pod))} now",
                    )
        if rules.consolidate_after is None:
            return kept("ConsolidationDisabled", f"NodePool {pool} has consolidateAfter: Never")
        since, known = self.last_pod_event(node, claim, pods)
        after = rules.consolidate_after
        if known is not None and self.now - known < after:
            at = format_time(known + after)
            return kept(
                "NotConsolidatable",
                f"consolidateAfter {_ago(after)} from {since}: Consolidatable at {at}",
            )
        reschedulable = [p for p in pods if is_reschedulable(p)]
        if reschedulable and rules.policy != WHEN_UNDERUTILIZED:
            return kept(
                "WhenEmpty",
                f"NodePool {pool} consolidates only empty nodes (consolidationPolicy: "
                f"{rules.policy}); {len(reschedulable)} pod(s) would need to move",
            )
        gang = next((self.gangs[key_of(p)] for p in pods if key_of(p) in self.gangs), None)
        if gang is not None:
            return kept(
                "GangMember",
                f"runs a member of gang {gang.label} (draplan keeps running gangs whole under "
                "its own profile; Karpenter itself would disrupt it)",
            )
        if unusable(state, self.scheduler, name, self.pending, self.memo, self.alike) is None:
            return kept("Nominated", "a pending pod fits there as it is: it would be nominated")
        cost = sum(eviction_cost(p) for p in pods) * self.lifetime(rules, node, claim)
        reschedulable_keys = {key_of(p) for p in reschedulable}
        gone = [p for p in pods if key_of(p) not in reschedulable_keys]
        assumed = "" if known is not None else " (the input shows none: taken as passed)"
        text = f"consolidateAfter {_ago(after)} from {since}{assumed}"
        return _Candidate(name, pool, rules, reschedulable, gone, cost, text)

    def last_pod_event(
        self, node: Node, claim: NodeClaim | None, pods: Sequence[Pod]
    ) -> tuple[str, datetime | None]:
        """When the NodeClaim's last pod event was, as the input shows it: its
        `lastPodEventTime`, else when it became Initialized; with no NodeClaim, the newest pod
        bound to the node or its creation (a lower bound: pods gone leave no trace)."""
        if claim is not None:
            stamp = parse_time(claim.status.last_pod_event_time)
            if stamp is not None:
                return f"the last pod event {format_time(stamp)}", stamp
            stamp = parse_time(_condition(claim, "Initialized")[1])
            if stamp is not None:
                return f"its initialization {format_time(stamp)}", stamp
        times = [
            t
            for p in pods
            for c in p.status.conditions
            if c.type == "PodScheduled" and (t := parse_time(c.last_transition_time)) is not None
        ]
        created = parse_time(node.metadata.creation_timestamp)
        if times:
            return f"the newest pod bound {format_time(max(times))}", max(times)
        if created is not None:
            return f"node creation {format_time(created)}", created
        return "the last pod event", None

    def lifetime(self, rules: PoolRules, node: Node, claim: NodeClaim | None) -> float:
        """LifetimeRemaining: the share of expireAfter still ahead of the NodeClaim."""
        if rules.expire_after is None or not rules.expire_after.total_seconds():
            return 1.0
        meta = claim.metadata if claim is not None else node.metadata
        created = parse_time(meta.creation_timestamp)
        if created is None:
            return 1.0
        total = rules.expire_after.total_seconds()
        return min(max((total - (self.now - created).total_seconds()) / total, 0.0), 1.0)

    def drain(
        self, picked: Sequence[_Candidate], keep: bool, spare: NewNode | None = None
    ) -> PodResult | str | None:
        moved = sorted((p for c in picked for p in c.reschedulable), key=_queue_order)
        gone = {key_of(p) for c in picked for p in c.gone}
        return drain_nodes(
            self.state,
            self.scheduler,
            self.index,
            [c.name for c in picked],
            [key_of(p) for p in moved],
            gone,
            self.needs.added | self.launched,
            retry=True,
            keep=keep,
            spare=spare,
        )

    def consolidate(self, picked: Sequence[_Candidate]) -> _Replacement | str | None:
        """computeConsolidation: None when the pods all fit the nodes left (delete); else one
        new node of a NodePool cheaper than the candidates (replace), or why neither."""
        failed = self.drain(picked, keep=False)
        if failed is None:
            return None
        return self.replacement(picked, _unfit(failed))

    def replacement(self, picked: Sequence[_Candidate], unfit: str) -> _Replacement | str:
        """The one new node whose room with the nodes left holds every pod of `picked`: of
        the first Karpenter NodePool by weight (then name) that can hold them, below its node
        limit, cheaper than the candidates together (RemoveInstanceTypeOptionsByPriceAndMinValues)
        and, for several, than any candidate of its own instance type (filterOutSameInstanceType);
        not spot for spot (SpotToSpotConsolidation is off by default)."""
        state = self.state
        nodes = [state.nodes[c.name] for c in picked]
        prices = [price_per_hour(state, n) for n in nodes]
        if any(p is None for p in prices):
            return f"{unfit}; no price for it, so no cheaper replacement can be judged"
        total = sum(p or 0.0 for p in prices)
        if self._sizes is None:
            self._sizes = pool_sizes(state)
        for pool in self.karpenter_pools:
            if pool_size(state, pool, self._sizes) >= pool.spec.max_nodes:
                continue  # its limits allow no node more
            if pool.spec.from_node and pool.spec.from_node not in state.nodes:
                continue  # the node its template copies is gone: no shape to judge
            new = self._spares.get(pool.metadata.name)
            if new is None:
                name, labels = NodeNamer(state, pool).next()
                new = self._spares[pool.metadata.name] = make_node(state, pool, name, labels)
            if self.drain(picked, keep=False, spare=new) is not None:
                continue
            price = float(pool.spec.price_per_hour)
            kind = _kind(new.node)
            same = [p or 0.0 for n, p in zip(nodes, prices, strict=True) if _kind(n) == kind]
            bound = min([total, *same]) if len(picked) > 1 else total
            if price >= bound:
                return (
                    f"{unfit}; a node of NodePool {pool.metadata.name} would hold its pods but "
                    f"costs ${price:g}/h, not less than ${bound:g}/h: no cheaper replacement"
                )
            spot = new.node.metadata.labels.get(CAPACITY_TYPE_LABEL) == "spot"
            if spot and all(n.metadata.labels.get(CAPACITY_TYPE_LABEL) == "spot" for n in nodes):
                return f"{unfit}; SpotToSpotConsolidation is off: no spot node replaces spot"
            return _Replacement(pool.metadata.name, new, price, total)
        return f"{unfit}; nor does one new node of a Karpenter NodePool hold them all"

    def delete(
        self, picked: Sequence[_Candidate], method: str, replace: _Replacement | None
    ) -> None:
        spare = replace.node if replace is not None else None
        failed = self.drain(picked, keep=True, spare=spare)
        self._sizes, self._spares = None, {}
        assert failed is None, "a command is applied only after its simulation succeeded"
        swap = None
        if replace is not None:
            swap = (replace.node.node.metadata.name, replace.pool, replace.price)
            self.launched.add(replace.node.node.metadata.name)
        rule = EMPTY if method == EMPTINESS else UNDERUTILIZED
        for c in picked:
            self.removed[c.pool] = self.removed.get(c.pool, 0) + 1
            if c.empty:
                what = "no pod to reschedule"
            else:
                what = f"{len(c.reschedulable)} pod(s) fit other nodes"
            if replace is not None:
                what = (
                    f"replaced by one {replace.pool} node {replace.node.node.metadata.name} "
                    f"(${replace.price:g}/h instead of ${replace.before:g}/h), which with the "
                    f"nodes left holds its {len(c.reschedulable)} pod(s)"
                )
            if c.gone:
                what += f", {len(c.gone)} DaemonSet, mirror or terminating pod(s) go with it"
            others = [o.name for o in picked if o is not c]
            together = f"; deleted together with {', '.join(others)}" if others else ""
            reason = f"{rule}, by {METHODS[method]}: {what}{together}; {c.since}"
            self.out.removals.append(
                Removal(
                    c.name,
                    reason,
                    c.pool,
                    False,
                    VALIDATION_WAIT,
                    KARPENTER,
                    rule,
                    method,
                    swap,
                )
            )

    def run(self, names: set[str]) -> ScaleDown:
        left = sorted(names - self.needs.added)  # the pass's new nodes are not initialized yet
        self.count(left)
        unfit: dict[str, str] = {}  # single-node consolidation's failures, kept for later loops
        judged: dict[str, tuple[tuple[int, int], _Candidate | Kept]] = {}
        while True:
            # Each loop judges the nodes afresh (GetCandidates), since a command moved pods;
            # a node whose version is the same holds the same pods and gets the same answer.
            candidates: list[_Candidate] = []
            kept: list[Kept] = []
            for name in left:
                version = self.state.version(name)
                hit = judged.get(name)
                if hit is None or hit[0] != version:
                    hit = judged[name] = version, self.candidate(name)
                found = hit[1]
                if isinstance(found, Kept):
                    kept.append(found)
                else:
                    candidates.append(found)
            # Go's sort.Slice by disruption cost; ties here by node name.
            candidates.sort(key=lambda c: (c.cost, c.name))
            chosen = (
                self.emptiness(candidates)
                or self.multi_node(candidates)
                or self.single_node(candidates, unfit)
            )
            if chosen is None:
                break
            picked, method, replace = chosen
            self.delete(picked, method, replace)
            gone = {c.name for c in picked}
            left = [n for n in left if n not in gone]
        self.out.kept.extend(kept)
        for c in candidates:
            rule = EMPTY if c.empty else UNDERUTILIZED
            if self.budget(c.pool, rule) == 0:
                self.keep(
                    c.name,
                    "DisruptionBudget",
                    f"NodePool {c.pool}'s budgets allow no more {rule} disruptions now "
                    f"({self.nodes.get(c.pool, 0)} initialized nodes, "
                    f"{self.disrupting.get(c.pool, 0)} NotReady or deleting, "
                    f"{self.removed.get(c.pool, 0)} deleted by this pass)",
                    c.pool,
                )
            else:
                why = unfit.get(c.name, "no consolidation found for it")
                self.keep(c.name, "Unconsolidatable", why, c.pool)
        return self.out

    def emptiness(self, candidates: list[_Candidate]) -> _Command | None:
        """Emptiness.ComputeCommand: every empty candidate its pool's Empty budget allows."""
        left: dict[str, int] = {}
        picked = []
        for c in candidates:
            if not c.empty:
                continue
            if c.pool not in left:
                left[c.pool] = self.budget(c.pool, EMPTY)
            if left[c.pool] == 0:
                continue
            if self.drain([c], keep=False) is not None:
                continue  # its pods' claims cannot move
            picked.append(c)
            left[c.pool] -= 1
        return (picked, EMPTINESS, None) if picked else None

    def _underutilized(self, candidates: list[_Candidate]) -> list[_Candidate]:
        return [c for c in candidates if not c.empty and c.rules.policy == WHEN_UNDERUTILIZED]

    def multi_node(self, candidates: list[_Candidate]) -> _Command | None:
        """MultiNodeConsolidation: the budget-filtered candidates with pods, cheapest first,
        the first at most 100; the longest prefix of two or more that can be deleted, or
        replaced by one cheaper node (firstNConsolidationOption's binary search, which assumes
        a longer prefix works only if a shorter one does)."""
        left: dict[str, int] = {}
        usable = []
        for c in self._underutilized(candidates):
            if c.pool not in left:
                left[c.pool] = self.budget(c.pool, UNDERUTILIZED)
            if left[c.pool] == 0:
                continue
            usable.append(c)
            left[c.pool] -= 1
        usable = usable[:MAX_PARALLEL]
        if len(usable) < 2:
            return None
        low, high, best = 1, len(usable) - 1, None
        while low <= high:
            mid = (low + high) // 2
            prefix = usable[: mid + 1]
            decision = self.consolidate(prefix)
            if not isinstance(decision, str):
                best, low = (prefix, MULTI, decision), mid + 1
            else:
                high = mid - 1
        return best

    def single_node(self, candidates: list[_Candidate], unfit: dict[str, str]) -> _Command | None:
        """SingleNodeConsolidation: candidates cheapest first, NodePools interleaved; the first
        that can be deleted, or replaced by one cheaper node."""
        by_pool: dict[str, list[_Candidate]] = {}
        for c in self._underutilized(candidates):
            by_pool.setdefault(c.pool, []).append(c)
        longest = max((len(v) for v in by_pool.values()), default=0)
        pools = sorted(by_pool)
        order = [by_pool[p][i] for i in range(longest) for p in pools if i < len(by_pool[p])]
        for c in order:
            if c.name in unfit or self.budget(c.pool, UNDERUTILIZED) == 0:
                continue
            decision = self.consolidate([c])
            if not isinstance(decision, str):
                return [c], SINGLE, decision
            unfit[c.name] = decision
        return None


def _queue_order(pod: Pod) -> tuple[int, int, str, str, str]:
    """Karpenter's scheduling queue (byCPUAndMemoryDescending): most CPU first, then memory,
    then creation time and the pod's uid."""
    requests = pod_requests(pod)
    return (
        -requests.get("cpu", 0),
        -requests.get("memory", 0),
        pod.metadata.creation_timestamp or "",
        pod.metadata.uid,
        "/".join(key_of(pod)),
    )


def _unfit(failed: PodResult | str) -> str:
    if isinstance(failed, str):
        return failed
    who = "/".join(failed.key)
    message = failed.reason.message if failed.reason is not None else "no node fits it"
    return f"pod {who} fits no other node ({message})"


def _kind(node: Node) -> str:
    return node.metadata.labels.get(INSTANCE_TYPE, "")


def plan_karpenter_disruption(
    state: ClusterState,
    scheduler: Scheduler,
    now: datetime,
    needs: Needs | None = None,
    memo: ScaleDownMemo | None = None,
    names: set[str] | None = None,
) -> ScaleDown:
    """The nodes Karpenter's consolidation deletes at `now`, and every other node it owns
    (`names`: `owners.karpenter_nodes`, if the caller has it) with what keeps it; deletions
    are kept in `state`."""
    memo = (memo or ScaleDownMemo()).of(state)
    if names is None:
        names = karpenter_nodes(state)
    return _Pass(state, scheduler, now, needs or Needs(), memo).run(names)
