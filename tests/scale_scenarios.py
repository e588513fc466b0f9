"""Builders for autoscaler scenarios: NodePools with GPU slices, pods with template claims."""

from __future__ import annotations

from typing import Any

DRIVER = "gpu.example.com"


def device_class(name: str = DRIVER, expr: str = f"device.driver == '{DRIVER}'") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expr}}]},
    }


def gpus(
    n: int, per_numa: int = 4, taint_per_numa: int = 0, clique: str | None = None
) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        numa, slot = divmod(i, per_numa)
        dev: dict[str, Any] = {
            "name": f"gpu-{i}",
            "attributes": {
                "numa": {"int": numa},
                "resource.kubernetes.io/pcieRoot": {"string": f"pci{i:04x}:00"},
            },
            "capacity": {"memory": {"value": "80Gi"}},
        }
        if slot < taint_per_numa:
            dev["taints"] = [{"key": "reserved", "value": "system", "effect": "NoSchedule"}]
        out.append(dev)
    return out


def node_pool(
    name: str,
    price: str,
    devices: list[dict[str, Any]],
    max_nodes: int = 10,
    topology: list[dict[str, Any]] | None = None,
    cpu: str = "64",
    extra_slices: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minNodes": 0,
        "maxNodes": max_nodes,
        "pricePerHour": price,
        "template": {
            "metadata": {"labels": {"node.kubernetes.io/instance-type": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "512Gi", "pods": "110"}},
        },
        "resourceSlices": [
            {
                "driver": DRIVER,
                "nodeName": "$NODE_NAME",
                "pool": {"name": "$NODE_NAME", "generation": 1},
                "devices": devices,
            },
            *(extra_slices or []),
        ],
    }
    if topology:
        spec["topology"] = topology
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }


def template(
    name: str,
    requests: list[dict[str, Any]],
    constraints: list[dict[str, Any]] | None = None,
    ns: str = "default",
) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": {"devices": devices}},
    }


def gpu_request(count: int, cls: str = DRIVER, name: str = "gpus") -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "count": count}}


def pod(
    name: str,
    tmpl: str | None,
    cpu: str = "1",
    labels: dict[str, str] | None = None,
    spec_extra: dict[str, Any] | None = None,
    ns: str = "default",
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "resources": {"requests": {"cpu": cpu}}}
    spec: dict[str, Any] = {"containers": [container]}
    if tmpl:
        container["resources"]["claims"] = [{"name": "dev"}]
        spec["resourceClaims"] = [{"name": "dev", "resourceClaimTemplateName": tmpl}]
    spec.update(spec_extra or {})
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def scenario_numa() -> list[dict[str, Any]]:
    """(a) 4 GPUs on one NUMA node; the cheap pool has 3 of 4 GPUs per socket reserved."""
    return [
        device_class(),
        node_pool("cheap-pcie", "10", gpus(8, taint_per_numa=3)),
        node_pool("right-numa", "30", gpus(8)),
        template("four-on-one-numa", [gpu_request(4)], [{"matchAttribute": f"{DRIVER}/numa"}]),
        pod("finetune", "four-on-one-numa"),
    ]
