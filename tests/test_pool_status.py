"""ResourcePoolStatusRequest (resource.k8s.io/v1alpha3, KEP-5677): draplan's pool status in
the controller's terms and the comparison with the server's answers (`draplan metrics`), on
objects as a Kubernetes 1.37 API server serves them (tests/data/k137)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from draplan.api.features import defaults
from draplan.api.resource_v1alpha3 import ResourcePoolStatusRequest
from draplan.audit.poolstatus import answered_requests, compare_request, pool_statuses
from draplan.cluster.state import ClusterState
from draplan.sources import load_objects

FIXTURE = Path(__file__).parent / "data" / "k137" / "cluster.yaml"


def state(version: str = "1.37") -> ClusterState:
    return ClusterState.from_objects(load_objects([str(FIXTURE)]), defaults(version))


def by_pool(version: str = "1.37") -> dict[str, Any]:
    return {f"{p.driver}/{p.pool_name}": p for p in pool_statuses(state(version))}


def test_counts_follow_the_controller() -> None:
    pools = by_pool()
    a = pools["gpu.example.com/node-a"]
    # gpu-0 allocated, gpu-1 tainted NoSchedule by the DeviceTaintRule.
    assert (a.total_devices, a.allocated_devices, a.unavailable_devices) == (2, 1, 1)
    assert a.available_devices == 0 and a.node_name == "node-a" and a.resource_slice_count == 1
    b = pools["gpu.example.com/node-b"]
    assert (b.total_devices, b.allocated_devices, b.available_devices) == (3, 1, 2)
    assert (b.generation, b.resource_slice_count) == (3, 2)


def test_partition_summary_counts_what_the_free_counters_still_hold() -> None:
    # 40Gi shared; mig-a (20Gi) in use: one more Half fits, the Full (40Gi) does not.
    b = by_pool()["gpu.example.com/node-b"]
    summary = {(p.attribute, p.type): (p.total, p.allocatable) for p in b.partition_summary}
    assert summary == {
        ("gpu.example.com/profile", "Full"): (1, 0),
        ("gpu.example.com/profile", "Half"): (2, 1),
    }


def test_shareable_summary_sums_capacity_and_consumption() -> None:
    nic = by_pool()["nic.example.com/node-a"]
    s = nic.shareable_summary
    assert s is not None
    assert (s.fully_available_devices, s.partially_available_devices) == (0, 1)
    (cap,) = s.capacity
    assert (cap.name, str(cap.total), str(cap.consumed), str(cap.available)) == (
        "bandwidth",
        "10G",
        "2G",
        "8G",
    )


def test_the_servers_answers_agree_under_1_37() -> None:
    st = state()
    answered = answered_requests(st)
    assert [r.metadata.name for r in answered] == ["check-gpus", "check-nics"]  # not pending
    for req in answered:
        report = compare_request(st, req)
        assert report["agrees"], report["differences"]


def test_under_1_36_device_taint_rules_are_off_and_the_difference_is_flagged() -> None:
    st = state("1.36")
    req = next(r for r in answered_requests(st) if r.metadata.name == "check-gpus")
    report = compare_request(st, req)
    assert not report["agrees"]
    assert {(d["pool"], d["field"], d["server"], d["draplan"]) for d in report["differences"]} == {
        ("gpu.example.com/node-a", "availableDevices", 0, 1),
        ("gpu.example.com/node-a", "unavailableDevices", 1, 0),
    }


def test_a_stale_answer_is_flagged_pool_by_pool() -> None:
    st = state()
    req = next(r for r in answered_requests(st) if r.metadata.name == "check-gpus")
    assert req.status is not None
    first = req.status.pools[0]
    stale = msgspec.structs.replace(
        req,
        status=msgspec.structs.replace(
            req.status,
            pool_count=1,
            pools=(msgspec.structs.replace(first, allocated_devices=0, available_devices=1),),
        ),
    )
    report = compare_request(st, stale)
    found = {(d["pool"], d["field"]) for d in report["differences"]}
    assert found == {
        ("gpu.example.com/node-a", "allocatedDevices"),
        ("gpu.example.com/node-a", "availableDevices"),
        ("gpu.example.com/node-b", "pool"),  # listed by draplan, not by the server
        ("*", "poolCount"),
    }


def objects() -> list[Any]:
    return [o for o, _ in load_objects([str(FIXTURE)])]


def test_an_incomplete_pool_has_a_validation_error_and_no_counts() -> None:
    keep = [o for o in objects() if o.metadata.name != "node-b-gpu.example.com-p4r6t"]
    st = ClusterState.from_objects(keep)
    pools = {p.pool_name: p for p in pool_statuses(st, "gpu.example.com")}
    b = pools["node-b"]
    assert b.validation_error is not None and b.validation_error.startswith("PoolIncomplete:")
    assert b.total_devices is None and b.resource_slice_count is None


def test_default_partition_attribute_applies_where_no_slice_declares_one() -> None:
    undeclared = [
        msgspec.structs.replace(
            o, spec=msgspec.structs.replace(o.spec, partition_type_attribute=None)
        )
        if getattr(o, "kind", "") == "ResourceSlice"
        else o
        for o in objects()
    ]
    st = ClusterState.from_objects(undeclared)
    (b,) = pool_statuses(st, "gpu.example.com", "node-b")
    assert b.partition_summary == ()
    (b,) = pool_statuses(st, "gpu.example.com", "node-b", "gpu.example.com/profile")
    assert [(p.type, p.allocatable) for p in b.partition_summary] == [("Full", 0), ("Half", 1)]


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_metrics_json_reports_pool_status_and_requests(run_cli: Any, version: str) -> None:
    result = run_cli("metrics", "-f", str(FIXTURE), "--kubernetes-version", version, "-o", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    pools = {f"{p['driver']}/{p['poolName']}": p for p in doc["poolStatus"]}
    unavailable = 1 if version == "1.37" else 0
    assert pools["gpu.example.com/node-a"]["unavailableDevices"] == unavailable
    agree = {r["name"]: r["agrees"] for r in doc["poolStatusRequests"]}
    assert agree == {"check-gpus": version == "1.37", "check-nics": True}


@pytest.mark.parametrize("version", ["1.36", "1.37"])
@pytest.mark.parametrize("command", ["validate", "why", "metrics"])
def test_the_1_37_fixture_loads_under_both_versions(
    run_cli: Any, command: str, version: str
) -> None:
    result = run_cli(command, "-f", str(FIXTURE), "--kubernetes-version", version)
    assert result.code == 0, result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize(("version", "free"), [("1.37", 0), ("1.36", 1)])
def test_the_gang_waits_for_the_gpu_the_rule_taints(run_cli: Any, version: str, free: int) -> None:
    # Two members need an H100 each: gpu-0 is taken, gpu-1 tainted by the DeviceTaintRule,
    # which 1.36 (DRADeviceTaintRules beta, off) ignores. A 1.36 kube-scheduler gangs them
    # only with GangScheduling (alpha, off) on; without it, w0 takes gpu-1 alone.
    def why(*flags: str) -> dict[str, Any]:
        args = ("why", "-f", str(FIXTURE), "-o", "json", "--kubernetes-version", version)
        result = run_cli(*args, *flags)
        assert result.code == 0, result.err
        return {p["pod"]: p for p in json.loads(result.out)["pods"]}

    if version == "1.36":
        assert why()["default/w0"]["category"] == "Schedulable"
    pods = why(*(("--feature-gates", "GangScheduling=true") if version == "1.36" else ()))
    assert set(pods) == {"default/w0", "default/w1"}
    w0 = pods["default/w0"]
    assert w0["category"] == "CapacityExhausted"
    assert w0["evidence"]["short"]["pod claim 'gpu' gpu"] == {"needed": 2, "free": free}
    assert ("Tainted" in w0["evidence"]["nodes"]) == (version == "1.37")


def test_request_round_trips_and_validates() -> None:
    from draplan.api.codec import decode, encode
    from draplan.api.errors import BadInput

    raw = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": "r"},
        "spec": {"driver": "gpu.example.com", "limit": 5},
    }
    obj = decode(raw)
    assert isinstance(obj, ResourcePoolStatusRequest)
    assert encode(obj) == raw
    with pytest.raises(BadInput, match=r"spec\.limit"):
        decode({**raw, "spec": {"driver": "gpu.example.com", "limit": 0}})
    with pytest.raises(BadInput, match=r"spec\.driver"):
        decode({**raw, "spec": {}})


def test_a_1_36_cluster_reports_counts_only() -> None:
    # 1.36's controller has no partition or shareable summaries: none computed, none compared.
    pools = by_pool("1.36")
    assert pools["gpu.example.com/node-b"].partition_summary == ()
    assert pools["nic.example.com/node-a"].shareable_summary is None
    st = state("1.36")
    nics = next(r for r in answered_requests(st) if r.metadata.name == "check-nics")
    assert compare_request(st, nics)["agrees"]
