"""One audit of the cluster model: every answer `draplan serve` gives, computed together and
published as one immutable value, so a request reads a consistent set without waiting.

The scale plan is the exception in time, not in content: `draplan serve` makes it in a planner
process of its own (`draplan.serve.planning`), and the answers carry the newest plan made, which
names its own generation; their scale-up series come from the scale-up alone, computed on every
audit. Without a planner (as in the tests, or while it is down) each audit makes its own plan."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from draplan.api.codec import json_text
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.meta import KubeStruct
from draplan.audit.documents import (
    metrics_document,
    plan_document,
    scale_up_document,
    why_document,
)
from draplan.audit.metrics_memo import MetricsMemo
from draplan.audit.why import Diagnosis, Placer, why
from draplan.autoscaler import DEFAULT_EXPANDERS, Autoscaler, Limits
from draplan.autoscaler.derived import derive_again
from draplan.cluster.incremental import Changes, ObjectsInOrder, changes_between
from draplan.cluster.state import ClusterState
from draplan.scheduler import Profile, build_profile
from draplan.serve.audited import AuditedState
from draplan.serve.bodies import KeptText
from draplan.serve.heap import FrozenHeap
from draplan.serve.planning import MadePlan, PlanWorker
from draplan.serve.series import Family, SeriesMemo, cluster_series, waiting_gangs
from draplan.sources.files import gc_paused

# The longest an audit step waits for a reader of the audited state: CA's deadline (5 s).
READER_SECONDS = 5.0


@dataclass(frozen=True)
class Answers:
    """What one audit found; never changed once published."""

    generation: int
    published: float
    """`time.monotonic()` when published."""
    seconds: float
    """How long the audit took."""
    diagnoses: tuple[Diagnosis, ...]
    bodies: Mapping[str, bytes]
    """The JSON documents by name ("why", "metrics", "plan"), as `-o json` prints them."""
    plan: MadePlan
    """The plan `bodies["plan"]` is: of `generation` or an earlier one."""
    series: tuple[Family, ...]
    objects: tuple[KubeStruct, ...]
    """The objects the answers are about (for `/v1/snapshot`; frozen values, shared)."""


@dataclass
class Auditor:
    """Computes `Answers` from the model's state; kept by the audit loop between audits."""

    profile: Profile = field(default_factory=build_profile)
    limits: Limits = field(default_factory=Limits)
    expanders: tuple[str, ...] = DEFAULT_EXPANDERS
    prices: Mapping[str, str] | None = None
    """The `--prices` table for pools derived from node groups."""
    plan_process: bool = False
    """Make the scale plan in a planner process, as `draplan serve` does; else every audit
    makes the plan of its own state, in the audit."""
    gangs_seen: dict[str, float] = field(default_factory=dict)
    """When each waiting gang was first seen waiting (wall clock), for gangs whose pods carry
    no creation time."""
    audited: AuditedState | None = None
    """Offered every audit's objects (the gRPC expander's state), if any."""
    # Kept while the model updates one state in place: their schedulers' evaluations are
    # cached per node version, so a later audit evaluates only the nodes changed since.
    _state: ClusterState | None = field(default=None, init=False, repr=False)
    _placer: Placer | None = field(default=None, init=False, repr=False)
    _autoscaler: Autoscaler | None = field(default=None, init=False, repr=False)
    _derived: dict[str, NodePool] = field(default_factory=dict, init=False, repr=False)
    _metrics: MetricsMemo = field(default_factory=MetricsMemo, init=False, repr=False)
    _series: SeriesMemo = field(default_factory=SeriesMemo, init=False, repr=False)
    _metrics_text: KeptText = field(default_factory=KeptText, init=False, repr=False)
    _heap: FrozenHeap = field(default_factory=FrozenHeap, init=False, repr=False)
    _planner: PlanWorker | None = field(default=None, init=False, repr=False)
    # The objects of the last audit, and whether `audited` has been offered them (one offered
    # late takes them all first).
    _objects: ObjectsInOrder = field(default_factory=ObjectsInOrder, init=False, repr=False)
    _offered: AuditedState | None = field(default=None, init=False, repr=False)
    _made: MadePlan | None = field(default=None, init=False, repr=False)
    """The newest plan, the planner's or an audit's."""

    def __post_init__(self) -> None:
        if self.plan_process:
            self._planner = PlanWorker(self.profile, self.limits, self.expanders, self.prices)

    @property
    def plan_errors(self) -> int:
        """Plans that failed and planner processes that died."""
        return self._planner.errors if self._planner is not None else 0

    def plan_behind(self, generation: int) -> bool:
        """Whether the plan of `generation` is still to come from a planner that runs."""
        return (
            self._planner is not None
            and self._planner.running
            and (self._made is None or self._made.generation != generation)
        )

    def close(self) -> None:
        """End the planner process and `audited`'s thread, if any; unfreeze what the audits
        froze."""
        if self._planner is not None:
            self._planner.stop()
        if self.audited is not None:
            self.audited.close()
        self._heap.close()

    def audit(
        self, state: ClusterState, generation: int, lock: threading.Lock | None = None
    ) -> Answers:
        """The answers for `state`; each step holds `lock` (another user of the state then
        waits for one step, not for the whole audit), after a reader of `audited` is done."""
        # An audit allocates many containers, most kept until the next audit: the cyclic
        # collector's full passes over the model's heap during it (half a second of five at
        # 5,000 nodes) find little to free. What it keeps is frozen at its end (`serve.heap`).
        with gc_paused(freeze=False):
            answers = self._audit(state, generation, _Step(lock, self.audited))
            self._heap.settle()  # before the collector is back: it never walks what is kept
            return answers

    def take_plan(self, answers: Answers, wait: float) -> Answers:
        """`answers` with the newest plan the planner made since, waiting up to `wait` seconds
        for one; `answers` themselves when none came."""
        made = self._planner.take(wait) if self._planner is not None else None
        return answers if made is None or not self._newer(made) else _with_plan(answers, made)

    def _audit(
        self, state: ClusterState, generation: int, step: AbstractContextManager[Any]
    ) -> Answers:
        start = time.monotonic()
        autoscaler = self._autoscaler_for(state)
        planner = self._planner
        with step:
            self._derived = derive_again(state, self._derived, self.prices, self.profile.kube)
            diagnoses = tuple(why(state, self.profile, self._placer))
        with step:
            metrics = metrics_document(state, self._metrics)
        with step:
            objects, changes = self._objects.look(state)
            self._offer(state, generation, objects, changes)
            # Unless a planner took this state, the audit makes the plan itself.
            sent = planner is not None and planner.send(
                state, generation, objects, self._derived, changes
            )
            if sent:
                scale_up = scale_up_document(state, autoscaler)
            else:
                made, scale_up = _plan_of(state, generation, autoscaler)
                self._made = made
        with step:
            node_pools = {name: part.pool for name, part in self._metrics.node_parts.items()}
            waits = self._gang_waits(state)
            series = cluster_series(
                state, diagnoses, metrics, scale_up, waits, self._series, node_pools
            )
        bodies = {
            "why": json_text(why_document(diagnoses)).encode(),
            "metrics": self._metrics_text(metrics).encode(),
        }
        if sent:
            assert planner is not None
            newest = planner.take()
            if newest is not None:
                self._newer(newest)
            if self._made is None:
                # The first answers wait for the first plan: every answers carry one; when the
                # planner makes none (it failed, or the process died), the audit makes it.
                first = planner.wait_for(generation)
                if first is None:
                    with step:
                        first, _ = _plan_of(state, generation, autoscaler)
                self._made = first
            made = self._made
        done = time.monotonic()
        return Answers(
            generation=generation,
            published=done,
            seconds=done - start,
            diagnoses=diagnoses,
            bodies={**bodies, "plan": made.body},
            series=series,
            objects=objects,
            plan=made,
        )

    def _offer(
        self,
        state: ClusterState,
        generation: int,
        objects: tuple[KubeStruct, ...],
        changes: Changes,
    ) -> None:
        """Offer `audited` how the objects changed since the last audit (every object, to one
        attached since)."""
        audited = self.audited
        if audited is not None:
            late = self._offered is not audited
            self._offered = audited
            whole = changes_between({}, objects, state.source_of)[1] if late else changes
            audited.offer(generation, whole, state.features)

    def _newer(self, made: MadePlan) -> bool:
        """Keep `made` if it is newer than the plan kept; whether it was."""
        if self._made is not None and made.generation <= self._made.generation:
            return False
        self._made = made
        return True

    def _autoscaler_for(self, state: ClusterState) -> Autoscaler:
        # Kept under random ties too: each pod's draw is seeded by the pod alone
        # (`Evaluator._pick`), never by what was scheduled before.
        if state is not self._state or self._placer is None or self._autoscaler is None:
            self._state = state
            self._placer = Placer(self.profile)
            self._autoscaler = Autoscaler(self.profile, self.limits, self.expanders)
        return self._autoscaler

    def _gang_waits(self, state: ClusterState) -> list[float]:
        now = time.time()
        waiting = waiting_gangs(state, self.profile.kube)
        self.gangs_seen = {g: self.gangs_seen.get(g, now) for g in waiting}
        return [now - min(self.gangs_seen[g], created or now) for g, created in waiting.items()]


class _Step:
    """One step of an audit: it holds the loop's lock, and first lets a reader of `audited`
    (the gRPC expander) finish."""

    def __init__(self, lock: threading.Lock | None, audited: AuditedState | None) -> None:
        self._lock: AbstractContextManager[Any] = lock if lock is not None else nullcontext()
        self._audited = audited

    def __enter__(self) -> None:
        if self._audited is not None:
            self._audited.wait_for_readers(READER_SECONDS)
        self._lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(None, None, None)


def _plan_of(
    state: ClusterState, generation: int, autoscaler: Autoscaler
) -> tuple[MadePlan, dict[str, Any]]:
    """The plan of `state`, made here, and its document."""
    began = time.monotonic()
    _, doc = plan_document(state, autoscaler)
    done = time.monotonic()
    return MadePlan(generation, done, done - began, json_text(doc).encode()), doc


def _with_plan(answers: Answers, made: MadePlan) -> Answers:
    return replace(answers, bodies={**answers.bodies, "plan": made.body}, plan=made)
