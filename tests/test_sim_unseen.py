"""`simulate` on clusters unlike the demo (issue 26): it grows the pools `scale` derives from
the cluster's own node groups, its synthetic workload can tolerate taints and names the real
cause when nothing starts, and the partial-gang measure counts what a pod-by-pod policy's
partial gang really holds (device-plugin TPUs here) while gang-atomic places none of it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TPU_TAINT = {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}
GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
}


def _node(
    name: str,
    labels: dict[str, str],
    allocatable: dict[str, str],
    taints: list[dict[str, str]] = (),  # type: ignore[assignment]
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, **labels},
            "annotations": annotations or {},
        },
        "spec": {"taints": list(taints)},
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }


def _gpus(node: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu.nvidia.com-abcde"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": f"gpu-{i}", "attributes": {"productName": {"string": "NVIDIA GB200"}}}
                for i in range(count)
            ],
        },
    }


def _machine_deployment(name: str, low: int, high: int, notes: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineDeployment",
        "metadata": {
            "name": name,
            "namespace": "capi",
            "annotations": {
                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": str(low),
                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": str(high),
                **notes,
            },
        },
        "spec": {"clusterName": "c1", "replicas": low},
    }


def _node_groups_cluster() -> list[dict[str, Any]]:
    """A tainted system node, a GPU MachineDeployment with one node of 2 GPUs, and a CPU group
    at 0 replicas described by CA's scale-from-zero annotations; no draplan NodePool."""
    owner = {
        "cluster.x-k8s.io/owner-kind": "MachineSet",
        "cluster.x-k8s.io/owner-name": "gpu-md-7f9c",
    }
    return [
        GPU_CLASS,
        _node(
            "system-0",
            {},
            {"cpu": "8", "memory": "32Gi", "pods": "110"},
            [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}],
        ),
        _node(
            "gpu-md-7f9c-x2k4p",
            {"node.example.com/pool": "gpu"},
            {"cpu": "64", "memory": "512Gi", "pods": "110"},
            [GPU_TAINT],
            owner,
        ),
        _gpus("gpu-md-7f9c-x2k4p", 2),
        _machine_deployment("gpu-md", 1, 3, {}),
        _machine_deployment(
            "cpu-burst",
            0,
            2,
            {
                "capacity.cluster-autoscaler.kubernetes.io/cpu": "32",
                "capacity.cluster-autoscaler.kubernetes.io/memory": "128Gi",
            },
        ),
    ]


def _job(name: str, arrival: float, objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": name,
        "arrivalSeconds": arrival,
        "durationSeconds": 1800,
        "workloadClass": "training",
        "objects": objects,
    }


def _pod(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": spec,
    }


def _write(tmp_path: Path, objects: list[dict[str, Any]], scenario: dict[str, Any]) -> list[str]:
    cluster, sc = tmp_path / "cluster.yaml", tmp_path / "scenario.yaml"
    cluster.write_text(yaml.safe_dump_all(objects))
    doc = {"apiVersion": "draplan.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "s"}}
    sc.write_text(yaml.safe_dump({**doc, "spec": scenario}))
    return ["-f", str(cluster), "-f", str(sc)]


def _results(run_cli: Any, args: list[str]) -> dict[str, Any]:
    result = run_cli("simulate", *args, "-o", "json")
    assert result.code == 0, result.err
    return {r["policy"]: r for r in result.json()["results"]}


def test_simulate_grows_the_pools_scale_derives(run_cli: Any, tmp_path: Path) -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "four", "namespace": "ml"},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}
        ]}}},
    }  # fmt: skip
    trainer = _pod(
        "trainer",
        {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "containers": [
                {"name": "t", "resources": {"requests": {"cpu": "8"}, "claims": [{"name": "g"}]}}
            ],
            "resourceClaims": [{"name": "g", "resourceClaimTemplateName": "four"}],
        },
    )
    etl = _pod("etl", {"containers": [{"name": "e", "resources": {"requests": {"cpu": "24"}}}]})
    # The node's 2 GPUs are taken by a first trainer; the second needs a node of gpu-md.
    first = {**trainer, "metadata": {"name": "first", "namespace": "ml"}}
    scenario = {
        "policies": ["legacy", "dra", "dra+gang-atomic"],
        "workload": {
            "jobs": [
                _job("first", 0, [claim, first]),
                _job("trainer", 60, [trainer]),
                _job("etl", 60, [etl]),
            ]
        },
    }
    args = _write(tmp_path, _node_groups_cluster(), scenario)
    initial = {"system-0", "gpu-md-7f9c-x2k4p"}
    for policy, result in _results(run_cli, args).items():
        grown = {n["pool"] for n in result["nodes"] if n["node"] not in initial}
        assert grown == {"gpu-md", "cpu-burst"}, policy
        assert result["totals"]["jobsStarted"] == 3, policy
    # `scale` on the same cluster with the same pods pending adds nodes of the same pools.
    pending = tmp_path / "pending.yaml"
    pending.write_text(yaml.safe_dump_all([claim, trainer, etl, first]))
    plan = run_cli("scale", "-f", args[1], "-f", str(pending), "-o", "json").json()
    assert {o["pool"] for o in plan["scaleUp"]} == {"gpu-md", "cpu-burst"}


def _gpu_only_cluster() -> list[dict[str, Any]]:
    labels = {"karpenter.sh/nodepool": "gb200", "nvidia.com/gpu.clique": "c0"}
    nodes = [
        _node(f"gb200-{i}", labels, {"cpu": "144", "memory": "960Gi", "pods": "110"}, [GPU_TAINT])
        for i in range(2)
    ]
    return [
        GPU_CLASS,
        {**GPU_CLASS, "metadata": {"name": "mig.nvidia.com"}},
        *nodes,
        *(_gpus(n["metadata"]["name"], 4) for n in nodes),
    ]


