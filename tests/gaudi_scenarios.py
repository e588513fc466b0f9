"""Intel Gaudi3 nodes (8 cards, two NUMA nodes, a PCIe root per pair) with DeviceTaintRules
and slice taints, control-plane and CPU-only system nodes, running pods of StatefulSets and
DaemonSets: the inputs of issue 26 points 6, 7 and 8, unlike the GPU fixtures."""

from __future__ import annotations

from typing import Any

DRIVER = "gaudi.intel.com"
CLASS = "gaudi.intel.com"
UNHEALTHY = "gaudi.intel.com/unhealthy"
Objs = list[dict[str, Any]]


def device_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
    }


def node(
    name: str, cpu: str = "160", labels: dict[str, str] | None = None, taints: Objs = ()
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "spec": {"taints": list(taints)},
        "status": {"allocatable": {"cpu": cpu, "memory": "1Ti", "pods": "110"}},
    }


def gaudi_node(name: str, slice_taints: dict[int, dict[str, str]] | None = None) -> Objs:
    """A node with 8 Gaudi3 cards: cards 0-3 on NUMA node 0, 4-7 on NUMA node 1, two cards
    per PCIe root; `slice_taints` taints cards in the slice itself."""
    devices = []
    for i in range(8):
        device: dict[str, Any] = {
            "name": f"card-{i}",
            "attributes": {
                "model": {"string": "Gaudi3"},
                "serial": {"string": f"{name}-sn-{i}"},
                "numa": {"int": i // 4},
                "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{i // 2:02x}"},
            },
        }
        if slice_taints and i in slice_taints:
            device["taints"] = [slice_taints[i]]
        devices.append(device)
    return [
        node(name, labels={"node.kubernetes.io/instance-type": "gaudi3-8x"}),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-gaudi"},
            "spec": {
                "driver": DRIVER,
                "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        },
    ]


def system_nodes() -> Objs:
    """A tainted control-plane node and two CPU-only system nodes (room for pods that ask
    for no card)."""
    control = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
    return [
        node("cp-0", "8", {"node-role.kubernetes.io/control-plane": ""}, [control]),
        node("system-0", "32", {"node-role": "system"}),
        node("system-1", "32", {"node-role": "system"}),
    ]


def taint_rule(node_name: str, card: int, effect: str = "NoSchedule") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": f"{node_name}-card-{card}-unhealthy"},
        "spec": {
            "deviceSelector": {"driver": DRIVER, "pool": node_name, "device": f"card-{card}"},
            "taint": {"key": UNHEALTHY, "value": "ecc", "effect": effect},
        },
    }


def owner(kind: str, name: str) -> list[dict[str, Any]]:
    api = "apps/v1"
    return [
        {"apiVersion": api, "kind": kind, "name": name, "uid": f"uid-{name}", "controller": True}
    ]


def running(
    name: str,
    node_name: str,
    cards: list[int],
    owned_by: tuple[str, str] | None = ("StatefulSet", "serve"),
    annotations: dict[str, str] | None = None,
    cpu: str = "4",
) -> Objs:
    """A running pod holding `cards` of a node through an allocated claim."""
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"{name}-cards", "namespace": "ml"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "cards", "exactly": {"deviceClassName": CLASS, "count": len(cards)}}
                ]
            }
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "cards",
                            "driver": DRIVER,
                            "pool": node_name,
                            "device": f"card-{c}",
                        }
                        for c in cards
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
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "uid": f"uid-{name}"}
    if owned_by is not None:
        meta["ownerReferences"] = owner(*owned_by)
    if annotations:
        meta["annotations"] = annotations
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}],
            "resourceClaims": [{"name": "cards", "resourceClaimName": f"{name}-cards"}],
        },
        "status": {"phase": "Running"},
    }
    return [claim, pod]


def pending(
    name: str,
    count: int,
    numa: bool = False,
    tolerations: Objs = (),
    cpu: str = "8",
) -> Objs:
    """A pending pod asking `count` cards (all on one NUMA node with `numa`) through a
    template of its own; `tolerations` on the request."""
    exactly: dict[str, Any] = {"deviceClassName": CLASS, "count": count}
    if tolerations:
        exactly["tolerations"] = list(tolerations)
    devices: dict[str, Any] = {"requests": [{"name": "cards", "exactly": exactly}]}
    if numa:
        devices["constraints"] = [{"matchAttribute": f"{DRIVER}/numa"}]
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": f"{name}-cards", "namespace": "ml"},
            "spec": {"spec": {"devices": devices}},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}"},
            "spec": {
                "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}],
                "resourceClaims": [{"name": "cards", "resourceClaimTemplateName": f"{name}-cards"}],
            },
            "status": {"phase": "Pending"},
        },
    ]
