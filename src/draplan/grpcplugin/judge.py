"""Which of Cluster Autoscaler's scale-up options draplan would take, best first.

CA simulates pod by pod and weighs cpu and memory; draplan builds each option's nodes in a
fork and lets its own scheduler and allocator place the option's pods there, gangs whole in
one topology domain with their PodGroup-level claims. An option is kept only if its node count
of its group's nodes hosts every one of its pods; kept options are ranked by the expander chain
`expanders.DEVICE_AWARE`: cost per placed pod (at the node count CA would add), then the
accelerators the new nodes strand (the FGD measure of `audit.stranded`), then least-waste."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from draplan.api.core_v1 import Node, Pod
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.audit.metrics import workload_shapes
from draplan.audit.stranded import StrandedMeter, accelerator_classes
from draplan.autoscaler.estimator import Capacity
from draplan.autoscaler.expanders import DEVICE_AWARE, rank
from draplan.autoscaler.options import Limits, Option
from draplan.autoscaler.scaleup import ScaleUpPlanner
from draplan.autoscaler.templates import NodeNamer, add_new_node, make_node
from draplan.autoscaler.utilization import waste
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.grpcplugin.groups import node_group_pool
from draplan.scheduler import Scheduler


@dataclass(frozen=True)
class Candidate:
    """One of CA's options: `node_count` new nodes of group `group_id` for `pods`."""

    group_id: str
    node_count: int
    pods: tuple[Pod, ...]
    template: Node | None = None


@dataclass(frozen=True)
class Verdict:
    """A candidate judged: the option as draplan measured it, or why it is dropped."""

    candidate: Candidate
    option: Option | None
    reason: str = ""


@dataclass(frozen=True)
class Answer:
    kept: list[Verdict]  # best first
    dropped: list[Verdict]


def _add_pending(state: ClusterState, pods: Sequence[Pod]) -> None:
    """CA's pods into the state, pending; a pod the state already holds pending keeps the
    state's copy (its claim statuses)."""
    for pod in pods:
        key = key_of(pod)
        if key not in state.pods:
            state.pods[key] = pod


def _meter(state: ClusterState) -> StrandedMeter:
    views = (v for name in sorted(state.slices.keys()) for v in state.slice_devices(name))
    classes = accelerator_classes(state.device_classes, views)
    return StrandedMeter(classes, workload_shapes(state, classes))


class Judge:
    """Judges options with one scheduler profile; `gangs` as the cluster's scheduler runs."""

    def __init__(self, scheduler: Scheduler, chain: Sequence[str] = DEVICE_AWARE) -> None:
        self.scheduler = scheduler
        self.quiet = Scheduler(scheduler.profile, gangs=scheduler.gangs, explain=False)
        self.chain = tuple(chain)

    def answer(self, state: ClusterState, candidates: Sequence[Candidate]) -> Answer:
        """Every candidate judged in a fork of `state` (left as it was), the fitting ones
        ranked."""
        verdicts = []
        with state.forked():
            for c in candidates:
                _add_pending(state, c.pods)
            meter = _meter(state)
            memo: dict[tuple[str, bytes], Capacity] = {}  # per group and pod shape
            for c in candidates:
                verdicts.append(self._judge(state, c, meter, memo))
        kept = [v for v in verdicts if v.option is not None]
        order = rank([v.option for v in kept if v.option is not None], self.chain)
        position = {id(o): n for n, o in enumerate(order)}
        kept.sort(key=lambda v: position[id(v.option)])
        return Answer(kept, [v for v in verdicts if v.option is None])

    def _judge(
        self,
        state: ClusterState,
        c: Candidate,
        meter: StrandedMeter,
        memo: dict[tuple[str, bytes], Capacity],
    ) -> Verdict:
        if c.node_count <= 0 or not c.pods:
            return Verdict(c, None, "no nodes or no pods in the option")
        pool, how = node_group_pool(state, c.group_id, c.template, c.node_count)
        if pool is None:
            return Verdict(c, None, f"node group {c.group_id!r}: no NodePool, node or template")
        planner = ScaleUpPlanner(self.scheduler, [pool], Limits(), self.chain, self.quiet)
        planner.capacities = memo
        wanted: list[ObjectKey] = sorted({key_of(p) for p in c.pods})
        with state.forked():
            plan = planner.plan_pods(state, [state.pods[k] for k in wanted])
            missing = [k for k in wanted if k not in plan.placed]
            if missing:
                why = next((plan.reasons[k] for k in missing if k in plan.reasons), "")
                why = why or self._why_not(state, pool, state.pods[missing[0]]) or "too few nodes"
                text = (
                    f"{len(missing)} of {len(wanted)} pods do not fit on {c.node_count} new "
                    f"nodes of {c.group_id} ({how})"
                )
                return Verdict(c, None, f"{text}: {why}" if why else text)
            nodes = [n for o in plan.options for n in o.nodes]
            built = [n.node for n in nodes]
            option = Option(
                pool,
                nodes,
                sorted(plan.placed),
                waste=waste(state, built),
                devices=sum(o.devices for o in plan.options),
                stranded=sum(meter.node(state, n).stranded for n in built),
                count=c.node_count,
            )
        return Verdict(c, option)

    def _why_not(self, state: ClusterState, pool: NodePool, pod: Pod) -> str:
        """What the scheduler says of `pod` on one more empty node of `pool`."""
        with state.forked():
            name, labels = NodeNamer(state, pool).next()
            add_new_node(state, make_node(state, pool, name, labels))
            result = self.scheduler.schedule_pod(state, pod, [name])
        return result.reason.message if result.reason is not None else ""
