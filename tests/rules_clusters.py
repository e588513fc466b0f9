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
from templates (counts, a model selector, matchAttribute on the NUMA node or the PCIe root),
`firstAvailable` alternatives, standalone claims several pending pods share, and GB200 hosts
whose GPUs are partitionable (a counter set per GPU that the whole GPU and its 2g and 1g
partitions consume, KEP-4815); and Workload API gangs (1.37 PodGroups with a minCount, some
asking for one rack or zone).

`cluster(seed)` returns the manifests as plain dicts; the same seed gives the same cluster.
"""

from __future__ import annotations

import random
from typing import Any

from audit_scenarios import pod_group
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
    ("gpu.nvidia.com", "gb200", 2, 1, 1, "nvidia.com/gpu"),  # 2 GPUs, partitionable
)
PARTITIONED = "gb200"
# A GB200 GPU's partitions: (profile, how many, slices of the GPU's counter each consumes).
PARTITIONS = (("full", 1, 4), ("2g", 2, 2), ("1g", 4, 1))
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


def _partitions(kind: str, count: int) -> list[dict[str, Any]]:
    """Every partition of `count` GPUs: each consumes slices of its GPU's counter set."""
    out = []
    for g in range(count):
        for profile, many, slices in PARTITIONS:
            for j in range(many):
                name = f"{kind}-{g}" if profile == "full" else f"{kind}-{g}-{profile}-{j}"
                attributes = {
                    "model": {"string": kind},
                    "profile": {"string": profile},
                    "numa": {"int": g},
                    PCIE_ROOT: {"string": f"pci{g:04x}:00"},
                }
                counters = {"slices": {"value": str(slices)}}
                consumes = [{"counterSet": f"{kind}-{g}", "counters": counters}]
                out.append({"name": name, "attributes": attributes, "consumesCounters": consumes})
    return out


def _counters(node: str, driver: str, kind: str, count: int) -> dict[str, Any]:
    """The slice of the pool's shared counters: four slices per GPU."""
    sets = [{"name": f"{kind}-{g}", "counters": {"slices": {"value": "4"}}} for g in range(count)]
    return _slice(node, driver, kind, {"sharedCounters": sets}, "-counters")


