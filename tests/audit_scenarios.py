"""Cluster states for the auditor: the same pending 8-GPU pod in different situations."""

from __future__ import annotations

from typing import Any

from scale_scenarios import DRIVER, device_class, gpu_request, pod, template


def node(name: str, cpu: str = "64", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": {"cpu": cpu, "memory": "512Gi", "pods": "110"}},
    }


def gpu_slice(node_name: str, numa_of: list[int]) -> dict[str, Any]:
    devices = [
        {"name": f"gpu-{i}", "attributes": {"numa": {"int": numa}}}
        for i, numa in enumerate(numa_of)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def held(node_name: str, devices: list[int], name: str) -> list[dict[str, Any]]:
    """A running pod holding `devices` of a node through an allocated claim."""
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"{name}-claim", "namespace": "default"},
        "spec": {"devices": {"requests": [gpu_request(len(devices))]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpus",
                            "driver": DRIVER,
                            "pool": node_name,
                            "device": f"gpu-{d}",
                        }
                        for d in devices
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node_name]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": name, "uid": f"uid-{name}"}],
        },
    }
    p = pod(name, None)
    p["spec"]["nodeName"] = node_name
    p["spec"]["resourceClaims"] = [{"name": "dev", "resourceClaimName": f"{name}-claim"}]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "dev"}]
    return [claim, p]


def eight_gpu_pod(numa: bool = False) -> list[dict[str, Any]]:
    cons = [{"matchAttribute": f"{DRIVER}/numa"}] if numa else None
    return [template("eight", [gpu_request(8)], cons), pod("trainer", "eight")]


def fragmented() -> list[dict[str, Any]]:
    """8 nodes × 8 GPUs, 7 held on each: 8 free GPUs in total, one per node."""
    objs: list[dict[str, Any]] = [device_class(), *eight_gpu_pod()]
    for n in range(8):
        name = f"node-{n}"
        objs += [node(name), gpu_slice(name, [0] * 8), *held(name, list(range(7)), f"w{n}")]
    return objs


def topology_mismatch() -> list[dict[str, Any]]:
    """One node with 8 free GPUs in two NUMA groups of 4; the pod wants 8 on one NUMA node."""
    objs: list[dict[str, Any]] = [device_class(), *eight_gpu_pod(numa=True)]
    objs += [node("node-0"), gpu_slice("node-0", [0, 0, 0, 0, 1, 1, 1, 1])]
    return objs


def exhausted() -> list[dict[str, Any]]:
    """Two nodes with 2 free GPUs each: 4 free in total, the pod needs 8."""
    objs: list[dict[str, Any]] = [device_class(), *eight_gpu_pod()]
    for n in range(2):
        name = f"node-{n}"
        objs += [node(name), gpu_slice(name, [0] * 8), *held(name, list(range(6)), f"w{n}")]
    return objs
