"""Random clusters that mix every rule kube-scheduler's default profile applies between pods:
NVIDIA H100 hosts (GPUs with NUMA node and PCIe root attributes), Intel Gaudi3 hosts (NUMA
attributes, one PCIe root per four cards), Google TPU v6e hosts (chips without either), CPU
workers, a control-plane and a system node with their taints, zones and racks, a cordoned node,
small pod limits; DaemonSet pods holding a host port on every node; running pods of several
priorities and start times, some with required anti-affinity and some holding DRA devices
through allocated claims; PodDisruptionBudgets over their apps; pending pods of every priority
(one class that never preempts) with required and preferred pod (anti-)affinity (namespaces,
namespaceSelector, matchLabelKeys / mismatchLabelKeys), topology spread (DoNotSchedule and
ScheduleAnyway, minDomains, node inclusion policies), host ports, node selectors and DRA claims
from templates (counts, a model selector, matchAttribute on the NUMA node or the PCIe root).

`cluster(seed)` returns the manifests as plain dicts; the same seed gives the same cluster.
"""

from __future__ import annotations

import random
from typing import Any

from topology_clusters import (
    APPS,
    EXPORTER_PORT,
    NAMESPACES,
    RACK,
    ZONE,
    ZONES,
    _affinity,
    _exporter,
    _node,
    _pod,
    _spread,
    _tainted_nodes,
    _term,
)

PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
# (driver, node kind, devices per node, devices per NUMA node, devices per PCIe root, taint)
VENDORS = (
    ("gpu.nvidia.com", "h100", 8, 4, 2, "nvidia.com/gpu"),
    ("habana.ai", "gaudi3", 8, 4, 4, "habana.ai/gaudi"),
    ("tpu.google.com", "tpu-v6e", 4, 0, 0, "google.com/tpu"),
)
# (name, value, preemptionPolicy)
PRIORITY_CLASSES = (
    ("critical", 5000, "PreemptLowerPriority"),
    ("high", 1000, "PreemptLowerPriority"),
    ("polite", 1000, "Never"),
    ("low", 10, "PreemptLowerPriority"),
    ("scavenger", -10, "PreemptLowerPriority"),
)
RUNNING_CLASSES = ("low", "low", "scavenger", "high", None)
PENDING_CLASSES = ("critical", "high", "high", "polite", "low", None)


