"""The built-in demo: an AI cluster grown from node pools (8-GPU NVLink nodes in racks, cheaper
PCIe nodes on two sockets, MIG-partitionable nodes, RDMA NICs as a second driver) under the
synthetic AI mix."""

from __future__ import annotations

from typing import Any

from draplan.api.codec import decode
from draplan.api.draplan_v1alpha1 import (
    PluginWeight,
    Scenario,
    ScenarioSpec,
    ScenarioWorkload,
    SchedulerProfile,
    SchedulerProfileSpec,
    SyntheticWorkload,
)
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.scheduler.profile import DRAPLAN_SCORES
from draplan.sim.workloads import TOPOLOGY_KEY

GPU = "gpu.nvidia.com"
NIC = "dra.net"


def _class(name: str, expr: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expr}}]},
    }


def _gpu(i: int, product: str, root: int, numa: int) -> dict[str, Any]:
    return {
        "name": f"gpu-{i}",
        "attributes": {
            "type": {"string": "gpu"},
            "productName": {"string": product},
            "numa": {"int": numa},
            "resource.kubernetes.io/pcieRoot": {"string": f"$NODE_NAME-pci{root}"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }


def _nic(i: int, root: int) -> dict[str, Any]:
    return {
        "name": f"nic-{i}",
        "attributes": {
            "rdma": {"bool": True},
            "resource.kubernetes.io/pcieRoot": {"string": f"$NODE_NAME-pci{root}"},
        },
    }


def _slice(
    driver: str,
    devices: list[dict[str, Any]] | None = None,
    counters: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": driver,
        "nodeName": "$NODE_NAME",
        "pool": {"name": "$NODE_NAME", "generation": 1},
    }
    if devices is not None:
        spec["devices"] = devices
    if counters is not None:
        spec["sharedCounters"] = counters
    return spec


def _pool(
    name: str,
    price: str,
    slices: list[dict[str, Any]],
    max_nodes: int,
    delay: int,
    topology: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minNodes": 0,
        "maxNodes": max_nodes,
        "pricePerHour": price,
        "provisioningDelaySeconds": delay,
        "template": {
            "metadata": {"labels": {"node.kubernetes.io/instance-type": name, **(labels or {})}},
            "status": {"allocatable": {"cpu": "96", "memory": "1Ti", "pods": "110"}},
        },
        "resourceSlices": slices,
    }
    if topology:
        spec["topology"] = topology
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }


def _mig_devices(gpu: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One A100's dynamic-MIG placements: 7 × 1g.10gb, 3 × 2g.20gb, 1 × 7g.80gb, sharing its
    memory slices through a counter set (KEP-4815)."""
    cs = f"gpu-{gpu}-counter-set"
    counters = {"name": cs, "counters": {f"memory-slice-{s}": {"value": "1"} for s in range(7)}}
    devices = []
    for profile, size, starts in (
        ("1g.10gb", 1, range(7)),
        ("2g.20gb", 2, (0, 2, 4)),
        ("7g.80gb", 7, (0,)),
    ):
        for st in starts:
            devices.append(
                {
                    "name": f"gpu-{gpu}-mig-{profile.replace('.', '')}-{st}",
                    "attributes": {
                        "type": {"string": "mig"},
                        "profile": {"string": profile},
                        "parentUUID": {"string": f"$NODE_NAME-gpu-{gpu}"},
                    },
                    "capacity": {"memory": {"value": f"{10 * size}Gi"}},
                    "consumesCounters": [
                        {
                            "counterSet": cs,
                            "counters": {
                                f"memory-slice-{s}": {"value": "1"} for s in range(st, st + size)
                            },
                        }
                    ],
                }
            )
    return counters, devices


def demo_objects() -> list[KubeStruct]:
    docs: list[dict[str, Any]] = [
        _class(
            "gpu.nvidia.com",
            f"device.driver == '{GPU}' && device.attributes['{GPU}'].type == 'gpu'",
        ),
        _class(
            "mig.nvidia.com",
            f"device.driver == '{GPU}' && device.attributes['{GPU}'].type == 'mig'",
        ),
        _class("rdma.dra.net", f"device.driver == '{NIC}' && device.attributes['{NIC}'].rdma"),
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "system-0", "labels": {"kubernetes.io/hostname": "system-0"}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
        },
    ]
    nvl = [_gpu(i, "NVIDIA H100 80GB HBM3", i // 2, i // 4) for i in range(8)]
    docs.append(
        _pool(
            "h100-nvl",
            "98.32",
            [_slice(GPU, nvl)],
            max_nodes=8,
            delay=600,
            topology=[{"key": TOPOLOGY_KEY, "nodesPerDomain": 4}],
        )
    )
    # Cheap PCIe nodes: two GPUs per PCIe root, NICs on only two of the four roots.
    cheap = [_gpu(i, "NVIDIA L40S", i // 2, i // 4) for i in range(8)]
    docs.append(
        _pool(
            "pcie-cheap",
            "18.00",
            [_slice(GPU, cheap), _slice(NIC, [_nic(0, 0), _nic(1, 2)])],
            max_nodes=8,
            delay=300,
        )
    )
    # PCIe-switch nodes: four GPUs and one NIC behind each of two roots.
    switch = [_gpu(i, "NVIDIA L40S", i // 4, i // 4) for i in range(8)]
    docs.append(
        _pool(
            "pcie-switch",
            "29.00",
            [_slice(GPU, switch), _slice(NIC, [_nic(0, 0), _nic(1, 1)])],
            max_nodes=8,
            delay=300,
        )
    )
    counters, migs = [], []
    for g in range(2):
        c, d = _mig_devices(g)
        counters.append(c)
        migs.extend(d)
    docs.append(
        _pool(
            "a100-mig",
            "8.20",
            [_slice(GPU, counters=counters), _slice(GPU, migs)],
            max_nodes=8,
            delay=300,
        )
    )
    return [decode(d, source="<demo>") for d in docs]


def demo_scenario(jobs: int = 30, seed: int = 42) -> Scenario:
    """The demo's workload: the synthetic AI mix with its defaults, which match this cluster."""
    workload = ScenarioWorkload(synthetic=SyntheticWorkload(jobs=jobs))
    return Scenario(
        metadata=ObjectMeta(name="ai-cluster-demo"), spec=ScenarioSpec(seed=seed, workload=workload)
    )


def demo_profile() -> SchedulerProfile:
    """The default scoring, written out."""
    scores = tuple(PluginWeight(name=n, weight=w) for n, w in DRAPLAN_SCORES)
    return SchedulerProfile(
        metadata=ObjectMeta(name="default"), spec=SchedulerProfileSpec(score_plugins=scores)
    )


def demo_claim() -> dict[str, Any]:
    """A claim for `draplan allocate`: 2 GPUs and an RDMA NIC behind one PCIe root."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
                    {"name": "nic", "exactly": {"deviceClassName": "rdma.dra.net"}},
                ],
                "constraints": [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}],
            }
        },
    }


def tour_training_pods(count: int = 4) -> list[dict[str, Any]]:
    """More 8-GPU H100 training pods for the example cluster (`demo --export`), more than its
    free H100s hold: the tour's `why` and `scale` then have something to say."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"train-{i}", "namespace": "ml", "labels": {"app": "train"}},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "pytorch",
                        "resources": {
                            "requests": {"cpu": "8", "memory": "64Gi"},
                            "claims": [{"name": "dev"}],
                        },
                    }
                ],
                "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": "train-8gpu"}],
            },
        }
        for i in range(1, count + 1)
    ]
