"""Scheduler throughput: the scheduler_perf DRA shape, and a GPU cluster with NUMA constraints."""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

from clusters import gpu_node_objects
from draplan.api.codec import decode
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler

DRIVER = "gpu.example.com"


def _template(name: str, count: int, match: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "devices": {
            "requests": [{"name": "gpus", "exactly": {"deviceClassName": DRIVER, "count": count}}]
        }
    }
    if match:
        spec["devices"]["constraints"] = [{"matchAttribute": match}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": spec},
    }


def _pod(i: int, template: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}", "namespace": "default", "uid": f"uid-{i}"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "gpu"}]},
                }
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
        },
    }


def _run(objs: list[dict[str, Any]]) -> dict[str, Any]:
    state = ClusterState.from_objects(decode(o) for o in objs)
    pods = len(state.pods)
    start = time.perf_counter()
    results = Scheduler().run(state)
    elapsed = time.perf_counter() - start
    scheduled = sum(1 for r in results if r.node)
    return {
        "nodes": len(state.nodes),
        "pods": pods,
        "scheduled": scheduled,
        "seconds": round(elapsed, 2),
        "podsPerSecond": round(pods / elapsed),
        "peakRSSMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def scheduler_perf(nodes: int = 500, devices: int = 10, pods: int = 5000) -> dict[str, Any]:
    """scheduler_perf SchedulingWithResourceClaimTemplate: one device per pod."""
    objs = gpu_node_objects(nodes, gpus=devices)
    objs.append(_template("one-gpu", 1, None))
    objs += [_pod(i, "one-gpu") for i in range(pods)]
    return _run(objs)


def numa_cluster(nodes: int = 5000, pods: int = 10_000) -> dict[str, Any]:
    """8 GPUs per node in two NUMA nodes of 4; pods ask 1, 2, 4 GPUs on one NUMA node, or a
    whole node (8)."""
    objs = gpu_node_objects(nodes, gpus=8, numa_groups=2)
    for count in (1, 2, 4):
        objs.append(_template(f"gpu-{count}", count, f"{DRIVER}/numa"))
    objs.append(_template("gpu-8", 8, None))
    sizes = (1, 2, 4, 8)
    objs += [_pod(i, f"gpu-{sizes[i % 4]}") for i in range(pods)]
    return _run(objs)


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    out = {}
    if which in ("all", "a"):
        out["schedulerPerf500x10"] = scheduler_perf()
    if which in ("all", "b"):
        out["numa5000x8"] = numa_cluster()
    print(json.dumps(out))
