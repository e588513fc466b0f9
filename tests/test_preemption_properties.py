"""Property test of DefaultPreemption on generated clusters.

Clusters: 2-5 nodes of cpu and 0-4 DRA GPUs (some tainted against the pod: not candidates),
running pods of random priority, cpu, GPUs (allocated claims), start time and app label,
PodDisruptionBudgets over the apps (with a status or without, as the disruption controller
would fill it); one pending pod of random priority, cpu and GPUs (a claim template),
sometimes with preemptionPolicy Never. The scheduler runs with preemption, as kube-scheduler
1.37 does (a victim's GPUs stay allocated in the dry run) or with draplan's
preemptionFreesDevices (they are freed).

The checker shares no code with the scheduler: it works out, for every node, the victims
kube-scheduler's SelectVictimsOnNode must choose (cpu and pod counts in plain integers; the
potential victims sorted by priority and start time, the budget-breaking ones put back first),
then the node pickOneNodeForPreemption must choose among them, and the FailedScheduling text
when there is none. The run must agree: the same node (or one tied with it on every
criterion), exactly those victims, the same message.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from draplan.api.meta import KubeStruct, LabelSelector, ObjectMeta
from draplan.api.policy_v1 import (
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
)
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import Profile, Scheduler, build_profile
from draplan.scheduler.preemption import DefaultPreemption
from draplan.scheduler.preemption_args import PreemptionArgs
from scheduler_builders import MakeClaim, MakeNode, MakePod, MakeSlice, consumer, device_class

EXAMPLES = 300
APPS = ("web", "batch", "etl")
T0 = 1_780_000_000  # seconds; start times are T0 + minutes


@dataclass(frozen=True)
class Running:
    node: int
    cpu: int  # milli
    priority: int
    minute: int | None  # None: not started
    app: int | None
    gpus: int = 0


@dataclass(frozen=True)
class Budget:
    app: int
    allowed: int | None  # None: no status (the checker derives it like the controller)
    min_available: int


@dataclass(frozen=True)
class Case:
    nodes: tuple[tuple[int, int, bool], ...]  # (cpu milli, max pods, tainted)
    running: tuple[Running, ...]
    budgets: tuple[Budget, ...]
    cpu: int
    priority: int
    never: bool
    node_gpus: tuple[int, ...] = ()
    gpus: int = 0  # the pending pod's
    free_devices: bool = False


@st.composite
def cases(draw: st.DrawFn) -> Case:
    nodes = tuple(
        draw(
            st.lists(
                st.tuples(
                    st.integers(2, 6).map(lambda c: c * 1000),
                    st.integers(2, 6),
                    st.integers(0, 5).map(lambda t: t == 0),
                ),
                min_size=2,
                max_size=5,
            )
        )
    )
    running = tuple(
        draw(
            st.lists(
                st.builds(
                    Running,
                    node=st.integers(0, len(nodes) - 1),
                    cpu=st.integers(1, 6).map(lambda c: c * 500),
                    priority=st.sampled_from([-20, 0, 0, 10, 100, 1000]),
                    minute=st.none() | st.integers(0, 5),
                    app=st.sampled_from([None, 0, 0, 1, 2]),
                    gpus=st.sampled_from([0, 0, 1, 2]),
                ),
                min_size=2,
                max_size=16,
            )
        )
    )
    budgets = tuple(
        draw(
            st.lists(
                st.builds(
                    Budget,
                    app=st.integers(0, len(APPS) - 1),
                    allowed=st.sampled_from([None, 0, 0, 1]),
                    min_available=st.integers(0, 3),
                ),
                max_size=3,
                unique_by=lambda b: b.app,
            )
        )
    )
    return Case(
        nodes=nodes,
        running=running,
        budgets=budgets,
        cpu=draw(st.integers(4, 12).map(lambda c: c * 500)),
        priority=draw(st.sampled_from([0, 10, 100, 1000, 5000])),
        never=draw(st.integers(0, 15)) == 0,
        node_gpus=tuple(draw(st.sampled_from([0, 2, 4])) for _ in nodes),
        gpus=draw(st.sampled_from([0, 0, 1, 2, 3])),
        free_devices=draw(st.booleans()),
    )


def held_gpus(case: Case) -> list[int]:
    """Each running pod's GPUs as built: what its node still had, in order."""
    left = list(case.node_gpus)
    out = []
    for r in case.running:
        g = min(r.gpus, left[r.node])
        left[r.node] -= g
        out.append(g)
    return out


