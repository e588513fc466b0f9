"""`-n` on file input: the whole dump is loaded (other namespaces hold devices and queue ahead);
only the output of `why` and `schedule` is limited to the namespace, as on a live cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from conftest import DATA

CLUSTER = DATA / "realistic" / "cluster.yaml"


def _four_gpu_team_pod(tmp_path: Path) -> str:
    """The dump with team-a's job ungated and asking 4 H100s: at most 3 are free on one node
    while research's and serving's pods run, all 16 would be if they were not counted."""
    items = yaml.safe_load(CLUSTER.read_text())["items"]
    for item in items:
        meta = item["metadata"]
        if item["kind"] == "Pod" and meta["name"] == "kueue-job-0":
            del item["spec"]["schedulingGates"]
        if item["kind"] == "ResourceClaimTemplate" and meta["name"] == "h100-2":
            item["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 4
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def test_schedule_shows_one_namespace_but_counts_them_all(run_cli: Any, tmp_path: Path) -> None:
    path = _four_gpu_team_pod(tmp_path)
    everything = run_cli("schedule", "-f", path, "-o", "json").json()
    result = run_cli("schedule", "-f", path, "-n", "team-a", "-o", "json")
    assert result.code == 0, result.err
    doc = result.json()
    assert [(p["namespace"], p["name"]) for p in doc["pods"]] == [("team-a", "kueue-job-0")]
    (pod,) = doc["pods"]
    assert pod["node"] is None  # the other namespaces' claims hold the H100s
    assert "cannot allocate all claims" in pod["reason"]["message"]
    assert doc["summary"] == {
        "scheduled": 0,
        "unschedulable": 1,
        "gated": 0,
        "nominated": 0,
        "preempted": 0,
    }
    assert pod in everything["pods"]  # the same verdict as without -n
    # -A overrides -n, as in kubectl.
    every = run_cli("schedule", "-f", path, "-n", "team-a", "-A", "-o", "json").json()
    assert every == everything


def test_why_shows_one_namespace_but_counts_them_all(run_cli: Any, tmp_path: Path) -> None:
    path = _four_gpu_team_pod(tmp_path)
    everything = {d["pod"]: d for d in run_cli("why", "-f", path, "-o", "json").json()["pods"]}
    result = run_cli("why", "-f", path, "-n", "team-a", "-o", "json")
    assert result.code == 0, result.err
    doc = result.json()
    assert [d["pod"] for d in doc["pods"]] == ["team-a/kueue-job-0"]
    (d,) = doc["pods"]
    assert d["category"] != "Schedulable"
    assert d == everything["team-a/kueue-job-0"]
    assert sum(doc["summary"].values()) == 1
    table = run_cli("why", "-f", path, "-n", "serving").out
    assert "infer-l4-0" in table and "research" not in table and "team-a" not in table
