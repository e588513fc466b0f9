"""Driving the watch-fed model against tests.apiserver: a served cluster, waits, a fresh load."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from apiserver import ApiServer, serve_draplan_kinds
from draplan.cluster.state import ClusterState
from draplan.serve.live_model import LiveClusterModel
from draplan.serve.watch import Backoff, WatchOptions
from draplan.sources.kubeclient import resolve_config
from draplan.sources.live import LiveOptions, read_cluster

FAST = Backoff(base=0.01, factor=2.0, cap=0.2, jitter=1.0)


def wait_for(check: Callable[[], Any], timeout: float = 20.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.02)


def served(objects: list[dict[str, Any]], **kwargs: Any) -> ApiServer:
    """A started double serving `objects` (NodePools, which no server serves, left out)."""
    server = serve_draplan_kinds(ApiServer(**kwargs))
    server.apply(("put", o) for o in objects if o["kind"] != "NodePool")
    return server.start()


def model_of(server: ApiServer, kubeconfig: str, **options: Any) -> LiveClusterModel:
    options = {"backoff": FAST, "seed": 7, "page_size": 50, **options}
    opts = WatchOptions(**options)
    return LiveClusterModel(resolve_config(server.kubeconfig(kubeconfig)), options=opts)


def caught_up(model: LiveClusterModel, server: ApiServer) -> bool:
    """Every served kind has seen the server's newest resourceVersion (bookmarks bring idle
    kinds there); a kind not served has none."""
    want = str(server.rv)
    return all(rv in (want, "") for rv in model.resource_versions().values())


def fresh_load(server: ApiServer, kubeconfig: str) -> ClusterState:
    """What a one-shot draplan run reads from the server now."""
    read = read_cluster(LiveOptions(kubeconfig=kubeconfig, progress=False), notify=None)
    return ClusterState.from_objects(read.objects)


DRIVER = "gpu.example.com"


def gpu_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
    }


def gpu_node(name: str, gpus: int, zone: str = "a") -> list[dict[str, Any]]:
    """A Node and its slice of `gpus` GPUs (NUMA halves, two per PCIe root)."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
        },
        "status": {"allocatable": {"cpu": "96", "memory": "768Gi", "pods": "110"}},
    }
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {
                "model": {"string": "H100"},
                "numa": {"int": i * 2 // gpus},
                "resource.kubernetes.io/pcieRoot": {"string": f"pci{i // 2:04x}:00"},
            },
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for i in range(gpus)
    ]
    rs = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-gpu"},
        "spec": {
            "driver": DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }
    return [node, rs]


def claim_for(name: str, node: str | None, device: str | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "work", "uid": f"uid-c-{name}"},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}
        },
    }
    if node is not None and device is not None:
        doc["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": DRIVER, "pool": node, "device": device}
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
            "reservedFor": [{"resource": "pods", "name": name, "uid": f"uid-p-{name}"}],
        }
    return doc


def pod_for(name: str, node: str | None, phase: str = "Running") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "resources": {
                    "requests": {"cpu": "4", "memory": "16Gi"},
                    "claims": [{"name": "gpu"}],
                },
            }
        ],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "work",
            "uid": f"uid-p-{name}",
            "labels": {"app": "churn"},
            "creationTimestamp": "2026-12-01T10:00:00Z",
        },
        "spec": spec,
        "status": {"phase": phase if node is not None else "Pending"},
    }


class Churn:
    """A GPU cluster and the pod and claim churn of its jobs: jobs start (a claim allocated on
    a free GPU, then the bound pod), finish (pod Succeeded, which leaves the pods' watch, then
    both deleted), wait pending, get relabelled; now and then a node is relabelled or a slice
    republished with a new generation."""

    def __init__(self, rng: Any, nodes: int, gpus: int, fill: float = 0.5) -> None:
        self.rng = rng
        self.nodes = [f"node-{n:05d}" for n in range(nodes)]
        self.gpus = gpus
        self.free = {(n, f"gpu-{i}") for n in self.nodes for i in range(gpus)}
        self.running: dict[str, tuple[str, str]] = {}
        self._names: list[str] = []  # running's keys, for an O(1) random pick
        self.pending: list[str] = []
        self.generation = {n: 1 for n in self.nodes}
        self.serial = 0
        self.initial: list[dict[str, Any]] = [gpu_class()]
        for n, name in enumerate(self.nodes):
            self.initial += gpu_node(name, gpus, zone="ab"[n % 2])
        for _ in range(int(nodes * gpus * fill)):
            self.initial += self._start()

    def _name(self) -> str:
        self.serial += 1
        return f"job-{self.serial:07d}"

    def _start(self) -> list[dict[str, Any]]:
        node, device = self.rng.choice(sorted(self.free)) if len(self.free) < 64 else self._any()
        self.free.discard((node, device))
        name = self._name()
        self.running[name] = (node, device)
        self._names.append(name)
        return [claim_for(name, node, device), pod_for(name, node)]

    def _any(self) -> tuple[str, str]:
        while True:
            pick = (self.rng.choice(self.nodes), f"gpu-{self.rng.randrange(self.gpus)}")
            if pick in self.free:
                return pick

    def step(self) -> list[tuple[str, dict[str, Any]]]:
        """The changes of one thing happening in the cluster."""
        roll = self.rng.random()
        if roll < 0.35 and self.running:
            i = self.rng.randrange(len(self._names))
            self._names[i], self._names[-1] = self._names[-1], self._names[i]
            name = self._names.pop()
            node, device = self.running.pop(name)
            self.free.add((node, device))
            return [
                ("put", pod_for(name, node, phase="Succeeded")),
                ("delete", pod_for(name, node)),
                ("delete", claim_for(name, None, None)),
            ]
        if roll < 0.7 and self.free:
            return [("put", o) for o in self._start()]
        if roll < 0.8:
            if self.pending and self.rng.random() < 0.5:
                name = self.pending.pop(self.rng.randrange(len(self.pending)))
                return [("delete", pod_for(name, None)), ("delete", claim_for(name, None, None))]
            name = self._name()
            self.pending.append(name)
            return [("put", claim_for(name, None, None)), ("put", pod_for(name, None))]
        if roll < 0.95 and self.running:
            name = self._names[self.rng.randrange(len(self._names))]
            pod = pod_for(name, self.running[name][0])
            pod["metadata"]["labels"]["step"] = str(self.serial)
            self.serial += 1
            return [("put", pod)]
        node = self.rng.choice(self.nodes)
        if self.rng.random() < 0.5:
            return [("put", gpu_node(node, self.gpus, zone=self.rng.choice("abc"))[0])]
        self.generation[node] += 1
        rs = gpu_node(node, self.gpus)[1]
        rs["spec"]["pool"]["generation"] = self.generation[node]
        return [("put", rs)]
