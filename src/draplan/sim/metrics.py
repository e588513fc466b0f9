"""What a simulation measures: time-weighted GPU allocation, idle and wasted capacity, partial
gangs, stranded capacity (the FGD measure, draplan.sim.stranded), pending times per workload
class, and cost."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from draplan.api.core_v1 import Node, Pod
from draplan.audit.plugin_gpus import held, plugin_units
from draplan.cluster.accelerators import is_accelerator
from draplan.cluster.nodepools import pool_name, price_per_hour
from draplan.cluster.podresources import pod_requests
from draplan.cluster.state import ClusterState
from draplan.sim.stranded import StrandedMeter

if TYPE_CHECKING:
    from draplan.sim.engine import SimResult
    from draplan.sim.workloads import Job

HOUR = 3600.0


@dataclass
class NodeLife:
    name: str
    pool: str
    price: float
    added: float
    initial: bool
    intended: list[tuple[str, str]] = field(default_factory=list)
    removed: float | None = None
    hosted: set[tuple[str, str]] = field(default_factory=set)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


@dataclass(frozen=True, slots=True)
class NodeSample:
    """What one node contributes while its state holds: GPUs, GPUs in use, stranded GPUs."""

    gpus: float
    used: float
    stranded: float


class Recorder:
    """Integrates the cluster's measures over time. A node is measured again only when the
    cluster state's change log names it: an event re-measures the nodes it changed, not all."""

    def __init__(
        self, state: ClusterState, meter: StrandedMeter, sample_every: float = 60.0
    ) -> None:
        self.state = state
        self.meter = meter
        self.sample_every = sample_every
        self.last = 0.0
        self.lives: list[NodeLife] = []  # every node ever, in order (names can come back)
        self.nodes: dict[str, NodeLife] = {}  # the current life of each present node
        self.arrived: dict[str, float] = {}
        self.start: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.kind: dict[str, str] = {}
        self.totals = {
            "gpuSeconds": 0.0,
            "allocatedGpuSeconds": 0.0,
            "idleProvisioned": 0.0,
            "partialGang": 0.0,
            "stranded": 0.0,
            "cost": 0.0,
        }
        self.series: dict[str, list[tuple[float, float]]] = {
            "gpuAllocationPercent": [],
            "strandedGpus": [],
            "pendingPods": [],
            "nodes": [],
            "costPerHour": [],
        }
        self.occupancy: dict[str, list[tuple[float, float]]] = {}
        self.next_sample = 0.0
        self.gang_pods: dict[tuple[str, str], str] = {}
        self.samples: dict[str, NodeSample] = {}
        self.cursor = -1  # into state.change_log; -1: measure every node
        # (GPUs, in use, idle on new nodes, stranded, cost per hour) of the current state.
        self.now = (0.0, 0.0, 0.0, 0.0, 0.0)

    # --- events --------------------------------------------------------------------------

    def node_added(
        self,
        name: str,
        node: Node,
        t: float,
        *,
        initial: bool = False,
        pool: str = "",
        intended: list[tuple[str, str]] | None = None,
    ) -> None:
        pool = pool or pool_name(self.state, node)
        price = price_per_hour(self.state, node) or 0.0
        life = NodeLife(name, pool, price, t, initial, list(intended or []))
        self.lives.append(life)
        self.nodes[name] = life

    def node_removed(self, name: str, t: float) -> None:
        self.nodes.pop(name).removed = t

    def pod_bound(self, key: tuple[str, str], node: str, t: float) -> None:
        if node in self.nodes:
            self.nodes[node].hosted.add(key)

    def job_arrived(self, job: Job, t: float) -> None:
        self.arrived[job.name] = t
        self.kind[job.name] = job.kind
        if len(job.pods) > 1:
            for key in job.pods:
                self.gang_pods[key] = job.name

    def job_started(self, job: Job, t: float) -> None:
        self.start[job.name] = t

    def job_finished(self, job: Job, t: float) -> None:
        self.ended[job.name] = t
        for key in job.pods:
            self.gang_pods.pop(key, None)

    # --- integration ---------------------------------------------------------------------

    def _refresh(self) -> None:
        """Measure the nodes changed since the last call, then the cluster's sums."""
        state = self.state
        if self.cursor == len(state.change_log):
            return
        names = state.changed_since(self.cursor)
        if names is None:
            names = sorted(set(state.nodes.keys()) | set(self.samples))
        self.cursor = len(state.change_log)
        meter = self.meter
        for name in names:
            node = state.nodes.get(name)
            if node is None:
                self.samples.pop(name, None)
                continue
            # GPUs as `draplan metrics` counts them: physical accelerators, a partitioned
            # one used as far as its counters are consumed, and device plugins' devices.
            measured = meter.node(state, node)
            gpus = float(len(measured.accelerators))
            used = gpus - sum(f for _, f in measured.accelerators)
            stranded = measured.stranded
            plugins = meter.plugins(state, node)
            if plugins is not None:
                gpus += sum(plugins.units.devices.values())
                used += sum(plugins.allocated.values())
                stranded += plugins.stranded
            self.samples[name] = NodeSample(gpus, used, stranded)
        total = used = idle_new = stranded = cost = 0.0
        for name, sample in self.samples.items():
            total += sample.gpus
            used += sample.used
            stranded += sample.stranded
            life = self.nodes.get(name)
            if life is not None:
                cost += life.price
                if not life.initial:
                    idle_new += sample.gpus - sample.used
        self.now = (total, used, idle_new, stranded, cost)

    def advance(self, t: float) -> None:
        """Integrate the state as it was since the last call up to `t`."""
        dt = t - self.last
        if dt <= 0 and t > 0:
            return
        self._refresh()
        state = self.state
        total, used, idle_new, stranded, cost = self.now
        held = 0.0
        for key, job in self.gang_pods.items():
            pod = state.pods.get(key)
            if pod is not None and pod.spec.node_name and job not in self.start:
                held += _pod_devices(state, pod)
        self.totals["gpuSeconds"] += total * dt
        self.totals["allocatedGpuSeconds"] += used * dt
        self.totals["idleProvisioned"] += idle_new * dt
        self.totals["partialGang"] += held * dt
        self.totals["stranded"] += stranded * dt
        self.totals["cost"] += cost * dt / HOUR
        self.last = t
        if t >= self.next_sample:
            self.next_sample = t + self.sample_every
            pending = sum(1 for p in state.pods.values() if not p.spec.node_name)
            self.series["gpuAllocationPercent"].append((t, 100.0 * used / total if total else 0))
            self.series["strandedGpus"].append((t, round(stranded, 3)))
            self.series["pendingPods"].append((t, float(pending)))
            self.series["nodes"].append((t, float(len(state.nodes))))
            self.series["costPerHour"].append((t, cost))
            for name, sample in self.samples.items():
                frac = sample.used / sample.gpus if sample.gpus else 0.0
                self.occupancy.setdefault(name, []).append((t, frac))

    def result(
        self,
        policy: str,
        end: float,
        jobs: dict[str, Job],
        started: set[str],
        reasons: dict[str, str] | None = None,
    ) -> SimResult:
        """The totals, series and rows; `reasons`: why each job not started still pends."""
        from draplan.sim.engine import SimResult

        waits: dict[str, list[float]] = {}
        job_rows = []
        for name, job in sorted(jobs.items()):
            arrived = self.arrived.get(name)
            if arrived is None:
                continue
            began = self.start.get(name)
            # A pod deleted before it ever ran (a replayed trace) waited until its deletion.
            stop = began if began is not None else self.ended.get(name, end)
            wait = stop - arrived
            waits.setdefault(job.kind, []).append(wait)
            row: dict[str, Any] = {
                "job": name,
                "class": job.kind,
                "arrival": arrived,
                "start": began,
                "devices": job.devices,
            }
            if began is None and reasons and name in reasons:
                row["pendingReason"] = reasons[name]
            job_rows.append(row)
        wasted = [
            n
            for n in self.lives
            if not n.initial and n.intended and not (set(n.intended) & n.hosted)
        ]
        wasted_hours = sum(
            ((n.removed if n.removed is not None else end) - n.added) / HOUR for n in wasted
        )
        tot = self.totals
        totals = {
            "jobs": len(job_rows),
            "jobsStarted": len(started),
            "pendingSeconds": {
                k: {
                    "p50": round(percentile(v, 0.5), 1),
                    "p95": round(percentile(v, 0.95), 1),
                    "p99": round(percentile(v, 0.99), 1),
                }
                for k, v in sorted(waits.items())
            },
            "gpuAllocationPercent": round(100 * tot["allocatedGpuSeconds"] / tot["gpuSeconds"], 2)
            if tot["gpuSeconds"]
            else 0.0,
            "idleGpuHoursProvisioned": round(tot["idleProvisioned"] / HOUR, 2),
            "wastedNodes": len(wasted),
            "wastedNodeHours": round(wasted_hours, 2),
            "partialGangGpuHours": round(tot["partialGang"] / HOUR, 2),
            "strandedGpuHours": round(tot["stranded"] / HOUR, 2),
            "strandedPercent": round(100 * tot["stranded"] / tot["gpuSeconds"], 2)
            if tot["gpuSeconds"]
            else 0.0,
            "nodesAdded": sum(1 for n in self.lives if not n.initial),
            "cost": round(tot["cost"], 2),
            "simulatedHours": round(end / HOUR, 2),
        }
        nodes = [
            {
                "node": n.name,
                "pool": n.pool,
                "added": n.added,
                "removed": n.removed,
                "wasted": n in wasted,
            }
            for n in self.lives
        ]
        return SimResult(policy, totals, self.series, job_rows, nodes, self.occupancy)


def _pod_devices(state: ClusterState, pod: Pod) -> float:
    """The accelerators a bound pod holds, of every kind: DRA devices of its claims (the claim
    kube-scheduler made for its extended resources too) and the device-plugin devices its
    requests fill on its node, counted as `draplan metrics` counts them."""
    names = [s.resource_claim_name or "" for s in pod.status.resource_claim_statuses]
    extended = pod.status.extended_resource_claim_status
    if extended is not None:
        names.append(extended.resource_claim_name)
    n = 0.0
    for name in names:
        claim = state.claims.get((pod.metadata.namespace, name))
        if claim is not None and claim.status.allocation is not None:
            n += sum(1 for r in claim.status.allocation.devices.results if is_accelerator(r.driver))
    node = state.nodes.get(pod.spec.node_name)
    units = plugin_units(node) if node is not None else None
    if units:
        n += sum(held(units, pod_requests(pod, state.features))[1].values())
    return n
