"""One audit of the cluster model: every answer `draplan serve` gives, computed together and
published as one immutable value, so a request reads a consistent set without waiting."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from draplan.api.codec import json_text
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.meta import KubeStruct
from draplan.audit.documents import metrics_document, plan_document, why_document
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

    def _derive_pools(self, state: ClusterState) -> None:
        """With no NodePool in the model, the pools `scale` and `why` derive from its node
        groups, derived again each audit since nodes come and go."""
        for name, pool in self._derived.items():
            if state.node_pools.get(name) is pool:
                del state.node_pools[name]
        self._derived = {} if state.node_pools else derive_pools(state, self.prices).pools
        state.node_pools.update(self._derived)

    def audit(
        self, state: ClusterState, generation: int, lock: threading.Lock | None = None
    ) -> Answers:
        """The answers for `state`; each step holds `lock` (another reader of the state, the
        gRPC expander, then waits for one step, not for the whole audit)."""
        collect = gc.isenabled()
        # An audit allocates many containers, most kept until the next audit: the cyclic
        # collector's full passes over the model's heap during it (half a second of five at
        # 5,000 nodes) find little to free. It runs between audits instead.
        gc.disable()
        try:
            return self._audit(state, generation, lock or nullcontext())
        finally:
            if collect:
                gc.enable()

    def _audit(
        self, state: ClusterState, generation: int, step: AbstractContextManager[Any]
    ) -> Answers:
        start = time.monotonic()
        # Random tie-breaks draw from the scheduler's generator: a kept one would break ties
        # unlike `draplan why` and `draplan scale` on the same objects.
        fresh = self.profile.ties == "random" or state is not self._state
        if fresh or self._placer is None or self._autoscaler is None:
            self._state = state
            self._placer = Placer(self.profile)
            self._autoscaler = Autoscaler(self.profile, self.limits, self.expanders)
        autoscaler = self._autoscaler
        with step:
            self._derive_pools(state)
            diagnoses = tuple(why(state, self.profile, self._placer))
        with step:
            metrics = metrics_document(state, self._metrics)
        with step:
            _, plan = plan_document(state, autoscaler)
        docs: dict[str, Any] = {"why": why_document(diagnoses), "metrics": metrics, "plan": plan}
        with step:
            series = cluster_series(
                state, diagnoses, metrics, plan, self._gang_waits(state), self._series
            )
            objects = state_objects(state)
        done = time.monotonic()
        return Answers(
            generation=generation,
            published=done,
            seconds=done - start,
            diagnoses=diagnoses,
            bodies={name: json_text(docs[name]).encode() for name in DOCUMENTS},
            series=series,
            objects=objects,
        )

    def _gang_waits(self, state: ClusterState) -> list[float]:
        now = time.time()
        waiting = waiting_gangs(state)
        self.gangs_seen = {g: self.gangs_seen.get(g, now) for g in waiting}
        return [now - min(self.gangs_seen[g], created or now) for g, created in waiting.items()]


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
