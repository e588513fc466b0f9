"""The CLI on a production-sized cluster (issue 19): 10,000 p5.48xlarge nodes (8 H100 each,
one ResourceSlice per node) and 50,000 pods as one JSON `kind: List`, as kubectl dumps it.

Each command runs as its own process, as a user runs it: wall seconds and that process's peak
RSS (`os.wait4`), against the issues' targets (<= 2 GiB each, `why` <= 1 GiB):

- validate: load + validate the 1,000-pending dump                   <= 5 s
- metrics:  the same dump                                            <= 8 s
- why:      its 1,000 pending pods, cold                             <= 5 s  (issue 29)
- schedule: its 1,000 pending pods                                   <= 10 s
- schedule-unschedulable: a dump with 3,000 pending, ~55 % of them
  of a shape no node hosts now (4 GPUs on one PCIe root, 8 GPUs)      <= 20 s
- why-unschedulable: `why` on that dump's 3,000 pending               <= 16 s (issue 29)
- schedule-deployments: the main dump with its pods Deployments'
  (ReplicaSets and Services in the dump): PodTopologySpread's
  default constraints on every pod                                   <= 10 s

Pending counts scale with `--nodes` (a tenth, three tenths of the nodes); the targets are for
the full size. On a shared machine wall time is noisy: CPU seconds are given beside it, and
`cpuMet` says whether they are within the target.

Usage: bench_scale.py [--nodes N] [--keep DIR] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from clusters import production_cluster

GIB = 1 << 30
# (name, dump, command, target seconds at 10,000 nodes, target peak RSS)
RUNS = (
    ("validate", "main", ("validate",), 5.0, 2 * GIB),
    ("metrics", "main", ("metrics",), 8.0, 2 * GIB),
    ("why", "main", ("why",), 5.0, GIB),
    ("schedule", "main", ("schedule",), 10.0, 2 * GIB),
    ("schedule-unschedulable", "unschedulable", ("schedule",), 20.0, 2 * GIB),
    ("why-unschedulable", "unschedulable", ("why",), 16.0, GIB),
    # The main dump's pods as Deployments': PodTopologySpread's default constraints everywhere.
    ("schedule-deployments", "deployments", ("schedule",), 10.0, 2 * GIB),
)
NEVER = 0.55


def write_dump(
    path: Path, nodes: int, pending: int, never: float, deployments: bool = False
) -> None:
    objs = production_cluster(nodes, 5 * nodes, pending, never, deployments=deployments)
    with open(path, "w") as fh:
        json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, fh, separators=(",", ":"))


# As installed: with compiled modules cached (a shell may have turned the cache off).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
MAIN = "from draplan.cli.main import main; main()"


def run_command(args: list[str]) -> dict[str, Any]:
    """Wall and CPU seconds and peak RSS of one draplan process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", MAIN, *args], stdout=out, stderr=err, env=ENV
        )
        # wait4 gives this child's own rusage (RUSAGE_CHILDREN would be the max over all).
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        lines = sum(1 for _ in out)
        last = err.read().decode(errors="replace").strip().splitlines()[-1:]
    return {
        "exit": proc.returncode,
        "seconds": round(wall, 2),
        "cpuSeconds": round(usage.ru_utime + usage.ru_stime, 2),
        "peakRSSMiB": round(usage.ru_maxrss / 1024),
        "outputLines": lines,
        "stderr": last if proc.returncode else [],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--keep", metavar="DIR", help="Write the dumps here and keep them.")
    parser.add_argument("--only", action="append", help="Run only these (repeatable).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.keep or tmp)
        where.mkdir(parents=True, exist_ok=True)
        dumps = {
            "main": (where / f"scale-{args.nodes}.json", args.nodes // 10, 0.0, False),
            "unschedulable": (
                where / f"scale-{args.nodes}-unsched.json",
                3 * args.nodes // 10,
                NEVER,
                False,
            ),
            "deployments": (
                where / f"scale-{args.nodes}-deployments.json",
                args.nodes // 10,
                0.0,
                True,
            ),
        }
        for name, (path, pending, never, deployments) in dumps.items():
            wanted = not args.only or any(run[1] == name for run in RUNS if run[0] in args.only)
            if wanted and not path.exists():
                write_dump(path, args.nodes, pending, never, deployments)
        results: dict[str, Any] = {
            "loadAverage": os.getloadavg()[0],
            "nodes": args.nodes,
            "pods": 5 * args.nodes,
            "dumpMB": round(dumps["main"][0].stat().st_size / 1e6, 1)
            if dumps["main"][0].exists()
            else None,
        }
        subprocess.run(
            [sys.executable, "-c", MAIN, "--help"], env=ENV, check=True, capture_output=True
        )
        for name, dump, command, target, memory in RUNS:
            if args.only and name not in args.only:
                continue
            print(f"  {name} ...", file=sys.stderr, flush=True)
            figures = run_command([*command, "-f", str(dumps[dump][0]), "-o", "json"])
            figures["targetSeconds"] = target
            figures["targetRSSMiB"] = memory >> 20
            fits = figures["exit"] == 0 and figures["peakRSSMiB"] * (1 << 20) <= memory
            figures["met"] = fits and figures["seconds"] <= target
            figures["cpuMet"] = fits and figures["cpuSeconds"] <= target
            results[name] = figures
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
