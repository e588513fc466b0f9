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
from draplan.autoscaler.ca import CAOption, least_waste
from draplan.autoscaler.estimator import Capacity, PodClass
from draplan.autoscaler.expanders import DEVICE_AWARE, rank
from draplan.autoscaler.options import Limits, Option
from draplan.autoscaler.plan import CAChooser
from draplan.autoscaler.scaleup import ScaleUpPlanner
from draplan.autoscaler.templates import NewNode, NodeNamer, add_new_node, make_node
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
            # CA offers the same pods to many groups: their gangs and classes are found once.
            sorting = ScaleUpPlanner(self.scheduler, [], Limits(), self.chain, self.quiet)
            sorted_pods: dict[tuple[ObjectKey, ...], tuple[bool, list[PodClass]]] = {}
            for c in candidates:
                keys = tuple(sorted({key_of(p) for p in c.pods}))
                if keys not in sorted_pods:
                    pods = [state.pods[k] for k in keys]
                    gangs, _ = sorting.units(state, pods)
                    sorted_pods[keys] = (bool(gangs), sorting.classes(state, pods))
                verdicts.append(self._judge(state, c, meter, memo, *sorted_pods[keys]))
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
        gangs: bool,
        classes: list[PodClass],
    ) -> Verdict:
        """One candidate: gangs through the whole plan, other pods by node contents."""
        if c.node_count <= 0 or not c.pods:
            return Verdict(c, None, "no nodes or no pods in the option")
        pool, how = node_group_pool(state, c.group_id, c.template, c.node_count)
        if pool is None:
            return Verdict(c, None, f"node group {c.group_id!r}: no NodePool, node or template")
        planner = ScaleUpPlanner(self.scheduler, [pool], Limits(), self.chain, self.quiet)
        planner.capacities = memo
        if gangs:
            pods = [state.pods[k] for k in sorted({key_of(p) for p in c.pods})]
            return self._build_all(state, c, planner, pods, how, meter)
        chosen = planner.node_set(state, classes)
        if chosen is None:
            return Verdict(c, None, self._dropped(state, c, pool, how, [k.pods for k in classes]))
        return self._measure(state, c, classes, pool, chosen, meter)

    def _dropped(
        self,
        state: ClusterState,
        c: Candidate,
        pool: NodePool,
        how: str,
        missing: list[list[Pod]],
    ) -> str:
        """Why the pods `missing` (by class) are left over: what the scheduler says of the
        first pod of each class on one empty node, else that the nodes are too few."""
        count = sum(len(m) for m in missing)
        some = f"{count} of {len(c.pods)}" if count < len(c.pods) else f"the {count}"
        text = f"{some} pods do not fit on {c.node_count} new nodes of {c.group_id} ({how})"
        whys = [self._why_not(state, pool, m[0]) for m in missing if m]
        return f"{text}: {next((w for w in whys if w), 'too few nodes')}"

    def _measure(
        self,
        state: ClusterState,
        c: Candidate,
        classes: list[PodClass],
        pool: NodePool,
        chosen: list[tuple[NodePool, tuple[int, ...]]],
        meter: StrandedMeter,
    ) -> Verdict:
        """The option as its chosen nodes make it: one node of each distinct content built
        and filled by the scheduler, measured, and counted as many times as it repeats."""
        kinds: dict[tuple[int, ...], int] = {}
        for _, content in chosen:
            kinds[content] = kinds.get(content, 0) + 1
        nodes: list[NewNode] = []
        wasted = stranded = 0.0
        for content, times in sorted(kinds.items(), reverse=True):
            with state.forked():
                name, labels = NodeNamer(state, pool).next()
                new = make_node(state, pool, name, labels)
                add_new_node(state, new)
                for cls, n in zip(classes, content, strict=True):
                    for pod in cls.pods[:n]:
                        if self.quiet.schedule_pod(state, pod, [name]).node is None:
                            return Verdict(c, None, f"{c.group_id}: a planned node refused a pod")
                wasted += times * waste(state, [new.node])
                stranded += times * meter.node(state, new.node).stranded
            nodes.extend([new] * times)
        option = Option(
            pool,
            nodes,
            sorted(key_of(p) for p in c.pods),
            waste=wasted / len(nodes),
            devices=sum(len(rs.spec.devices) for n in nodes for rs in n.slices),
            stranded=stranded,
            count=c.node_count,
        )
        return Verdict(c, option)

    def _build_all(
        self,
        state: ClusterState,
        c: Candidate,
        planner: ScaleUpPlanner,
        pods: list[Pod],
        how: str,
        meter: StrandedMeter,
    ) -> Verdict:
        """Gangs: every node built and every pod placed by the scheduler, gangs whole in one
        topology domain."""
        pool = planner.pools[0]
        with state.forked():
            plan = planner.plan_pods(state, pods)
            missing = [p for p in pods if key_of(p) not in plan.placed]
            if missing:
                reason = next(
                    (plan.reasons[key_of(p)] for p in missing if key_of(p) in plan.reasons), ""
                )
                if reason:
                    return Verdict(
                        c,
                        None,
                        f"{len(missing)} of {len(pods)} pods do not fit on {c.node_count} new "
                        f"nodes of {c.group_id} ({how}): {reason}",
                    )
                by_class = [k.pods for k in planner.classes(state, missing)]
                return Verdict(c, None, self._dropped(state, c, pool, how, by_class))
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


def ca_chooser(judge: Judge) -> CAChooser:
    """Cluster Autoscaler with draplan as its gRPC expander: draplan's pick among CA's options,
    else CA's least-waste (the expander CA falls back to when the answer is empty)."""

    def choose(state: ClusterState, options: list[CAOption]) -> CAOption | None:
        offered = [
            Candidate(o.pool.metadata.name, o.node_count, tuple(state.pods[k] for k in o.pods))
            for o in options
        ]
        answer = judge.answer(state, offered)
        if answer.kept:
            best = answer.kept[0].candidate.group_id
            return next(o for o in options if o.pool.metadata.name == best)
        return least_waste(state, options)

    return choose
