"""The FGD paper's benchmark on the Alibaba openb trace, through draplan's scheduler and
allocator (openb-benchmark.md §2.2, §2.8 and §2.9).

One run: the trace's pods sorted by name and shuffled with the seed; resampled uniformly (from
the name-sorted list) until the GPU request would exceed `inflate` × the cluster's GPUs, or
random pods dropped while it does; then a random node priority from the same generator (the
simulator names node i "%04d-<name>" with a permutation, and its scheduler gives ties to the
smallest name). Each pod is created and scheduled once, in order: no departures, no retries;
a pod that does not fit is dropped. After every pod the run records the GPU requested so far
(failed pods included), the GPU allocated and the cluster's fragmentation against the trace's
typical pods; the paper's numbers are the means of those over the pods whose arrived share
rounds to a given percent (±1 % when none does).

Every pod goes through `Scheduler.schedule_pod`: the same plugins, allocator and ledgers as
any other input. We cannot replay the simulator's random numbers, so seeds are compared as
distributions, not one by one.
"""

from __future__ import annotations

import csv
import os
import random
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from draplan.api.errors import BadInput
from draplan.api.meta import KubeStruct
from draplan.cel import clear_caches
from draplan.cluster.fragmentation import DeviceKinds, Shape, Workload, claims_shape
from draplan.cluster.podresources import NONZERO_CPU, nonzero_requests
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler, build_profile
from draplan.scheduler.plugins.placement import (
    DRAPLAN,
    FGD,
    PAPER_POLICIES,
    POLICIES,
    DeviceResource,
    PlacementContext,
)
from draplan.sources import openb
from draplan.sources.files import gc_paused

RESOURCE = DeviceResource(device_class=openb.DEVICE_CLASS, capacity=openb.CAPACITY)
INFLATE = 1.3
PAPER_SEEDS = tuple(range(42, 52))
REPORT_BINS = (100, 130)
LAST_BIN = 130
# The directory names of the paper's raw results (fgd-results/*.csv, column sc_policy).
PAPER_NAMES = {
    "random": "01-Random",
    "dotprod": "02-DotProd",
    "clustering": "03-GpuClustering",
    "packing": "04-GpuPacking",
    "bestfit": "05-BestFit",
    "fgd": "06-FGD",
}
ALLOC_FILE = "analysis_allo_discrete.csv"
FRAG_FILE = "analysis_frag_discrete.csv"


def default_data_dir() -> Path | None:
    """`../shared/data` from the current directory, if it exists."""
    path = Path.cwd().parent / "shared" / "data"
    return path if path.is_dir() else None


# --- the workload of one run ------------------------------------------------------------------


@dataclass(frozen=True)
class Arrival:
    """One pod of a run: its trace row and its name in the run."""

    row: openb.PodRow
    name: str


def arrivals(
    rows: Sequence[openb.PodRow], rng: random.Random, inflate: float, capacity_milli: int
) -> list[Arrival]:
    """The pods in arrival order: shuffled, then tuned to `inflate` × capacity (§2.2 4, §2.9 3).

    Resampled pods are drawn from the name-sorted list and named `<name>-tuned-<i>`; the stop
    test adds the per-GPU milli of the candidate (the simulator's quirk), the total its whole
    request."""
    ordered = sorted(rows, key=lambda r: r.name)
    pods = [Arrival(r, r.name) for r in ordered]
    rng.shuffle(pods)
    total = sum(r.gpu_request_milli for r in ordered)
    target = inflate * capacity_milli
    if inflate <= 0 or total == target:
        return pods
    if total > target:
        while total > target and pods:
            victim = pods.pop(rng.randrange(len(pods)))
            total -= victim.row.gpu_request_milli
        return pods
    i = 0
    while ordered:
        row = ordered[rng.randrange(len(ordered))]
        if total + row.gpu_milli > target:
            break
        total += row.gpu_request_milli
        pods.append(Arrival(row, f"{row.name}-tuned-{i}"))
        i += 1
    return pods


