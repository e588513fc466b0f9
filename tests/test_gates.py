"""Scheduling gates (KEP-3521) and Kueue admission on the realistic dump: a gated pod is neither
scheduled nor scaled for, and `why` says SchedulingGated with its Kueue Workload's state."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA
from draplan.api.codec import decode
from draplan.api.core_v1 import Pod
from draplan.audit import why
from draplan.audit.gates import Gates
from draplan.cluster.state import ClusterState
from draplan.sim.engine import SimConfig, simulate
from draplan.sources import load_objects

REAL = DATA / "realistic"
CLUSTER, POOLS, KUEUE = (str(REAL / n) for n in ("cluster.yaml", "pools.yaml", "kueue.yaml"))


def _items() -> list[dict[str, Any]]:
    return list(yaml.safe_load(Path(CLUSTER).read_text())["items"])


def _write(tmp_path: Path, items: list[dict[str, Any]], name: str = "cluster.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def _pod(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(i for i in items if i["kind"] == "Pod" and i["metadata"]["name"] == name)


def _by_pod(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["pod"]: d for d in doc["pods"]}


def test_why_says_waiting_for_kueue_admission_and_quotes_the_quota(run_cli: Any) -> None:
    result = run_cli("why", "-f", CLUSTER, "-f", POOLS, "-f", KUEUE, "-o", "json")
    assert result.code == 0, result.err
    d = _by_pod(result.json())["team-a/kueue-job-0"]
    assert d["category"] == "SchedulingGated"
    assert "waiting for Kueue admission" in d["message"]
    assert "insufficient unused quota for nvidia.com/gpu in flavor h100" in d["message"]
    assert d["evidence"]["workload"] == "team-a/job-kueue-job-3f2a1"
    assert d["evidence"]["admitted"] is False
    assert d["evidence"]["gates"] == ["kueue.x-k8s.io/admission"]
    assert d["evidence"]["condition"]["type"] == "QuotaReserved"
    # Judged before anything else: nothing about capacity or a node for it.
    assert "gpu-h100" not in d["message"]


def test_why_without_the_workload_still_names_the_gate(run_cli: Any) -> None:
    d = _by_pod(run_cli("why", "-f", CLUSTER, "-o", "json").json())["team-a/kueue-job-0"]
    assert d["category"] == "SchedulingGated"
    assert "waiting for Kueue admission (no Kueue Workload" in d["message"]


def test_admitted_workload_v1beta2(run_cli: Any, tmp_path: Path) -> None:
    wl = yaml.safe_load(Path(KUEUE).read_text())
    wl["apiVersion"] = "kueue.x-k8s.io/v1beta2"
    wl["status"] = {
        "admission": {"clusterQueue": "team-a-cq", "podSetAssignments": [{"name": "main"}]},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"},
        ],
    }
    path = tmp_path / "wl.yaml"
    path.write_text(yaml.safe_dump(wl))
    d = _by_pod(run_cli("why", "-f", CLUSTER, "-f", str(path), "-o", "json").json())
    gated = d["team-a/kueue-job-0"]
    assert gated["category"] == "SchedulingGated"
    assert "is admitted by ClusterQueue team-a-cq" in gated["message"]
    assert gated["evidence"]["admitted"] is True


def test_other_gates_are_named(run_cli: Any, tmp_path: Path) -> None:
    items = _items()
    _pod(items, "train-8-0")["spec"]["schedulingGates"] = [{"name": "example.com/approval"}]
    d = _by_pod(run_cli("why", "-f", _write(tmp_path, items), "-o", "json").json())
    gated = d["research/train-8-0"]
    assert gated["category"] == "SchedulingGated"
    assert "example.com/approval" in gated["message"]
    assert "Kueue" not in gated["message"]
    assert gated["fix"] == {
        "action": "remove the scheduling gates",
        "gates": ["example.com/approval"],
        "verified": False,  # advice: whoever set the gate lifts it
    }


def test_schedule_skips_gated_pods_and_reports_them(run_cli: Any) -> None:
    result = run_cli("schedule", "-f", CLUSTER, "-o", "json")
    assert result.code == 0, result.err
    doc = result.json()
    pods = {(p["namespace"], p["name"]): p for p in doc["pods"]}
    gated = pods[("team-a", "kueue-job-0")]
    # Ungated, it would fit on gpu-h100-b (2 free H100s); gated, nothing is allocated for it.
    assert gated["node"] is None and gated["reason"] is None and gated["claims"] == []
    assert gated["schedulingGates"] == ["kueue.x-k8s.io/admission"]
    assert doc["summary"]["gated"] == 1
    assert doc["summary"]["unschedulable"] == sum(
        1 for p in doc["pods"] if p["node"] is None and "schedulingGates" not in p
    )
    table = run_cli("schedule", "-f", CLUSTER).out
    row = next(line for line in table.splitlines() if "kueue-job-0" in line)
    assert "SchedulingGated" in row and "Unschedulable" not in row


def test_ungated_the_same_pod_is_scheduled(run_cli: Any, tmp_path: Path) -> None:
    items = _items()
    del _pod(items, "kueue-job-0")["spec"]["schedulingGates"]
    doc = run_cli("schedule", "-f", _write(tmp_path, items), "-o", "json").json()
    pods = {(p["namespace"], p["name"]): p for p in doc["pods"]}
    assert pods[("team-a", "kueue-job-0")]["node"] == "gpu-h100-b"
    assert doc["summary"]["gated"] == 0


def test_scale_does_not_buy_nodes_for_gated_pods(run_cli: Any, tmp_path: Path) -> None:
    items = _items()
    ungated = run_cli("scale", "-f", _write(tmp_path, items), "-f", POOLS, "-o", "json").json()
    placed = {p for u in ungated["scaleUp"] for p in u["pods"]}
    assert "research/train-8-0" in placed  # the 8-GPU pod needs a new h100 node
    gated_items = copy.deepcopy(items)
    _pod(gated_items, "train-8-0")["spec"]["schedulingGates"] = [
        {"name": "kueue.x-k8s.io/admission"}
    ]
    doc = run_cli(
        "scale", "-f", _write(tmp_path, gated_items, "gated.yaml"), "-f", POOLS, "-o", "json"
    ).json()
    assert "research/train-8-0" not in {p for u in doc["scaleUp"] for p in u["pods"]}
    assert "research/train-8-0" not in {p["pod"] for p in doc["pending"]}
    assert {g["pod"] for g in doc["gated"]} == {"research/train-8-0", "team-a/kueue-job-0"}
    added = sum(u["add"] for u in doc["scaleUp"])
    assert added < sum(u["add"] for u in ungated["scaleUp"])


def _workload(name: str, owner: dict[str, Any], version: str = "v1beta1") -> dict[str, Any]:
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ml", "ownerReferences": [owner]},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1}]},
    }


def _gated_pod(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", **meta},
        "spec": {
            "containers": [{"name": "c"}],
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
        },
    }


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        # A Job's pod: the Workload owned by the same Job (by UID).
        (
            _gated_pod(
                "job-a-0",
                ownerReferences=[
                    {"kind": "Job", "name": "job-a", "uid": "u-a", "controller": True}
                ],
            ),
            "job-job-a-1",
        ),
        # A Job recreated under the same name (another UID) is not the Workload's owner.
        (
            _gated_pod(
                "job-a-1",
                ownerReferences=[
                    {"kind": "Job", "name": "job-a", "uid": "u-new", "controller": True}
                ],
            ),
            None,
        ),
        # A pod group: the Workload named after the group label.
        (_gated_pod("g-0", labels={"kueue.x-k8s.io/pod-group-name": "group-g"}), "group-g"),
        # A plain pod: the Workload it owns.
        (_gated_pod("plain", uid="u-plain"), "pod-plain-2"),
        # A Deployment's pod: Kueue's pod integration gives it a Workload of its own.
        (
            _gated_pod(
                "web-0",
                uid="u-web-0",
                ownerReferences=[
                    {"kind": "ReplicaSet", "name": "web-7d9", "uid": "u-rs", "controller": True}
                ],
            ),
            "pod-web-0-3",
        ),
    ],
    ids=["job-owner", "recreated-job", "pod-group", "plain-pod", "deployment-pod"],
)
def test_pod_to_workload_as_kueue_links_them(pod: dict[str, Any], expected: str | None) -> None:
    objects = [
        decode(_workload("job-job-a-1", {"kind": "Job", "name": "job-a", "uid": "u-a"})),
        decode(_workload("group-g", {"kind": "Pod", "name": "g-0"}, "v1beta2")),
        decode(_workload("pod-plain-2", {"kind": "Pod", "name": "plain", "uid": "u-plain"})),
        decode(_workload("pod-web-0-3", {"kind": "Pod", "name": "web-0", "uid": "u-web-0"})),
        decode(pod),
    ]
    state = ClusterState.from_objects(objects)
    typed = decode(pod)
    assert isinstance(typed, Pod)
    found = Gates(state).workload_of(typed)
    assert (found.metadata.name if found else None) == expected


def test_simulator_neither_schedules_nor_scales_for_gated_pods(tmp_path: Path) -> None:
    def run(items: list[dict[str, Any]]) -> dict[str, Any]:
        objects = load_objects([_write(tmp_path, items), POOLS])
        return simulate([o for o, _ in objects], [], SimConfig(horizon=3600)).totals

    items = _items()
    assert run(items)["nodesAdded"] == 2  # for the 4- and 8-GPU research pods
    for name in ("finetune-numa-0", "train-8-0"):
        _pod(items, name)["spec"]["schedulingGates"] = [{"name": "example.com/approval"}]
    assert run(items)["nodesAdded"] == 0


@pytest.mark.parametrize(
    ("status", "active", "says", "action"),
    [
        (
            {
                "conditions": [
                    {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                    {
                        "type": "Admitted",
                        "status": "False",
                        "reason": "Pending",
                        "message": "The workload has not all checks ready",
                    },
                ]
            },
            None,
            "is not admitted: The workload has not all checks ready.",
            "wait for the workload's admission checks",
        ),
        ({}, False, "is deactivated (spec.active: false).", "reactivate the workload"),
        ({}, None, "is not admitted yet.", "free or raise the ClusterQueue's quota"),
    ],
    ids=["admission-checks", "deactivated", "no-condition"],
)
def test_kueue_states(
    tmp_path: Path, status: dict[str, Any], active: bool | None, says: str, action: str
) -> None:
    wl = yaml.safe_load(Path(KUEUE).read_text())
    wl["status"] = status
    if active is not None:
        wl["spec"]["active"] = active
    path = tmp_path / "wl.yaml"
    path.write_text(yaml.safe_dump(wl))
    state = ClusterState.from_objects(load_objects([CLUSTER, str(path)]))
    pod = state.pods[("team-a", "kueue-job-0")]
    verdict = Gates(state).verdict(pod)
    assert verdict is not None and verdict.fix is not None
    assert verdict.message.endswith(says), verdict.message
    assert verdict.fix["action"].startswith(action)


def test_quota_reserved_without_the_admitted_condition_is_not_admitted(tmp_path: Path) -> None:
    """Kueue adds the Admitted condition only once quota and every admission check are ready:
    a workload with quota reserved (status.admission set) and no Admitted condition yet is
    still held back by its gate, waiting for its checks."""
    wl = yaml.safe_load(Path(KUEUE).read_text())
    wl["status"] = {
        "admission": {"clusterQueue": "team-a-cq", "podSetAssignments": [{"name": "main"}]},
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}],
        "admissionChecks": [{"name": "prov", "state": "Pending", "message": ""}],
    }
    path = tmp_path / "wl.yaml"
    path.write_text(yaml.safe_dump(wl))
    state = ClusterState.from_objects(load_objects([CLUSTER, str(path)]))
    verdict = Gates(state).verdict(state.pods[("team-a", "kueue-job-0")])
    assert verdict is not None and verdict.fix is not None
    assert verdict.evidence["admitted"] is False
    assert "its admission checks are not all ready" in verdict.message, verdict.message
    assert verdict.fix["action"] == "wait for the workload's admission checks"


def test_a_gated_pod_counts_the_devices_it_asks_for(run_cli: Any) -> None:
    """kueue-job-0 asks for two H100s: the table's DEVICES column says so, gate or not."""
    state = ClusterState.from_objects(load_objects([CLUSTER]))
    d = next(d for d in why(state) if d.pod == ("team-a", "kueue-job-0"))
    assert d.category == "SchedulingGated"
    assert d.devices == 2
    row = next(
        line for line in run_cli("why", "-f", CLUSTER).out.splitlines() if "kueue-job-0" in line
    )
    assert row.split()[:3] == ["team-a", "kueue-job-0", "2"], row
