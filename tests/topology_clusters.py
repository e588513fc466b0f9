"""Random clusters for the pod affinity, topology spread and host port rules: accelerator nodes
of other vendors (Gaudi3, TPU v6e, GB200) with DRA slices, CPU workers, a control-plane and a
system node with their taints, a cordoned node, zones and racks (some nodes without a rack),
DaemonSet pods with host ports on every node, running pods with anti-affinity, ReplicaSets and
Services (PodTopologySpread's default selector), labelled namespaces, priority classes; pending
pods with required and preferred pod affinity and anti-affinity (hostname, zone, rack;
namespaces and namespace selectors; matchLabelKeys), spread constraints (several keys,
minDomains, node inclusion policies, matchLabelKeys), host ports, node selectors and DRA claims.

`cluster(seed)` returns the manifests as plain dicts; the same seed gives the same cluster.
"""

from __future__ import annotations

import random
from typing import Any

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
RACK = "example.com/rack"
KEYS = (HOSTNAME, ZONE, RACK)
ZONES = ("z1", "z2", "z3")
APPS = ("web", "db", "cache", "train")
NAMESPACES = {"serving": {"team": "web"}, "ml": {"team": "ml"}, "batch": {"team": "ml"}}
# (driver, node kind, devices per node, taint key)
VENDORS = (
    ("habana.ai", "gaudi3", 8, "habana.ai/gaudi"),
    ("tpu.google.com", "tpu-v6e", 4, "google.com/tpu"),
    ("gpu.nvidia.com", "gb200", 4, "nvidia.com/gpu"),
)
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
EXPORTER_PORT = 9100


def _node(
    name: str, labels: dict[str, str], taints: list[dict[str, str]], cpu: int
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, **labels}},
        "spec": {"taints": taints},
        "status": {"allocatable": {"cpu": str(cpu), "memory": "256Gi", "pods": "110"}},
    }


def _slice(node: str, driver: str, kind: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{kind}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": f"{kind}-{i}", "attributes": {"model": {"string": kind}}}
                for i in range(count)
            ],
        },
    }


def _pod(
    name: str,
    ns: str,
    labels: dict[str, str],
    cpu: int,
    *,
    node: str = "",
    owner: tuple[str, str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "labels": labels,
        "creationTimestamp": "2026-11-01T00:00:00Z",
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": owner[0], "kind": owner[1], "name": owner[2], "controller": True}
        ]
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "resources": {"requests": {"cpu": str(cpu)}}}]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def _selector(rng: random.Random, own: str) -> dict[str, Any]:
    app = own if rng.random() < 0.6 else rng.choice(APPS)
    if rng.random() < 0.2:
        return {"matchExpressions": [{"key": "app", "operator": "In", "values": [app, "cache"]}]}
    return {"matchLabels": {"app": app}}


def _term(rng: random.Random, own: str) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": rng.choice(KEYS), "labelSelector": _selector(rng, own)}
    roll = rng.random()
    if roll < 0.15:
        term["namespaces"] = rng.sample(sorted(NAMESPACES), 2)
    elif roll < 0.3:
        term["namespaceSelector"] = {"matchLabels": {"team": rng.choice(["ml", "web"])}}
    elif roll < 0.35:
        term["namespaceSelector"] = {}
    if rng.random() < 0.2:
        term["matchLabelKeys" if rng.random() < 0.5 else "mismatchLabelKeys"] = ["tier"]
    return term


