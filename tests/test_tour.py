"""The tour's inputs and what they make: demo --export, the configurable synthetic mix, the
scenario that can never start, openb prices, the report's date and determinism, sweep seeds."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, TypeGuard

import msgspec
import pytest
import yaml

from draplan.api.codec import encode
from draplan.api.draplan_v1alpha1 import NodePool, OpenbReplay, SyntheticWorkload
from draplan.report import ReportInfo, html_report, markdown_summary
from draplan.report.charts import heat_map, line_chart
from draplan.report.info import report_date
from draplan.sim.compare import compare, to_dict
from draplan.sim.demo import demo_objects, demo_scenario
from draplan.sim.prices import load_prices
from draplan.sim.replay import load_replay
from draplan.sim.scenario import build_input
from draplan.sim.workloads import Job


def _kinds(jobs: list[Job], kind: str) -> list[dict[str, Any]]:
    return [encode(o) for j in jobs if j.kind == kind for o in j.objects]


def test_export_writes_the_tour_files(run_cli: Any, tmp_path: Path) -> None:
    res = run_cli("demo", "--export", str(tmp_path / "t"))
    assert res.code == 0, res.err
    names = sorted(p.name for p in (tmp_path / "t").iterdir())
    assert names == [
        "claim.yaml",
        "cluster.yaml",
        "k8s",
        "pools.yaml",
        "profile.yaml",
        "scenario.yaml",
    ]
    # README's migrate example reads k8s/: both workloads ask for GPUs it rewrites.
    migrated = run_cli(
        "migrate", "-f", str(tmp_path / "t" / "k8s"), "-f", str(tmp_path / "t" / "cluster.yaml")
    )
    assert migrated.code == 0, migrated.err
    assert migrated.out.startswith("2 pod templates migrated in 1 files")
    scenario = yaml.safe_load((tmp_path / "t" / "scenario.yaml").read_text())
    synthetic = scenario["spec"]["workload"]["synthetic"]
    assert set(synthetic) == {f.encode_name for f in msgspec.structs.fields(SyntheticWorkload)}
    pools = list(yaml.safe_load_all((tmp_path / "t" / "pools.yaml").read_text()))
    assert {p["kind"] for p in pools} == {"NodePool"} and len(pools) == 4


def _synthetic(**fields: Any) -> list[Job]:
    scenario = demo_scenario(jobs=40, seed=7)
    workload = msgspec.structs.replace(
        scenario.spec.workload, synthetic=SyntheticWorkload(jobs=40, **fields)
    )
    scenario = msgspec.structs.replace(
        scenario, spec=msgspec.structs.replace(scenario.spec, workload=workload)
    )
    return build_input([(o, "") for o in demo_objects()] + [(scenario, "")]).jobs


def test_the_synthetic_mix_is_configurable() -> None:
    default = _synthetic()
    custom = _synthetic(
        gpu_class="gpu.amd.com",
        gpu_driver="gpu.amd.com",
        gpu_model="AMD Instinct MI300X",
        mig_class="",
        nic_class="",
        topology_key="",
    )
    assert [j.kind for j in default] == [j.kind for j in custom]  # same seed, same arrivals
    train = [o for o in _kinds(custom, "training") if o["kind"] == "ResourceClaimTemplate"]
    gpus = train[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert gpus["deviceClassName"] == "gpu.amd.com"
    assert 'attributes["gpu.amd.com"].productName' in gpus["selectors"][0]["cel"]["expression"]
    groups = [o for o in _kinds(custom, "training") if o["kind"] == "PodGroup"]
    assert groups and all("schedulingConstraints" not in g["spec"] for g in groups)
    finetune = [o for o in _kinds(custom, "finetune") if o["kind"] == "ResourceClaimTemplate"]
    assert [r["name"] for r in finetune[0]["spec"]["spec"]["devices"]["requests"]] == ["gpus"]
    infer = [o for o in _kinds(custom, "inference") if o["kind"] == "ResourceClaimTemplate"]
    request = infer[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert request == {"deviceClassName": "gpu.amd.com"}  # no MIG: a whole GPU
    default_infer = [o for o in _kinds(default, "inference") if o["kind"] != "Pod"]
    assert "1g.10gb" in str(default_infer[0])


def test_a_scenario_that_can_never_start_is_bad_input(run_cli: Any, tmp_path: Path) -> None:
    run_cli("demo", "--export", str(tmp_path))
    scenario = yaml.safe_load((tmp_path / "scenario.yaml").read_text())
    synthetic = scenario["spec"]["workload"]["synthetic"]
    synthetic.update(jobs=4, gpuClass="gpu.example.com", migClass="", nicClass="")
    (tmp_path / "never.yaml").write_text(yaml.safe_dump(scenario))
    files = ["-f", str(tmp_path / "pools.yaml"), "-f", str(tmp_path / "cluster.yaml")]
    res = run_cli("simulate", *files, "-f", str(tmp_path / "never.yaml"))
    assert res.code == 2
    line = res.err.strip()
    assert "\n" not in line and "never.yaml" in line and "spec.workload" in line
    assert "none of the 4 jobs" in line


def test_openb_pools_are_priced_from_the_public_table(tmp_path: Path) -> None:
    openb = tmp_path / "openb"
    openb.mkdir()
    (openb / "openb_node_list_gpu_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nt-0,32000,131072,2,T4\nv-0,64000,262144,8,V100M32\n"
    )
    (openb / "openb_pod_list_tiny.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,deletion_time\n"
        "p,1000,1024,1,1000,,0,10\n"
    )
    prices = load_prices()
    pools = load_replay(OpenbReplay(trace="tiny", data_dir=str(tmp_path))).cluster
    price = {
        p.metadata.name: float(p.spec.price_per_hour) for p in pools if isinstance(p, NodePool)
    }
    assert price["openb-t4-2g-32000m-131072mi"] == pytest.approx(2 * prices["T4"].per_gpu_hour)
    assert price["openb-v100m32-8g-64000m-262144mi"] == pytest.approx(
        8 * prices["V100M32"].per_gpu_hour
    )
    flat = load_replay(OpenbReplay(trace="tiny", data_dir=str(tmp_path), price_per_gpu_hour=1.0))
    flat_prices = [float(p.spec.price_per_hour) for p in flat.cluster if _pool(p)]
    assert sorted(flat_prices) == [2.0, 8.0]
    models = {line.split(",")[4] for line in _gpu_node_lines()}
    assert models <= set(prices), "every GPU model of the trace has a price"


def _pool(obj: object) -> TypeGuard[NodePool]:
    return isinstance(obj, NodePool)


def _gpu_node_lines() -> list[str]:
    from conftest import SHARED

    path = SHARED / "data" / "openb" / "openb_node_list_gpu_node.csv"
    if not path.is_file():
        pytest.skip("no openb data")
    return path.read_text().splitlines()[1:]


def test_report_states_inputs_version_date_and_explains(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764547200")
    assert report_date() == "2025-12-01"
    assert report_date("2026-02-03") == "2026-02-03"
    sim = build_input([(o, "") for o in demo_objects()] + [(demo_scenario(jobs=8, seed=2), "")])
    results = compare(sim)
    info = ReportInfo.make(["a.yaml", "b.yaml"])
    page = html_report(sim.name, results, info)
    assert page == html_report(sim.name, results, ReportInfo.make(["a.yaml", "b.yaml"]))
    assert "a.yaml, b.yaml" in page and "2025-12-01" in page and info.version in page
    assert "Why is p95 pending time higher" in page
    assert "2025-12-01" in markdown_summary(sim.name, results, info)


def test_the_stranded_share_is_explained_where_a_reader_would_question_it() -> None:
    # Only a policy that allocates more and yet shows a higher stranded % needs the note.
    sim = build_input([(o, "") for o in demo_objects()] + [(demo_scenario(jobs=8, seed=2), "")])
    results = compare(sim, ["legacy", "dra"])
    legacy, dra = results
    questioned = dataclasses.replace(
        dra,
        totals={
            **dra.totals,
            "gpuAllocationPercent": legacy.totals["gpuAllocationPercent"] + 10,
            "strandedPercent": legacy.totals["strandedPercent"] + 1,
        },
    )
    info = ReportInfo.make(["a.yaml"])
    assert "Why can stranded % be higher" in html_report(sim.name, [legacy, questioned], info)
    plain = dataclasses.replace(questioned, totals={**questioned.totals, "strandedPercent": 0.0})
    legacy_none = dataclasses.replace(legacy, totals={**legacy.totals, "strandedPercent": 0.0})
    assert "Why can stranded % be higher" not in html_report(sim.name, [legacy_none, plain], info)


def test_bad_date_is_bad_input(
    run_cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(Exception, match="SOURCE_DATE_EPOCH"):
        report_date()
    # Reported before any work: nothing simulated, nothing printed.
    res = run_cli("demo", "--date", "2026-13-40", "--report", "/nonexistent/x.html")
    assert res.code == 2 and "--date" in res.err and res.out == ""
    run_cli("demo", "--export", str(tmp_path))
    files = [f"-f{tmp_path / n}" for n in ("cluster.yaml", "pools.yaml", "scenario.yaml")]
    res = run_cli("simulate", *files, "--date", "2026-13-40")
    assert res.code == 2 and "--date" in res.err and res.out == ""


def test_charts_are_deterministic_and_hours_based() -> None:
    series = {"a": [(0.0, 1.0), (7200.0, 3.0)], "b": [(0.0, 2.0), (5400.0, 0.0)]}
    svg = line_chart("pods", series, "pods")
    assert svg == line_chart("pods", series, "pods")
    assert "simulated time (hours)" in svg and ">a<" in svg and ">b<" in svg
    rows = {"n-1": [(0.0, 0.5), (3600.0, 1.0)], "n-2": [(1800.0, 0.0)]}
    heat = heat_map("occupancy", rows, 7200.0)
    assert (
        "n-1" in heat
        and "n-2" in heat
        and "share of the node&#x27;s GPUs" in heat.replace("'", "&#x27;")
    )


def test_sweep_says_when_seeds_do_not_apply(run_cli: Any, tmp_path: Path) -> None:
    run_cli("demo", "--export", str(tmp_path))
    jobs_only = {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "one-job"},
        "spec": {
            "policies": ["dra"],
            "workload": {
                "jobs": [
                    {
                        "name": "j",
                        "arrivalSeconds": 0,
                        "durationSeconds": 60,
                        "objects": [
                            {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "metadata": {"name": "p", "namespace": "ml"},
                                "spec": {"containers": [{"name": "c"}]},
                            }
                        ],
                    }
                ]
            },
        },
    }
    (tmp_path / "jobs.yaml").write_text(yaml.safe_dump(jobs_only))
    files = ["-f", str(tmp_path / "cluster.yaml"), "-f", str(tmp_path / "jobs.yaml")]
    res = run_cli("sweep", *files, "--seeds", "1-3", "-j", "1", "-o", "json")
    assert res.code == 0, res.err
    assert "seeds do not apply" in res.err
    assert [r["seed"] for r in res.json()["runs"]] == [1]


def test_a_one_policy_report_defines_stranded() -> None:
    # The stranded chart's caption points to a note above it, whatever the policies.
    sim = build_input([(o, "") for o in demo_objects()] + [(demo_scenario(jobs=4, seed=2), "")])
    page = html_report(sim.name, compare(sim, ["dra"]), ReportInfo(("a",), "2026-01-01"))
    assert "Stranded GPUs:" in page and "Why can stranded % be higher" not in page


def test_an_unwritable_path_is_bad_input(run_cli: Any, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    res = run_cli("demo", "--export", str(blocker / "dir"))
    assert res.code == 2 and res.err.startswith("error: ") and "--export" in res.err
    sim = build_input([(o, "") for o in demo_objects()] + [(demo_scenario(jobs=2, seed=1), "")])
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"results": [to_dict(r) for r in compare(sim, ["dra"])]}))
    res = run_cli("report", "--input", str(results), "--html", str(blocker / "r.html"))
    assert res.code == 2 and res.err.startswith("error: ") and "r.html" in res.err
