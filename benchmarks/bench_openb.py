"""One run of the FGD paper's protocol on the openb `default` trace (1,213 nodes, ~10.8k pods
after inflation to 1.3x the GPUs) through the full scheduler and allocator, with FGD and with
draplan's own policy: wall and CPU seconds per run, placements, unallocated GPU % at arrived
100 %. The issue's target: <= 10 s per run. Also `gpuspec25`, as many pods but three times the
pod shapes (gpu_spec), the slowest trace of the paper's 17.

Usage: bench_openb.py [DATA_DIR] (default ../../shared/data: openb/ and fgd-results/).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from draplan.sim import openb as bench

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
POLICIES = ("fgd", "draplan")
TRACES = ("default", "gpuspec25")


def run(data: Path = DATA, seed: int = 42) -> dict[str, Any]:
    if not (data / "openb" / "openb_node_list_gpu_node.csv").is_file():
        return {"skipped": f"no openb data under {data}"}
    return {name: run_trace(bench.Trace.load(name, data), seed) for name in TRACES}


def run_trace(trace: bench.Trace, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {"seed": seed, "nodes": len(trace.nodes)}
    for policy in POLICIES:
        result = bench.run(trace, policy, seed)
        out[policy] = {
            "pods": result.pods,
            "placed": result.placed,
            "seconds": result.seconds,
            "cpuSeconds": result.cpu_seconds,
            "unallocatedGpuPctAt100": result.unallocated(100),
            "unallocatedGpuPctAt130": result.unallocated(130),
            "fragmentationPctAt100": result.frag.get(100),
        }
    return out


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA), indent=2))
