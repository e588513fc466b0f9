"""The auditor: `why` for 1,000 pending pods on a 5,000-node GPU cluster (target: <= 10 s), and
`metrics` on the same cluster.

The cluster: 5,000 nodes of 8 GPUs in two NUMA groups of 4 (the scheduler benchmark's nodes),
filled in five patterns (full; 1 free; 2 free split over the NUMA groups; 2 + 2 free; 2 + 4
free). The pending pods, by name in round robin: 8 whole GPUs (no node has 8 free:
Fragmentation), 6 on one NUMA node (more than a group holds: TopologyMismatch), 4 on one NUMA
node and 1 GPU (they fit: Schedulable), 4 GPUs for zone b whose nodes are full while zone a
has room (NodeConstraints), a gang of 16 x 8 GPUs (Fragmentation) and a model no node has
(NoMatchingDevice).

Usage: python benchmarks/bench_audit.py [nodes] [pods]
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections import Counter
from typing import Any

from clusters import gpu_node_objects
from draplan.api.codec import decode
from draplan.audit.metrics import metrics
from draplan.audit.why import why
from draplan.cluster.state import ClusterState

DRIVER = "gpu.example.com"
# GPUs held on a node, by node index modulo 5.
HELD = ([0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 4, 5, 6], [0, 1, 4, 5], [0, 1])
GANG = 16


def _running(node: str, devices: list[int], name: str) -> list[dict[str, Any]]:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpus", "exactly": {"deviceClassName": DRIVER, "count": len(devices)}}
                ]
            }
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpus", "driver": DRIVER, "pool": node, "device": f"gpu-{d}"}
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
            "reservedFor": [{"resource": "pods", "name": name, "uid": f"uid-{name}"}],
        },
    }
    pod = _pod(name, None)
    pod["spec"]["nodeName"] = node
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name}]
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "8"
    pod["status"] = {"phase": "Running"}
    return [claim, pod]


def _template(name: str, count: int, numa: bool, selector: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": DRIVER, "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    devices: dict[str, Any] = {"requests": [{"name": "gpus", "exactly": exactly}]}
    if numa:
        devices["constraints"] = [{"matchAttribute": f"{DRIVER}/numa"}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": devices}},
    }


def _pod(name: str, template: str | None, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "resources": {"requests": {"cpu": "1"}}}
    body: dict[str, Any] = {"containers": [container], **spec}
    if template:
        container["resources"]["claims"] = [{"name": "gpu"}]
        body["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": body,
    }


def cluster(nodes: int = 5000, pods: int = 1000) -> list[dict[str, Any]]:
    objs = gpu_node_objects(nodes, gpus=8, numa_groups=2)
    for obj in objs:
        if obj["kind"] == "Node":
            n = int(obj["metadata"]["name"].split("-")[1])
            obj["metadata"]["labels"]["zone"] = "b" if n % 5 == 0 else "a"
    for n in range(nodes):
        objs += _running(f"node-{n:05d}", HELD[n % 5], f"run-{n:05d}")
    b200 = f"device.attributes['{DRIVER}'].model == 'b200'"
    objs += [
        _template("g8", 8, False),
        _template("g6numa", 6, True),
        _template("g4numa", 4, True),
        _template("g1", 1, False),
        _template("b200", 1, False, b200),
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {"minMember": GANG},
        },
    ]
    kinds = ("g8", "g6numa", "g4numa", "g1")
    for i in range(pods - GANG):
        name = f"pending-{i:05d}"
        if i % 20 == 19:
            objs.append(_pod(name, "g4numa", nodeSelector={"zone": "b"}))
        elif i % 100 == 98:
            objs.append(_pod(name, "b200"))
        else:
            objs.append(_pod(name, kinds[i % 4]))
    for i in range(GANG):
        gang = _pod(f"train-{i:02d}", "g8")
        gang["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "train"}
        objs.append(gang)
    return objs


def run(nodes: int = 5000, pods: int = 1000) -> dict[str, Any]:
    start = time.perf_counter()
    state = ClusterState.from_objects(decode(o) for o in cluster(nodes, pods))
    loaded = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    diagnoses = why(state)
    audit_s, audit_cpu = time.perf_counter() - start, time.process_time() - cpu
    start, cpu = time.perf_counter(), time.process_time()
    doc = metrics(state).to_dict()
    metrics_s, metrics_cpu = time.perf_counter() - start, time.process_time() - cpu
    stranded = doc["cluster"]
    return {
        "nodes": len(state.nodes),
        "pendingPods": len(diagnoses),
        "loadSeconds": round(loaded, 2),
        "whySeconds": round(audit_s, 2),
        "whyCpuSeconds": round(audit_cpu, 2),
        "targetSeconds": 10,
        "categories": dict(sorted(Counter(d.category for d in diagnoses).items())),
        "metricsSeconds": round(metrics_s, 2),
        "metricsCpuSeconds": round(metrics_cpu, 2),
        "strandedGpus": stranded["strandedGpus"],
        "freeGpus": stranded["freeGpus"],
        "peakRSSMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    print(json.dumps({"why1000x5000": run(*args)}))