def _stamp(minute: int) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(T0 + 60 * minute, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def build(case: Case) -> list[KubeStruct]:
    objs: list[KubeStruct] = [device_class()]
    for i, (cpu, pods, tainted) in enumerate(case.nodes):
        node = MakeNode().name(f"n{i}").capacity(cpu=f"{cpu}m", pods=pods)
        if tainted:
            node = node.taint("dedicated", "infra")
        objs.append(node.obj())
        if case.node_gpus[i]:
            objs.append(MakeSlice().node(f"n{i}").gpus(case.node_gpus[i]).obj())
    taken = [0] * len(case.nodes)
    for j, (r, g) in enumerate(zip(case.running, held_gpus(case), strict=True)):
        pod = MakePod().name(f"r{j}").node(f"n{r.node}").req(cpu=f"{r.cpu}m").priority(r.priority)
        if g:
            devices = [f"gpu-{taken[r.node] + d}" for d in range(g)]
            taken[r.node] += g
            claim = MakeClaim().name(f"r{j}-gpu").gpus(g)
            owner = consumer(f"r{j}", f"uid-default-r{j}")
            claim = claim.allocated(f"n{r.node}", devices, reserved_for=[owner])
            objs.append(claim.obj())
            pod = pod.claim("gpu", f"r{j}-gpu")
        if r.minute is not None:
            pod = pod.started(_stamp(r.minute))
        if r.app is not None:
            pod = pod.label("app", APPS[r.app])
        objs.append(pod.obj())
    for b in case.budgets:
        status = (
            PodDisruptionBudgetStatus(observed_generation=1, disruptions_allowed=b.allowed)
            if b.allowed is not None
            else None
        )
        objs.append(
            PodDisruptionBudget(
                metadata=ObjectMeta(name=f"pdb-{APPS[b.app]}", namespace="default"),
                spec=PodDisruptionBudgetSpec(
                    min_available=b.min_available,
                    selector=LabelSelector(match_labels={"app": APPS[b.app]}),
                ),
                status=status,
            )
        )
    pod = MakePod().name("p").req(cpu=f"{case.cpu}m").priority(case.priority)
    if case.never:
        pod = pod.preemption_policy("Never")
    if case.gpus:
        objs.append(MakeClaim().name("p-gpu").gpus(case.gpus).template())
        pod = pod.template_claim("gpu", "p-gpu")
    objs.append(pod.obj())
    return objs


# --- the checker -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    victims: tuple[str, ...]
    violations: int


def _start(r: Running) -> float:
    return float("inf") if r.minute is None else float(r.minute)


def _importance(case: Case, j: int) -> tuple[int, float, str]:
    """Higher priority, then earlier start; victims equal in both go by name (draplan's
    rule where Go's sort leaves them in any order)."""
    return (-case.running[j].priority, _start(case.running[j]), f"r{j}")


def _allowed(case: Case) -> dict[int, int]:
    out = {}
    for b in case.budgets:
        if b.allowed is not None:
            out[b.app] = b.allowed
        else:  # the disruption controller: healthy matching pods less minAvailable
            healthy = sum(1 for r in case.running if r.app == b.app)
            out[b.app] = max(healthy - b.min_available, 0)
    return out


def _on(case: Case, node: int) -> list[int]:
    return [j for j, r in enumerate(case.running) if r.node == node]


def _fits(case: Case, node: int, present: list[int]) -> list[str]:
    """Why the pod does not fit `node` holding the running pods `present` (nothing: it fits):
    NodeResourcesFit's reasons, else DynamicResources'. The GPUs of pods taken off are free
    only with preemptionFreesDevices; kube-scheduler 1.37 keeps them allocated."""
    cpu, max_pods, _ = case.nodes[node]
    used = sum(case.running[j].cpu for j in present)
    missing = []
    if case.cpu + used > cpu:
        missing.append("Insufficient cpu")
    if len(present) + 1 > max_pods:
        missing.append("Too many pods")
    if missing or not case.gpus:
        return missing
    held = held_gpus(case)
    holders = present if case.free_devices else _on(case, node)
    if case.node_gpus[node] - sum(held[j] for j in holders) < case.gpus:
        return ["cannot allocate all claims"]
    return []


def select(case: Case, node: int) -> Expected | str:
    """SelectVictimsOnNode by hand, or the reason the node is no candidate."""
    on = [j for j, r in enumerate(case.running) if r.node == node]
    lower = [j for j in on if case.running[j].priority < case.priority]
    if not lower:
        return "No preemption victims found for incoming pod"
    kept = [j for j in on if j not in lower]
    missing = _fits(case, node, kept)
    if missing:
        return ", ".join(missing)
    order = sorted(lower, key=lambda j: _importance(case, j))
    left = _allowed(case)
    breaking, fine = [], []
    for j in order:
        app = case.running[j].app
        if app is not None and app in left:
            left[app] -= 1
            if left[app] < 0:
                breaking.append(j)
                continue
        fine.append(j)
    victims, violations = [], 0
    for j in breaking + fine:
        if _fits(case, node, [*kept, j]):
            victims.append(j)
            violations += j in breaking
        else:
            kept.append(j)
    victims.sort(key=lambda j: _importance(case, j))
    return Expected(tuple(f"r{j}" for j in victims), violations)


def dra_says(case: Case) -> str:
    """DynamicResources' PostFilter: the pod has a claim or not."""
    return "still not schedulable" if case.gpus else "no new claims to deallocate"


def scores(case: Case, e: Expected) -> tuple[float, ...]:
    """pickOneNodeForPreemption's criteria, higher better."""
    idx = [int(v[1:]) for v in e.victims]
    prios = [case.running[j].priority for j in idx]
    top = max(prios)
    return (
        -e.violations,
        -prios[0],
        -sum(p + 2**31 for p in prios),
        -len(idx),
        min(_start(case.running[j]) for j in idx if case.running[j].priority == top),
    )


def best(case: Case, found: dict[int, Expected]) -> set[int]:
    left = set(found)
    for i in range(5):
        top = max(scores(case, found[n])[i] for n in left)
        left = {n for n in left if scores(case, found[n])[i] == top}
    return left


def profile_of(case: Case) -> Profile:
    profile = build_profile()
    if not case.free_devices:
        return profile
    plugin = DefaultPreemption(profile.filters, profile.dra, PreemptionArgs(free_devices=True))
    return dataclasses.replace(profile, post_filters=(profile.dra, plugin))


@settings(max_examples=EXAMPLES, deadline=None)
@given(case=cases())
def test_preemption_chooses_the_node_and_victims_upstream_does(case: Case) -> None:
    state = ClusterState.from_objects(build(case))
    results = Scheduler(profile_of(case), post_filter=True).run(state)
    (result,) = results
    fitting = [
        i
        for i, (_, _, tainted) in enumerate(case.nodes)
        if not tainted
        and not _fits(case, i, [j for j, r in enumerate(case.running) if r.node == i])
    ]
    if fitting:
        event("fits without preemption")
        assert result.node in {f"n{i}" for i in fitting}
        return
    assert result.node is None and result.reason is not None
    message = result.reason.message
    total = len(case.nodes)
    if case.never:
        event("not eligible")
        assert not result.nominated
        assert message.endswith(
            f" {dra_says(case)}, preemption: not eligible due to preemptionPolicy=Never."
        )
        return
    found: dict[int, Expected] = {}
    failures: dict[str, int] = {}
    for i, (cpu, _, tainted) in enumerate(case.nodes):
        if tainted or case.cpu > cpu:  # unresolvable: not a potential node
            failures["Preemption is not helpful for scheduling"] = (
                failures.get("Preemption is not helpful for scheduling", 0) + 1
            )
            continue
        got = select(case, i)
        if isinstance(got, Expected):
            found[i] = got
        else:
            for text in got.split(", "):
                failures[text] = failures.get(text, 0) + 1
    if not found:
        event("no candidate")
        assert not result.nominated and not result.victims
        parts = ", ".join(sorted(f"{n} {text}" for text, n in failures.items()))
        assert message.endswith(
            f" {dra_says(case)}, preemption: 0/{total} nodes are available: {parts}."
        ), message
        return
    event(f"preempts ({len(found)} candidates)")
    event(
        "budget broken"
        if found[int((result.nominated or "n0")[1:])].violations
        else "no budget broken"
    )
    if case.gpus:
        event("preempts for GPUs, " + ("freed" if case.free_devices else "already free"))
    assert result.nominated in {f"n{i}" for i in best(case, found)}, (result.nominated, found)
    chosen = found[int(result.nominated[1:])]
    assert tuple(p.metadata.name for p in result.victims) == chosen.victims
    assert "preemption:" not in message  # a successful PostFilter adds nothing
    # The victims are gone and the nomination holds the pod's cpu on its node.
    for name in chosen.victims:
        assert ("default", name) not in state.pods
    assert state.pods[("default", "p")].status.nominated_node_name == result.nominated
    assert state.held.get(("default", "p")) == result.nominated


class _Forgetful(DefaultPreemption):
    """DefaultPreemption without its memory of failed dry runs."""

    def _kept(self, state: ClusterState) -> dict[tuple[bytes, int], Any]:
        self._failures.clear()
        return self._failures


@settings(max_examples=60, deadline=None)
@given(case=cases(), more=st.lists(st.sampled_from([0, 10, 100, 1000]), min_size=2, max_size=5))
def test_remembered_dry_runs_give_the_answers_of_fresh_ones(case: Case, more: list[int]) -> None:
    """Several pending pods of one shape (and some of another) in one run: a dry run that
    found nothing, kept and redone only where the change log says, answers as a fresh one."""
    objs = build(case)
    extra = [
        MakePod()
        .name(f"q{i}")
        .req(cpu=f"{case.cpu}m")
        .priority(p)
        .created(f"2026-01-0{i + 1}T00:00:00Z")
        .obj()
        for i, p in enumerate(more)
    ] + [MakePod().name("small").req(cpu="500m").priority(more[0]).obj()]

    def outcome(forget: bool) -> list[tuple[object, ...]]:
        profile = build_profile()
        if forget:
            kept = next(p for p in profile.post_filters if isinstance(p, DefaultPreemption))
            plugin = _Forgetful(
                kept.filters, kept.dra, kept.args, kept.seed, random_ties=kept.random_ties
            )
            profile = dataclasses.replace(profile, post_filters=(profile.dra, plugin))
        state = ClusterState.from_objects([*objs, *extra])
        return [
            (
                r.key,
                r.node,
                r.nominated,
                tuple(key_of(v) for v in r.victims),
                r.reason.message if r.reason else "",
            )
            for r in Scheduler(profile, post_filter=True).run(state)
        ]

    assert outcome(False) == outcome(True)
