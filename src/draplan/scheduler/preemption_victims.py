"""What preemption may remove and how it ranks it: victims (a pod, or under workload-aware
preemption a PodGroup whose disruptionMode is All, every member at once), their importance,
the PodDisruptionBudgets their removal breaks, and the choice between candidate nodes.

Upstream: pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go
(SelectVictimsOnNode, filterPodsWithPDBViolation), pkg/scheduler/framework/preemption
(preemption.go pickOneNodeForPreemption; types.go Victim, getCrossNodesVictims;
MoreImportantVictim) and pkg/scheduler/util (MoreImportantPod, GetEarliestPodStartTime).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from draplan.api.core_v1 import Pod
from draplan.api.policy_v1 import PodDisruptionBudget
from draplan.cluster.labels import selector_of
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ObjectKey, key_of

LATEST = math.inf  # a pod without status.startTime: GetPodStartTime says "now"
PRIORITY_SHIFT = 1 << 31  # math.MaxInt32+1: every priority counted non-negative in the sum


def started(pod: Pod) -> float:
    """status.startTime in seconds; a pod that has not started sorts as the latest."""
    text = pod.status.start_time
    if not text:
        return LATEST
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class Victim:
    """One unit of preemption: its pods go together."""

    pods: tuple[Pod, ...]
    priority: int  # the pod's; a PodGroup's under workload-aware preemption
    group: bool = False  # a PodGroup with disruptionMode All

    @property
    def start(self) -> float:
        return min(started(p) for p in self.pods)

    @property
    def keys(self) -> tuple[ObjectKey, ...]:
        return tuple(key_of(p) for p in self.pods)


def importance(victim: Victim, workload_aware: bool) -> tuple[object, ...]:
    """Sort key, most important first (MoreImportantVictim): higher priority; then, under
    workload-aware preemption, a PodGroup before a lone pod; pods by earlier start, PodGroups
    by more members, then earlier start. Go's sort leaves equal victims in any order; here
    they go by name."""
    if workload_aware and victim.group:
        return (-victim.priority, 0, -len(victim.pods), victim.start, victim.keys)
    return (-victim.priority, 1, 0, victim.start, victim.keys)


def in_order(victims: Iterable[Victim], workload_aware: bool) -> list[Victim]:
    return sorted(victims, key=lambda v: importance(v, workload_aware))


# --- PodDisruptionBudgets ------------------------------------------------------------------


def _healthy(pod: Pod) -> bool:
    """Counted healthy by the disruption controller: running, not being deleted, Ready (a pod
    that reports no Ready condition is taken as ready once bound)."""
    if not pod.spec.node_name or is_terminal(pod) or pod.metadata.deletion_timestamp:
        return False
    ready = next((c for c in pod.status.conditions if c.type == "Ready"), None)
    return ready is None or ready.status == "True"


def _scaled(value: int | str, total: int, round_up: bool) -> int:
    if isinstance(value, int):
        return value
    share = int(value[:-1]) * total
    return -(-share // 100) if round_up else share // 100


def disruptions_allowed(pdb: PodDisruptionBudget, pods: Sequence[Pod]) -> int:
    """status.disruptionsAllowed as the input has it; for a budget the disruption controller
    has not yet seen (no status), what it would compute from `pods` (the namespace's): the
    healthy matching pods less those the budget must keep, the matching pods standing in for
    the controller's scale (draplan reads no ReplicaSets)."""
    if pdb.status is not None:
        return pdb.status.disruptions_allowed
    matching = [p for p in pods if covers(pdb, p)]
    expected = sum(1 for p in matching if not is_terminal(p))
    healthy = sum(1 for p in matching if _healthy(p))
    spec = pdb.spec
    if spec.max_unavailable is not None:
        desired = expected - _scaled(spec.max_unavailable, expected, round_up=True)
    elif spec.min_available is not None:
        desired = _scaled(spec.min_available, expected, round_up=True)
    else:
        desired = 1  # the API server defaults minAvailable to 1 when neither is set
    return max(healthy - max(desired, 0), 0)


def covers(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    """The budget's selector selects the pod (same namespace; a budget with no selector or
    an empty one selects nothing)."""
    if pdb.metadata.namespace != pod.metadata.namespace or not pod.metadata.labels:
        return False
    sel = selector_of(pdb.spec.selector)
    return not sel.empty and sel.matches(pod.metadata.labels)


@dataclass(frozen=True)
class Budget:
    pdb: PodDisruptionBudget
    allowed: int


def split_by_budget(
    victims: Sequence[Victim], budgets: Sequence[Budget]
) -> tuple[list[tuple[Victim, int]], list[Victim]]:
    """filterPodsWithPDBViolation, in the order given: each pod a budget covers takes one
    disruption from it unless the budget already lists it as disrupted; a victim whose pods
    drive a budget below zero violates it (with how many of its pods do)."""
    left = [b.allowed for b in budgets]
    violating: list[tuple[Victim, int]] = []
    fine: list[Victim] = []
    for victim in victims:
        count = 0
        for pod in victim.pods:
            broken = False
            for i, budget in enumerate(budgets):
                status = budget.pdb.status
                if not covers(budget.pdb, pod):
                    continue
                if status is not None and pod.metadata.name in status.disrupted_pods:
                    continue
                left[i] -= 1
                if left[i] < 0:
                    broken = True
            count += broken
        if count:
            violating.append((victim, count))
        else:
            fine.append(victim)
    return violating, fine


# --- the choice between candidate nodes ------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    node: str
    victims: tuple[Victim, ...]  # most important first
    pdb_violations: int

    @property
    def pods(self) -> tuple[Pod, ...]:
        return tuple(p for v in self.victims for p in v.pods)


def _earliest_top_start(candidate: Candidate, priority: dict[ObjectKey, int]) -> float:
    """GetEarliestPodStartTime: the earliest start among the victims of highest priority."""
    pods = candidate.pods
    top = max(priority[key_of(p)] for p in pods)
    return min(started(p) for p in pods if priority[key_of(p)] == top)


def criteria(candidate: Candidate, priority: dict[ObjectKey, int]) -> tuple[float, ...]:
    """pickOneNodeForPreemption's scores in order, each higher is better: fewest budget
    violations, lowest priority of the most important victim, smallest sum of priorities
    (each shifted to be non-negative), fewest victims, latest start of the highest-priority
    victims."""
    pods = candidate.pods
    prios = [priority[key_of(p)] for p in pods]
    return (
        -candidate.pdb_violations,
        -prios[0],
        -sum(p + PRIORITY_SHIFT for p in prios),
        -len(pods),
        _earliest_top_start(candidate, priority),
    )


def best_candidates(
    candidates: Sequence[Candidate], priority: dict[ObjectKey, int]
) -> list[Candidate]:
    """The candidates left tied after every criterion (upstream takes the first of them in
    Go's map order, which is random)."""
    left = list(candidates)
    for i in range(5):
        scores = [criteria(c, priority)[i] for c in left]
        top = max(scores)
        left = [c for c, s in zip(left, scores, strict=True) if s == top]
        if len(left) == 1:
            break
    return left