def _devices(driver: str, kind: str, count: int, numa: int, pcie: int) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        attributes: dict[str, Any] = {"model": {"string": kind}}
        if numa:
            attributes["numa"] = {"int": i // numa}
        if pcie:
            attributes[PCIE_ROOT] = {"string": f"pci{i // pcie:04x}:00"}
        out.append({"name": f"{kind}-{i}", "attributes": attributes})
    return out


def _slice(node: str, driver: str, kind: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{kind}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _stamp(minute: int) -> str:
    return f"2026-11-01T{minute // 60:02d}:{minute % 60:02d}:00Z"


def _claim(
    name: str, ns: str, driver: str, node: str, devices: list[str], holder: str
) -> dict[str, Any]:
    """An allocated claim a running pod holds."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-claim-{name}"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "dev",
                        "exactly": {"deviceClassName": driver, "count": len(devices)},
                    }
                ]
            }
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "dev", "driver": driver, "pool": node, "device": d}
                        for d in devices
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": holder, "uid": f"uid-{ns}-{holder}"}],
        },
    }


def _template(rng: random.Random, ns: str, driver: str, kind: str) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": driver, "count": rng.choice((1, 1, 2, 4))}
    if rng.random() < 0.3:
        model = kind if rng.random() < 0.8 else "b200"
        exactly["selectors"] = [
            {"cel": {"expression": f"device.attributes['{driver}'].model == '{model}'"}}
        ]
    devices: dict[str, Any] = {"requests": [{"name": "dev", "exactly": exactly}]}
    # Any vendor may be asked for either attribute: a TPU host has neither, a Gaudi3 host one
    # PCIe root per NUMA node.
    attribute = rng.choice((None, None, f"{driver}/numa", PCIE_ROOT))
    if attribute:
        devices["constraints"] = [{"requests": ["dev"], "matchAttribute": attribute}]
    name = f"{kind}-{rng.randint(0, 10**6)}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": {"devices": devices}},
    }


def _memory(gib: int) -> str:
    return f"{gib}Gi"


def cluster(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}
        for ns, labels in NAMESPACES.items()
    ]
    docs += [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "preemptionPolicy": policy,
        }
        for name, value, policy in PRIORITY_CLASSES
    ]
    nodes: list[str] = []
    accelerators: dict[str, tuple[str, list[str]]] = {}  # node: (driver, free devices)
    for vendor in VENDORS:
        driver, kind, count, numa, pcie, taint = vendor
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": driver},
                "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
            }
        )
        for i in range(rng.randint(0, 2)):
            name = f"{kind}-{i}"
            labels = {ZONE: rng.choice(ZONES), "node.kubernetes.io/instance-type": kind}
            if rng.random() < 0.7:
                labels[RACK] = f"r{rng.randint(1, 3)}"
            taints = [{"key": taint, "value": "present", "effect": "NoSchedule"}]
            node = _node(name, labels, taints if rng.random() < 0.6 else [], rng.choice((8, 16)))
            node["status"]["allocatable"]["pods"] = str(rng.choice((4, 6, 110)))
            devices = _devices(driver, kind, count, numa, pcie)
            docs += [node, _slice(name, driver, kind, devices)]
            nodes.append(name)
            accelerators[name] = (driver, [d["name"] for d in devices])
    for i in range(rng.randint(2, 4)):
        name = f"cpu-{i}"
        labels = {ZONE: rng.choice(ZONES)}
        if rng.random() < 0.7:
            labels[RACK] = f"r{rng.randint(1, 3)}"
        node = _node(name, labels, [], rng.choice((4, 6, 8)))
        node["status"]["allocatable"]["memory"] = _memory(rng.choice((8, 16, 64)))
        node["status"]["allocatable"]["pods"] = str(rng.choice((3, 5, 110)))
        docs.append(node)
        nodes.append(name)
    docs += _tainted_nodes(rng)
    nodes += ["control-plane-0", "system-0"]
    if rng.random() < 0.4:
        cordoned = rng.choice([n for n in nodes if n.startswith("cpu")])
        next(d for d in docs if d["metadata"]["name"] == cordoned)["spec"]["unschedulable"] = True
    for n in nodes:
        exporter = _exporter(n)
        exporter["spec"]["priorityClassName"] = "system-node-critical"
        docs.append(exporter)
    workers = [n for n in nodes if not n.startswith(("control", "system"))]
    minute = 0
    for serial in range(rng.randint(3, 10)):
        app = rng.choice(APPS)
        ns = rng.choice(sorted(NAMESPACES))
        where = rng.choice(workers)
        name = f"run-{serial}"
        p = _pod(
            name, ns, {"app": app, "tier": rng.choice(("a", "b"))}, rng.randint(1, 3), node=where
        )
        p["metadata"]["uid"] = f"uid-{ns}-{name}"
        p["spec"]["containers"][0]["resources"]["requests"]["memory"] = _memory(
            rng.choice((1, 2, 4))
        )
        minute += rng.randint(1, 5)
        p["status"]["startTime"] = _stamp(minute)
        cls = rng.choice(RUNNING_CLASSES)
        if cls:
            p["spec"]["priorityClassName"] = cls
        if rng.random() < 0.3:
            p["spec"]["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_term(rng, app)]
                }
            }
        if where in accelerators and rng.random() < 0.7:
            driver, free = accelerators[where]
            take = min(rng.choice((1, 2, 4)), len(free))
            if take:
                held, accelerators[where] = free[:take], (driver, free[take:])
                docs.append(_claim(f"{name}-dev", ns, driver, where, held, name))
                p["spec"]["resourceClaims"] = [{"name": "dev", "resourceClaimName": f"{name}-dev"}]
                p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "dev"}]
        docs.append(p)
    for app in APPS:
        for ns in sorted(NAMESPACES):
            if rng.random() < 0.25:
                docs.append(
                    {
                        "apiVersion": "policy/v1",
                        "kind": "PodDisruptionBudget",
                        "metadata": {"name": f"{app}-budget", "namespace": ns},
                        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
                        "status": {
                            "disruptionsAllowed": rng.choice((0, 0, 1)),
                            "currentHealthy": 1,
                            "desiredHealthy": 1,
                            "expectedPods": 1,
                            "observedGeneration": 1,
                        },
                    }
                )
    templates: dict[tuple[str, str], str] = {}
    for i in range(rng.randint(4, 12)):
        app = rng.choice(APPS)
        ns = rng.choice(sorted(NAMESPACES))
        labels = {"app": app, "tier": rng.choice(("a", "b"))}
        p = _pod(f"p{i:02d}", ns, labels, rng.randint(1, 6))
        p["metadata"]["creationTimestamp"] = _stamp(i)
        spec = p["spec"]
        spec["containers"][0]["resources"]["requests"]["memory"] = _memory(rng.choice((1, 4, 8)))
        cls = rng.choice(PENDING_CLASSES)
        if cls:
            spec["priorityClassName"] = cls
        affinity = _affinity(rng, app)
        if affinity:
            spec["affinity"] = affinity
        if rng.random() < 0.35:
            spec["topologySpreadConstraints"] = _spread(rng, app)
        if rng.random() < 0.15:
            port = rng.choice((EXPORTER_PORT, 8080, 8080))
            spec["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
        if rng.random() < 0.15:
            spec["nodeSelector"] = {ZONE: rng.choice(ZONES)}
        if rng.random() < 0.45:
            vendor = rng.choice(VENDORS)
            key = (ns, vendor[1])
            if key not in templates or rng.random() < 0.5:
                template = _template(rng, ns, vendor[0], vendor[1])
                docs.append(template)
                templates[key] = template["metadata"]["name"]
            spec["resourceClaims"] = [{"name": "dev", "resourceClaimTemplateName": templates[key]}]
            spec["containers"][0]["resources"]["claims"] = [{"name": "dev"}]
            spec["tolerations"] = [{"key": vendor[5], "operator": "Exists", "effect": "NoSchedule"}]
        docs.append(p)
    return docs
