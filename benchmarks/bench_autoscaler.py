"""Autoscaler benchmarks, printed as JSON.

(i)  scaleUp2000x30: a DRA-aware scale-up plan for 2,000 pending pods over 30 NodePools (three
     GPU models, 1/2/4/8 GPUs a node, varied cpu and prices). Target: <= 2 s.
(ii) costVsOptimum: the plan's cost per hour against the exact optimum of a small integer
     program (OR-Tools CP-SAT, a dev-only dependency) on generated instances of
     whole-GPU pods without topology, where the IP is exact. Target: worst ratio <= 1.02.
     Skipped with a message when ortools is not installed.

Usage: python benchmarks/bench_autoscaler.py [all|scale|cost] [--pods N] [--pools N]
       [--budget SECONDS] [--instances N] [--seed S]
`all` runs (i) in child processes: 50, 100 and 200 pods to show the growth, then 2,000 pods
within --budget seconds (a plan that overruns is killed and reported as timed out, with an
extrapolation from the smaller runs).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import random
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from draplan.api.codec import decode
from draplan.autoscaler import Autoscaler
from draplan.cluster.state import ClusterState

DRIVER = "gpu.example.com"
MODELS = ("a100", "h100", "l4")


# --- manifests -------------------------------------------------------------------------------


def _class(model: str | None) -> dict[str, Any]:
    expr = f"device.driver == '{DRIVER}'"
    if model:
        expr += f" && device.attributes['{DRIVER}'].model == '{model}'"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": f"{model}.{DRIVER}" if model else DRIVER},
        "spec": {"selectors": [{"cel": {"expression": expr}}]},
    }


def _pool(name: str, price: float, cpu: int, gpus: int, model: str, max_nodes: int) -> Any:
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": model}, "index": {"int": i}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for i in range(gpus)
    ]
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "maxNodes": max_nodes,
            "pricePerHour": f"{price:.2f}",
            "template": {
                "metadata": {"labels": {"node.kubernetes.io/instance-type": name}},
                "status": {"allocatable": {"cpu": str(cpu), "memory": "1Ti", "pods": "110"}},
            },
            "resourceSlices": [
                {
                    "driver": DRIVER,
                    "nodeName": "$NODE_NAME",
                    "pool": {"name": "$NODE_NAME", "generation": 1},
                    "devices": devices,
                }
            ],
        },
    }


def _template(name: str, cls: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "gpus", "exactly": {"deviceClassName": cls, "count": count}}
                    ]
                }
            }
        },
    }


def _pod(name: str, cpu: int, tmpl: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "resources": {"requests": {"cpu": str(cpu)}, "claims": [{"name": "gpu"}]},
                }
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": tmpl}],
        },
    }


def _state(objs: list[dict[str, Any]]) -> ClusterState:
    return ClusterState.from_objects(decode(o) for o in objs)


# --- (i) 2,000 pods over 30 pools ----------------------------------------------------------------


def scale_up_objects(pods: int = 2000, pools: int = 30, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [_class(m) for m in MODELS]
    shapes = (1, 2, 4, 8)
    base = {"a100": 3.0, "h100": 5.0, "l4": 0.8}
    for i in range(pools):
        model = MODELS[i % len(MODELS)]
        gpus = shapes[(i // len(MODELS)) % len(shapes)]
        cpu = rng.choice((16, 32, 48, 64, 96, 192))
        price = base[model] * gpus * rng.uniform(0.85, 1.25) + cpu * 0.02
        objs.append(_pool(f"{model}-{gpus}g-{i:02d}", price, cpu, gpus, model, 500))
    for model in MODELS:
        for count in shapes:
            objs.append(_template(f"{model}-{count}", f"{model}.{DRIVER}", count))
    for i in range(pods):
        model = rng.choice(MODELS)
        count = rng.choice(shapes)
        objs.append(_pod(f"p-{i:05d}", rng.choice((1, 2, 4, 8)), f"{model}-{count}"))
    return objs


def bench_scale_up(pods: int = 2000, pools: int = 30) -> dict[str, Any]:
    objs = scale_up_objects(pods, pools)
    state = _state(objs)
    start, cpu = time.perf_counter(), time.process_time()
    plan = Autoscaler().plan(state)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    summary = plan.to_dict()["summary"]
    return {
        "pods": pods,
        "pools": pools,
        "seconds": round(elapsed, 3),
        # CPU time too: wall time is noisy on a shared machine.
        "cpuSeconds": round(cpu, 3),
        "targetSeconds": 2.0,
        "withinTarget": elapsed <= 2.0,
        "nodesAdded": summary["nodesAdded"],
        "poolsUsed": len({o.pool.metadata.name for o in plan.scale_up}),
        "costPerHour": summary["costPerHour"],
        "podsPlaced": summary["podsPlaced"],
        "podsStillPending": summary["podsStillPending"],
        "peakRSSMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


# --- (ii) cost against the CP-SAT optimum ------------------------------------------------------


@dataclass(frozen=True)
class PoolShape:
    name: str
    cpu: int
    gpus: int
    cents: int  # price per hour in cents (integer for the IP)
    max_nodes: int


@dataclass(frozen=True)
class PodShape:
    cpu: int
    gpus: int
    count: int


@dataclass(frozen=True)
class Instance:
    pools: tuple[PoolShape, ...]
    shapes: tuple[PodShape, ...]

    def fits(self, pool: PoolShape, shape: PodShape) -> bool:
        return shape.cpu <= pool.cpu and shape.gpus <= pool.gpus

    def objects(self) -> list[dict[str, Any]]:
        objs: list[dict[str, Any]] = [_class(None)]
        for p in self.pools:
            objs.append(_pool(p.name, p.cents / 100, p.cpu, p.gpus, "any", p.max_nodes))
        for count in sorted({s.gpus for s in self.shapes}):
            objs.append(_template(f"gpu-{count}", DRIVER, count))
        n = 0
        for s in self.shapes:
            for _ in range(s.count):
                objs.append(_pod(f"p-{n:03d}", s.cpu, f"gpu-{s.gpus}"))
                n += 1
        return objs


def generate(rng: random.Random) -> Instance:
    """2-4 pools (cpu 8-64, 1-8 GPUs), 2-3 pod shapes of 1-12 pods each; every shape fits
    some pool and the pool limits never bind, so the optimum is a pure packing question."""
    while True:
        pools = []
        for i in range(rng.randint(2, 4)):
            gpus = rng.choice((1, 2, 4, 8))
            cpu = rng.choice((8, 16, 32, 64))
            cents = round(gpus * rng.uniform(150, 400) + cpu * rng.uniform(2, 8))
            pools.append(PoolShape(f"pool-{i}", cpu, gpus, cents, 40))
        shapes = []
        for _ in range(rng.randint(2, 3)):
            shapes.append(
                PodShape(rng.choice((1, 2, 4, 8, 12)), rng.choice((1, 1, 2, 4)), rng.randint(1, 12))
            )
        inst = Instance(tuple(pools), tuple(shapes))
        if all(any(inst.fits(p, s) for p in inst.pools) for s in inst.shapes):
            return inst


def optimum(inst: Instance, time_limit: float = 20.0) -> tuple[int, bool, float]:
    """The cheapest set of nodes (cents per hour) that holds every pod: x[s,p,j] pods of shape
    s on node j of pool p, y[p,j] node j of pool p exists."""
    from ortools.sat.python import cp_model  # type: ignore[import-not-found, unused-ignore]

    model = cp_model.CpModel()
    total = sum(s.count for s in inst.shapes)
    y: dict[tuple[int, int], Any] = {}
    x: dict[tuple[int, int, int], Any] = {}
    cost = []
    for pi, pool in enumerate(inst.pools):
        usable = [s for s in inst.shapes if inst.fits(pool, s)]
        if not usable:
            continue
        bound = min(pool.max_nodes, sum(s.count for s in usable), total)
        for j in range(bound):
            y[pi, j] = model.new_bool_var(f"y{pi}_{j}")
            cost.append(pool.cents * y[pi, j])
            if j:
                model.add(y[pi, j] <= y[pi, j - 1])  # symmetry: use nodes in order
            cpu_terms, gpu_terms = [], []
            for si, shape in enumerate(inst.shapes):
                if not inst.fits(pool, shape):
                    continue
                cap = min(shape.count, pool.cpu // shape.cpu, pool.gpus // shape.gpus)
                x[si, pi, j] = model.new_int_var(0, cap, f"x{si}_{pi}_{j}")
                cpu_terms.append(shape.cpu * x[si, pi, j])
                gpu_terms.append(shape.gpus * x[si, pi, j])
            model.add(sum(cpu_terms) <= pool.cpu * y[pi, j])
            model.add(sum(gpu_terms) <= pool.gpus * y[pi, j])
    for si, shape in enumerate(inst.shapes):
        model.add(sum(v for (s, _, _), v in x.items() if s == si) == shape.count)
    model.minimize(sum(cost))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 4
    start = time.perf_counter()
    status = solver.solve(model)
    elapsed = time.perf_counter() - start
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise RuntimeError(f"CP-SAT found no solution ({solver.status_name(status)})")
    return round(solver.objective_value), status == cp_model.OPTIMAL, elapsed


def bench_cost(instances: int = 24, seed: int = 7) -> dict[str, Any]:
    if importlib.util.find_spec("ortools") is None:
        return {
            "skipped": "OR-Tools is not installed: `.venv/bin/pip install ortools` (a dev-only "
            "tool) to compare plan cost with the CP-SAT optimum"
        }
    rng = random.Random(seed)
    rows = []
    plan_seconds = plan_cpu = 0.0
    for k in range(instances):
        inst = generate(rng)
        state = _state(inst.objects())
        start, cpu = time.perf_counter(), time.process_time()
        doc = Autoscaler().plan(state).to_dict()
        plan_seconds += time.perf_counter() - start
        plan_cpu += time.process_time() - cpu
        best, proven, ip_seconds = optimum(inst)
        cents = round(doc["summary"]["costPerHour"] * 100)
        pending = doc["summary"]["podsStillPending"]
        rows.append(
            {
                "instance": k,
                "pools": [(p.cpu, p.gpus, p.cents) for p in inst.pools],
                "pods": [(s.cpu, s.gpus, s.count) for s in inst.shapes],
                "planCents": cents,
                "optimumCents": best,
                "optimal": proven,
                "ratio": round(cents / best, 4) if best else None,
                "pending": pending,
                "plan": [(u["pool"], u["add"]) for u in doc["scaleUp"]],
                "ipSeconds": round(ip_seconds, 3),
            }
        )
    complete = [r for r in rows if r["pending"] == 0 and r["ratio"] is not None]
    ratios = [float(r["ratio"]) for r in complete]
    worst = max(complete, key=lambda r: float(r["ratio"])) if complete else None
    return {
        "instances": instances,
        "provenOptimal": sum(1 for r in rows if r["optimal"]),
        "plansWithPendingPods": sum(1 for r in rows if r["pending"]),
        "worstRatio": max(ratios) if ratios else None,
        "meanRatio": round(sum(ratios) / len(ratios), 4) if ratios else None,
        "targetRatio": 1.02,
        "withinTarget": sum(1 for x in ratios if x <= 1.02),
        "atOptimum": sum(1 for x in ratios if x <= 1.0 + 1e-9),
        "planSecondsTotal": round(plan_seconds, 2),
        "planCpuSecondsTotal": round(plan_cpu, 2),
        "worst": worst,
        "rows": rows,
    }


def scale_suite(
    pods: int = 2000,
    pools: int = 30,
    budget: float = 120.0,
    series: tuple[int, ...] = (50, 100, 200),
) -> dict[str, Any]:
    """(i) in child processes (clean caches, killable): smaller sizes first to show the growth,
    then the target size within `budget` seconds."""
    runs: list[dict[str, Any]] = []
    for n in (*series, pods):
        cmd = [sys.executable, __file__, "scale", "--pods", str(n), "--pools", str(pools)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=budget, check=True)
            runs.append(json.loads(proc.stdout)["scaleUp"])
        except subprocess.TimeoutExpired:
            runs.append({"pods": n, "pools": pools, "seconds": None, "timedOutAfter": budget})
    done = [r for r in runs if r.get("seconds")]
    out: dict[str, Any] = {"target": runs[-1], "series": runs[:-1], "targetSeconds": 2.0}
    if runs[-1].get("seconds") is None and len(done) >= 2:
        a, b = done[-2], done[-1]
        k = math.log(b["seconds"] / a["seconds"]) / math.log(b["pods"] / a["pods"])
        out["growthExponent"] = round(k, 2)
        out["extrapolatedSeconds"] = round(b["seconds"] * (pods / b["pods"]) ** k)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("which", nargs="?", default="all", choices=("all", "scale", "cost"))
    parser.add_argument("--pods", type=int, default=2000, help="scale: pending pods")
    parser.add_argument("--pools", type=int, default=30, help="scale: NodePools")
    parser.add_argument(
        "--budget", type=float, default=120.0, help="all: seconds allowed for the 2,000-pod plan"
    )
    parser.add_argument("--instances", type=int, default=24, help="cost: generated instances")
    parser.add_argument("--seed", type=int, default=7, help="cost: generator seed")
    args = parser.parse_args(argv)
    out: dict[str, Any] = {}
    if args.which == "scale":
        out["scaleUp"] = bench_scale_up(args.pods, args.pools)
    if args.which == "all":
        out["scaleUp2000x30"] = scale_suite(args.pods, args.pools, args.budget)
    if args.which in ("all", "cost"):
        out["costVsOptimum"] = bench_cost(args.instances, args.seed)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
