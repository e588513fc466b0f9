"""The autoscaler treats preempting and preemptible pods as Cluster Autoscaler does: pods
below --expendable-pods-priority-cutoff are not scaled for and do not keep a node; a pod
nominated to an existing node (it waits for its victims) is not scaled for, its requests
counting on that node; a pod kube-scheduler places by preemption adds no node."""

from __future__ import annotations

from typing import Any

from draplan.autoscaler import Limits
from scale_scenarios import (
    device_class,
    gpu_node,
    gpus,
    in_node_group,
    node,
    node_pool,
    plan_api,
    pod,
    running_pod,
)


def cpu_pool() -> dict[str, Any]:
    return node_pool("cpu16", "2", gpus(0), cpu="16")


def with_priority(doc: dict[str, Any], priority: int) -> dict[str, Any]:
    doc["spec"]["priority"] = priority
    return doc


def test_expendable_pods_are_not_scaled_for() -> None:
    """Two pending pods too big for the full node: priority -20 (below CA's default cutoff
    -10) adds no node, priority 0 does; with the cutoff lowered both are scaled for."""
    objs = [
        device_class(),
        cpu_pool(),
        node("worker-0", cpu="8"),
        with_priority(running_pod("busy", "worker-0", None, cpu="8"), 100),
        with_priority(pod("scavenger", None, cpu="12"), -20),
        with_priority(pod("batch", None, cpu="12"), 0),
    ]
    doc, _ = plan_api(objs)
    assert [u["pods"] for u in doc["scaleUp"]] == [["default/batch"]]
    doc, _ = plan_api(objs, limits=Limits(expendable_priority_cutoff=-100))
    assert sorted(p for u in doc["scaleUp"] for p in u["pods"]) == [
        "default/batch",
        "default/scavenger",
    ]


def test_a_pod_nominated_to_an_existing_node_adds_none() -> None:
    """A pod that preempted and waits for its node (status.nominatedNodeName) is not scaled
    for; its requests hold that node for the pods of lower priority, which then do need a
    new node."""
    waiting = with_priority(pod("train", None, cpu="6"), 1000)
    waiting["status"] = {"nominatedNodeName": "worker-0"}
    objs = [
        device_class(),
        cpu_pool(),
        node("worker-0", cpu="8"),
        waiting,
        with_priority(pod("etl", None, cpu="4"), 0),
    ]
    doc, _ = plan_api(objs)
    assert [u["pods"] for u in doc["scaleUp"]] == [["default/etl"]]


def test_a_pod_placed_by_preemption_adds_no_node() -> None:
    """worker-0 is full of priority-0 pods; a pending pod of priority 1000 preempts one of
    them (kube-scheduler nominates it before CA looks): no node is added for it. A pending
    pod of priority 0 cannot preempt its peers and is scaled for."""
    objs = [
        device_class(),
        cpu_pool(),
        node("worker-0", cpu="8"),
        with_priority(running_pod("app-0", "worker-0", None, cpu="4"), 0),
        with_priority(running_pod("app-1", "worker-0", None, cpu="4"), 0),
        with_priority(pod("urgent", None, cpu="4"), 1000),
        with_priority(pod("peer", None, cpu="4"), 0),
    ]
    doc, state = plan_api(objs)
    assert state.pods[("default", "urgent")].status.nominated_node_name == "worker-0"
    assert [u["pods"] for u in doc["scaleUp"]] == [["default/peer"]]


def test_expendable_pods_do_not_keep_a_node() -> None:
    """An underused GPU node running only a pod of priority -100 is removed (CA drops
    expendable pods from its snapshot); with that pod at priority 0 and nowhere to go, it
    stays."""

    def cluster(priority: int) -> list[dict[str, Any]]:
        objs = [*gpu_node("gpu-0"), with_priority(running_pod("probe", "gpu-0", None), priority)]
        return in_node_group([device_class(), *objs])

    doc, _ = plan_api(cluster(-100))
    assert [r["node"] for r in doc["scaleDown"]] == ["gpu-0"]
    doc, _ = plan_api(cluster(0))
    assert doc["scaleDown"] == []


def test_the_plan_says_why_a_pending_pod_is_not_scaled_for() -> None:
    """The pod that preempted waits while its victim terminates (no second preemption:
    kube-scheduler finds it not eligible), and the plan says why it adds nothing for it."""
    waiting = with_priority(pod("train", None, cpu="6"), 1000)
    waiting["status"] = {"nominatedNodeName": "worker-0"}
    victim = with_priority(running_pod("old", "worker-0", None, cpu="4"), 0)
    victim["metadata"]["deletionTimestamp"] = "2026-10-01T10:00:00Z"
    victim["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ]
    objs = [
        device_class(),
        cpu_pool(),
        node("worker-0", cpu="8"),
        victim,
        waiting,
        with_priority(pod("scavenger", None, cpu="12"), -20),
    ]
    doc, _ = plan_api(objs)
    notes = {p["pod"]: p["reason"].get("autoscaler") for p in doc["pending"]}
    assert notes == {
        "default/scavenger": "priority below the expendable-pods cutoff -10: not scaled for",
        "default/train": "nominated to worker-0, where it waits for its victims: not scaled for",
    }


def test_scale_takes_the_cutoff_as_cluster_autoscaler_does(run_cli: Any, tmp_path: Any) -> None:
    from scale_scenarios import write

    objs = [
        device_class(),
        cpu_pool(),
        node("worker-0", cpu="8"),
        with_priority(running_pod("busy", "worker-0", None, cpu="8"), 100),
        with_priority(pod("scavenger", None, cpu="12"), -20),
    ]
    path = write(tmp_path, objs)
    plain = run_cli("scale", "-f", path, "-o", "json").json()
    assert plain["scaleUp"] == []
    lowered = run_cli(
        "scale", "-f", path, "--expendable-pods-priority-cutoff", "-50", "-o", "json"
    ).json()
    assert [u["pods"] for u in lowered["scaleUp"]] == [["default/scavenger"]]
