"""The simulator at scale, with wall and CPU seconds (the machine is shared, so wall is noisy).

(a) 30 simulated days of the openb `default` trace replayed by creation and deletion times,
    with autoscaling: the trace's last 30 days (trace seconds end-30d .. end, uncompressed;
    they hold ~90 % of its pods, the first ~119 days only a handful), one NodePool per openb
    node type (0 to the node list's count of that type, 300 s provisioning delay), policy
    `dra`. The issue's target: <= 3 minutes.
(b) A sweep of 2 policies x 4 seeds of the built-in demo scenario through `draplan sweep`'s
    task function, serially and in 2 local processes, and the speed-up; beside it the
    speed-up a pure CPU loop gets from the same pool at that moment (the control).

Usage: bench_sim.py [DATA_DIR] (default ../../shared/data, holding openb/).
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from draplan.api.codec import encode
from draplan.api.draplan_v1alpha1 import OpenbReplay, Scenario, ScenarioSpec, ScenarioWorkload
from draplan.api.meta import ObjectMeta
from draplan.cli.cmd_simulate import sweep_run
from draplan.cli.demo import demo_scenario
from draplan.sim.compare import config_of
from draplan.sim.demo import demo_objects
from draplan.sim.engine import Simulation
from draplan.sim.replay import trace_end
from draplan.sim.scenario import build_input
from draplan.sources import openb

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DAY = 86400.0
DAYS = 30
SWEEP_POLICIES = ("legacy", "dra+gang-atomic")
SWEEP_SEEDS = (42, 43, 44, 45)
WORKERS = 2


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def replay_30_days(data: Path, policy: str = "dra") -> dict[str, Any]:
    openb_dir = data / "openb"
    end = trace_end(openb.read_pods(openb_dir / "openb_pod_list_default.csv"))
    spec = OpenbReplay(
        trace="default", data_dir=str(openb_dir), start_seconds=end - DAYS * DAY, end_seconds=end
    )
    scenario = Scenario(
        metadata=ObjectMeta(name="openb-default-30d"),
        spec=ScenarioSpec(policies=(policy,), workload=ScenarioWorkload(openb=spec)),
    )
    wall, cpu = time.perf_counter(), time.process_time()
    sim = build_input([(scenario, "")])
    engine = Simulation(sim.cluster, sim.jobs, config_of(sim, policy))
    result = engine.run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    totals = result.totals
    return {
        "window": f"trace seconds {end - DAYS * DAY:.0f}..{end} (the last {DAYS} days)",
        "policy": policy,
        "seconds": round(wall, 2),
        "cpuSeconds": round(cpu, 2),
        "simulatedDays": round(totals["simulatedHours"] / 24, 2),
        "podsReplayed": totals["jobs"],
        "podsStarted": totals["jobsStarted"],
        "nodesAdded": totals["nodesAdded"],
        "nodesRemoved": sum(1 for n in result.nodes if n["removed"] is not None),
        "wastedNodes": totals["wastedNodes"],
        "gpuAllocationPercent": totals["gpuAllocationPercent"],
        "strandedGpuHours": totals["strandedGpuHours"],
        "strandedPercent": totals["strandedPercent"],
        "pendingSeconds": totals["pendingSeconds"],
        # Every 10 s for 30 days would be 259,200 autoscaler passes.
        "autoscalerPasses": engine.ticks_run,
    }


def _burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def _control(tasks: int = 8, n: int = 3_000_000) -> float:
    """The speed-up the machine allows right now: the same pool on a pure CPU loop. On a
    shared box it says whether a low sweep speed-up is the sweep's or the neighbours'."""
    wall = time.perf_counter()
    for _ in range(tasks):
        _burn(n)
    serial = time.perf_counter() - wall
    wall = time.perf_counter()
    with ProcessPoolExecutor(max_workers=WORKERS) as pool:
        list(pool.map(_burn, [n] * tasks))
    return round(serial / (time.perf_counter() - wall), 2)


def sweep() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Path(tmp) / "cluster.yaml"
        cluster.write_text(yaml.safe_dump_all([encode(o) for o in demo_objects()]))
        scenario = Path(tmp) / "scenario.yaml"
        scenario.write_text(yaml.safe_dump(encode(demo_scenario())))
        filenames = (str(cluster), str(scenario))
        tasks = [(filenames, s, p) for s in SWEEP_SEEDS for p in SWEEP_POLICIES]
        wall, cpu = time.perf_counter(), time.process_time()
        serial = [sweep_run(t) for t in tasks]
        serial_wall, serial_cpu = time.perf_counter() - wall, time.process_time() - cpu
        wall, cpu = time.perf_counter(), _children_cpu()
        with ProcessPoolExecutor(max_workers=WORKERS) as pool:
            parallel = list(pool.map(sweep_run, tasks))
        par_wall, par_cpu = time.perf_counter() - wall, _children_cpu() - cpu
    assert parallel == serial, "a run in another process gave another result"
    return {
        "runs": len(tasks),
        "policies": list(SWEEP_POLICIES),
        "seeds": list(SWEEP_SEEDS),
        "serialSeconds": round(serial_wall, 2),
        "serialCpuSeconds": round(serial_cpu, 2),
        "parallelSeconds": round(par_wall, 2),
        "parallelCpuSeconds": round(par_cpu, 2),
        "workers": WORKERS,
        "speedUp": round(serial_wall / par_wall, 2),
        "controlSpeedUp": _control(),
    }


def run(data: Path = DATA) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if (data / "openb" / "openb_pod_list_default.csv").is_file():
        out["openbDefault30Days"] = replay_30_days(data)
    else:
        out["openbDefault30Days"] = {"skipped": f"no openb data under {data}"}
    out["sweep"] = sweep()
    return out


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA), indent=2))
