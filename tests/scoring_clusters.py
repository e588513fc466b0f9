"""Small random clusters for checking kube-scheduler's default profile: nodes of several
vendors (NVIDIA H100 and L4, Intel Gaudi3, AMD MI300X, Google TPU hosts, CPU-only system
nodes and a tainted control-plane node), in zones, with NoSchedule and PreferNoSchedule
taints, cached images, running pods of every request form (none, some, sidecars), and one
pending pod with tolerations, preferred node affinity (weighted terms), images, a sidecar
and, sometimes, a claim whose firstAvailable list prefers one device kind.

`generate(seed)` returns typed objects; the same seed gives the same cluster.
"""

from __future__ import annotations

import random
from typing import Any

from draplan.api.codec import decode
from draplan.api.meta import KubeStruct

ZONE = "topology.kubernetes.io/zone"
# kind: (driver, device class attribute, devices, cpu, memory GiB, vendor label)
KINDS: dict[str, tuple[str, int, int, int, str]] = {
    "h100": ("gpu.nvidia.com", 8, 96, 1024, "nvidia"),
    "l4": ("gpu.nvidia.com", 4, 32, 128, "nvidia"),
    "gaudi3": ("gaudi.habana.ai", 8, 160, 1024, "intel"),
    "mi300x": ("gpu.amd.com", 8, 128, 2048, "amd"),
    "tpu-v6e": ("tpu.google.com", 4, 180, 720, "google"),
    "system": ("", 0, 16, 64, ""),
    "control-plane": ("", 0, 8, 32, ""),
}
IMAGES = (
    ("registry.k8s.io/pause:3.10", 700_000),
    ("nvcr.io/nvidia/pytorch:25.01-py3", 9_800_000_000),
    ("vault.habana.ai/gaudi-docker/1.20.0/pytorch:latest", 7_500_000_000),
    ("docker.io/rocm/pytorch:rocm6.3", 11_000_000_000),
    ("us-docker.pkg.dev/cloud-tpu-images/jax:v0.4", 3_200_000_000),
    ("ghcr.io/example/log-shipper:1.4", 45_000_000),
)
PREFER = ("spot", "true", "PreferNoSchedule")
LABELS = ("node.example.com/tier", ("gold", "silver", "bronze"))


def _class(driver: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": driver},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
    }


def _node(rng: random.Random, name: str, kind: str) -> list[dict[str, Any]]:
    driver, count, cpu, memory, vendor = KINDS[kind]
    taints = []
    if kind == "control-plane":
        taints.append({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"})
    elif driver and rng.random() < 0.3:
        taints.append({"key": f"{vendor}.com/accelerator", "effect": "NoSchedule"})
    for _ in range(rng.choice([0, 0, 1, 2])):
        taints.append(
            {"key": f"{PREFER[0]}-{len(taints)}", "value": PREFER[1], "effect": PREFER[2]}
        )
    images = [{"names": [image], "sizeBytes": size} for image, size in IMAGES if rng.random() < 0.4]
    labels = {"kubernetes.io/hostname": name, ZONE: rng.choice(["zone-a", "zone-b", "zone-c"])}
    if rng.random() < 0.7:
        labels[LABELS[0]] = rng.choice(LABELS[1])
    if kind == "control-plane":
        labels["node-role.kubernetes.io/control-plane"] = ""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints} if taints else {},
        "status": {
            "allocatable": {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": "110"},
            "images": images,
        },
    }
    if not driver:
        return [node]
    devices = [
        {"name": f"dev-{i}", "attributes": {"kind": {"string": rng.choice(["big", "small"])}}}
        for i in range(rng.choice([2, 3, count]))
    ]
    slice_ = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-devices"},
        "spec": {
            "driver": driver,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }
    return [node, slice_]


def _requests(rng: random.Random) -> dict[str, str]:
    out = {}
    if rng.random() < 0.8:
        out["cpu"] = rng.choice(["250m", "1", "2", "4", "8", "16", "24", "40"])
    if rng.random() < 0.7:
        out["memory"] = rng.choice(["256Mi", "2Gi", "16Gi", "64Gi", "200Gi", "400Gi"])
    return out


def _container(rng: random.Random, name: str, sidecar: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "image": rng.choice([i for i, _ in IMAGES] + ["busybox"]),
        "resources": {"requests": _requests(rng)},
    }
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def _running(rng: random.Random, node: str, n: int) -> list[dict[str, Any]]:
    pods = []
    for j in range(rng.randint(0, 3)):
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"run-{n}-{j}", "namespace": "work"},
                "spec": {
                    "nodeName": node,
                    "containers": [_container(rng, "main")],
                    "initContainers": [_container(rng, "sidecar", True)]
                    if rng.random() < 0.3
                    else [],
                },
                "status": {"phase": "Running"},
            }
        )
    return pods


def _pending(rng: random.Random, drivers: list[str]) -> list[dict[str, Any]]:
    tolerations: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        tolerations.append({"operator": "Exists", "effect": "NoSchedule"})
    if rng.random() < 0.4:
        tolerations.append({"key": f"{PREFER[0]}-0", "operator": "Exists"})
    preferred = [
        {
            "weight": rng.randint(0, 100),
            "preference": {
                "matchExpressions": [
                    {"key": LABELS[0], "operator": "In", "values": [rng.choice(LABELS[1])]}
                ]
            },
        }
        for _ in range(rng.choice([0, 1, 2, 3]))
    ]
    spec: dict[str, Any] = {
        "containers": [_container(rng, f"c{i}") for i in range(rng.randint(1, 2))],
        "initContainers": [_container(rng, "sidecar", True)] if rng.random() < 0.4 else [],
        "tolerations": tolerations,
    }
    if preferred:
        spec["affinity"] = {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}
        }
    out: list[dict[str, Any]] = []
    if drivers and rng.random() < 0.5:
        driver = rng.choice(drivers)
        subs = [
            {
                "name": kind,
                "deviceClassName": driver,
                "count": rng.choice([1, 2, 2, 3]),
                "selectors": [
                    {"cel": {"expression": f"device.attributes['{driver}'].kind == '{kind}'"}}
                ],
            }
            for kind in rng.sample(["big", "small"], 2)
        ]
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": "accel", "namespace": "work"},
                "spec": {
                    "spec": {"devices": {"requests": [{"name": "acc", "firstAvailable": subs}]}}
                },
            }
        )
        spec["resourceClaims"] = [{"name": "acc", "resourceClaimTemplateName": "accel"}]
    out.append(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pending", "namespace": "work", "uid": "uid-pending"},
            "spec": spec,
        }
    )
    return out


def generate(seed: int) -> list[KubeStruct]:
    rng = random.Random(seed)
    kinds = [rng.choice(sorted(KINDS)) for _ in range(rng.randint(2, 8))]
    objs: list[dict[str, Any]] = []
    drivers = sorted({KINDS[k][0] for k in kinds if KINDS[k][0]})
    objs += [_class(d) for d in drivers]
    for n, kind in enumerate(kinds):
        name = f"{kind}-{n}"
        objs += _node(rng, name, kind)
        objs += _running(rng, name, n)
    objs += _pending(rng, drivers)
    return [decode(o) for o in objs]
