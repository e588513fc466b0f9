"""Small random clusters in the shape of tests/data/realistic: H100 nodes (two GPUs per PCIe
root, four per NUMA node), L4 nodes and partitionable A100s (MIG through shared counters),
often tainted, sometimes cordoned, in two zones with Karpenter labels; running pods holding
allocated claims; pending pods with template claims (counts, models, matchAttribute on NUMA
or PCIe root), tolerations, node selectors; sometimes NodePools copying a node.

`generate(seed)` returns the manifests (plain dicts); the same seed gives the same cluster.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

from draplan.api.codec import decode
from draplan.api.meta import KubeStruct
from draplan.cluster.incremental import IncrementalState
from draplan.cluster.state import ClusterState, OriginKey, origin_key

DRIVER = "gpu.example.com"
GPU_CLASS = "gpu.example.com"
MIG_CLASS = "mig.example.com"
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
PRICES = {"h100": "98.32", "l4": "4.60", "a100": "32.77"}
CPU = {"h100": 96, "l4": 32, "a100": 64}
# Partitions of one A100 over 4 memory slices: (device, slices it consumes).
MIG = (
    ("gpu-0", (0, 1, 2, 3)),
    ("mig-2g-0", (0, 1)),
    ("mig-2g-1", (2, 3)),
    ("mig-1g-0", (0,)),
    ("mig-1g-1", (1,)),
    ("mig-1g-2", (2,)),
    ("mig-1g-3", (3,)),
)
MIG_HELD = ([], ["gpu-0"], ["mig-2g-0"], ["mig-1g-0"], ["mig-2g-0", "mig-1g-2"])


def _class(name: str, kind: str) -> dict[str, Any]:
    expr = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expr}}]},
    }


def _gpu(i: int, model: str, numa: int, root: int) -> dict[str, Any]:
    return {
        "name": f"gpu-{i}",
        "attributes": {
            "type": {"string": "gpu"},
            "model": {"string": model},
            "numa": {"int": numa},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci{root:04x}:00"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }


def _devices(kind: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(devices, sharedCounters) of a node kind."""
    if kind == "h100":
        return [_gpu(i, "H100", i // 4, i // 2) for i in range(8)], []
    if kind == "l4":
        return [_gpu(i, "L4", 0, i) for i in range(4)], []
    counters = {f"memory-slice-{s}": {"value": "1"} for s in range(4)}
    devices = []
    for name, slices in MIG:
        devices.append(
            {
                "name": name,
                "attributes": {
                    "type": {"string": "gpu" if name == "gpu-0" else "mig"},
                    "model": {"string": "A100"},
                    "profile": {"string": name.split("-")[1] if name != "gpu-0" else "full"},
                    "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
                },
                "consumesCounters": [
                    {
                        "counterSet": "gpu-0-counters",
                        "counters": {f"memory-slice-{s}": {"value": "1"} for s in slices},
                    }
                ],
            }
        )
    return devices, [{"name": "gpu-0-counters", "counters": counters}]


def _node(rng: random.Random, name: str, kind: str) -> list[dict[str, Any]]:
    spec: dict[str, Any] = {}
    if (kind != "h100" or rng.random() < 0.2) and rng.random() < 0.8:
        spec["taints"] = [dict(TAINT)]
    if rng.random() < 0.1:
        spec["unschedulable"] = True
    cpu = str(CPU[kind])
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "karpenter.sh/nodepool": kind,
                "topology.kubernetes.io/zone": rng.choice(["a", "b"]),
            },
        },
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": "512Gi", "pods": "110"}},
    }
    devices, counters = _devices(kind)
    # Counters and the devices that consume them are published in separate slices.
    parts: list[tuple[str, dict[str, Any]]] = [("gpus", {"devices": devices})]
    if counters:
        parts.insert(0, ("counters", {"sharedCounters": counters}))
    slices = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-{suffix}"},
            "spec": {
                "driver": DRIVER,
                "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": len(parts)},
                **body,
            },
        }
        for suffix, body in parts
    ]
    return [node, *slices]


def _selector(node: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        ]
    }


def _running(rng: random.Random, node: str, kind: str, n: int) -> list[dict[str, Any]]:
    """Running pods on `node` holding some of its devices through allocated claims."""
    if kind == "a100":
        groups = [rng.choice(MIG_HELD)]
    else:
        count = 8 if kind == "h100" else 4
        free = list(range(count))
        rng.shuffle(free)
        groups = []
        for _ in range(rng.randint(0, 3)):
            take = rng.choice([1, 1, 2, 4])
            if len(free) < take:
                break
            groups.append([f"gpu-{i}" for i in sorted(free[:take])])
            free = free[take:]
    out: list[dict[str, Any]] = []
    for j, devices in enumerate(g for g in groups if g):
        name = f"run-{n}-{j}"
        cls = MIG_CLASS if devices[0].startswith("mig") else GPU_CLASS
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": "work", "uid": f"uid-claim-{name}"},
                "spec": {
                    "devices": {
                        "requests": [{"name": "r", "exactly": {"deviceClassName": cls, "count": 1}}]
                        if len(devices) == 1
                        else [
                            {"name": f"r{k}", "exactly": {"deviceClassName": cls, "count": 1}}
                            for k in range(len(devices))
                        ]
                    }
                },
                "status": {
                    "allocation": {
                        "devices": {
                            "results": [
                                {
                                    "request": "r" if len(devices) == 1 else f"r{k}",
                                    "driver": DRIVER,
                                    "pool": node,
                                    "device": d,
                                }
                                for k, d in enumerate(devices)
                            ]
                        },
                        "nodeSelector": _selector(node),
                    },
                    "reservedFor": [{"resource": "pods", "name": name, "uid": f"uid-{name}"}],
                },
            }
        )
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "work", "uid": f"uid-{name}"},
                "spec": {
                    "nodeName": node,
                    "tolerations": [dict(TOLERATION)],
                    "containers": [
                        {
                            "name": "main",
                            "resources": {
                                "requests": {"cpu": str(rng.choice([1, 2, 4, 8]))},
                                "claims": [{"name": "gpu"}],
                            },
                        }
                    ],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                },
                "status": {"phase": "Running"},
            }
        )
    return out