def node_priority(rows: Sequence[openb.NodeRow], rng: random.Random) -> list[openb.NodeRow]:
    """The simulator's node order: nodes sorted by name, node i renamed "%04d-<name>" with a
    random permutation, so that ties (the smallest name wins) follow a fixed random order."""
    ordered = sorted(rows, key=lambda r: r.name)
    perm = list(range(len(ordered)))
    rng.shuffle(perm)
    return [replace(r, name=f"{perm[i]:04d}-{r.name}") for i, r in enumerate(ordered)]


# --- results ----------------------------------------------------------------------------------


@dataclass
class RunResult:
    """One (trace, policy, seed) run."""

    trace: str
    policy: str
    seed: int
    ties: str
    pods: int
    placed: int
    seconds: float
    cpu_seconds: float
    # Per arrived percent 0..130: mean allocated GPU % and fragmentation amount %.
    alloc: dict[int, float] = field(default_factory=dict)
    frag: dict[int, float] = field(default_factory=dict)

    def unallocated(self, arrived: int) -> float | None:
        value = self.alloc.get(arrived)
        return None if value is None else round(100 - value, 2)

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["unallocated"] = {str(b): self.unallocated(b) for b in REPORT_BINS}
        doc["fragmentation"] = {str(b): self.frag.get(b) for b in REPORT_BINS}
        doc["alloc"] = {str(k): v for k, v in self.alloc.items()}
        doc["frag"] = {str(k): v for k, v in self.frag.items()}
        return doc


def binned(
    arrived: Sequence[float], values: Sequence[float], last: int = LAST_BIN
) -> dict[int, float]:
    """The paper's discretisation (merge_*_discrete.py): for each integer arrived % the mean
    of the values of the events whose arrived % rounds to it, else of those within ±1 %."""
    bins: dict[int, list[float]] = {}
    for a, v in zip(arrived, values, strict=True):
        bins.setdefault(int(round(a, 0)), []).append(v)
    out: dict[int, float] = {}
    for b in range(last + 1):
        vals = bins.get(b)
        if not vals:
            vals = [v for k in (b - 1, b, b + 1) for v in bins.get(k, ())]
            if not vals:
                continue
        out[b] = round(sum(vals) / len(vals), 2)
    return out


# --- one run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trace:
    """A node list and a pod list, read once and shared by the runs."""

    name: str
    nodes: tuple[openb.NodeRow, ...]
    pods: tuple[openb.PodRow, ...]

    @classmethod
    def load(cls, trace: str, data_dir: str | os.PathLike[str]) -> Trace:
        openb_dir = openb.openb_dir(data_dir)
        nodes = openb.read_nodes(openb_dir / openb.NODE_LIST)
        pods = openb.read_pods(openb.trace_path(trace, openb_dir))
        return cls(Path(trace).stem.removeprefix("openb_pod_list_"), tuple(nodes), tuple(pods))

    @property
    def capacity_milli(self) -> int:
        return sum(r.gpus for r in self.nodes) * openb.GPU_MILLI


def typical_pods(
    state: ClusterState, rows: Iterable[openb.PodRow], threshold: float = 0.95
) -> Workload:
    """The paper's typical pods: the request shapes (non-zero CPU, GPU share, count, model
    set; memory left out) of the original trace, most frequent first, up to 95 % of pods."""
    device_class = state.device_classes[openb.DEVICE_CLASS]
    kinds = DeviceKinds.of_state(state, device_class)
    shapes: list[Shape] = []
    for row in rows:
        pod, claim = openb.pod_objects(row)
        cpu = nonzero_requests(pod, state.features)[NONZERO_CPU]
        shape = claims_shape(
            [claim] if claim is not None else [],
            cpu_milli=cpu,
            device_class=openb.DEVICE_CLASS,
            capacity=openb.CAPACITY,
            kinds=kinds,
        )
        shapes.append(shape if shape is not None else Shape(cpu))
    return Workload.typical(shapes, threshold)


