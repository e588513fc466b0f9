"""DefaultPreemption, the PostFilter plugin: when no node fits a pod, find the nodes where
removing lower-priority pods would make it fit, choose one, evict those pods and nominate the
node for the pod, which binds there in a later attempt (kube-scheduler's DefaultPreemption,
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go, and its Evaluator,
pkg/scheduler/framework/preemption/preemption.go: Preempt, findCandidates, DryRunPreemption,
SelectCandidate, prepareCandidate).

Deterministic where upstream is not: the dry run visits the potential nodes one by one in name
order from an offset drawn from the profile's seed and the pod (upstream: a random offset, in
parallel), and of the candidates tied on every criterion the smallest node name wins (or, with
random ties, a seeded draw; upstream: the first in Go's map order).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from draplan.api.core_v1 import Pod
from draplan.api.meta import KubeStruct
from draplan.api.policy_v1 import PodDisruptionBudget
from draplan.api.resource_v1 import ResourceClaim
from draplan.api.scheduling import PodGroupV1Beta1, PriorityClass
from draplan.cluster.podsmemo import PodsMemo
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler.claims import held_claims
from draplan.scheduler.framework import (
    Code,
    CycleState,
    PodInfo,
    PostFilterResult,
    Status,
    unschedulable,
)
from draplan.scheduler.gangs import topology_constraints_on
from draplan.scheduler.nominated import run_filters, with_nominated
from draplan.scheduler.plugins.dynamicresources import DynamicResources
from draplan.scheduler.plugins.names import DEFAULT_PREEMPTION
from draplan.scheduler.preemption_args import PreemptionArgs
from draplan.scheduler.preemption_victims import (
    Budget,
    Candidate,
    Victim,
    best_candidates,
    disruptions_allowed,
    in_order,
    split_by_budget,
)
from draplan.scheduler.queue import priority_of, priority_table
from draplan.scheduler.reasons import aggregate

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
WORKLOAD_AWARE = "not eligible due to workload aware preemption enabled"
PLACEMENT_LIMIT = "not eligible due to placement-based pod group scheduling limitation."
# The DisruptionTarget condition the scheduler puts on the pods it preempts.
DISRUPTION_TARGET = "DisruptionTarget"
BY_SCHEDULER = "PreemptionByScheduler"


@dataclass(frozen=True)
class Outcome:
    """What preemption would do: the node to nominate and its victims, or why not
    (`message`, after "preemption: " in FailedScheduling) and whether the pod's old
    nomination is cleared (preemption cannot help) or kept (not eligible now)."""

    node: str = ""
    victims: tuple[Victim, ...] = ()
    message: str = ""
    clear: bool = False


def preemption_policy(pod: Pod, classes: dict[str, PriorityClass]) -> str:
    """spec.preemptionPolicy, as priority admission sets it from the pod's class."""
    if pod.spec.preemption_policy:
        return pod.spec.preemption_policy
    pc = classes.get(pod.spec.priority_class_name)
    return (
        pc.preemption_policy if pc is not None and pc.preemption_policy else "PreemptLowerPriority"
    )


def terminating_by_preemption(pod: Pod) -> bool:
    """podTerminatingByPreemption: being deleted, with the condition preemption sets."""
    if not pod.metadata.deletion_timestamp:
        return False
    cond = next((c for c in pod.status.conditions if c.type == DISRUPTION_TARGET), None)
    return cond is not None and cond.status == "True" and cond.reason == BY_SCHEDULER


def terminating_on(state: ClusterState, units: Victims, node: str, mine: int) -> bool:
    """A unit of lower priority than `mine` on `node` is still terminating by preemption (an
    earlier preemption is under way there)."""
    return any(
        units.unit(other).priority < mine and terminating_by_preemption(other)
        for other in (state.pods[key] for key in state.node_pods.get(node) or ())
    )


# --- who is a victim -----------------------------------------------------------------------


@dataclass(frozen=True)
class Groups:
    """Workload-aware preemption's view of the PodGroups (Kubernetes 1.37 with the Workload
    API on): a member's priority is its PodGroup's, and a PodGroup with disruptionMode All
    is preempted whole."""

    groups: dict[tuple[str, str], PodGroupV1Beta1]

    def of(self, pod: Pod) -> PodGroupV1Beta1 | None:
        sg = pod.spec.scheduling_group
        if sg is None:
            return None
        return self.groups.get((pod.metadata.namespace, sg.pod_group_name))


def _groups(state: ClusterState) -> Groups | None:
    if state.features.version == "1.36":
        return None  # WorkloadAwarePreemption: alpha in 1.36, off by default
    found = {
        (o.metadata.namespace, o.metadata.name): o
        for o in state.others
        if isinstance(o, PodGroupV1Beta1)
    }
    return Groups(found) if found else None