def _affinity(rng: random.Random, app: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        rules: dict[str, Any] = {}
        if rng.random() < (0.25 if kind == "podAffinity" else 0.4):
            rules["requiredDuringSchedulingIgnoredDuringExecution"] = [
                _term(rng, app) for _ in range(rng.choice((1, 1, 2)))
            ]
        if rng.random() < 0.3:
            rules["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _term(rng, app)}
            ]
        if rules:
            out[kind] = rules
    return out


def _spread(rng: random.Random, app: str) -> list[dict[str, Any]]:
    out = []
    for key in rng.sample(KEYS, rng.choice((1, 1, 2))):
        when = "DoNotSchedule" if rng.random() < 0.75 else "ScheduleAnyway"
        c: dict[str, Any] = {
            "maxSkew": rng.choice((1, 1, 2)),
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": _selector(rng, app),
        }
        if when == "DoNotSchedule" and rng.random() < 0.3:
            c["minDomains"] = rng.randint(2, 5)
        if rng.random() < 0.3:
            c["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.3:
            c["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.2:
            c["matchLabelKeys"] = ["tier"]
        out.append(c)
    return out


def _tainted_nodes(rng: random.Random) -> list[dict[str, Any]]:
    """A control-plane node and a system node, each with its taint."""
    cp = _node(
        "control-plane-0",
        {ZONE: "z1", CONTROL_PLANE: ""},
        [{"key": CONTROL_PLANE, "effect": "NoSchedule"}],
        8,
    )
    system = _node(
        "system-0",
        {ZONE: rng.choice(ZONES), "node-role.kubernetes.io/system": ""},
        [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}],
        8,
    )
    return [cp, system]


def _exporter(node: str) -> dict[str, Any]:
    """A node exporter DaemonSet's pod on `node`: it holds a host port and tolerates all taints."""
    exporter = _pod(
        f"node-exporter-{node}",
        "monitoring",
        {"app": "node-exporter"},
        0,
        node=node,
        owner=("apps/v1", "DaemonSet", "node-exporter"),
    )
    exporter["spec"]["containers"][0]["ports"] = [
        {"containerPort": EXPORTER_PORT, "hostPort": EXPORTER_PORT}
    ]
    exporter["spec"]["tolerations"] = [{"operator": "Exists"}]
    return exporter


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
            # The rules checked are the filters'; preemption is left out of these runs.
            "preemptionPolicy": "Never",
        }
        for name, value in (("high", 1000), ("low", 10))
    ]
    nodes: list[str] = []
    classes = []
    for driver, kind, count, taint in VENDORS:
        classes.append(driver)
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": driver},
                "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
            }
        )
        for i in range(rng.randint(1, 2)):
            name = f"{kind}-{i}"
            labels = {ZONE: rng.choice(ZONES), "node.kubernetes.io/instance-type": kind}
            if rng.random() < 0.7:
                labels[RACK] = f"r{rng.randint(1, 3)}"
            taints = [{"key": taint, "value": "present", "effect": "NoSchedule"}]
            docs += [
                _node(name, labels, taints if rng.random() < 0.7 else [], 32),
                _slice(name, driver, kind, count),
            ]
            nodes.append(name)
    for i in range(rng.randint(2, 5)):
        name = f"cpu-{i}"
        labels = {ZONE: rng.choice(ZONES)}
        if rng.random() < 0.7:
            labels[RACK] = f"r{rng.randint(1, 3)}"
        docs.append(_node(name, labels, [], rng.choice((4, 8, 16))))
        nodes.append(name)
    docs += _tainted_nodes(rng)
    nodes += ["control-plane-0", "system-0"]
    if rng.random() < 0.5:
        cordoned = rng.choice([n for n in nodes if n.startswith("cpu")])
        for d in docs:
            if d["kind"] == "Node" and d["metadata"]["name"] == cordoned:
                d["spec"]["unschedulable"] = True
    # DaemonSet pods on every node: a node exporter holding a host port, tolerating all taints.
    docs += [_exporter(n) for n in nodes]
    # Deployments: a ReplicaSet and a Service each, some replicas running.
    for app in APPS[:2]:
        ns = "serving" if app == "web" else "ml"
        labels = {"app": app, "pod-template-hash": f"{app}1"}
        docs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": f"{app}-1", "namespace": ns},
                "spec": {"selector": {"matchLabels": labels}},
            }
        )
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": app, "namespace": ns},
                "spec": {"selector": {"app": app}},
            }
        )
    workers = [n for n in nodes if not n.startswith(("control", "system"))]
    for serial in range(1, rng.randint(1, 7)):
        app = rng.choice(APPS)
        ns = rng.choice(sorted(NAMESPACES))
        p = _pod(
            f"run-{serial}",
            ns,
            {"app": app, "tier": rng.choice(("a", "b"))},
            1,
            node=rng.choice(workers),
        )
        if rng.random() < 0.4:
            p["spec"]["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_term(rng, app)]
                }
            }
        docs.append(p)
    for i in range(rng.randint(4, 16)):
        app = rng.choice(APPS)
        ns = rng.choice(sorted(NAMESPACES))
        labels = {"app": app, "tier": rng.choice(("a", "b"))}
        owner = None
        if app in ("web", "db") and rng.random() < 0.5:
            ns = "serving" if app == "web" else "ml"
            labels["pod-template-hash"] = f"{app}1"
            owner = ("apps/v1", "ReplicaSet", f"{app}-1")
        p = _pod(f"p{i:02d}", ns, labels, rng.randint(1, 6), owner=owner)
        p["metadata"]["creationTimestamp"] = f"2026-11-01T00:{i:02d}:00Z"
        spec = p["spec"]
        if rng.random() < 0.3:
            spec["priorityClassName"] = rng.choice(("high", "low"))
        affinity = _affinity(rng, app)
        if affinity:
            spec["affinity"] = affinity
        if rng.random() < 0.4:
            spec["topologySpreadConstraints"] = _spread(rng, app)
        if rng.random() < 0.15:
            port = rng.choice((EXPORTER_PORT, 8080, 8080))
            spec["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
        if rng.random() < 0.2:
            spec["nodeSelector"] = {ZONE: rng.choice(ZONES)}
        if rng.random() < 0.35:
            driver, kind, _, taint = rng.choice(VENDORS)
            template = f"one-{kind}-{ns}"
            if not any(
                d["kind"] == "ResourceClaimTemplate" and d["metadata"]["name"] == template
                for d in docs
            ):
                docs.append(
                    {
                        "apiVersion": "resource.k8s.io/v1",
                        "kind": "ResourceClaimTemplate",
                        "metadata": {"name": template, "namespace": ns},
                        "spec": {
                            "spec": {
                                "devices": {
                                    "requests": [
                                        {"name": "dev", "exactly": {"deviceClassName": driver}}
                                    ]
                                }
                            }
                        },
                    }
                )
            spec["resourceClaims"] = [{"name": "dev", "resourceClaimTemplateName": template}]
            spec["containers"][0]["resources"]["claims"] = [{"name": "dev"}]
            spec["tolerations"] = [{"key": taint, "operator": "Exists", "effect": "NoSchedule"}]
        docs.append(p)
    return docs
