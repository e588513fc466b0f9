"""The FGD paper's benchmark protocol (draplan.sim.openb, `draplan bench openb`) on a small
synthetic trace: arrival order and inflation, node priority, the paper's binning, determinism,
the paper's numbers read beside ours, and the CLI."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from draplan.api.errors import BadInput
from draplan.sim import openb as bench
from draplan.sources import openb

NODE_HEADER = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
POD_HEADER = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"]


def write_data(base: Path, pods: int = 90, seed: int = 5) -> Path:
    """A data dir: openb/ with a 16-node list and a pod list `small`, like the real files."""
    (base / "openb").mkdir(parents=True, exist_ok=True)
    with open(base / "openb" / openb.NODE_LIST, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(NODE_HEADER)
        for i in range(16):
            if i % 2:
                w.writerow([f"openb-node-{i:04d}", 96000, 393216, 8, "G2"])
            else:
                w.writerow([f"openb-node-{i:04d}", 104000, 524288, 2, "T4"])
    rng = random.Random(seed)
    with open(base / "openb" / "openb_pod_list_small.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(POD_HEADER)
        for i in range(pods):
            kind = rng.random()
            if kind < 0.15:
                row = [0, 0]
            elif kind < 0.55:
                row = [1, rng.choice([810, 470, 320, 650, 160])]
            elif kind < 0.95:
                row = [1, 1000]
            else:
                row = [rng.choice([2, 4, 8]), 1000]
            cpu = rng.choice([2000, 4000, 8000, 12000, 16000])
            w.writerow([f"openb-pod-{i:04d}", cpu, 8192, *row])
    return base


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_data(tmp_path_factory.mktemp("openb"))


@pytest.fixture(scope="module")
def trace(data: Path) -> bench.Trace:
    return bench.Trace.load("small", data)


def test_arrivals_shuffle_then_inflate(trace: bench.Trace) -> None:
    capacity = trace.capacity_milli
    a = bench.arrivals(trace.pods, random.Random(42), 1.3, capacity)
    b = bench.arrivals(trace.pods, random.Random(42), 1.3, capacity)
    assert a == b
    assert a != bench.arrivals(trace.pods, random.Random(43), 1.3, capacity)
    n = len(trace.pods)
    # The original pods first (shuffled), then resampled ones named -tuned-i.
    assert sorted(x.name for x in a[:n]) == sorted(p.name for p in trace.pods)
    assert [x.name for x in a[:n]] != sorted(x.name for x in a[:n])
    tuned = a[n:]
    assert [x.name for x in tuned] == [f"{x.row.name}-tuned-{i}" for i, x in enumerate(tuned)]
    total = sum(x.row.gpu_request_milli for x in a)
    assert total <= 1.3 * capacity
    # The simulator stops before the first candidate whose per-GPU milli would cross the line.
    assert total > 1.3 * capacity - 8000


def test_arrivals_tune_down_above_the_target(trace: bench.Trace) -> None:
    capacity = trace.capacity_milli
    down = bench.arrivals(trace.pods, random.Random(1), 0.5, capacity)
    total = sum(x.row.gpu_request_milli for x in down)
    assert total <= 0.5 * capacity
    assert len(down) < len(trace.pods)
    assert all(not x.name.endswith(tuple(f"-tuned-{i}" for i in range(3))) for x in down)


def test_node_priority_is_a_permutation(trace: bench.Trace) -> None:
    ranked = bench.node_priority(trace.nodes, random.Random(42))
    prefixes = sorted(int(r.name[:4]) for r in ranked)
    assert prefixes == list(range(len(trace.nodes)))
    assert [r.name[5:] for r in ranked] == sorted(r.name for r in trace.nodes)
    assert ranked != bench.node_priority(trace.nodes, random.Random(43))


def test_binned_like_the_paper() -> None:
    arrived = [0.4, 0.6, 1.4, 1.6, 2.5, 3.5, 7.0]
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    out = bench.binned(arrived, values, last=8)
    # round(): 0.4 -> 0, 0.6 -> 1, 1.4 -> 1, 1.6 -> 2, 2.5 -> 2 (half to even), 3.5 -> 4
    assert out[0] == 1.0
    assert out[1] == 2.5
    assert out[2] == 4.5
    assert out[3] == pytest.approx(round((4.0 + 5.0 + 6.0) / 3, 2))  # none in 3: 2..4
    assert out[4] == 6.0
    assert 5 not in out or out[5] == 6.0
    assert out[6] == 7.0 and out[8] == 7.0


def test_run_is_deterministic_and_counts(trace: bench.Trace) -> None:
    first = bench.run(trace, "fgd", 42)
    again = bench.run(trace, "fgd", 42)
    assert (first.placed, first.alloc, first.frag) == (again.placed, again.alloc, again.frag)
    other = bench.run(trace, "fgd", 43)
    assert (other.alloc, other.placed) != (first.alloc, first.placed)
    assert first.pods > len(trace.pods)  # inflated
    assert 0 < first.placed < first.pods
    u = first.unallocated(100)
    assert u is not None and 0 <= u < 100
    assert first.unallocated(130) is not None
    assert set(first.frag) == set(first.alloc)
    # Below saturation nothing fails: allocated = arrived (within the binning's rounding).
    assert abs(first.alloc[20] - 20) < 1.5


@pytest.mark.parametrize("policy", ["random", "bestfit", "draplan"])
def test_every_policy_runs(trace: bench.Trace, policy: str) -> None:
    result = bench.run(trace, policy, 7)
    assert result.placed > 0 and result.unallocated(100) is not None


def test_random_ties_differ_from_name_ties(trace: bench.Trace) -> None:
    name = bench.run(trace, "fgd", 42)
    rand = bench.run(trace, "fgd", 42, ties="random")
    assert name.ties == "name" and rand.ties == "random"
    assert rand.alloc == bench.run(trace, "fgd", 42, ties="random").alloc


def write_paper(base: Path) -> None:
    (base / "fgd-results").mkdir(exist_ok=True)
    header = ["workload", "sc_policy", "tune", "seed", "total_gpus", *map(str, range(131))]
    for name, value in (("analysis_allo_discrete.csv", 90.0), ("analysis_frag_discrete.csv", 5.0)):
        with open(base / "fgd-results" / name, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(header)
            for seed, delta in ((42, 0.0), (43, 1.0)):
                w.writerow(
                    ["openb_pod_list_small", "06-FGD", 1.3, seed, 20, *[value + delta] * 131]
                )


def test_summary_beside_the_paper(data: Path, trace: bench.Trace) -> None:
    write_paper(data)
    paper = bench.PaperResults.load(data)
    assert paper is not None
    runs = [bench.run(trace, "draplan", s) for s in (42, 43)]
    (summary,) = bench.summarize(runs, paper)
    assert summary.policy == "draplan" and summary.paper_policy == "06-FGD"
    assert summary.paper_unallocated[100] == (9.5, 0.71)  # 100 - 90, 100 - 91
    assert summary.paper_fragmentation[100] == (5.5, 0.71)
    values = [r.unallocated(100) for r in runs]
    mean = summary.unallocated[100]
    assert mean is not None and mean[0] == pytest.approx(sum(values) / 2, abs=0.01)  # type: ignore[arg-type]
    doc = summary.to_dict()
    assert doc["paper"]["seeds"] == 2 and doc["unallocatedGpuPct"]["100"]["mean"] == mean[0]
    assert bench.PaperResults.load(data / "missing") is None


def test_run_many_in_processes_matches_in_order(data: Path) -> None:
    specs = [bench.RunSpec("small", "bestfit", s) for s in (42, 43, 44)]
    serial = bench.run_many(specs, data, jobs=1)
    parallel = bench.run_many(specs, data, jobs=2)
    assert [r.seed for r in parallel] == [42, 43, 44]
    assert [r.alloc for r in parallel] == [r.alloc for r in serial]


def test_parse_and_expand() -> None:
    assert bench.parse_seeds("42-44") == [42, 43, 44]
    assert bench.parse_seeds("1,5, 7-8") == [1, 5, 7, 8]
    with pytest.raises(BadInput):
        bench.parse_seeds("x")
    traces, policies = bench.expand("all", "paper")
    assert len(traces) == 17 and "draplan" not in policies
    assert bench.expand("default", "all")[1][-1] == "draplan"
    with pytest.raises(BadInput):
        bench.expand("default", "best")


def test_cli_json_and_table(data: Path, run_cli: object) -> None:
    out = run_cli(  # type: ignore[operator]
        "bench",
        "openb",
        "--trace",
        "small",
        "--policy",
        "fgd,draplan",
        "--seeds",
        "42",
        "--data-dir",
        str(data),
        "-o",
        "json",
    )
    assert out.code == 0, out.err
    doc = out.json()
    assert [r["policy"] for r in doc["runs"]] == ["fgd", "draplan"]
    assert {s["policy"] for s in doc["summary"]} == {"fgd", "draplan"}
    assert doc["summary"][0]["unallocatedGpuPct"]["100"]["mean"] >= 0
    table = run_cli(  # type: ignore[operator]
        "bench",
        "openb",
        "--trace",
        "small",
        "--policy",
        "bestfit",
        "--seeds",
        "42",
        "--data-dir",
        str(data),
    )
    assert table.code == 0 and "UNALLOC@100%" in table.out
    bad = run_cli(  # type: ignore[operator]
        "bench", "openb", "--trace", "nope", "--seeds", "42", "--data-dir", str(data)
    )
    assert bad.code != 0