SYNTHETIC = {
    "jobs": 4,
    "training": 0,
    "finetune": 0,
    "inference": 1,
    "migClass": "",
    "gpuModel": "",
    "nicClass": "",
}


def test_a_synthetic_workload_names_the_taint_it_cannot_tolerate(
    run_cli: Any, tmp_path: Path
) -> None:
    args = _write(
        tmp_path, _gpu_only_cluster(), {"policies": ["dra"], "workload": {"synthetic": SYNTHETIC}}
    )
    result = run_cli("simulate", *args)
    assert result.code == 2
    # kube-scheduler no longer names the taint (kubernetes#134740, 1.35 on).
    assert "2 node(s) had untolerated taint(s)" in result.err
    assert "spec.workload.synthetic.tolerations" in result.err
    tolerating = {
        **SYNTHETIC,
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    args = _write(
        tmp_path, _gpu_only_cluster(), {"policies": ["dra"], "workload": {"synthetic": tolerating}}
    )
    (dra,) = _results(run_cli, args).values()
    assert dra["totals"]["jobsStarted"] == 4


def _tpu_gang_cluster() -> list[dict[str, Any]]:
    """Two 4x4 TPU v6e slices of 4 hosts (device plugin, 4 chips each), named by a label of
    their own: slice a has two free hosts, slice b none. No node group: nothing grows."""
    out = []
    for pool, hosts in (("tpu-a", 4), ("tpu-b", 4)):
        for i in range(hosts):
            out.append(
                _node(
                    f"gke-{pool}-{i}",
                    {
                        "example.com/tpu-slice": pool,
                        "cloud.google.com/gke-tpu-topology": "4x4",
                    },
                    {"cpu": "180", "memory": "700Gi", "pods": "110", "google.com/tpu": "4"},
                    [TPU_TAINT],
                )
            )
    busy = [
        _pod(
            f"busy-{n['metadata']['name']}",
            {
                "nodeName": n["metadata"]["name"],
                "containers": [{"name": "b", "resources": {"requests": {"google.com/tpu": "4"}}}],
            },
        )
        for n in out
        if n["metadata"]["name"] not in ("gke-tpu-a-0", "gke-tpu-a-1")
    ]
    return [*out, *busy]


@pytest.mark.parametrize("policy", ["legacy", "dra", "dra+gang-atomic"])
def test_partial_gangs_are_counted_where_a_policy_places_them(
    run_cli: Any, tmp_path: Path, policy: str
) -> None:
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "sft", "namespace": "ml"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 4}},
            "schedulingConstraints": {"topology": [{"key": "example.com/tpu-slice"}]},
        },
    }
    workers = [
        _pod(
            f"sft-{i}",
            {
                "schedulingGroup": {"podGroupName": "sft"},
                "tolerations": [{"key": "google.com/tpu", "operator": "Exists"}],
                "containers": [{"name": "jax", "resources": {"requests": {"google.com/tpu": "4"}}}],
            },
        )
        for i in range(4)
    ]
    # A job that does start, so that the scenario is a comparison of something.
    probe = _pod(
        "probe",
        {
            "tolerations": [{"key": "google.com/tpu", "operator": "Exists"}],
            "containers": [{"name": "p", "resources": {"requests": {"cpu": "1"}}}],
        },
    )
    scenario = {
        "policies": [policy],
        "horizonSeconds": 3600,
        "workload": {"jobs": [_job("sft", 0, [group, *workers]), _job("probe", 0, [probe])]},
    }
    args = _write(tmp_path, _tpu_gang_cluster(), scenario)
    (result,) = _results(run_cli, [*args, "--policies", policy]).values()
    totals = result["totals"]
    assert totals["jobsStarted"] == 1 and totals["nodesAdded"] == 0
    if policy == "dra+gang-atomic":
        assert totals["partialGangGpuHours"] == 0.0  # nothing of the gang was placed
    else:
        # Two members on the two free hosts for the whole hour: 2 x 4 chips x 1 h.
        assert totals["partialGangGpuHours"] == 8.0


def test_a_pending_reason_counts_the_nodes_that_exist_then(run_cli: Any) -> None:
    """A job still pending names kube-scheduler's reason at the moment it was last tried: its
    "0/N nodes" are the nodes alive then (the cluster's and those the simulation added and
    had joined), and the words say when and how many were added."""
    data = Path(__file__).parent / "data" / "multivendor"
    result = run_cli(
        "simulate",
        "-f",
        str(data / "cluster.yaml"),
        "-f",
        str(data / "scenario.yaml"),
        "--policies",
        "legacy",
        "-o",
        "json",
    )
    assert result.code == 0, result.err
    [legacy] = json.loads(result.out)["results"]
    reasons = [j["pendingReason"] for j in legacy["jobs"] if j.get("pendingReason")]
    with open(data / "cluster.yaml") as f:
        items = yaml.load(f, Loader=yaml.CSafeLoader)["items"]
    dumped = {o["metadata"]["name"] for o in items if o["kind"] == "Node"}
    assert reasons
    for reason in reasons:
        found = re.search(
            r" at (\d+)s \((\d+) of its (\d+) nodes added by the simulation\): ", reason
        )
        assert found, reason
        at, added, total = (int(x) for x in found.groups())
        alive = [
            n
            for n in legacy["nodes"]
            if n["added"] <= at and (n["removed"] is None or n["removed"] > at)
        ]
        initial = [n for n in alive if n["node"] in dumped]
        assert total == len(alive), reason
        assert added == len(alive) - len(initial), reason
        assert f"): 0/{total} nodes are available" in reason