def run(
    trace: Trace,
    policy: str,
    seed: int,
    *,
    inflate: float = INFLATE,
    ties: str | None = None,
) -> RunResult:
    """One run of the protocol; deterministic for a (trace, policy, seed, ties)."""
    start = time.perf_counter()
    cpu = time.process_time()
    # A run allocates millions of short-lived, acyclic objects: nothing for the collector.
    with gc_paused(freeze=False):
        return _run(trace, policy, seed, inflate, ties, start, cpu)


def _run(
    trace: Trace,
    policy: str,
    seed: int,
    inflate: float,
    ties: str | None,
    start: float,
    cpu: float,
) -> RunResult:
    clear_caches()  # a new snapshot: CEL results are cached per device id
    rng = random.Random(seed)
    pods = arrivals(trace.pods, rng, inflate, trace.capacity_milli)
    cluster_rows = node_priority(trace.nodes, rng)
    objects: list[KubeStruct] = [openb.device_class()]
    for node_row in cluster_rows:
        node, rs = openb.node_objects(node_row)
        objects.append(node)
        if rs is not None:
            objects.append(rs)
    state = ClusterState.from_objects(objects)
    workload = typical_pods(state, trace.pods)
    profile = build_profile(
        placement=policy, resource=RESOURCE, workload=workload, seed=seed, ties=ties
    )
    # The protocol only counts placements: failed pods need no "0/N nodes" explanation.
    scheduler = Scheduler(profile, gangs=False, explain=False)
    # The measurement's own view of the nodes (the paper's fragmentation, for every policy).
    measure = PlacementContext(RESOURCE, workload)
    frag_of = measure.fragmentation(state)
    node_frag = {
        name: frag_of(measure.node(state, node).free) for name, node in state.nodes.items()
    }
    frag_total = sum(node_frag.values())
    gpus = trace.capacity_milli // openb.GPU_MILLI
    to_pct = 100 / trace.capacity_milli
    arrived = used = placed = 0
    arrived_pct: list[float] = []
    alloc_pct: list[float] = []
    frag_pct: list[float] = []
    for pod_arrival in pods:
        row = pod_arrival.row
        pod, claim = openb.pod_objects(row, name=pod_arrival.name)
        if claim is not None:
            state.put_claim(claim)
        result = scheduler.schedule_pod(state, pod)
        arrived += row.gpu_request_milli
        if result.node is not None:
            placed += 1
            used += row.gpu_request_milli
            value = frag_of(measure.node(state, state.nodes[result.node]).free)
            frag_total += value - node_frag[result.node]
            node_frag[result.node] = value
        elif claim is not None:
            state.remove_claim((claim.metadata.namespace, claim.metadata.name))
        # As merge_alloc_discrete.py computes them (the rounding of the bins depends on it).
        arrived_pct.append(arrived / gpus / 10)
        alloc_pct.append(round(used / gpus / 10, 2))
        frag_pct.append(frag_total * to_pct)
    return RunResult(
        trace=trace.name,
        policy=policy,
        seed=seed,
        ties=profile.ties,
        pods=len(pods),
        placed=placed,
        seconds=round(time.perf_counter() - start, 3),
        cpu_seconds=round(time.process_time() - cpu, 3),
        alloc=binned(arrived_pct, alloc_pct),
        frag=binned(arrived_pct, frag_pct),
    )


# --- many runs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSpec:
    trace: str
    policy: str
    seed: int
    inflate: float = INFLATE
    ties: str | None = None


_TRACES: dict[tuple[str, str], Trace] = {}  # per process: a worker reads each trace once


