"""How `why`, `schedule`, `metrics` and `scale` grow with the cluster (issue 29, target 5):
the production-shaped dump of `bench_scale` (p5.48xlarge nodes, 8 H100 each, five pods per
node, a tenth of the nodes' count pending) at 1k, 2k, 5k, 10k and 20k nodes, each command in
a process of its own: wall and CPU seconds and peak RSS, and per command the exponent k of
CPU seconds ~ n^k fitted by least squares on the logarithms (n log n fits as k ~ 1.1 here).

Usage: bench_growth.py [--sizes 1000,2000,...] [--keep DIR] [--only CMD ...] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_scale import run_command, write_dump

COMMANDS = ("why", "schedule", "metrics", "scale")
SIZES = (1_000, 2_000, 5_000, 10_000, 20_000)


def exponent(points: list[tuple[int, float]]) -> float | None:
    """The least-squares slope of log(seconds) on log(nodes)."""
    pts = [(math.log(n), math.log(s)) for n, s in points if s > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return round(sum((x - mx) * (y - my) for x, y in pts) / den, 2) if den else None


def markdown(results: dict[str, Any]) -> str:
    sizes = results["sizes"]
    head = "| command | " + " | ".join(f"{n // 1000}k nodes" for n in sizes) + " | exponent |"
    rows = [head, "|---" * (len(sizes) + 2) + "|"]
    for cmd in results["commands"]:
        cells = []
        for n in sizes:
            f = results["runs"].get(f"{cmd}@{n}")
            cells.append(f"{f['cpuSeconds']} s, {f['peakRSSMiB']} MiB" if f else "–")
        rows.append(f"| `{cmd}` | " + " | ".join(cells) + f" | {results['exponents'][cmd]} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--keep", metavar="DIR", help="Write the dumps here and keep them.")
    parser.add_argument("--only", action="append", help="Run only these commands.")
    parser.add_argument("--markdown", action="store_true", help="Print the README's table too.")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    commands = [c for c in COMMANDS if not args.only or c in args.only]
    results: dict[str, Any] = {
        "loadAverage": os.getloadavg()[0],
        "sizes": sizes,
        "commands": commands,
        "runs": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.keep or tmp)
        where.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            path = where / f"scale-{n}.json"
            if not path.exists():
                write_dump(path, n, n // 10, 0.0)
            for cmd in commands:
                print(f"  {cmd} on {n} nodes ...", file=sys.stderr, flush=True)
                results["runs"][f"{cmd}@{n}"] = run_command([cmd, "-f", str(path), "-o", "json"])
    results["exponents"] = {
        cmd: exponent([(n, results["runs"][f"{cmd}@{n}"]["cpuSeconds"]) for n in sizes])
        for cmd in commands
    }
    print(json.dumps(results, indent=2))
    if args.markdown:
        print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
