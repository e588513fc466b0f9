"""Generated clusters for benchmarks: nodes with one ResourceSlice of GPUs each."""

from __future__ import annotations

from typing import Any


def gpu_node_objects(nodes: int, gpus: int = 8, numa_groups: int = 2) -> list[dict[str, Any]]:
    """`nodes` nodes, each with a slice of `gpus` GPUs carrying 8 attributes and a capacity."""
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]},
        }
    ]
    per_group = max(1, gpus // numa_groups)
    for n in range(nodes):
        name = f"node-{n:05d}"
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "96", "memory": "768Gi", "pods": "110"}},
            }
        )
        devices = []
        for i in range(gpus):
            devices.append(
                {
                    "name": f"gpu-{i}",
                    "attributes": {
                        "index": {"int": i},
                        "uuid": {"string": f"GPU-{n:05d}-{i}"},
                        "model": {"string": "H100"},
                        "numa": {"int": i // per_group},
                        "resource.kubernetes.io/pcieRoot": {"string": f"pci{i // 2:04x}:00"},
                        "driverVersion": {"version": "550.54.15"},
                        "family": {"string": "hopper"},
                        "nvlink": {"bool": True},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                }
            )
        objs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpu"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
    return objs


def claim(name: str, count: int, match: str | None = None, ns: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "devices": {
            "requests": [
                {"name": "gpus", "exactly": {"deviceClassName": "gpu.example.com", "count": count}}
            ]
        }
    }
    if match:
        spec["devices"]["constraints"] = [{"matchAttribute": match}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }
