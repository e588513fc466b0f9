"""Which of Cluster Autoscaler's scale-up options draplan would take.

CA simulates pod by pod and weighs cpu and memory; draplan builds each option's nodes in a
fork and lets its own scheduler and allocator place the option's pods there, gangs whole in
one topology domain with their PodGroup-level claims, on draplan's own view of the group's
devices (`groups`). Each option ends in one of three states:
- kept: the option's node count of the group's nodes hosts some of its pods now (all of
  them, or as many as that count holds when draplan's estimate needs more: CA adds the rest
  in a later loop), or holds none now only because a gang needs more nodes than CA offers;
- dropped: draplan is sure no node of the group hosts any of its pods;
- not judged: draplan has no view of the group's devices (CA's template shows none) while
  the pods need devices, or the option carries no pods or no nodes.
Kept options are ranked by the expander chain `expanders.DEVICE_AWARE` (cost per pod placed
at CA's node count, then the accelerators the new nodes strand by the FGD measure of
`audit.stranded`, then least-waste); those that place pods now come before those that wait.
What the scheduler does on a new node is worked out once for the groups whose new nodes it
cannot tell apart for the request's pods (`alike`): CA offers one option per group, and the
groups of one machine type differ mostly in labels no pod reads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from draplan.api.core_v1 import Node, Pod
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.resource_v1 import DeviceClass
from draplan.audit.metrics_memo import MetricsMemo, counted, shape_of
from draplan.audit.stranded import RequestShape, StrandedMeter, accelerator_classes, typical
from draplan.autoscaler.ca import CAOption, least_waste
from draplan.autoscaler.costopt import Content
from draplan.autoscaler.estimator import (
    Capacities,
    Capacity,
    Estimator,
    PodClass,
    fill_limits,
)
from draplan.autoscaler.expanders import DEVICE_AWARE, equal_best, rank
from draplan.autoscaler.options import Limits, Option
from draplan.autoscaler.plan import CAChooser
from draplan.autoscaler.scaleup import ScaleUpPlanner
from draplan.autoscaler.templates import NewNode, NodeNamer, add_new_node, make_node
from draplan.autoscaler.utilization import waste
from draplan.cluster.devices import DeviceView
from draplan.cluster.nodepools import pool_sizes
from draplan.cluster.podresources import node_allocatable, pod_requests
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.grpcplugin.alike import LabelReads, alike_key, label_reads
from draplan.grpcplugin.groups import GroupView, node_group_view
from draplan.grpcplugin.ids import parse
from draplan.scheduler import Scheduler
from draplan.scheduler.gangs import Gang, names_a_group
from draplan.sources.files import gc_paused

# Resources every node template states, so a pod asking only for these is judged right on
# CA's template node alone.
_PLAIN = ("cpu", "memory", "ephemeral-storage", "pods")


@dataclass(frozen=True)
class Candidate:
    """One of CA's options: `node_count` new nodes of group `group_id` for `pods`."""

    group_id: str
    node_count: int
    pods: tuple[Pod, ...]
    template: Node | None = None


@dataclass(frozen=True)
class Verdict:
    """A candidate judged: the option as draplan measured it at CA's node count (kept), or
    why it is dropped or not judged."""

    candidate: Candidate
    option: Option | None
    reason: str = ""
    view: str = ""  # what draplan judged the group with
    judged: bool = True  # False: draplan cannot tell whether the group hosts the pods
    needed: int = 0  # nodes of the group draplan's estimate needs for the pods it can host

    @property
    def placed(self) -> int:
        return len(self.option.pods) if self.option is not None else 0

    def debug(self) -> str:
        """One line for CA's log (the option's `debug` field)."""
        c = self.candidate
        head = f"draplan: judged on {self.view}" if self.view else "draplan"
        if self.option is None:
            return f"{head}; {self.reason}"
        cost = f"${self.option.cost_per_hour:.2f}/h"
        text = f"{head}; {self.placed} of {len(c.pods)} pods on {c.node_count} new nodes, {cost}"
        return f"{text}; {self.reason}" if self.reason else text