GROUPS = PodsMemo(_groups, pods=False)


def workload_group(state: ClusterState, pod: Pod) -> PodGroupV1Beta1 | None:
    """The pod's PodGroup when workload-aware preemption handles it (1.37 with the Workload
    API): its own PostFilter then steps aside for the group's."""
    groups = GROUPS(state)
    return groups.of(pod) if groups is not None else None


def _budgets(state: ClusterState) -> list[PodDisruptionBudget]:
    return sorted((o for o in state.others if isinstance(o, PodDisruptionBudget)), key=key_of)


BUDGETS = PodsMemo(_budgets, pods=False)


class Victims:
    """The units preemption removes from a state, and their priorities."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.classes, self.default = priority_table(state)
        self.groups = GROUPS(state)
        self._members: dict[tuple[str, str], tuple[Pod, ...]] | None = None

    def priority(self, pod: Pod) -> int:
        return priority_of(pod, self.classes, self.default)

    def group_priority(self, group: PodGroupV1Beta1, pod: Pod) -> int:
        if group.spec.priority is not None:
            return group.spec.priority
        pc = self.classes.get(group.spec.priority_class_name)
        if pc is not None:
            return pc.value
        return self.default if not group.spec.priority_class_name else self.priority(pod)

    def _all_members(self, ns: str, name: str) -> tuple[Pod, ...]:
        if self._members is None:
            index: dict[tuple[str, str], list[Pod]] = {}
            grouped = [
                (k, p)
                for k, p in self.state.pods.items()
                if p.spec.scheduling_group is not None and p.spec.node_name
            ]
            for _, pod in sorted(grouped):
                sg = pod.spec.scheduling_group
                if sg is not None:
                    index.setdefault((pod.metadata.namespace, sg.pod_group_name), []).append(pod)
            self._members = {k: tuple(v) for k, v in index.items()}
        return self._members.get((ns, name), ())

    def unit(self, pod: Pod) -> Victim:
        group = self.groups.of(pod) if self.groups is not None else None
        if group is None:
            return Victim((pod,), self.priority(pod))
        prio = self.group_priority(group, pod)
        mode = group.spec.disruption_mode
        if mode is not None and mode.all is not None:
            members = self._all_members(pod.metadata.namespace, group.metadata.name)
            return Victim(members or (pod,), prio, group=True)
        return Victim((pod,), prio)

    def on(self, node: str) -> list[Victim]:
        """The units with a pod on `node`, each once."""
        seen: set[tuple[ObjectKey, ...]] = set()
        out = []
        for key in self.state.node_pods.get(node) or ():
            unit = self.unit(self.state.pods[key])
            if unit.keys not in seen:
                seen.add(unit.keys)
                out.append(unit)
        return out


# --- the plugin ------------------------------------------------------------------------------


class DefaultPreemption:
    """The PostFilter plugin, for one pod at a time (a gang's preemption is in
    preemption_groups). It runs the profile's `filters` on the nodes it tries. A filter that
    keeps what it knows of other pods in the cycle state (pod affinity, topology spread)
    hears of each pod taken off or put back in a trial through `remove_pod(state, cycle, pod,
    victim)` and `add_pod(...)`, if it defines them (kube-scheduler's PreFilterExtensions);
    a cluster plugin that does not (InterPodAffinity, PodTopologySpread: their PreFilter
    counts are sums kept per node version, so a trial's changed node costs its own pods)
    builds its filter state again on the trial's state, which is what upstream's extensions
    keep theirs equal to."""

    name = DEFAULT_PREEMPTION

    def __init__(
        self,
        filters: tuple[Any, ...],
        dra: DynamicResources,
        args: PreemptionArgs,
        seed: int = 0,
        random_ties: bool = False,
    ) -> None:
        self.filters, self.dra, self.args = filters, dra, args
        self.seed, self.random_ties = seed, random_ties
        # Dry runs that found no candidate, per pod shape and priority: a later pod of that
        # shape and priority tries again only the nodes the change log names since.
        self._failures: dict[tuple[bytes, int], _Failures] = {}
        self._seen: tuple[ClusterState, list[KubeStruct], int] | None = None

    def _fits(
        self, state: ClusterState, cycle: CycleState, info: PodInfo, node: str, dra: bool
    ) -> Status:
        """The filters on `node` as the state is now, with and then without the pods nominated
        there of equal or higher priority (RunFilterPluginsWithNominatedPods, as
        SelectVictimsOnNode runs it: scheduler.nominated); DynamicResources left out when
        `dra` is False (its answer is known not to change)."""
        obj = state.nodes[node]
        filters = [p for p in self.filters if dra or p is not self.dra]
        first = with_nominated(filters, state, cycle, info, obj)
        return first if not first.ok else run_filters(filters, state, cycle, info, obj)

    def _take(
        self, state: ClusterState, cycle: CycleState, info: PodInfo, victim: Victim, node: str
    ) -> None:
        """Take the victim's pods off `node`; its pods elsewhere stay (they do not change
        what fits here) but plugins keeping cycle state about other nodes hear of them
        (PreFilter extensions: `remove_pod`). DynamicResources sees no change unless devices
        are freed."""
        for pod in victim.pods:
            if pod.spec.node_name == node:
                take(state, pod, self.args.free_devices)
            self._extensions(state, cycle, info, pod, "remove_pod")

    def _restore(
        self,
        state: ClusterState,
        cycle: CycleState,
        info: PodInfo,
        victim: Victim,
        node: str,
        claims: dict[ObjectKey, tuple[ResourceClaim, ...]],
    ) -> None:
        for pod in victim.pods:
            if pod.spec.node_name == node:
                restore(state, pod, claims, self.args.free_devices)
            self._extensions(state, cycle, info, pod, "add_pod")

    def _extensions(
        self, state: ClusterState, cycle: CycleState, info: PodInfo, pod: Pod, hook: str
    ) -> None:
        for plugin in self.filters:
            call = getattr(plugin, hook, None)
            if call is not None and plugin.name not in cycle.skip_filter:
                call(state, cycle, info, pod)

    def select_victims(
        self,
        state: ClusterState,
        cycle: CycleState,
        info: PodInfo,
        node: str,
        victims: list[Victim],
        budgets: Sequence[Budget],
        workload_aware: bool,
    ) -> tuple[tuple[Victim, ...], int] | Status:
        """SelectVictimsOnNode: remove every potential victim; if the pod then fits, put them
        back one at a time, the budget-breaking ones first, each group most important first,
        and keep out each one the pod no longer fits beside. The state is left as it was."""
        if not victims:
            return unschedulable(NO_VICTIMS, resolvable=False)
        claims = claims_of(state, victims) if self.args.free_devices else {}
        with state.forked():
            for victim in victims:
                self._take(state, cycle, info, victim, node)
            status = self._fits(state, cycle, info, node, dra=True)
            if not status.ok:
                for victim in victims:
                    self._extensions_back(state, cycle, info, victim)
                return status
            dra = self.args.free_devices  # else its answer cannot change from here on
            breaking, fine = split_by_budget(in_order(victims, workload_aware), budgets)
            chosen: list[Victim] = []
            violations = 0
            for victim, count in breaking:
                if not self._reprieve(state, cycle, info, node, victim, claims, dra):
                    chosen.append(victim)
                    violations += count
            for victim in fine:
                if not self._reprieve(state, cycle, info, node, victim, claims, dra):
                    chosen.append(victim)
            for victim in chosen:
                self._extensions_back(state, cycle, info, victim)
        if not chosen:
            return Status(Code.ERROR, (f"expected at least one victim pod on node {node!r}",))
        if breaking and fine:
            chosen = in_order(chosen, workload_aware)
        return tuple(chosen), violations

    def _extensions_back(
        self, state: ClusterState, cycle: CycleState, info: PodInfo, victim: Victim
    ) -> None:
        """The cycle state again as it was before the trial (the state is reverted)."""
        for pod in victim.pods:
            self._extensions(state, cycle, info, pod, "add_pod")

    def _reprieve(
        self,
        state: ClusterState,
        cycle: CycleState,
        info: PodInfo,
        node: str,
        victim: Victim,
        claims: dict[ObjectKey, tuple[ResourceClaim, ...]],
        dra: bool,
    ) -> bool:
        state.fork()
        self._restore(state, cycle, info, victim, node, claims)
        if self._fits(state, cycle, info, node, dra).ok:
            state.commit()
            return True
        state.revert()
        for pod in victim.pods:
            self._extensions(state, cycle, info, pod, "remove_pod")
        return False

    def post_filter(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        statuses: Mapping[str, Status],
    ) -> Status:
        """Preempt: eligibility, the candidate nodes, the dry run, the choice, and the
        eviction of the chosen victims (prepareCandidate). Success carries the nominated
        node and the victims; else the reason, "preemption: ..."."""
        if workload_group(state, pod.pod) is not None:
            return unschedulable(f"preemption: {WORKLOAD_AWARE}")
        outcome = self.preempt(state, cycle, pod, statuses)
        if outcome.node:
            victims = tuple(p for v in outcome.victims for p in v.pods)
            evict(state, pod.pod, outcome.node, victims)
            return Status(detail=PostFilterResult(outcome.node, victims))
        if outcome.clear and pod.pod.status.nominated_node_name:
            state.nominate(pod.pod, "")
        return unschedulable(f"preemption: {outcome.message}")

    def preempt(
        self,
        state: ClusterState,
        cycle: CycleState,
        info: PodInfo,
        statuses: Mapping[str, Status],
    ) -> Outcome:
        """What preemption would do for the pod, the state left as it is."""
        pod = info.pod
        units = Victims(state)
        mine = units.priority(pod)
        reason = self._ineligible(state, pod, units, mine, statuses)
        if reason:
            return Outcome(message=reason)
        # Every node has a status after Filter (counting state.nodes would walk them); none
        # when PreFilter failed.
        total = len(statuses) or len(state.nodes)
        key = (info.shape, mine)
        memo = self._kept(state)
        # Failures are kept for dry runs over every node, not over the few a caller offers;
        # and not when a cluster filter runs for the pod (a node's dry run then depends on
        # other nodes' pods).
        keep = len(statuses) == len(state.nodes) and not any(
            getattr(p, "cluster", False) and p.name not in cycle.skip_filter for p in self.filters
        )
        kept = memo.get(key) if keep else None
        changed = state.changed_since(kept.cursor) if kept is not None else None
        candidates: list[Candidate] = []
        if kept is not None and changed is not None:
            # The other nodes failed last time and are as they were: only these are tried.
            kept.drop(changed)
            here = [n for n in changed if n in statuses]
            potential = [n for n in here if statuses[n].code == Code.UNSCHEDULABLE]
            candidates, failed = self._dry_run(state, cycle, info, potential, units, mine)
            kept.add(failed, len(state.change_log))
        if kept is None or changed is None or candidates:
            # A first look, or candidates to choose from: the full dry run, as upstream's.
            potential = sorted(n for n, st in statuses.items() if st.code == Code.UNSCHEDULABLE)
            candidates, failed = self._dry_run(state, cycle, info, potential, units, mine)
            kept = _Failures()
            kept.add(failed, len(state.change_log))
            if keep:
                memo[key] = kept
        if not candidates:
            printed = Counter(kept.printed)
            if total > len(kept.failed):
                printed[NOT_HELPFUL] += total - len(kept.failed)
            return Outcome(message=aggregate(total, printed, Counter(), {}).message, clear=True)
        memo.pop(key, None)  # the eviction changes what the dry run would find
        chosen = self._choose(candidates, units, pod)
        return Outcome(node=chosen.node, victims=chosen.victims)

    def _kept(self, state: ClusterState) -> dict[tuple[bytes, int], _Failures]:
        """The dry-run failures kept for this state while its other objects (priority
        classes, budgets, PodGroups) stay as they were."""
        seen = self._seen
        if (
            seen is None
            or seen[0] is not state
            or seen[1] is not state.others
            or seen[2] != len(state.others)
        ):
            self._failures.clear()
        self._seen = (state, state.others, len(state.others))
        return self._failures

    def _ineligible(
        self,
        state: ClusterState,
        pod: Pod,
        units: Victims,
        mine: int,
        statuses: Mapping[str, Status],
    ) -> str:
        """PodEligibleToPreemptOthers (defaultpreemption/default_preemption.go): a pod of a
        PodGroup never preempts alone while TopologyAwareWorkloadScheduling is on (each of the
        group's placements would preempt again), then preemptionPolicy Never, then a
        terminating victim on the node it was nominated to."""
        if pod.spec.scheduling_group is not None and topology_constraints_on(state.features):
            return PLACEMENT_LIMIT
        if preemption_policy(pod, units.classes) == "Never":
            return NEVER
        nominated = pod.status.nominated_node_name
        if not nominated or nominated not in state.nodes:
            return ""
        status = statuses.get(nominated)
        if status is None or status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return ""
        return TERMINATING if terminating_on(state, units, nominated, mine) else ""

    def _dry_run(
        self,
        state: ClusterState,
        cycle: CycleState,
        info: PodInfo,
        potential: list[str],
        units: Victims,
        mine: int,
    ) -> tuple[list[Candidate], dict[str, Status]]:
        """DryRunPreemption: from a (seeded) offset, the potential nodes in turn until enough
        candidates are found, one of them breaking no budget; each list keeps at most that
        many (candidateList)."""
        failed: dict[str, Status] = {}
        if not potential:
            return [], failed
        wanted = self.args.candidates(len(potential))
        draw = random.Random(f"{self.seed}/preemption/{info.key[0]}/{info.key[1]}")
        offset = draw.randrange(len(potential))
        workload_aware = units.groups is not None
        budgets = budgets_of(state)
        clean: list[Candidate] = []
        breaking: list[Candidate] = []
        for i in range(len(potential)):
            node = potential[(offset + i) % len(potential)]
            victims = [v for v in units.on(node) if v.priority < mine]
            found = self.select_victims(state, cycle, info, node, victims, budgets, workload_aware)
            if isinstance(found, Status):
                failed[node] = found
                continue
            chosen, violations = found
            kept = breaking if violations else clean
            if len(kept) < wanted:
                kept.append(Candidate(node, chosen, violations))
            if clean and len(clean) + len(breaking) >= wanted:
                break
        return clean + breaking, failed

    def _choose(self, candidates: list[Candidate], units: Victims, pod: Pod) -> Candidate:
        if len(candidates) == 1:
            return candidates[0]
        priority = {key_of(p): units.priority(p) for c in candidates for p in c.pods}
        tied = sorted(best_candidates(candidates, priority), key=lambda c: c.node)
        if self.random_ties and len(tied) > 1:
            draw = random.Random(
                f"{self.seed}/victims/{pod.metadata.namespace}/{pod.metadata.name}"
            )
            return tied[draw.randrange(len(tied))]
        return tied[0]


class _Failures:
    """A dry run that found no candidate: its status on every potential node, the reasons
    counted as FitError counts them, and the change log's length when it was right."""

    def __init__(self) -> None:
        self.failed: dict[str, Status] = {}
        self.printed: Counter[str] = Counter()
        self.cursor = 0

    def drop(self, nodes: Sequence[str]) -> None:
        for name in nodes:
            status = self.failed.pop(name, None)
            if status is not None:
                self.printed.subtract(set(status.reasons))

    def add(self, failed: dict[str, Status], cursor: int) -> None:
        for name, status in failed.items():
            self.failed[name] = status
            self.printed.update(set(status.reasons))
        self.printed = +self.printed  # no zero counts
        self.cursor = cursor


def budgets_of(state: ClusterState) -> list[Budget]:
    """The PodDisruptionBudgets with the disruptions each allows now."""
    by_ns: dict[str, list[Pod]] = {}
    out = []
    for pdb in BUDGETS(state):
        ns = pdb.metadata.namespace
        if pdb.status is None and ns not in by_ns:
            by_ns[ns] = [p for k, p in state.pods.items() if k[0] == ns]
        out.append(Budget(pdb, disruptions_allowed(pdb, by_ns.get(ns, []))))
    return out


def evict(state: ClusterState, pod: Pod, node: str, victims: Sequence[Pod]) -> None:
    """prepareCandidate: delete the victims (the resourceclaim controller then releases
    their claims) and take the nomination from the lower-priority pods nominated to `node`
    (they go back to the queue to look elsewhere)."""
    for victim in victims:
        state.remove_pod(key_of(victim))
    classes, default = priority_table(state)
    mine = priority_of(pod, classes, default)
    nominated = [
        (k, p)
        for k, p in state.pods.items()
        if p.status.nominated_node_name == node and not p.spec.node_name
    ]
    for key, other in sorted(nominated):
        if key != key_of(pod) and priority_of(other, classes, default) < mine:
            state.nominate(other, "")


def claims_of(
    state: ClusterState, victims: Sequence[Victim]
) -> dict[ObjectKey, tuple[ResourceClaim, ...]]:
    """Each victim pod's claims as the state holds them (to put back after a trial)."""
    keys = (key_of(pod) for victim in victims for pod in victim.pods)
    return {key: tuple(held_claims(state, key)) for key in keys}


def take(state: ClusterState, pod: Pod, free_devices: bool) -> None:
    """A victim off its node in a trial: its node share only (kube-scheduler 1.36 / 1.37:
    DynamicResources keeps its devices allocated), or with `free_devices` as its deletion
    would leave things (claims only it reserves released)."""
    if free_devices:
        state.remove_pod(key_of(pod))
    else:
        state.unbind_pod(state.pods[key_of(pod)])


def restore(
    state: ClusterState,
    pod: Pod,
    claims: dict[ObjectKey, tuple[ResourceClaim, ...]],
    free_devices: bool,
) -> None:
    """Undo `take` (`claims`: what `claims_of` kept)."""
    if free_devices:
        state.put_pod(pod)
        for claim in claims.get(key_of(pod), ()):
            state.put_claim(claim)
    else:
        state.bind_pod(pod, pod.spec.node_name)
