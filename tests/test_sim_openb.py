"""The openb trace replayed by creation and deletion times (draplan.sim.replay) and the stranded
capacity it measures: arrivals and deletions at the trace's times, the window and time
compression, nodes from the openb NodePools, the FGD measure, determinism, the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import SHARED
from draplan.api.draplan_v1alpha1 import (
    NodePool,
    OpenbReplay,
    Scenario,
    ScenarioSpec,
    ScenarioWorkload,
)
from draplan.api.meta import ObjectMeta
from draplan.report import html_report, markdown_summary
from draplan.sim import SimResult
from draplan.sim.compare import compare, config_of, to_dict
from draplan.sim.engine import Simulation
from draplan.sim.replay import load_replay, pool_name, replay_jobs, trace_end
from draplan.sim.scenario import SimInput, build_input
from draplan.sources import openb

POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time"
)


def pod_line(
    name: str, created: int, deleted: int | None, gpus: int = 1, milli: int = 1000, **kw: Any
) -> str:
    cpu, spec = kw.get("cpu", 1000), kw.get("spec", "")
    gone = "" if deleted is None else str(deleted)
    return f"{name},{cpu},1024,{gpus},{milli if gpus else 0},{spec},LS,Running,{created},{gone},"


def write_trace(tmp: Path, nodes: list[str], pods: list[str]) -> Path:
    (tmp / openb.NODE_LIST).write_text("sn,cpu_milli,memory_mib,gpu,model\n" + "\n".join(nodes))
    path = tmp / "openb_pod_list_tiny.csv"
    path.write_text(POD_HEADER + "\n" + "\n".join(pods) + "\n")
    return path


def scenario(tmp: Path, policies: tuple[str, ...] = ("dra",), **replay: Any) -> Scenario:
    spec = OpenbReplay(trace="tiny", data_dir=str(tmp), **replay)
    return Scenario(
        metadata=ObjectMeta(name="tiny"),
        spec=ScenarioSpec(policies=policies, workload=ScenarioWorkload(openb=spec)),
    )


def run(tmp: Path, **replay: Any) -> SimResult:
    sim = build_input([(scenario(tmp, **replay), "")])
    return compare(sim)[0]


def starts(result: SimResult) -> dict[str, float | None]:
    return {j["job"]: j["start"] for j in result.jobs}


# --- the window and compression ------------------------------------------------------------


def test_window_shifts_and_compression_divides_times(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path,
        [],
        [
            pod_line("early", 500, 1500),  # alive at the window's start: arrives at 0
            pod_line("gone", 100, 900),  # deleted before the window
            pod_line("a", 1100, 5000),
            pod_line("forever", 1200, None),  # no deletion time: runs to the end
            pod_line("late", 9000, 9500),  # created after the window
            pod_line("after", 2000, 9999),  # deleted after the window: runs to the end
        ],
    )
    rows = openb.read_pods(path)
    assert trace_end(rows) == 9999
    for factor in (1.0, 2.0):
        jobs = replay_jobs(rows, start=1000, end=8000, compression=factor)
        got = {j.name: (j.arrival, j.deletion) for j in jobs}
        expected = {
            "early": (0, 500),
            "a": (100, 4000),
            "forever": (200, 7000),
            "after": (1000, 7000),
        }
        assert got == {k: (a / factor, d / factor) for k, (a, d) in expected.items()}


def test_pods_arrive_and_leave_at_trace_times(tmp_path: Path) -> None:
    # One GPU: the second pod waits exactly until the trace deletes the first.
    write_trace(
        tmp_path,
        ["n-0,32000,131072,1,T4"],
        [pod_line("x", 1000, 2000), pod_line("y", 1500, 3000)],
    )
    for factor in (1.0, 2.0):
        result = run(tmp_path, cluster="static", end_seconds=4000, time_compression=factor)
        assert starts(result) == {"x": 1000 / factor, "y": 2000 / factor}
        assert result.totals["pendingSeconds"]["gpu-1"]["p50"] == 250 / factor  # 0 and 500
        assert result.totals["gpuAllocationPercent"] == 50.0  # busy 1000..3000 of 0..4000
        assert result.totals["simulatedHours"] == round(4000 / factor / 3600, 2)


def test_a_pod_deleted_while_pending_never_starts(tmp_path: Path) -> None:
    write_trace(
        tmp_path,
        ["n-0,32000,131072,1,T4"],
        [pod_line("x", 0, 2000), pod_line("y", 100, 600)],
    )
    result = run(tmp_path, cluster="static", end_seconds=3000)
    assert starts(result) == {"x": 0, "y": None}
    assert result.totals["jobsStarted"] == 1


def test_the_autoscaler_adds_and_removes_nodes_of_the_openb_pools(tmp_path: Path) -> None:
    nodes = ["t-0,32000,131072,2,T4", "t-1,32000,131072,2,T4", "v-0,64000,262144,8,V100M16"]
    write_trace(tmp_path, nodes, [pod_line("v", 105, 2000, gpus=4, spec="V100M16")])
    result = run(tmp_path, end_seconds=5000, provisioning_delay_seconds=300)
    pool = pool_name(openb.read_nodes(tmp_path / openb.NODE_LIST)[2])
    # Pending at 105; the autoscaler's next tick is at 110; the node is ready 300 s later;
    # the pod leaves at 2000, and the node goes after 600 s unneeded.
    assert [(n["pool"], n["added"], n["removed"], n["wasted"]) for n in result.nodes] == [
        (pool, 410.0, 2600.0, False)
    ]
    assert starts(result) == {"v": 410.0}


def test_pools_follow_the_node_types_and_their_counts(tmp_path: Path) -> None:
    nodes = ["t-0,32000,131072,2,T4", "t-1,32000,131072,2,T4", "v-0,64000,262144,8,V100M16"]
    write_trace(tmp_path, nodes, [pod_line("x", 0, 10)])
    replay = load_replay(OpenbReplay(trace="tiny", data_dir=str(tmp_path), min_nodes=1))
    pools = {o.metadata.name: o for o in replay.cluster if isinstance(o, NodePool)}
    assert sorted(pools) == ["openb-t4-2g-32000m-131072mi", "openb-v100m16-8g-64000m-262144mi"]
    t4 = pools["openb-t4-2g-32000m-131072mi"].spec
    assert (t4.min_nodes, t4.max_nodes, len(t4.resource_slices[0].devices)) == (1, 2, 2)


# --- stranded capacity (the FGD measure) -------------------------------------------------------


def test_stranded_capacity_is_the_fgd_measure_over_time(tmp_path: Path) -> None:
    # Typical shapes: 600 milli of a GPU and one whole GPU, half each. While the sharing pod
    # runs, its GPU's 400 free milli fit neither: 0.4 GPU stranded for an hour; later the
    # whole-GPU pod leaves an untouched GPU, which both shapes can use: nothing stranded.
    write_trace(
        tmp_path,
        ["n-0,32000,131072,2,T4"],
        [pod_line("share", 0, 3600, milli=600), pod_line("whole", 7200, 10800)],
    )
    result = run(tmp_path, cluster="static", end_seconds=10800)
    assert result.totals["strandedGpuHours"] == 0.4
    assert result.totals["strandedPercent"] == round(100 * 0.4 / (2 * 3), 2)
    series = dict(result.series["strandedGpus"])  # sampled at events, before them
    assert series[3600.0] == 0.4 and series[10800.0] == 0.0


def test_a_node_without_cpu_for_the_typical_pod_strands_all_its_free_gpus(
    tmp_path: Path,
) -> None:
    write_trace(
        tmp_path,
        ["n-0,4000,131072,2,T4"],
        [pod_line("cpu-hog", 0, 3600, gpus=0, cpu=4000), pod_line("whole", 7200, 10800)],
    )
    result = run(tmp_path, cluster="static", end_seconds=10800)
    assert result.totals["strandedGpuHours"] == 2.0


# --- scenario files, the CLI, determinism -------------------------------------------------


def _scenario_file(tmp_path: Path, **replay: Any) -> Path:
    write_trace(
        tmp_path,
        ["t-0,32000,131072,2,T4", "t-1,32000,131072,2,T4"],
        [
            pod_line("a", 0, 900),
            pod_line("b", 30, 2000, milli=300),
            pod_line("c", 400, None, gpus=2),
            pod_line("d", 500, 800, gpus=0),
        ],
    )
    doc = {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "tiny"},
        "spec": {
            "policies": ["legacy", "dra"],
            "workload": {"openb": {"trace": "openb_pod_list_tiny.csv", **replay}},
        },
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_simulate_replays_a_scenario_file_byte_identically(
    run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _scenario_file(tmp_path, endSeconds=3000, timeCompression=2)
    monkeypatch.chdir("/")  # the trace's path is relative to the scenario file
    first = run_cli("simulate", "-f", str(path), "-o", "json")
    assert first.code == 0, first.err
    again = run_cli("simulate", "-f", str(path), "-o", "json")
    assert first.out == again.out
    doc = first.json()
    assert [r["policy"] for r in doc["results"]] == ["legacy", "dra"]
    dra = doc["results"][1]
    assert dra["totals"]["jobs"] == 4 and dra["totals"]["simulatedHours"] == round(1500 / 3600, 2)
    assert dra["totals"]["nodesAdded"] >= 1
    table = run_cli("simulate", "-f", str(path), "--seed", "7")
    assert table.code == 0, table.err
    assert "stranded %" in table.out


def test_bad_replay_settings_are_bad_input(run_cli: Any, tmp_path: Path) -> None:
    path = _scenario_file(tmp_path, timeCompression=0)
    out = run_cli("simulate", "-f", str(path))
    assert out.code == 2
    assert "spec.workload.openb.timeCompression" in out.err and "Traceback" not in out.err
    missing = _scenario_file(tmp_path, trace="nope.csv")
    out = run_cli("simulate", "-f", str(missing))
    assert out.code == 2 and "nope.csv" in out.err
    nowhere = _scenario_file(tmp_path, trace="default", dataDir="nowhere")
    out = run_cli("simulate", "-f", str(nowhere))
    assert out.code == 2 and "spec.workload.openb.dataDir" in out.err


# --- the real trace --------------------------------------------------------------------------

OPENB = SHARED / "data" / "openb"


@pytest.mark.skipif(not OPENB.is_dir(), reason="no openb data")
def test_a_window_of_the_default_trace_replays_with_autoscaling() -> None:
    rows = openb.read_pods(OPENB / "openb_pod_list_default.csv")
    end = trace_end(rows)
    start = end - 2 * 3600
    alive = [
        r
        for r in rows
        if r.creation_time is not None
        and r.creation_time < end
        and (r.deletion_time is None or r.deletion_time > start)
    ]
    spec = OpenbReplay(data_dir=str(OPENB), start_seconds=start, time_compression=2.0)
    sim: SimInput = build_input(
        [
            (
                Scenario(
                    spec=ScenarioSpec(policies=("dra",), workload=ScenarioWorkload(openb=spec))
                ),
                "",
            )
        ]
    )
    assert len(sim.jobs) == len(alive) and sim.horizon == 3600.0
    result = compare(sim)[0]
    totals = result.totals
    assert totals["nodesAdded"] > 0 and totals["jobsStarted"] > 0
    assert 0 < totals["gpuAllocationPercent"] <= 100
    assert 0 <= totals["strandedPercent"] < 100
    for job in result.jobs:
        assert job["start"] is None or job["start"] >= job["arrival"]
    again = compare(sim)[0]
    assert json.dumps(to_dict(again), sort_keys=True) == json.dumps(to_dict(result), sort_keys=True)


def test_idle_time_is_skipped(tmp_path: Path) -> None:
    # Two pods 30 days apart: the autoscaler runs around them, not every 10 s in between.
    write_trace(
        tmp_path,
        ["n-0,32000,131072,2,T4"],
        [pod_line("a", 0, 600), pod_line("b", 30 * 86400, 30 * 86400 + 600)],
    )
    sim = build_input([(scenario(tmp_path), "")])
    engine = Simulation(sim.cluster, sim.jobs, config_of(sim, "dra"))
    result = engine.run()
    assert starts(result) == {"a": 300.0, "b": 30 * 86400 + 300.0}
    assert engine.ticks_run < 20
    assert [(n["added"], n["removed"]) for n in result.nodes] == [
        (300.0, 1200.0),
        (30 * 86400 + 300.0, None),  # the window ends when b is deleted
    ]


def test_the_report_shows_stranded_capacity(tmp_path: Path) -> None:
    write_trace(
        tmp_path,
        ["n-0,32000,131072,2,T4"],
        [pod_line("share", 0, 3600, milli=600), pod_line("whole", 7200, 10800)],
    )
    results = [run(tmp_path, cluster="static", end_seconds=10800)]
    assert "Stranded GPUs (FGD)" in html_report("tiny", results)
    summary = markdown_summary("tiny", results)
    assert "stranded %" in summary and "| 6.67 |" in summary