def load_trace(trace: str, data_dir: str | os.PathLike[str]) -> Trace:
    key = (trace, str(data_dir))
    hit = _TRACES.get(key)
    if hit is None:
        hit = _TRACES[key] = Trace.load(trace, data_dir)
    return hit


def _one(job: tuple[RunSpec, str]) -> RunResult:
    spec, data_dir = job
    return run(
        load_trace(spec.trace, data_dir),
        spec.policy,
        spec.seed,
        inflate=spec.inflate,
        ties=spec.ties,
    )


def run_many(
    specs: Sequence[RunSpec],
    data_dir: str | os.PathLike[str],
    jobs: int = 1,
    done: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """The runs, in `specs` order; `jobs` > 1 runs them in that many processes. `done` is
    called as each result arrives (a progress bar)."""
    work = [(spec, str(data_dir)) for spec in specs]
    results: list[RunResult] = []
    if jobs <= 1 or len(work) <= 1:
        for w in work:
            results.append(_one(w))
            if done is not None:
                done(results[-1])
        return results
    with ProcessPoolExecutor(max_workers=min(jobs, len(work))) as pool:
        for result in pool.map(_one, work):
            results.append(result)
            if done is not None:
                done(result)
    return results


def parse_seeds(text: str) -> list[int]:
    """ "42-51", "42,44,50" or "7"."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, sep, high = part.partition("-")
        try:
            if sep:
                seeds.extend(range(int(low), int(high) + 1))
            else:
                seeds.append(int(part))
        except ValueError:
            raise BadInput(f"not a seed or seed range: {part!r}", path="--seeds") from None
    if not seeds:
        raise BadInput("no seeds", path="--seeds")
    return seeds


# --- the paper's numbers ------------------------------------------------------------------

# (trace, paper policy directory) -> per seed: {arrived %: value}
PaperTable = dict[tuple[str, str], dict[int, dict[int, float]]]


def _read_discrete(path: Path) -> PaperTable:
    out: PaperTable = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            trace = row["workload"].removeprefix("openb_pod_list_")
            values = {}
            for b in range(LAST_BIN + 1):
                text = row.get(str(b)) or ""
                if text:
                    values[b] = float(text)
            out.setdefault((trace, row["sc_policy"]), {})[int(row["seed"])] = values
    return out


@dataclass(frozen=True)
class PaperResults:
    """The paper's raw results (fgd-results/*.csv): allocated GPU % and fragmentation %."""

    alloc: PaperTable
    frag: PaperTable

    @classmethod
    def load(cls, data_dir: str | os.PathLike[str] | None) -> PaperResults | None:
        if data_dir is None:
            return None
        base = Path(data_dir) / "fgd-results"
        if not (base / ALLOC_FILE).is_file():
            return None
        frag = _read_discrete(base / FRAG_FILE) if (base / FRAG_FILE).is_file() else {}
        return cls(_read_discrete(base / ALLOC_FILE), frag)


def paper_policy(policy: str) -> str:
    """The paper's policy to compare with: itself, or FGD for draplan's own."""
    return PAPER_NAMES.get(policy, PAPER_NAMES[FGD] if policy == DRAPLAN else "")


# --- summaries ------------------------------------------------------------------------------


def mean_sd(values: Sequence[float]) -> tuple[float, float] | None:
    if not values:
        return None
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return round(statistics.fmean(values), 2), round(sd, 2)


@dataclass
class Summary:
    """Mean ± sd over seeds of one (trace, policy, tie rule), beside the paper's."""

    trace: str
    policy: str
    ties: str
    seeds: list[int]
    unallocated: dict[int, tuple[float, float] | None]
    fragmentation: dict[int, tuple[float, float] | None]
    seconds: float
    cpu_seconds: float
    paper_policy: str = ""
    paper_unallocated: dict[int, tuple[float, float] | None] = field(default_factory=dict)
    paper_fragmentation: dict[int, tuple[float, float] | None] = field(default_factory=dict)
    paper_seeds: int = 0

    def to_dict(self) -> dict[str, Any]:
        def pairs(d: dict[int, tuple[float, float] | None]) -> dict[str, Any]:
            return {
                str(k): (None if v is None else {"mean": v[0], "sd": v[1]}) for k, v in d.items()
            }

        doc: dict[str, Any] = {
            "trace": self.trace,
            "policy": self.policy,
            "ties": self.ties,
            "seeds": self.seeds,
            "unallocatedGpuPct": pairs(self.unallocated),
            "fragmentationPct": pairs(self.fragmentation),
            "secondsPerRun": self.seconds,
            "cpuSecondsPerRun": self.cpu_seconds,
        }
        if self.paper_policy and self.paper_seeds:
            doc["paper"] = {
                "policy": self.paper_policy,
                "seeds": self.paper_seeds,
                "unallocatedGpuPct": pairs(self.paper_unallocated),
                "fragmentationPct": pairs(self.paper_fragmentation),
            }
        return doc


def summarize(
    results: Sequence[RunResult],
    paper: PaperResults | None,
    bins: Sequence[int] = REPORT_BINS,
) -> list[Summary]:
    """One Summary per (trace, policy, ties), in first-seen order."""
    groups: dict[tuple[str, str, str], list[RunResult]] = {}
    for r in results:
        groups.setdefault((r.trace, r.policy, r.ties), []).append(r)
    out = []
    for (trace, policy, ties), runs in groups.items():
        summary = Summary(
            trace=trace,
            policy=policy,
            ties=ties,
            seeds=[r.seed for r in runs],
            unallocated={
                b: mean_sd([u for r in runs if (u := r.unallocated(b)) is not None]) for b in bins
            },
            fragmentation={b: mean_sd([r.frag[b] for r in runs if b in r.frag]) for b in bins},
            seconds=round(statistics.fmean(r.seconds for r in runs), 2),
            cpu_seconds=round(statistics.fmean(r.cpu_seconds for r in runs), 2),
        )
        name = paper_policy(policy)
        if paper is not None and name:
            alloc = paper.alloc.get((trace, name), {})
            frag = paper.frag.get((trace, name), {})
            summary.paper_policy = name
            summary.paper_seeds = len(alloc)
            summary.paper_unallocated = {
                b: mean_sd([round(100 - v[b], 2) for v in alloc.values() if b in v]) for b in bins
            }
            summary.paper_fragmentation = {
                b: mean_sd([v[b] for v in frag.values() if b in v]) for b in bins
            }
        out.append(summary)
    return out


def expand(traces: str, policies: str) -> tuple[list[str], list[str]]:
    """`--trace NAME|a,b|all` and `--policy P|a,b|paper|all` as lists."""
    if traces == "all":
        trace_list = list(openb.PAPER_TRACES)
    else:
        trace_list = [t.strip() for t in traces.split(",") if t.strip()]
    if policies == "all":
        policy_list = list(POLICIES)
    elif policies == "paper":
        policy_list = list(PAPER_POLICIES)
    else:
        policy_list = [p.strip() for p in policies.split(",") if p.strip()]
    for p in policy_list:
        if p not in POLICIES:
            raise BadInput(
                f"unknown policy {p!r}: one of {', '.join(POLICIES)}, paper or all",
                path="--policy",
            )
    if not trace_list:
        raise BadInput("no trace", path="--trace")
    return trace_list, policy_list


__all__ = [
    "INFLATE",
    "PAPER_SEEDS",
    "REPORT_BINS",
    "Arrival",
    "PaperResults",
    "RunResult",
    "RunSpec",
    "Summary",
    "Trace",
    "arrivals",
    "binned",
    "default_data_dir",
    "expand",
    "load_trace",
    "mean_sd",
    "node_priority",
    "parse_seeds",
    "run",
    "run_many",
    "summarize",
    "typical_pods",
]
