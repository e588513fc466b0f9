"""One audit of the cluster model: every answer `draplan serve` gives, computed together and
published as one immutable value, so a request reads a consistent set without waiting.

The scale plan is the exception in time, not in content: its scale-down simulates removing
every under-used node in turn, most of an audit under churn, and nothing in `/metrics` reads
it. So a plan is made in an audit only when the plan share allows (`Auditor.plan_share`); the
answers in between carry the last plan, which names its own generation, and their scale-up
series come from the scale-up alone, computed on every audit."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
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
from draplan.autoscaler.derived import derive_pools
from draplan.cluster.state import ClusterState
from draplan.scheduler import Profile, build_profile
from draplan.serve.series import Family, SeriesMemo, cluster_series, waiting_gangs

DOCUMENTS = ("why", "metrics", "plan")


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
    """The JSON documents by name (`DOCUMENTS`), as `-o json` prints them."""
    plan_generation: int
    """The generation the plan document (`bodies["plan"]`) was made on; at most `generation`."""
    plan_published: float
    """`time.monotonic()` when that plan was made."""
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
    plan_share: float = 0.5
    """The largest share of the audit thread's time that making plans takes: after a plan
    that took d seconds, the next is made no sooner than d·(1 − share)/share later (1: on
    every audit). Half by default, so no two audits in a row pay for one and an event waits
    for at most one plan before `/metrics` shows it."""
    gangs_seen: dict[str, float] = field(default_factory=dict)
    """When each waiting gang was first seen waiting (wall clock), for gangs whose pods carry
    no creation time."""
    # Kept while the model updates one state in place: their schedulers' evaluations are
    # cached per node version, so a later audit evaluates only the nodes changed since.
    _state: ClusterState | None = field(default=None, init=False, repr=False)
    _placer: Placer | None = field(default=None, init=False, repr=False)
    _autoscaler: Autoscaler | None = field(default=None, init=False, repr=False)
    _derived: dict[str, NodePool] = field(default_factory=dict, init=False, repr=False)
    _metrics: MetricsMemo = field(default_factory=MetricsMemo, init=False, repr=False)
    _series: SeriesMemo = field(default_factory=SeriesMemo, init=False, repr=False)
    _plan: tuple[int, float, bytes] | None = field(default=None, init=False, repr=False)
    """The last plan: its generation, when it was made, its document."""
    _next_plan: float = field(default=0.0, init=False, repr=False)

    def _derive_pools(self, state: ClusterState) -> None:
        """With no NodePool in the model, the pools `scale` and `why` derive from its node
        groups, derived again each audit since nodes come and go."""
        for name, pool in self._derived.items():
            if state.node_pools.get(name) is pool:
                del state.node_pools[name]
        self._derived = {} if state.node_pools else derive_pools(state, self.prices).pools
        state.node_pools.update(self._derived)

    def plan_due(self) -> bool:
        """Whether the plan share allows making a plan now."""
        return self._plan is None or time.monotonic() >= self._next_plan

    def audit(
        self, state: ClusterState, generation: int, lock: threading.Lock | None = None
    ) -> Answers:
        """The answers for `state`, with a plan made on it when `plan_due`; each step holds
        `lock` (another reader of the state, the gRPC expander, then waits for one step, not
        for the whole audit)."""
        with _collector_between_audits():
            return self._audit(state, generation, lock or nullcontext())

    def replan(
        self, state: ClusterState, answers: Answers, lock: threading.Lock | None = None
    ) -> Answers:
        """`answers` with a plan made on `state`, which is still the state they were made on
        (the model has not changed since)."""
        with _collector_between_audits(), lock or nullcontext():
            start = time.monotonic()
            self._make_plan(state, answers.generation)
        assert self._plan is not None
        generation, made, body = self._plan
        return replace(
            answers,
            published=made,
            seconds=made - start,
            bodies={**answers.bodies, "plan": body},
            plan_generation=generation,
            plan_published=made,
        )

    def _audit(
        self, state: ClusterState, generation: int, step: AbstractContextManager[Any]
    ) -> Answers:
        start = time.monotonic()
        autoscaler = self._autoscaler_for(state)
        with step:
            self._derive_pools(state)
            diagnoses = tuple(why(state, self.profile, self._placer))
        with step:
            metrics = metrics_document(state, self._metrics)
        with step:
            if self.plan_due():
                scale_up = self._make_plan(state, generation)
            else:
                scale_up = scale_up_document(state, autoscaler)
        docs: dict[str, Any] = {"why": why_document(diagnoses), "metrics": metrics}
        with step:
            series = cluster_series(
                state, diagnoses, metrics, scale_up, self._gang_waits(state), self._series
            )
            objects = state_objects(state)
        assert self._plan is not None
        plan_generation, plan_published, plan_body = self._plan
        bodies = {name: json_text(doc).encode() for name, doc in docs.items()}
        done = time.monotonic()
        return Answers(
            generation=generation,
            published=done,
            seconds=done - start,
            diagnoses=diagnoses,
            bodies={**bodies, "plan": plan_body},
            series=series,
            objects=objects,
            plan_generation=plan_generation,
            plan_published=plan_published,
        )

    def _autoscaler_for(self, state: ClusterState) -> Autoscaler:
        # Random tie-breaks draw from the scheduler's generator: a kept one would break ties
        # unlike `draplan why` and `draplan scale` on the same objects.
        fresh = self.profile.ties == "random" or state is not self._state
        if fresh or self._placer is None or self._autoscaler is None:
            self._state = state
            self._placer = Placer(self.profile)
            self._autoscaler = Autoscaler(self.profile, self.limits, self.expanders)
        return self._autoscaler

    def _make_plan(self, state: ClusterState, generation: int) -> dict[str, Any]:
        """Make the plan of `state`, keep it, and return its document."""
        start = time.monotonic()
        _, plan = plan_document(state, self._autoscaler_for(state))
        made = time.monotonic()
        self._plan = generation, made, json_text(plan).encode()
        self._next_plan = made + (made - start) * (1 - self.plan_share) / self.plan_share
        return plan

    def _gang_waits(self, state: ClusterState) -> list[float]:
        now = time.time()
        waiting = waiting_gangs(state)
        self.gangs_seen = {g: self.gangs_seen.get(g, now) for g in waiting}
        return [now - min(self.gangs_seen[g], created or now) for g, created in waiting.items()]


@contextmanager
def _collector_between_audits() -> Iterator[None]:
    """An audit allocates many containers, most kept until the next audit: the cyclic
    collector's full passes over the model's heap during it (half a second of five at 5,000
    nodes) find little to free. It runs between audits instead."""
    collect = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collect:
            gc.enable()


def state_objects(state: ClusterState) -> tuple[KubeStruct, ...]:
    """Every object the state holds, kind by kind, in key order."""
    tables: list[Mapping[Any, KubeStruct]] = [
        state.namespaces,
        state.device_classes,
        state.taint_rules,
        dict(state.slices.items()),
        dict(state.nodes.items()),
        state.claim_templates,
        dict(state.claims.items()),
        state.pod_templates,
        dict(state.pods.items()),
        state.node_pools,
    ]
    out = [obj for table in tables for _, obj in sorted(table.items())]
    return (*out, *state.others)
