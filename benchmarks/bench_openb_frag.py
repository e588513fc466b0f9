"""Loading the openb `default` trace as DRA objects, and the FGD fragmentation measure over its
1,213 nodes: per-node evaluations per second, uncached and cached, and the FGD score pattern
(every way a pod fits on every node, each evaluated after placement).

The filled cluster is the state the allocator leaves after placing shuffled `default` pods on
random nodes up to 70 % of the GPU capacity (seed 42): fragmented, as a real run is mid-way.
Usage: bench_openb_frag.py [OPENB_DIR] (default ../../shared/data/openb).
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from draplan.allocator import allocate
from draplan.cluster.fragmentation import (
    DeviceKinds,
    FragmentationCache,
    NodeFree,
    Shape,
    Workload,
    claims_shape,
    cluster_fragmentation,
    free_state,
    node_fragmentation,
)
from draplan.cluster.state import ClusterState
from draplan.sources import openb

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "openb"
ROUNDS = 5
FILL = 0.70
SCORED_PODS = 200


def best_of(fn: Callable[[], object], rounds: int = ROUNDS) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def fill(
    state: ClusterState, cluster: openb.OpenbCluster, work: openb.OpenbWorkload, cpu: list[int]
) -> int:
    """Place shuffled pods on random nodes (up to 8 tries each) until FILL of the GPUs are
    used; returns the milli-GPU used. `cpu` (free milli-cores per node) is updated."""
    rng = random.Random(42)
    capacity = sum(r.gpus for r in cluster.rows) * openb.GPU_MILLI
    order = list(range(len(work.rows)))
    rng.shuffle(order)
    used = 0
    for i in order:
        row, claim = work.rows[i], work.claims[i]
        if used + row.gpu_request_milli > FILL * capacity:
            continue
        for n in rng.sample(range(len(cluster.nodes)), 8):
            if cpu[n] < row.cpu_milli:
                continue
            if claim is not None:
                outcome = allocate(state, cluster.nodes[n], [claim])
                if not outcome.ok:
                    continue
                state.put_claim(outcome.claims[0])
            cpu[n] -= row.cpu_milli
            used += row.gpu_request_milli
            break
    return used


def free_states(state: ClusterState, cluster: openb.OpenbCluster, cpu: list[int]) -> list[NodeFree]:
    return [
        free_state(
            state,
            node,
            cpu_milli=cpu[i],
            memory=row.memory_mib << 20,
            device_class=cluster.device_class,
            capacity=openb.CAPACITY,
        )
        for i, (node, row) in enumerate(zip(cluster.nodes, cluster.rows, strict=True))
    ]


def score_pass(states: list[NodeFree], shapes: list[Shape], cache: FragmentationCache) -> int:
    """FGD's score of each pod on each node, F(before) − F(after) for every way the pod fits;
    returns how many choices were scored."""
    evaluations = 0
    for shape in shapes:
        for node in states:
            if node.cpu_milli < shape.cpu_milli:
                continue
            before = cache(node)
            for _, after in cache.choices(node, shape):
                _ = before - after
                evaluations += 1
    return evaluations


def run(data: Path = DATA) -> dict[str, Any]:
    start = time.perf_counter()
    cluster = openb.load_cluster(data / openb.NODE_LIST)
    nodes_loaded = time.perf_counter()
    work = openb.load_workload(openb.trace_path("default", data))
    pods_loaded = time.perf_counter()
    state = ClusterState.from_objects([*cluster.objects(), *work.objects()])
    indexed = time.perf_counter()

    kinds = DeviceKinds.of_state(state, cluster.device_class)
    shapes = [
        claims_shape(
            [claim] if claim is not None else [],
            cpu_milli=row.cpu_milli,
            device_class=openb.DEVICE_CLASS,
            capacity=openb.CAPACITY,
            kinds=kinds,
        )
        for row, claim in zip(work.rows, work.claims, strict=True)
    ]
    pod_shapes = [s for s in shapes if s is not None]
    workload = Workload.typical(pod_shapes)

    cpu = [r.cpu_milli for r in cluster.rows]
    empty = free_states(state, cluster, cpu)
    empty_frag, _ = cluster_fragmentation(empty, lambda n: node_fragmentation(n, workload))
    used = fill(state, cluster, work, cpu)
    read_s = best_of(lambda: free_states(state, cluster, cpu))
    filled = free_states(state, cluster, cpu)
    n = len(filled)

    def uncached(states: list[NodeFree]) -> float:
        return n / best_of(lambda: [node_fragmentation(s, workload) for s in states])

    def cached() -> float:
        cache = FragmentationCache(workload)
        for s in filled:
            cache(s)
        return n / best_of(lambda: [cache(s) for s in filled])

    filled_frag, filled_idle = cluster_fragmentation(filled, FragmentationCache(workload))
    scored = random.Random(7).sample(pod_shapes, SCORED_PODS)
    cache = FragmentationCache(workload)
    t0 = time.perf_counter()
    evaluations = score_pass(filled, scored, cache)
    cold_s = time.perf_counter() - t0
    hit_pct = 100 * cache.hits / max(1, cache.hits + cache.misses)
    # Again with every (state, shape) known: most nodes of a run are unchanged between pods.
    warm_s = best_of(lambda: score_pass(filled, scored, cache), 3)
    gpus = sum(r.gpus for r in cluster.rows) * openb.GPU_MILLI
    return {
        "trace": "default",
        "nodes": n,
        "pods": len(work.pods),
        "loadNodesSeconds": round(nodes_loaded - start, 3),
        "loadPodsSeconds": round(pods_loaded - nodes_loaded, 3),
        "clusterStateSeconds": round(indexed - pods_loaded, 3),
        "typicalShapes": len(workload.shapes),
        "emptyFragmentationPct": round(100 * empty_frag / gpus, 3),
        "filledGpuUsedPct": round(100 * used / gpus, 2),
        "filledFragmentationPct": round(100 * filled_frag / gpus, 2),
        "filledFragmentOfIdlePct": round(100 * filled_frag / filled_idle, 2),
        "freeStateReadsPerSecond": round(n / read_s),
        "fragEvalsPerSecondEmpty": round(uncached(empty)),
        "fragEvalsPerSecondFilled": round(uncached(filled)),
        "fragEvalsPerSecondCached": round(cached()),
        "clusterPassMsUncached": round(1000 * n / uncached(filled), 2),
        "scorePass": {
            "pods": SCORED_PODS,
            "afterStatesEvaluated": evaluations,
            "coldMsPerPod": round(1000 * cold_s / SCORED_PODS, 2),
            "coldStateCacheHitPct": round(hit_pct, 1),
            "warmMsPerPod": round(1000 * warm_s / SCORED_PODS, 2),
        },
    }


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA), indent=2))