@dataclass(frozen=True)
class Answer:
    kept: list[Verdict]  # best first
    dropped: list[Verdict]  # sure: the group's nodes host none of the option's pods
    unjudged: list[Verdict] = field(default_factory=list)  # draplan cannot tell

    def best(self, chain: Sequence[str] = DEVICE_AWARE) -> list[Verdict]:
        """The best kept option, with those the ranking cannot tell from it."""
        if not self.kept:
            return []
        first = self.kept[0]
        same = [v for v in self.kept if (v.placed > 0) == (first.placed > 0)]
        equal = {id(o) for o in equal_best([v.option for v in same if v.option], chain)}
        return [first, *(v for v in same[1:] if id(v.option) in equal)]


def _add_pending(state: ClusterState, pods: Iterable[Pod]) -> list[Pod]:
    """CA's pods into the state, pending; a pod the state already holds pending keeps the
    state's copy (its claim statuses). The pods added."""
    added = []
    for pod in pods:
        key = key_of(pod)
        if key not in state.pods:
            state.pods[key] = pod
            added.append(pod)
    return added


def _workload(
    state: ClusterState,
    classes: Collection[str],
    shapes: tuple[Counter[RequestShape], Collection[RequestShape]],
    added: Sequence[Pod],
) -> list[tuple[RequestShape, float]]:
    """`workload_shapes` of `state` over `classes`, from `shapes` counted before the pods
    `added` came (theirs alone are looked at: a pod's shape does not depend on other pods)."""
    counts, pending = Counter(shapes[0]), set(shapes[1])
    for pod in added:
        shape = shape_of(state, pod, classes) if counted(pod) else None
        if shape is not None:
            counts[shape] += 1
            if not pod.spec.node_name:
                pending.add(shape)
    return typical(counts, pending)


def _needs_devices(pod: Pod, template: Node | None) -> bool:
    """Whether judging `pod` needs to know a node's devices: it has claims, or asks for a
    resource the template node does not state (an extended resource DRA may back)."""
    if pod.spec.resource_claims:
        return True
    stated = node_allocatable(template) if template is not None else {}
    return any(
        r not in _PLAIN and not r.startswith("hugepages-") and r not in stated
        for r in pod_requests(pod)
    )


@dataclass
class _Shared:
    """What the options of one request share: the meter, the pools' sizes, and what the
    scheduler did on new nodes of groups it cannot tell apart (`alike`) for the same pods:
    how many of a shape one node holds, what it puts on one node, a content's measure, why a
    pod fits none."""

    meter: StrandedMeter
    sizes: Mapping[str, int]
    reads: LabelReads | None  # None: no two groups are alike
    capacities: dict[tuple[str, bytes], Capacity] = field(default_factory=dict)
    alike_capacities: dict[tuple[bytes, bytes], Capacity] = field(default_factory=dict)
    measures: dict[tuple[bytes, tuple[ObjectKey, ...]], tuple[float, float] | tuple[()]] = field(
        default_factory=dict
    )
    whys: dict[tuple[bytes, ObjectKey], str] = field(default_factory=dict)
    fills: dict[tuple[object, ...], Content] = field(default_factory=dict)

    def alike(
        self, state: ClusterState, pool: NodePool, name: str, labels: dict[str, str]
    ) -> bytes | None:
        """What the scheduler can read of the node of `pool` named `name` (None: alike
        to no other group's)."""
        return alike_key(state, pool, name, labels, self.reads) if self.reads else None