def _template(rng: random.Random, name: str) -> dict[str, Any]:
    if rng.random() < 0.2:
        profile = rng.choice(["1g", "2g"])
        request = {
            "name": "mig",
            "exactly": {
                "deviceClassName": MIG_CLASS,
                "count": rng.choice([1, 1, 2]),
                "selectors": [
                    {"cel": {"expression": f"device.attributes['{DRIVER}'].profile == '{profile}'"}}
                ],
            },
        }
        devices: dict[str, Any] = {"requests": [request]}
    else:
        exactly: dict[str, Any] = {
            "deviceClassName": GPU_CLASS,
            "count": rng.choice([1, 2, 2, 3, 4, 4, 6, 8]),
        }
        model = rng.choice(["H100", "L4", None])
        if model:
            exactly["selectors"] = [
                {"cel": {"expression": f"device.attributes['{DRIVER}'].model == '{model}'"}}
            ]
        devices = {"requests": [{"name": "gpus", "exactly": exactly}]}
        attribute = rng.choice([None, None, f"{DRIVER}/numa", "resource.kubernetes.io/pcieRoot"])
        if attribute:
            devices["constraints"] = [{"requests": ["gpus"], "matchAttribute": attribute}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "work"},
        "spec": {"spec": {"devices": devices}},
    }


def _pending(rng: random.Random, i: int, template: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "resources": {
                    "requests": {"cpu": str(rng.choice([1, 2, 4, 8, 16, 32, 128]))},
                    "claims": [{"name": "gpu"}],
                },
            }
        ],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
    }
    if rng.random() < 0.5:
        spec["tolerations"] = [dict(TOLERATION)]
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": rng.choice(["a", "b"])}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pending-{i}",
            "namespace": "work",
            "uid": f"uid-pending-{i}",
            "creationTimestamp": f"2026-12-01T10:00:{i:02d}Z",
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def generate(
    seed: int, nodes: tuple[int, int] = (2, 5), pending: tuple[int, int] = (1, 5)
) -> list[dict[str, Any]]:
    """A small random cluster: 2 to 5 nodes (or `nodes`, a range), their running pods, 1 to 5
    pending pods (or `pending`) and, for about a third of the seeds, NodePools."""
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [_class(GPU_CLASS, "gpu"), _class(MIG_CLASS, "mig")]
    kinds = [rng.choice(["h100", "h100", "l4", "a100"]) for _ in range(rng.randint(*nodes))]
    first: dict[str, str] = {}
    for n, kind in enumerate(kinds):
        name = f"{kind}-{n}"
        first.setdefault(kind, name)
        objs += _node(rng, name, kind)
        objs += _running(rng, name, kind, n)
    for i in range(rng.randint(*pending)):
        objs.append(_template(rng, f"t-{i}"))
        objs.append(_pending(rng, i, f"t-{i}"))
    if rng.random() < 0.35:
        for kind, node in sorted(first.items()):
            if rng.random() < 0.7:
                objs.append(
                    {
                        "apiVersion": "draplan.io/v1alpha1",
                        "kind": "NodePool",
                        "metadata": {"name": kind},
                        "spec": {
                            "maxNodes": rng.choice([0, 1, 2, 3]),
                            "pricePerHour": PRICES[kind],
                            "fromNode": node,
                        },
                    }
                )
    return objs


def variant_universe(
    seeds: tuple[int, ...], variants: Callable[[dict[str, Any]], list[dict[str, Any]]]
) -> list[list[KubeStruct]]:
    """Per object key, over the clusters of `seeds` (the first of a key wins), the object's
    `variants` decoded: the values a property test's changes pick from."""
    by_key: dict[Any, list[KubeStruct]] = {}
    for seed in seeds:
        for doc in generate(seed):
            key = origin_key(decode(doc))
            if key not in by_key:
                by_key[key] = [decode(v) for v in variants(doc)]
    return list(by_key.values())


class KeptObjects:
    """Objects changed one at a time both in an incrementally kept state and in a store a
    fresh state is loaded from, as watch events change `serve`'s model."""

    def __init__(self, objects: Iterable[KubeStruct], source: str = "") -> None:
        self.source = source
        self.store: dict[OriginKey, KubeStruct] = {origin_key(o): o for o in objects}
        self.inc = IncrementalState([(o, source) for o in self.store.values()])

    def put(self, obj: KubeStruct) -> None:
        self.store[origin_key(obj)] = obj
        self.inc.put(obj, self.source)

    def delete(self, obj: KubeStruct) -> None:
        self.store.pop(origin_key(obj), None)
        self.inc.delete(obj)

    def change(self, action: str, obj: KubeStruct) -> None:
        """`put` or `delete` `obj`, as `action` says."""
        (self.put if action == "put" else self.delete)(obj)

    def fresh(self) -> ClusterState:
        return ClusterState.from_objects([(o, self.source) for o in self.store.values()])
