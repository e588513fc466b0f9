"""The simulator: relations between policies on the built-in demo cluster, determinism, and
the simulate / report / sweep commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import SHARED
from draplan.cli.demo import demo_scenario
from draplan.sim import SimConfig, simulate
from draplan.sim.calibration import PHILLY_RUNTIME_QUANTILES
from draplan.sim.compare import compare, to_dict
from draplan.sim.demo import demo_objects
from draplan.sim.scenario import build_input


@pytest.fixture(scope="module")
def small() -> Any:
    return build_input([(o, "") for o in demo_objects()] + [(demo_scenario(jobs=16, seed=1), "")])


@pytest.fixture(scope="module")
def results(small: Any) -> dict[str, Any]:
    return {r.policy: r for r in compare(small)}


def test_legacy_wastes_nodes_and_dra_aware_wastes_fewer(results: dict[str, Any]) -> None:
    legacy, atomic = results["legacy"].totals, results["dra+gang-atomic"].totals
    assert legacy["wastedNodes"] > 0
    assert atomic["wastedNodes"] < legacy["wastedNodes"]
    assert atomic["wastedNodeHours"] < legacy["wastedNodeHours"]


def test_only_gang_atomic_never_holds_gpus_in_partial_gangs(results: dict[str, Any]) -> None:
    assert results["dra+gang-atomic"].totals["partialGangGpuHours"] == 0
    assert results["dra"].totals["partialGangGpuHours"] > 0  # scaled and placed pod by pod


def test_dra_aware_policies_start_all_the_work(results: dict[str, Any], small: Any) -> None:
    for policy in ("dra", "dra+gang-atomic"):
        assert results[policy].totals["jobsStarted"] == len(small.jobs)
    assert results["legacy"].totals["jobsStarted"] <= len(small.jobs)
    for r in results.values():
        assert 0 < r.totals["gpuAllocationPercent"] <= 100


def test_same_input_and_seed_give_byte_identical_json(small: Any) -> None:
    config = SimConfig(policy="dra+gang-atomic")
    first = json.dumps(to_dict(simulate(small.cluster, small.jobs, config)), sort_keys=True)
    again = json.dumps(to_dict(simulate(small.cluster, small.jobs, config)), sort_keys=True)
    assert first == again


def test_calibration_matches_the_philly_trace() -> None:
    path = SHARED / "data" / "job-stats" / "philly_gpu_job_runtimes.csv"
    values = sorted(float(line) for line in path.read_text().splitlines()[1:] if line)
    for q, expected in PHILLY_RUNTIME_QUANTILES:
        assert values[min(len(values) - 1, int(q * (len(values) - 1)))] == expected


def _scenario_files(tmp_path: Path) -> list[str]:
    from draplan.api.codec import encode

    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([encode(o) for o in demo_objects()]))
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(encode(demo_scenario(jobs=6, seed=5))))
    return ["-f", str(cluster), "-f", str(scenario)]


def test_simulate_report_and_sweep_commands(run_cli: Any, tmp_path: Path) -> None:
    files = _scenario_files(tmp_path)
    out = run_cli("simulate", *files, "--policies", "legacy,dra+gang-atomic", "-o", "json")
    assert out.code == 0, out.err
    doc = out.json()
    assert [r["policy"] for r in doc["results"]] == ["legacy", "dra+gang-atomic"]
    results = tmp_path / "results.json"
    results.write_text(out.out)
    html = tmp_path / "r.html"
    rep = run_cli(
        "report", "--input", str(results), "--html", str(html), "--markdown", str(tmp_path / "r.md")
    )
    assert rep.code == 0, rep.err
    assert "<svg" in html.read_text() and "legacy" in (tmp_path / "r.md").read_text()
    sweep = run_cli("sweep", *files, "--seeds", "5-6", "--policies", "dra", "-j", "2", "-o", "json")
    assert sweep.code == 0, sweep.err
    runs = sweep.json()["runs"]
    assert sorted((r["seed"], r["policy"]) for r in runs) == [(5, "dra"), (6, "dra")]


def test_sweep_on_a_local_dask_cluster(run_cli: Any, tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed")
    files = _scenario_files(tmp_path)
    local = run_cli("sweep", *files, "--seeds", "5", "--policies", "dra", "-o", "json")
    dask = run_cli(
        "sweep",
        *files,
        "--seeds",
        "5",
        "--policies",
        "dra",
        "--executor",
        "dask",
        "-j",
        "1",
        "-o",
        "json",
    )
    assert dask.code == 0, dask.err
    assert dask.json() == local.json()


def test_bad_scenario_is_bad_input(run_cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "draplan.io/v1alpha1",
                "kind": "Scenario",
                "metadata": {"name": "x"},
                "spec": {"policies": ["nope"]},
            }
        )
    )
    out = run_cli("simulate", "-f", str(bad))
    assert out.code == 2
    assert "spec.policies[0]" in out.err and "Traceback" not in out.err