class _AlikeEstimator(Estimator):
    """The estimator of one option whose group's probe node is `alike`: what a probe or a
    fill of an alike group's node found for the same pods is taken where it is what this
    group's own would find (a pod refused, or all the class's pods placed; the same pods
    placed in the same order)."""

    def __init__(
        self, scheduler: Scheduler, quiet: Scheduler, shared: _Shared, alike: bytes
    ) -> None:
        super().__init__(scheduler, quiet)
        self.shared = shared
        self.alike = alike

    def capacity(
        self, state: ClusterState, pool: NodePool, classes: Sequence[PodClass]
    ) -> list[Capacity]:
        own = self.pool_key(state, pool)
        for cls in classes:
            hit = self.shared.alike_capacities.get((self.alike, cls.shape))
            if hit is not None and (hit.exact or hit.pods == cls.count):
                self.capacities[own, cls.shape] = hit
        caps = super().capacity(state, pool, classes)
        for cls, cap in zip(classes, caps, strict=True):
            self.shared.alike_capacities[self.alike, cls.shape] = cap
        return caps

    def fill(
        self,
        state: ClusterState,
        pool: NodePool,
        classes: list[PodClass],
        caps: Capacities,
        left: list[int],
        order: list[int],
    ) -> Content:
        limits = fill_limits(pool, caps, left)
        # The classes are the request's (one object per set of pods, alive while it is judged).
        key = (self.alike, tuple(map(id, classes)), limits, tuple(order))
        hit = self.shared.fills.get(key)
        if hit is None:
            hit = self.shared.fills[key] = super().fill(state, pool, classes, caps, left, order)
        return hit


def ranked(verdicts: Sequence[Verdict], chain: Sequence[str]) -> Answer:
    """The verdicts as an answer: the kept ranked by `chain`, those that place pods now
    first."""
    kept = []
    for now in (True, False):
        these = [v.option for v in verdicts if v.option is not None and (v.placed > 0) == now]
        order = {id(o): n for n, o in enumerate(rank(these, chain))}
        kept += sorted(
            (v for v in verdicts if id(v.option) in order), key=lambda v: order[id(v.option)]
        )
    return Answer(
        kept,
        [v for v in verdicts if v.option is None and v.judged],
        [v for v in verdicts if not v.judged],
    )


