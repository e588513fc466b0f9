"""Every command on the multi-vendor cluster (tests/data/multivendor): a dump unlike the other
fixtures (Gaudi3, GB200 with MIG on shared counters, TPU slices, control-plane and system
nodes, DaemonSets, Cluster API, Karpenter and GKE node groups, Kueue, gangs, DRA-backed
extended resources) runs through each command without an error, and the dump is what its
generator writes."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA

HERE = DATA / "multivendor"
CLUSTER = str(HERE / "cluster.yaml")
SCENARIO = str(HERE / "scenario.yaml")
PRICES = str(HERE / "prices.yaml")
GB200_NODE = "ip-10-42-18-77.us-west-2.compute.internal"


def _dump() -> dict[str, Any]:
    with open(CLUSTER) as f:
        doc: dict[str, Any] = yaml.load(f, Loader=yaml.CSafeLoader)
    return doc


@pytest.fixture(scope="module")
def items() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = _dump()["items"]
    return out


def _pending(items: list[dict[str, Any]]) -> set[str]:
    return {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}"
        for o in items
        if o["kind"] == "Pod" and not o["spec"].get("nodeName")
    }


def test_the_dump_is_what_its_generator_writes() -> None:
    spec = importlib.util.spec_from_file_location("make_cluster", HERE / "make_cluster.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render() == Path(CLUSTER).read_text()


def test_validate(run_cli: Any, items: list[dict[str, Any]]) -> None:
    result = run_cli("validate", "-f", CLUSTER, "-o", "json")
    assert result.code == 0, result.err
    kinds = result.json()["kinds"]
    assert kinds["Node (v1)"] == sum(o["kind"] == "Node" for o in items) == 17
    assert kinds["Pod (v1)"] == sum(o["kind"] == "Pod" for o in items)
    assert "Traceback" not in result.err


def test_allocate(run_cli: Any) -> None:
    result = run_cli(
        "allocate",
        "-f",
        CLUSTER,
        "--node",
        GB200_NODE,
        "--claim",
        "research/shared-mig-notebook",
        "-o",
        "json",
    )
    assert result.code == 0, result.err
    assert set(result.json()) >= {"satisfiable", "claims"}


def test_schedule_reports_every_pending_pod(run_cli: Any, items: list[dict[str, Any]]) -> None:
    result = run_cli("schedule", "-f", CLUSTER, "-o", "json")
    assert result.code == 0, result.err
    doc = result.json()
    reported = {f"{p['namespace']}/{p['name']}" for p in doc["pods"]}
    assert reported == _pending(items)


def test_why_gives_every_pending_pod_a_category(run_cli: Any, items: list[dict[str, Any]]) -> None:
    result = run_cli("why", "-f", CLUSTER, "-o", "json")
    assert result.code == 0, result.err
    pods = result.json()["pods"]
    assert {p["pod"] for p in pods} == _pending(items)
    assert all(p["category"] for p in pods)


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_scale(run_cli: Any, output: str) -> None:
    result = run_cli("scale", "-f", CLUSTER, "--prices", PRICES, "-o", output)
    assert result.code == 0, result.err
    assert result.out.strip()


def test_metrics(run_cli: Any) -> None:
    result = run_cli("metrics", "-f", CLUSTER, "-o", "json")
    assert result.code == 0, result.err
    assert result.json()["cluster"]


def test_simulate_with_a_scenario(run_cli: Any) -> None:
    result = run_cli("simulate", "-f", CLUSTER, "-f", SCENARIO, "-o", "json")
    assert result.code == 0, result.err
    assert result.out.strip()


def test_snapshot_redact_reloads_without_node_names(
    run_cli: Any, tmp_path: Path, items: list[dict[str, Any]]
) -> None:
    result = run_cli("snapshot", "-f", CLUSTER, "--redact")
    assert result.code == 0, result.err
    for node in (o["metadata"]["name"] for o in items if o["kind"] == "Node"):
        assert node not in result.out
    path = tmp_path / "redacted.yaml"
    path.write_text(result.out)
    again = run_cli("validate", "-f", str(path), "-o", "json")
    assert again.code == 0, again.err
    assert again.json()["kinds"]["Node (v1)"] == 17


def test_migrate(run_cli: Any) -> None:
    result = run_cli("migrate", "-f", CLUSTER, "--check")
    assert result.code == 0, result.err


def test_pools(run_cli: Any) -> None:
    result = run_cli("pools", "-f", CLUSTER, "--prices", PRICES, "-o", "json")
    assert result.code == 0, result.err
    assert len(result.json()["items"]) == 8


def test_pool_limits_name_where_the_node_group_keeps_its_maximum(
    run_cli: Any, items: list[dict[str, Any]]
) -> None:
    """PoolLimitReached on derived pools names the knob of the group they come from (the
    Karpenter NodePool's spec.limits, summed over its nodes' capacity, not a maxNodes nobody
    wrote), and a gang's members get one verdict: a TPU slice pool is outgrown by whole
    slices (a new node pool of as many hosts), whichever member is asked."""
    result = run_cli("why", "-f", CLUSTER, "-o", "json")
    assert result.code == 0, result.err
    verdicts = {p["pod"]: p for p in result.json()["pods"]}
    ddp = [verdicts[f"research/ddp-gb200-{i}"] for i in range(3)]
    assert {p["category"] for p in ddp} == {"PoolLimitReached"}
    fix = ddp[0]["fix"]
    assert fix["object"] == "Karpenter NodePool gb200"
    cpus = {
        int(o["status"]["capacity"]["cpu"])
        for o in items
        if o["kind"] == "Node" and o["metadata"]["labels"].get("karpenter.sh/nodepool") == "gb200"
    }
    [per_node] = cpus
    assert fix["limits"] == {"cpu": str(per_node * fix["maxNodes"])}
    assert "spec.limits of Karpenter NodePool gb200" in ddp[0]["message"]
    sft = [verdicts[f"tpu-jobs/maxtext-sft-{i}"] for i in range(4)]
    assert len({(p["category"], p["message"]) for p in sft}) == 1
    assert sft[0]["category"] == "PoolLimitReached"
    assert sft[0]["fix"]["action"] == "add a node pool like it"
    assert sft[0]["fix"]["add"] == 4  # one 4x4 slice of 4 hosts, never a host more