def _devices(driver: str, kind: str, count: int, numa: int, pcie: int) -> list[dict[str, Any]]:
    if kind == PARTITIONED:
        return _partitions(kind, count)
    out = []
    for i in range(count):
        attributes: dict[str, Any] = {"model": {"string": kind}}
        if numa:
            attributes["numa"] = {"int": i // numa}
        if pcie:
            attributes[PCIE_ROOT] = {"string": f"pci{i // pcie:04x}:00"}
        out.append({"name": f"{kind}-{i}", "attributes": attributes})
    return out


def _slice(
    node: str, driver: str, kind: str, body: dict[str, Any], suffix: str = ""
) -> dict[str, Any]:
    """A slice of the node's pool: `body` holds its devices or its shared counters."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{kind}{suffix}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": _slices(kind)},
            **body,
        },
    }


def _slices(kind: str) -> int:
    return 2 if kind == PARTITIONED else 1


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


def _exactly(rng: random.Random, driver: str, kind: str, counts: tuple[int, ...]) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": driver, "count": rng.choice(counts)}
    if rng.random() < 0.3:
        model = kind if rng.random() < 0.8 else "b200"
        expression = f"device.attributes['{driver}'].model == '{model}'"
        if kind == PARTITIONED and rng.random() < 0.7:
            profile = rng.choice([p for p, _, _ in PARTITIONS])
            expression += f" && device.attributes['{driver}'].profile == '{profile}'"
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    return exactly


def _device_spec(rng: random.Random, driver: str, kind: str) -> dict[str, Any]:
    """A claim's spec.devices: one request, exactly or `firstAvailable` alternatives (most
    wanted first), perhaps under a matchAttribute constraint."""
    request: dict[str, Any] = {"name": "dev"}
    if rng.random() < 0.3:
        request["firstAvailable"] = [
            {"name": f"alt{i}", **_exactly(rng, driver, kind, counts)}
            for i, counts in enumerate(((2, 4), (1, 2), (1,))[: rng.randint(2, 3)])
        ]
    else:
        request["exactly"] = _exactly(rng, driver, kind, (1, 1, 2, 4))
    devices: dict[str, Any] = {"requests": [request]}
    # Any vendor may be asked for either attribute: a TPU host has neither, a Gaudi3 host one
    # PCIe root per NUMA node.
    attribute = rng.choice((None, None, f"{driver}/numa", PCIE_ROOT))
    if attribute:
        devices["constraints"] = [{"requests": ["dev"], "matchAttribute": attribute}]
    return devices


def _template(rng: random.Random, ns: str, driver: str, kind: str) -> dict[str, Any]:
    name = f"{kind}-{rng.randint(0, 10**6)}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": {"devices": _device_spec(rng, driver, kind)}},
    }


def _shared(rng: random.Random, ns: str, driver: str, kind: str) -> dict[str, Any]:
    """A claim of its own, not yet allocated, that pending pods name: the first one scheduled
    allocates it, the others must join it on its node."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"shared-{kind}-{rng.randint(0, 10**6)}", "namespace": ns},
        "spec": {"devices": _device_spec(rng, driver, kind)},
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
    for driver in sorted({v[0] for v in VENDORS}):
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": driver},
                "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
            }
        )
    for vendor in VENDORS:
        driver, kind, count, numa, pcie, taint = vendor
        for i in range(rng.randint(0, 2)):
            name = f"{kind}-{i}"
            labels = {ZONE: rng.choice(ZONES), "node.kubernetes.io/instance-type": kind}
            if rng.random() < 0.7:
                labels[RACK] = f"r{rng.randint(1, 3)}"
            taints = [{"key": taint, "value": "present", "effect": "NoSchedule"}]
            node = _node(name, labels, taints if rng.random() < 0.6 else [], rng.choice((8, 16)))
            node["status"]["allocatable"]["pods"] = str(rng.choice((4, 6, 110)))
            devices = _devices(driver, kind, count, numa, pcie)
            docs += [node, _slice(name, driver, kind, {"devices": devices})]
            if kind == PARTITIONED:
                docs.append(_counters(name, driver, kind, count))
            nodes.append(name)
            # Running pods hold whole devices (on a GB200 host whole GPUs: their partitions
            # then have no slice of the counter left).
            whole = [
                d["name"]
                for d in devices
                if d["attributes"].get("profile", {}) in ({}, {"string": "full"})
            ]
            accelerators[name] = (driver, whole)
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
    running_claims: dict[tuple[str, str], str] = {}  # (namespace, node kind): a held claim
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
                running_claims[(ns, where.rsplit("-", 1)[0])] = f"{name}-dev"
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
    shared: dict[tuple[str, str], str] = dict(running_claims)
    pending: list[dict[str, Any]] = []
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
            joinable = sorted(k for k in shared if k[0] == ns)
            if joinable and rng.random() < 0.3:
                # Another pod's claim: a pending one's, or one a running pod holds.
                key = rng.choice(joinable)
                vendor = next(v for v in VENDORS if v[1] == key[1])
                ref = {"name": "dev", "resourceClaimName": shared[key]}
            elif rng.random() < 0.2:
                claim = _shared(rng, ns, vendor[0], vendor[1])
                docs.append(claim)
                shared[key] = claim["metadata"]["name"]
                ref = {"name": "dev", "resourceClaimName": shared[key]}
            else:
                if key not in templates or rng.random() < 0.5:
                    template = _template(rng, ns, vendor[0], vendor[1])
                    docs.append(template)
                    templates[key] = template["metadata"]["name"]
                ref = {"name": "dev", "resourceClaimTemplateName": templates[key]}
            spec["resourceClaims"] = [ref]
            spec["containers"][0]["resources"]["claims"] = [{"name": "dev"}]
            spec["tolerations"] = [{"key": vendor[5], "operator": "Exists", "effect": "NoSchedule"}]
        docs.append(p)
        pending.append(p)
    # Gangs: a few pending pods of one namespace made the members of a PodGroup.
    for g in range(rng.choice((0, 0, 1, 2))):
        ns = rng.choice(sorted(NAMESPACES))
        members = [
            p
            for p in pending
            if p["metadata"]["namespace"] == ns and "schedulingGroup" not in p["spec"]
        ]
        if len(members) < 2:
            continue
        chosen = rng.sample(members, rng.randint(2, min(3, len(members))))
        name = f"gang-{g}"
        min_count = rng.choice((2, len(chosen), len(chosen), len(chosen) + 1))
        docs.append(pod_group(name, min_count, rng.choice(("", RACK, ZONE)), ns))
        for p in chosen:
            p["spec"]["schedulingGroup"] = {"podGroupName": name}
            # A member's priority is its PodGroup's in 1.37 (none here: 0), as victim too.
            p["spec"].pop("priorityClassName", None)
    return docs