class Judge:
    """Judges options with one scheduler profile; `gangs` as the cluster's scheduler runs."""

    def __init__(self, scheduler: Scheduler, chain: Sequence[str] = DEVICE_AWARE) -> None:
        self.scheduler = scheduler
        self.quiet = Scheduler(scheduler.profile, gangs=scheduler.gangs, explain=False)
        self.chain = tuple(chain)
        # Kept from request to request (the cluster's pods and devices mostly stay): the
        # pods' shapes, and per ResourceSlice the classes that select one of its
        # accelerators, while its devices and the device classes stay the same.
        self._shapes = MetricsMemo()
        self._device_classes: object = None
        self._selected: dict[str, tuple[tuple[DeviceView, ...], frozenset[str]]] = {}

    def answer(self, state: ClusterState, candidates: Sequence[Candidate]) -> Answer:
        """Every candidate judged in a fork of `state` (left as it was), the kept ranked."""
        # Judging allocates much and keeps little: the cyclic collector's passes over the
        # state's objects would free nothing.
        with gc_paused(freeze=False):
            classes, shapes = self._workload_of(state)
            with state.forked():
                added = _add_pending(state, (p for c in candidates for p in c.pods))
                meter = StrandedMeter(classes, _workload(state, classes, shapes, added))
                verdicts = self.verdicts(state, candidates, meter)
        return ranked(verdicts, self.chain)

    def prepare(self, state: ClusterState) -> None:
        """Bring what the judge keeps from request to request up to date with `state`: the
        thread that changes the state may, between requests, so that a request finds it
        done (`serve.audited`); the schedulers' evaluations start over on a new state."""
        self._workload_of(state)
        for scheduler in (self.scheduler, self.quiet):
            scheduler.evaluator.attach(state)

    def _workload_of(
        self, state: ClusterState
    ) -> tuple[dict[str, DeviceClass], tuple[Counter[RequestShape], Collection[RequestShape]]]:
        """The classes that select an accelerator of `state`, and the shapes of its pods over
        them (counted on the state itself, where the memo reads only what changed)."""
        classes = self._accelerator_classes(state)
        return classes, self._shapes.shapes(state, classes)

    def _accelerator_classes(self, state: ClusterState) -> dict[str, DeviceClass]:
        """`accelerator_classes` of every device of the state, slice by slice."""
        key = tuple(sorted(state.device_classes.items()))
        if key != self._device_classes:
            self._device_classes, self._selected = key, {}
        kept, self._selected = self._selected, {}
        names: set[str] = set()
        for name in state.slices:
            views = state.slice_devices(name)
            hit = kept.get(name)
            if hit is None or hit[0] is not views:
                hit = views, frozenset(accelerator_classes(state.device_classes, views))
            self._selected[name] = hit
            names |= hit[1]
        return {name: dc for name, dc in key if name in names}

    def verdicts(
        self, state: ClusterState, candidates: Sequence[Candidate], meter: StrandedMeter
    ) -> list[Verdict]:
        """Each candidate's verdict, in order, in `state` holding every candidate's pods,
        its accelerators measured with `meter`."""
        keys = {k: tuple(sorted({key_of(p) for p in c.pods})) for k, c in enumerate(candidates)}
        offered = [state.pods[k] for k in sorted({k for ks in keys.values() for k in ks})]
        shared = _Shared(
            meter,
            pool_sizes(state),  # one pass over the nodes for every option
            label_reads(state, self.scheduler.profile, offered),
        )
        # CA offers the same pods to many groups: their gangs and classes are found once.
        sorting = ScaleUpPlanner(self.scheduler, [], Limits(), self.chain, self.quiet)
        sorted_pods: dict[tuple[ObjectKey, ...], tuple[list[Gang], list[PodClass]]] = {}
        verdicts = []
        for n, c in enumerate(candidates):
            if keys[n] not in sorted_pods:
                pods = [state.pods[k] for k in keys[n]]
                # The cluster's gangs are a pass over every pod, needed only for pods of one.
                gangs = sorting.units(state, pods)[0] if any(map(names_a_group, pods)) else []
                sorted_pods[keys[n]] = (gangs, sorting.classes(state, pods))
            verdicts.append(self._judge(state, c, shared, *sorted_pods[keys[n]]))
        return verdicts

    def _judge(
        self,
        state: ClusterState,
        c: Candidate,
        shared: _Shared,
        gangs: list[Gang],
        classes: list[PodClass],
    ) -> Verdict:
        """One candidate: gangs through the whole plan, other pods by node contents."""
        if not c.pods or c.node_count <= 0:
            return Verdict(c, None, "the option names no pods or no nodes", judged=False)
        # Room for draplan's own estimate: each pod on a node of its own at worst.
        room = c.node_count + len(c.pods)
        view = node_group_view(state, parse(c.group_id), c.template, room, shared.sizes)
        if view.pool is None:
            why = "nothing says what a node of the group looks like (no pool, node or template)"
            return Verdict(c, None, why, judged=False)
        if not view.own and any(_needs_devices(p, c.template) for p in c.pods):
            why = "the pods need devices, and CA's template node shows none"
            return Verdict(c, None, why, view.how, judged=False)
        planner = ScaleUpPlanner(self.scheduler, [view.pool], Limits(), self.chain, self.quiet)
        planner.pool_sizes = shared.sizes
        if not gangs:
            probe = planner.estimator.probe_name(state, view.pool)
            alike = shared.alike(state, view.pool, *probe)
            if alike is not None:
                planner.estimator = _AlikeEstimator(self.scheduler, self.quiet, shared, alike)
        planner.capacities = shared.capacities
        if gangs:
            pods = [state.pods[k] for k in sorted({key_of(p) for p in c.pods})]
            return self._build_all(state, c, planner, pods, gangs, view, shared.meter)
        caps = planner.capacity(state, view.pool, classes)
        fitting = [cls for cls, cap in zip(classes, caps, strict=True) if cap.pods]
        unfit = [cls.pods for cls, cap in zip(classes, caps, strict=True) if not cap.pods]
        chosen = planner.node_set(state, fitting) if fitting else None
        if chosen is None:
            reason = self._dropped(state, c, view, [k.pods for k in classes], shared)
            return Verdict(c, None, reason, view.how)
        # CA adds its count: the nodes that hold the most pods, as many as it offers.
        kept = sorted(chosen, key=lambda node: -sum(node[1]))[: c.node_count]
        notes = [self._dropped(state, c, view, unfit, shared)] if unfit else []
        if len(chosen) > c.node_count:
            notes.append(f"draplan's estimate needs {len(chosen)} nodes, CA offers {c.node_count}")
        measured = self._measure(state, c, fitting, view.pool, kept, shared)
        if measured.option is None:
            return Verdict(c, None, measured.reason, view.how)
        return Verdict(c, measured.option, "; ".join(notes), view.how, True, len(chosen))

    def _dropped(
        self,
        state: ClusterState,
        c: Candidate,
        view: GroupView,
        missing: list[list[Pod]],
        shared: _Shared | None,
    ) -> str:
        """Why the pods `missing` (by class) fit no node of the group: what the scheduler says
        of the first pod of each class on one empty node."""
        count = sum(len(m) for m in missing)
        some = f"{count} of {len(c.pods)}" if count < len(c.pods) else f"the {count}"
        text = f"{some} pods fit no node of {c.group_id}"
        assert view.pool is not None
        whys = [self._why_not(state, view.pool, m[0], shared) for m in missing if m]
        return f"{text}: {next((w for w in whys if w), 'too few nodes')}"

    def _measure(
        self,
        state: ClusterState,
        c: Candidate,
        classes: list[PodClass],
        pool: NodePool,
        chosen: list[tuple[NodePool, tuple[int, ...]]],
        shared: _Shared,
    ) -> Verdict:
        """The option as its chosen nodes make it: one node of each distinct content built
        and filled by the scheduler, measured, and counted as many times as it repeats."""
        kinds: dict[tuple[int, ...], int] = {}
        for _, content in chosen:
            kinds[content] = kinds.get(content, 0) + 1
        nodes: list[NewNode] = []
        wasted = stranded = 0.0
        name, labels = NodeNamer(state, pool).next()
        new = make_node(state, pool, name, labels)
        alike = shared.alike(state, pool, name, labels)
        for content, times in sorted(kinds.items(), reverse=True):
            pods = [p for cls, n in zip(classes, content, strict=True) for p in cls.pods[:n]]
            key = (alike, tuple(key_of(p) for p in pods)) if alike is not None else None
            measured = shared.measures.get(key) if key is not None else None
            if measured is None:
                measured = self._fill(state, new, pods, shared.meter)
                if key is not None:
                    shared.measures[key] = measured
            if not measured:
                return Verdict(c, None, f"{c.group_id}: a planned node refused a pod")
            wasted += times * measured[0]
            stranded += times * measured[1]
            nodes.extend([new] * times)
        placed = [
            key_of(p)
            for i, cls in enumerate(classes)
            for p in cls.pods[: sum(content[i] for _, content in chosen)]
        ]
        option = Option(
            pool,
            nodes,
            sorted(placed),
            waste=wasted / len(nodes),
            devices=sum(len(rs.spec.devices) for n in nodes for rs in n.slices),
            stranded=stranded,
            count=c.node_count,
        )
        return Verdict(c, option)

    def _fill(
        self, state: ClusterState, new: NewNode, pods: list[Pod], meter: StrandedMeter
    ) -> tuple[float, float] | tuple[()]:
        """The new node's waste and stranded accelerators once the scheduler has placed `pods`
        on it, one after another (in a fork, reverted); () if it refused one."""
        name = new.node.metadata.name
        with state.forked():
            add_new_node(state, new)
            for pod in pods:
                if self.quiet.schedule_pod(state, pod, [name]).node is None:
                    return ()
            return waste(state, [new.node]), meter.node(state, new.node).stranded

    def _build_all(
        self,
        state: ClusterState,
        c: Candidate,
        planner: ScaleUpPlanner,
        pods: list[Pod],
        gangs: list[Gang],
        view: GroupView,
        meter: StrandedMeter,
    ) -> Verdict:
        """Gangs: every node built and every pod placed by the scheduler, gangs whole in one
        topology domain; at CA's node count, a gang counts only if all its members are on
        the nodes CA adds."""
        pool = planner.pools[0]
        with state.forked():
            plan = planner.plan_pods(state, pods)
            if not plan.placed:
                missing = [p for p in pods if key_of(p) not in plan.placed]
                reason = next(
                    (plan.reasons[key_of(p)] for p in missing if key_of(p) in plan.reasons), ""
                )
                if reason:
                    text = f"none of the {len(pods)} pods fit new nodes of {c.group_id}: {reason}"
                    return Verdict(c, None, text, view.how)
                by_class = [k.pods for k in planner.classes(state, missing)]
                # Nodes the plan added are in the state: nothing is shared with other options.
                reason = self._dropped(state, c, view, by_class, None)
                return Verdict(c, None, reason, view.how)
            nodes = [n for o in plan.options for n in o.nodes]
            hosted: dict[str, int] = {}
            for node in plan.placed.values():
                hosted[node] = hosted.get(node, 0) + 1
            ordered = sorted(nodes, key=lambda n: -hosted.get(n.node.metadata.name, 0))
            kept = ordered[: c.node_count]
            names = {n.node.metadata.name for n in kept}
            on_kept = {k for k, node in plan.placed.items() if node in names}
            for gang in gangs:
                if not set(gang.members) & set(plan.placed) <= on_kept:
                    on_kept -= set(gang.members)  # a gang split by CA's count runs later, whole
            built = [n.node for n in kept]
            option = Option(
                pool,
                kept,
                sorted(on_kept),
                waste=waste(state, built),
                devices=sum(len(rs.spec.devices) for n in kept for rs in n.slices),
                stranded=sum(meter.node(state, n).stranded for n in built),
                count=c.node_count,
            )
        notes = []
        if len(plan.placed) < len(pods):
            notes.append(f"{len(pods) - len(plan.placed)} of {len(pods)} pods fit no new node")
        if len(nodes) > c.node_count:
            notes.append(f"draplan's estimate needs {len(nodes)} nodes, CA offers {c.node_count}")
        return Verdict(c, option, "; ".join(notes), view.how, True, len(nodes))

    def _why_not(
        self, state: ClusterState, pool: NodePool, pod: Pod, shared: _Shared | None
    ) -> str:
        """What the scheduler says of `pod` on one more empty node of `pool`."""
        name, labels = NodeNamer(state, pool).next()
        alike = shared.alike(state, pool, name, labels) if shared is not None else None
        key = (alike, key_of(pod)) if alike is not None else None
        said = shared.whys.get(key) if shared is not None and key is not None else None
        if said is None:
            with state.forked():
                add_new_node(state, make_node(state, pool, name, labels))
                result = self.scheduler.schedule_pod(state, pod, [name])
            said = result.reason.message if result.reason is not None else ""
            if shared is not None and key is not None:
                shared.whys[key] = said
        return said


def ca_chooser(judge: Judge) -> CAChooser:
    """Cluster Autoscaler run with `--expander=grpc,least-waste` and draplan serving the gRPC
    filter (`expander/factory/chain.go`, `grpcplugin/grpc_client.go`): one option answered is
    taken; several go to least-waste; none ("[]") scales nothing this loop; an error (draplan
    cannot judge) leaves least-waste all of CA's options."""

    def choose(state: ClusterState, options: list[CAOption]) -> CAOption | None:
        offered = [
            Candidate(o.pool.metadata.name, o.node_count, tuple(state.pods[k] for k in o.pods))
            for o in options
        ]
        answer = judge.answer(state, offered)
        named = {v.candidate.group_id for v in answer.best(judge.chain)}
        if named:
            return least_waste(state, [o for o in options if o.pool.metadata.name in named])
        return least_waste(state, options) if answer.unjudged else None

    return choose
