"""The event loop: arrivals, scheduler cycles, autoscaler ticks, nodes becoming ready after
their pool's provisioning delay, completions and scale-down. Same input and seed, same result.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from draplan.api.core_v1 import Pod
from draplan.api.meta import KubeStruct
from draplan.autoscaler import Autoscaler
from draplan.autoscaler.templates import POOL_LABEL, NewNode, add_new_node
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import Scheduler, build_profile
from draplan.sim.metrics import Recorder
from draplan.sim.workloads import Job

POLICIES = ("legacy", "dra", "dra+gang-atomic")

ARRIVE, READY, FINISH, TICK = 0, 1, 2, 3  # same-time order: new work and nodes first


@dataclass(frozen=True)
class SimConfig:
    policy: str = "dra+gang-atomic"
    autoscaler_interval: float = 10.0
    scale_down_unneeded: float = 600.0
    horizon: float | None = None  # stop time; default: when all work is done
    sample_every: float = 60.0


@dataclass
class SimResult:
    policy: str
    totals: dict[str, Any]
    series: dict[str, list[tuple[float, float]]]
    jobs: list[dict[str, Any]]
    nodes: list[dict[str, Any]]
    occupancy: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


class Simulation:
    def __init__(self, objects: list[KubeStruct], jobs: list[Job], config: SimConfig) -> None:
        if config.policy not in POLICIES:
            raise ValueError(f"unknown policy {config.policy!r}")
        self.config = config
        self.state = ClusterState.from_objects(objects)
        gang_atomic = config.policy == "dra+gang-atomic"
        profile = build_profile()
        self.scheduler = Scheduler(profile, gangs=gang_atomic)
        self.autoscaler = Autoscaler(profile, legacy=config.policy == "legacy", gangs=gang_atomic)
        self.jobs = {j.name: j for j in jobs}
        self.job_of = {pod: j.name for j in jobs for pod in j.pods}
        self.events: list[tuple[float, int, int, Any]] = []
        self.seq = itertools.count()
        self.now = 0.0
        self.upcoming: dict[str, tuple[NewNode, str, list[tuple[str, str]]]] = {}
        self.unneeded_since: dict[str, float] = {}
        self.dirty = True
        self.started: set[str] = set()
        self.finished: set[str] = set()
        self.rec = Recorder(self.state)
        for name in sorted(self.state.nodes.keys()):
            self.rec.node_added(name, self.state.nodes[name], 0.0, initial=True)
        for job in jobs:
            self._push(job.arrival, ARRIVE, job.name)
        self._push(0.0, TICK, None)

    def _push(self, t: float, kind: int, data: Any) -> None:
        heapq.heappush(self.events, (t, kind, next(self.seq), data))

    def default_horizon(self) -> float:
        """Long enough for every job to run twice over after the last arrival; a policy that
        thrashes (adds, idles, removes, re-adds nodes) would otherwise never stop."""
        jobs = list(self.jobs.values())
        if not jobs:
            return 0.0
        return max(j.arrival for j in jobs) + 2 * max(j.duration for j in jobs) + 3600.0

    def run(self, progress: Callable[[float], None] | None = None) -> SimResult:
        horizon = self.config.horizon
        if horizon is None:
            horizon = self.default_horizon()
        while self.events:
            t, kind, _, data = heapq.heappop(self.events)
            if t > horizon:
                break
            self.rec.advance(t)
            self.now = t
            if kind == ARRIVE:
                self._arrive(self.jobs[data])
            elif kind == READY:
                self._ready(data)
            elif kind == FINISH:
                self._finish(self.jobs[data])
            else:
                self._tick()
            if progress is not None:
                progress(t)
            if self._done() and kind != ARRIVE:
                break
        end = min(horizon, self.now) if self._done() else horizon
        self.rec.advance(end)
        return self.rec.result(self.config.policy, end, self.jobs, self.started)

    def _done(self) -> bool:
        return len(self.finished) == len(self.jobs)

    # --- events --------------------------------------------------------------------------

    def _arrive(self, job: Job) -> None:
        for obj in job.objects:
            if isinstance(obj, Pod):
                self.state.pods[key_of(obj)] = obj
            elif getattr(obj, "kind", "") == "ResourceClaimTemplate":
                self.state.claim_templates[key_of(obj)] = obj  # type: ignore[assignment]
            else:
                self.state.others.append(obj)
        self.rec.job_arrived(job, self.now)
        self._schedule()

    def _ready(self, names: list[str]) -> None:
        """The nodes of one scale-up join together (one node-group resize)."""
        for name in names:
            new, pool, intended = self.upcoming.pop(name)
            add_new_node(self.state, new)
            self.rec.node_added(name, new.node, self.now, pool=pool, intended=intended)
        self._schedule()

    def _finish(self, job: Job) -> None:
        for key in job.pods:
            self.state.remove_pod(key)
        self.finished.add(job.name)
        self.rec.job_finished(job, self.now)
        self._schedule()

    def _schedule(self) -> None:
        self.dirty = True
        for r in self.scheduler.run(self.state):
            if r.node:
                self.rec.pod_bound(r.key, r.node, self.now)
        for name, job in self.jobs.items():
            if name in self.started or name in self.finished:
                continue
            pods = [self.state.pods.get(k) for k in job.pods]
            if pods and all(p is not None and p.spec.node_name for p in pods):
                self.started.add(name)
                self.rec.job_started(job, self.now)
                self._push(self.now + job.duration, FINISH, name)

    def _pending(self) -> list[Pod]:
        return [p for p in self.state.pods.values() if not p.spec.node_name and not is_terminal(p)]

    def _tick(self) -> None:
        # Nothing changed since the last plan: the same plan would come out (upcoming nodes
        # included), so skip it.
        if self.dirty and self._pending():
            self._scale_up()
        self.dirty = False
        self._scale_down()
        if not self._done() and not self._stuck():
            self._push(self.now + self.config.autoscaler_interval, TICK, None)

    def _stuck(self) -> bool:
        """Nothing left that could change the cluster: no arrival, completion or node on its
        way, no node waiting to be scaled down. Pending pods then pend forever."""
        return not self.events and not self.upcoming and not self.unneeded_since

    def _scale_up(self) -> None:
        pending = sorted(key_of(p) for p in self._pending())
        with self.state.forked():
            for new, _, _ in self.upcoming.values():
                add_new_node(self.state, new)  # upcoming nodes count, as in Cluster Autoscaler
            plan = self.autoscaler.plan(self.state, explain=False, scale_down=False)
        for option in plan.scale_up:
            delay = float(option.pool.spec.provisioning_delay_seconds)
            batch = []
            for new in option.nodes:
                name = new.node.metadata.name
                if name in self.upcoming or name in self.state.nodes:
                    continue
                # A node is added for the work pending now: pods are interchangeable across
                # the nodes of a plan (gangs pick their domain when the nodes are ready), so
                # hosting any of it is hosting what the node was added for.
                intended = pending
                self.upcoming[name] = (new, option.pool.metadata.name, intended)
                batch.append(name)
            if batch:
                self._push(self.now + delay, READY, batch)

    def _wanted_pools(self) -> set[str]:
        """Pools whose empty nodes some pending pod could use: their idle nodes are kept."""
        pending = self._pending()
        if not pending:
            return set()
        planner = self.autoscaler.planner(self.state)
        return {
            pool.metadata.name
            for pool in planner.pools
            if planner.helpable(self.state, pool, pending)
        }

    def _scale_down(self) -> None:
        used = {p.spec.node_name for p in self.state.pods.values() if p.spec.node_name}
        wanted = self._wanted_pools()
        for name in sorted(self.state.nodes.keys()):
            node = self.state.nodes[name]
            if (
                POOL_LABEL not in node.metadata.labels
                or name in used
                or node.metadata.labels[POOL_LABEL] in wanted
            ):
                self.unneeded_since.pop(name, None)
                continue
            since = self.unneeded_since.setdefault(name, self.now)
            pool = self.state.node_pools.get(node.metadata.labels[POOL_LABEL])
            members = sum(
                1
                for n in self.state.nodes.values()
                if n.metadata.labels.get(POOL_LABEL) == node.metadata.labels[POOL_LABEL]
            )
            if pool is not None and members <= pool.spec.min_nodes:
                continue
            if self.now - since >= self.config.scale_down_unneeded:
                self.state.remove_node(name)
                self.unneeded_since.pop(name)
                self.rec.node_removed(name, self.now)


def simulate(
    objects: list[KubeStruct],
    jobs: list[Job],
    config: SimConfig,
    progress: Callable[[float], None] | None = None,
) -> SimResult:
    return Simulation(objects, jobs, config).run(progress)
