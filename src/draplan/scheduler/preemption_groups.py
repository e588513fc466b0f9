"""Workload-aware preemption (KEP-5710; in 1.37 part of GenericWorkload, in 1.36 an alpha gate
off by default): the pending pods of a PodGroup preempt as one unit or not at all, with
victims from the whole cluster, never node by node
(pkg/scheduler/framework/preemption/podgrouppreemption.go: PodGroupEvaluator.Preempt,
selectVictimsOnDomain, preemptorEligibleToPreemptOthers, moreImportantVictim; and
DefaultPreemption.PodGroupPostFilter).

Every potential victim (a pod, or a PodGroup whose disruptionMode is All) of lower priority
than the PodGroup is taken off; if the group's pods then fit together, the victims are put
back one at a time, budget-breaking ones first, each most important first, keeping out those
the placements found no longer survive. The pods are nominated to the nodes found; none is
bound in this cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from draplan.api.core_v1 import Pod
from draplan.api.scheduling import PodGroupV1Beta1
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler.gangs import topology_constraints_on
from draplan.scheduler.preemption import (
    NEVER,
    TERMINATING,
    DefaultPreemption,
    Victims,
    budgets_of,
    claims_of,
    preemption_policy,
    restore,
    take,
    terminating_on,
)
from draplan.scheduler.preemption_victims import Victim, in_order, split_by_budget

PREFIX = "pod group preemption: "
NO_VICTIMS = "No preemption victims found for incoming preemptor"
TOPOLOGY = "not supported with topology constraints"

# The group's pending pods placed in a trial (no preemption): (pod, node or "") in order.
Placement = Callable[[ClusterState, list[Pod]], list[tuple[Pod, str]]]
# Whether a pod still fits on a node (its filters, nothing else moved).
Fits = Callable[[ClusterState, Pod, str], bool]


@dataclass(frozen=True)
class GroupOutcome:
    """The nodes the group's pods are nominated to and the pods evicted for them, or the
    message ("pod group preemption: ...") when the group cannot preempt."""

    nominations: dict[ObjectKey, str] = field(default_factory=dict)
    victims: tuple[Pod, ...] = ()
    message: str = ""


def preempt_group(
    state: ClusterState,
    plugin: DefaultPreemption,
    group: PodGroupV1Beta1,
    pods: Sequence[Pod],
    needed: int,
    place: Placement,
    fits: Fits,
    shortfall: str,
) -> GroupOutcome:
    """PodGroupPostFilter for `pods` (the group's pending pods, `needed` of which must be
    placed); `shortfall` is what the group says when its pods do not fit even with every
    victim gone."""
    # Without TopologyAwareWorkloadScheduling the API server keeps no schedulingConstraints
    # (`gangs.topology_constraints_on`), so none stops the preemption.
    constraints = group.spec.scheduling_constraints
    if constraints is not None and constraints.topology and topology_constraints_on(state.features):
        return GroupOutcome(message=PREFIX + TOPOLOGY)
    units = Victims(state)
    mine = units.group_priority(group, pods[0])
    reason = _ineligible(state, units, pods, mine)
    if reason:
        return GroupOutcome(message=PREFIX + reason)
    victims = _potential(state, units, mine)
    if not victims:
        return GroupOutcome(message=PREFIX + NO_VICTIMS)
    free = plugin.args.free_devices
    claims = claims_of(state, victims) if free else {}
    with state.forked():
        for victim in victims:
            for pod in victim.pods:
                take(state, pod, free)
        with state.forked():
            placed = {key_of(p): n for p, n in place(state, list(pods)) if n}
        if len(placed) < needed:
            return GroupOutcome(message=PREFIX + shortfall)
        breaking, fine = split_by_budget(in_order(victims, True), budgets_of(state))
        chosen = []
        for victim in [v for v, _ in breaking] + fine:
            state.fork()
            for pod in victim.pods:
                restore(state, pod, claims, free)
            if _all_fit(state, pods, placed, fits):
                state.commit()
            else:
                state.revert()
                chosen.append(victim)
    evicted = tuple(p for v in in_order(chosen, True) for p in v.pods)
    return GroupOutcome(placed, evicted)


def _ineligible(state: ClusterState, units: Victims, pods: Sequence[Pod], mine: int) -> str:
    """preemptorEligibleToPreemptOthers: a member that never preempts makes the group never
    preempt (the PodGroup's own preemptionPolicy needs the PodGroupPreemptionPolicy gate);
    a lower-priority pod still terminating by preemption on a member's nominated node means
    the earlier preemption is still under way."""
    if any(preemption_policy(p, units.classes) == "Never" for p in pods):
        return NEVER
    for node in sorted({p.status.nominated_node_name for p in pods} - {""}):
        if terminating_on(state, units, node, mine):
            return TERMINATING
    return ""


def _potential(state: ClusterState, units: Victims, mine: int) -> list[Victim]:
    """Every unit of lower priority on any node, each once."""
    seen: set[tuple[ObjectKey, ...]] = set()
    out = []
    for node in sorted(state.nodes.keys()):
        for victim in units.on(node):
            if victim.priority < mine and victim.keys not in seen:
                seen.add(victim.keys)
                out.append(victim)
    return out


def _all_fit(
    state: ClusterState, pods: Sequence[Pod], placed: dict[ObjectKey, str], fits: Fits
) -> bool:
    """The trial's placements, one after another as the group cycle made them, still hold."""
    with state.forked():
        return all(fits(state, p, placed[key_of(p)]) for p in pods if key_of(p) in placed)
