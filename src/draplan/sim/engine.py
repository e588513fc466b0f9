"""The event loop: arrivals, scheduler cycles, autoscaler ticks, nodes becoming ready after
their pool's provisioning delay, completions (or a trace's deletions) and scale-down. Same
input and seed, same result.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import msgspec

from draplan.api.core_v1 import NodeCondition, Pod
from draplan.api.draplan_v1alpha1 import SCENARIO_POLICIES
from draplan.api.features import DEFAULT as DEFAULT_FEATURES
from draplan.api.features import FeatureGates
from draplan.api.meta import KubeStruct
from draplan.api.resource_v1 import ResourceClaim, ResourceClaimTemplate
from draplan.autoscaler import Autoscaler
from draplan.autoscaler.ca import least_waste
from draplan.autoscaler.derived import derive_pools
from draplan.autoscaler.drain import MIRROR, is_daemonset_pod
from draplan.autoscaler.plan import CAChooser
from draplan.autoscaler.scaledown import DISABLED
from draplan.autoscaler.templates import NewNode, add_new_node
from draplan.cluster.nodepools import node_pool
from draplan.cluster.podresources import is_terminal, is_waiting
from draplan.cluster.state import ClusterState, key_of
from draplan.grpcplugin import Judge, ca_chooser
from draplan.scheduler import Profile, Scheduler
from draplan.scheduler.profile import draplan_profile
from draplan.sim.metrics import Recorder
from draplan.sim.stranded import StrandedMeter
from draplan.sim.workloads import EPOCH, Job, timestamp

POLICIES = SCENARIO_POLICIES

ARRIVE, READY, FINISH, TICK = 0, 1, 2, 3  # same-time order: new work and nodes first


@dataclass(frozen=True)
class SimConfig:
    policy: str = "dra+gang-atomic"
    autoscaler_interval: float = 10.0
    scale_down_unneeded: float = 600.0
    horizon: float | None = None  # run until then; default: until all work is done
    sample_every: float = 60.0
    features: FeatureGates = DEFAULT_FEATURES  # the simulated cluster's release and gates
    prices: Mapping[str, str] | None = None  # `--prices`, for pools derived from node groups


@dataclass
class SimResult:
    policy: str
    totals: dict[str, Any]
    series: dict[str, list[tuple[float, float]]]
    jobs: list[dict[str, Any]]
    nodes: list[dict[str, Any]]
    occupancy: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


def _ca_choose(policy: str, profile: Profile) -> CAChooser | None:
    if policy == "ca+least-waste":
        return least_waste
    if policy == "ca+draplan-expander":
        return ca_chooser(Judge(Scheduler(profile)))
    return None


class Simulation:
    """Events in (time, kind, sequence) order. The scheduler runs once after all events of an
    instant; the autoscaler loop runs on its period's grid, but only at the ticks where
    something could have changed its answer: after an event, or when a node's unneeded time
    runs out. Between those, a tick would repeat the last plan, so idle time is skipped."""

    def __init__(self, objects: list[KubeStruct], jobs: list[Job], config: SimConfig) -> None:
        if config.policy not in POLICIES:
            raise ValueError(f"unknown policy {config.policy!r}")
        self.config = config
        self.state = ClusterState.from_objects(objects, config.features)
        if not self.state.node_pools:
            # The pools `scale` derives from the cluster's own node groups (Cluster API groups,
            # Karpenter NodePools, node-group labels): every policy grows the same ones.
            derived = derive_pools(self.state, config.prices, kube=False)  # draplan's profile
            self.state.node_pools.update(derived.pools)
        gang_atomic = config.policy == "dra+gang-atomic"
        # The simulator compares autoscaling policies under draplan's own placement.
        profile = draplan_profile()
        self.scheduler = Scheduler(profile, gangs=gang_atomic)
        self.autoscaler = Autoscaler(
            profile,
            legacy=config.policy == "legacy",
            gangs=gang_atomic,
            ca_choose=_ca_choose(config.policy, profile),
        )
        self.jobs = {j.name: j for j in jobs}
        self.job_of = {pod: j.name for j in jobs for pod in j.pods}
        self.events: list[tuple[float, int, int, Any]] = []
        self.seq = itertools.count()
        self.now = 0.0
        self.upcoming: dict[str, tuple[NewNode, str, list[tuple[str, str]]]] = {}
        self.unneeded_since: dict[str, float] = {}
        self.pools_of: dict[str, str] = {}  # node: its pool ("": none)
        self.ticks: set[int] = set()  # periods with a tick queued
        self.ticks_run = 0  # autoscaler passes (a benchmark shows how much idle time is skipped)
        self.dirty = True  # changed since the last scale-up plan
        self.unscheduled = False  # changed since the scheduler last ran
        self.started: set[str] = set()
        self.finished: set[str] = set()
        # For jobs not started: a pod of theirs the scheduler left pending, and its reason.
        self.pending_reason: dict[str, str] = {}
        self.initial = frozenset(self.state.nodes.keys())
        # At most ~1000 samples per series over a given horizon, however long.
        sample_every = max(config.sample_every, (config.horizon or 0.0) / 1000)
        self.rec = Recorder(self.state, StrandedMeter(self.state, jobs), sample_every)
        for name in sorted(self.state.nodes.keys()):
            self.rec.node_added(name, self.state.nodes[name], 0.0, initial=True)
        for job in jobs:
            self._push(job.arrival, ARRIVE, job.name)
        self._want_tick(0.0)

    def _push(self, t: float, kind: int, data: Any) -> None:
        heapq.heappush(self.events, (t, kind, next(self.seq), data))

    def _want_tick(self, t: float) -> None:
        """An autoscaler tick at the first point of its period's grid at or after `t`."""
        period = math.ceil(t / self.config.autoscaler_interval)
        if period not in self.ticks:
            self.ticks.add(period)
            self._push(period * self.config.autoscaler_interval, TICK, period)

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
        events = self.events
        while events:
            t, kind, _, data = heapq.heappop(events)
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
                self.ticks.discard(data)
                self.ticks_run += 1
                self._tick()
            if self.unscheduled and (not events or events[0][0] > t or events[0][1] == TICK):
                self._schedule()
            if progress is not None:
                progress(t)
            if self._done() and self.config.horizon is None:
                break
        end = min(horizon, self.now) if self._done() and self.config.horizon is None else horizon
        self.rec.advance(end)
        return self.rec.result(
            self.config.policy, end, self.jobs, self.started, self.pending_reason
        )

    def _done(self) -> bool:
        return len(self.finished) == len(self.jobs)

    def _changed(self) -> None:
        self.unscheduled = True
        self.dirty = True
        self._want_tick(self.now)

    # --- events --------------------------------------------------------------------------

    def _arrive(self, job: Job) -> None:
        for obj in job.objects:
            if isinstance(obj, Pod):
                self.state.pods[key_of(obj)] = obj
            elif isinstance(obj, ResourceClaim):
                self.state.put_claim(obj)
            elif isinstance(obj, ResourceClaimTemplate):
                self.state.claim_templates[key_of(obj)] = obj
            else:
                self.state.others.append(obj)
        self.rec.job_arrived(job, self.now)
        if job.deletion is not None:
            self._push(job.deletion, FINISH, job.name)
        self._changed()

    def _ready(self, names: list[str]) -> None:
        """The nodes of one scale-up join together (one node-group resize), Ready from now
        (Cluster Autoscaler takes a node for its group's template a minute later)."""
        ready = NodeCondition(type="Ready", status="True", last_transition_time=timestamp(self.now))
        for name in names:
            new, pool, intended = self.upcoming.pop(name)
            status = msgspec.structs.replace(new.node.status, conditions=(ready,))
            new = NewNode(msgspec.structs.replace(new.node, status=status), new.slices)
            add_new_node(self.state, new)
            self.rec.node_added(name, new.node, self.now, pool=pool, intended=intended)
        self._changed()

    def _finish(self, job: Job) -> None:
        for key in job.pods:
            self.state.remove_pod(key)
        for obj in job.objects:
            if isinstance(obj, ResourceClaim):
                self.state.remove_claim(key_of(obj))  # deleted with its pod
        self.finished.add(job.name)
        self.rec.job_finished(job, self.now)
        self._changed()

    def _schedule(self) -> None:
        self.unscheduled = False
        nodes = ""  # `_nodes`, said once for every pod this run leaves pending
        for r in self.scheduler.run(self.state):
            if not r.node:
                job_name = self.job_of.get(r.key)
                if job_name is not None and r.reason is not None:
                    nodes = nodes or self._nodes()
                    key = r.key
                    reason = f"{key[0]}/{key[1]} at {self.now:g}s ({nodes}): {r.reason.message}"
                    self.pending_reason[job_name] = reason
                continue
            self.rec.pod_bound(r.key, r.node, self.now)
            name = self.job_of.get(r.key)
            if name is None or name in self.started:
                continue
            job = self.jobs[name]
            pods = [self.state.pods.get(k) for k in job.pods]
            if all(p is not None and p.spec.node_name for p in pods):
                self.started.add(name)
                self.rec.job_started(job, self.now)
                if job.deletion is None:
                    self._push(self.now + job.duration, FINISH, name)

    def _nodes(self) -> str:
        """kube-scheduler's message counts the nodes that exist at that moment, the ones the
        simulation added among them (not those still provisioning): a pending reason says
        when, and how many."""
        added = sum(1 for name in self.state.nodes if name not in self.initial)
        return f"{added} of its {len(self.state.nodes)} nodes added by the simulation"

    def _pending(self) -> list[Pod]:
        return [p for p in self.state.pods.values() if is_waiting(p)]

    def _tick(self) -> None:
        # Nothing changed since the last plan: the same plan would come out (upcoming nodes
        # included), so skip it.
        pending = self._pending() if self.dirty else None
        if pending:
            self._scale_up(pending)
        self.dirty = False
        self._scale_down(pending)
        for since in self.unneeded_since.values():
            self._want_tick(since + self.config.scale_down_unneeded)

    def _scale_up(self, pods: list[Pod]) -> None:
        pending = sorted(key_of(p) for p in pods)
        with self.state.forked():
            for new, _, _ in self.upcoming.values():
                add_new_node(self.state, new)  # upcoming nodes count, as in Cluster Autoscaler
            now = EPOCH + timedelta(seconds=self.now)
            plan = self.autoscaler.plan(self.state, now, explain=False, scale_down=False)
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

    def _wanted_pools(self, pending: list[Pod]) -> set[str]:
        """Pools whose empty nodes some pending pod could use: their idle nodes are kept."""
        if not pending:
            return set()
        planner = self.autoscaler.planner(self.state)
        return {
            pool.metadata.name
            for pool in planner.pools
            if planner.helpable(self.state, pool, pending)
        }

    def _scale_down(self, pending: list[Pod] | None) -> None:
        """Remove the nodes of the autoscaled pools, the dump's own included, idle for long
        enough; `pending` as _pending() gives it (None: not read yet; planning in a fork
        leaves the pods as they were). Idle is Cluster Autoscaler's empty node
        (simulator/utilization: DaemonSet and mirror pods do not count; they go with the
        node), never one annotated scale-down-disabled, never below the pool's min size."""
        state = self.state
        pooled = {n: group for n in sorted(state.nodes.keys()) if (group := self._pool_of(n))}
        if not pooled:
            return
        used = {
            p.spec.node_name
            for p in state.pods.values()
            if p.spec.node_name and not _goes_with_node(p)
        }
        nodes = state.nodes
        idle = [
            name
            for name in pooled
            if name not in used and nodes[name].metadata.annotations.get(DISABLED) != "true"
        ]
        for name in set(self.unneeded_since) - set(idle):
            del self.unneeded_since[name]
        if not idle:
            return
        wanted = self._wanted_pools(self._pending() if pending is None else pending)
        members = Counter(pooled.values())
        for name in idle:
            pool_name = pooled[name]
            if pool_name in wanted:
                self.unneeded_since.pop(name, None)
                continue
            pool = state.node_pools.get(pool_name)
            if pool is not None and members[pool_name] <= pool.spec.min_nodes:
                # Not unneeded but unremovable (CA's NodeGroupMinSizeReached): no clock runs.
                self.unneeded_since.pop(name, None)
                continue
            since = self.unneeded_since.setdefault(name, self.now)
            if self.now - since >= self.config.scale_down_unneeded:
                for pod in state.pods_on(name):
                    state.remove_pod(key_of(pod))  # evicted with the node
                state.remove_node(name)
                members[pool_name] -= 1
                self.unneeded_since.pop(name)
                self.rec.node_removed(name, self.now)

    def _pool_of(self, name: str) -> str:
        """The pool of node `name` ("": none), found once: what places a node in a pool (its
        labels, a pool copying it) stays while it lives."""
        got = self.pools_of.get(name)
        if got is None:
            pool = node_pool(self.state, self.state.nodes[name])
            got = self.pools_of[name] = pool.metadata.name if pool is not None else ""
        return got


def _goes_with_node(pod: Pod) -> bool:
    """A DaemonSet or mirror pod, or one done: it keeps no node from being empty."""
    return is_daemonset_pod(pod) or MIRROR in pod.metadata.annotations or is_terminal(pod)


def simulate(
    objects: list[KubeStruct],
    jobs: list[Job],
    config: SimConfig,
    progress: Callable[[float], None] | None = None,
) -> SimResult:
    return Simulation(objects, jobs, config).run(progress)
