"""`make bench`: run every benchmark in its own process (clean caches, honest peak memory)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = (
    "bench_load.py",
    "bench_cel.py",
    "bench_allocator.py",
    "bench_scheduler.py",
    "bench_autoscaler.py",
    "bench_expander.py",
    "bench_audit.py",
    "bench_serve.py",
    "bench_openb_frag.py",
    "bench_openb.py",
    "bench_sim.py",
    "bench_serve_intake.py",
    "bench_scale.py",
)


def main() -> int:
    results = {}
    for name in BENCHES:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        proc = subprocess.run(
            [sys.executable, str(HERE / name)],
            cwd=HERE,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        try:
            results[name.removesuffix(".py")] = json.loads(proc.stdout)
        except json.JSONDecodeError:
            results[name.removesuffix(".py")] = proc.stdout.strip()
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
