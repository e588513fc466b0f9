"""The comparison table of simulation results, shared by every output format."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from draplan.sim import SimResult

COLUMNS: tuple[tuple[str, str], ...] = (
    ("policy", "policy"),
    ("nodesAdded", "nodes added"),
    ("wastedNodes", "wasted nodes"),
    ("wastedNodeHours", "wasted node-h"),
    ("partialGangGpuHours", "GPU-h in partial gangs"),
    ("idleGpuHoursProvisioned", "idle GPU-h (new nodes)"),
    ("gpuAllocationPercent", "GPU allocation %"),
    ("strandedGpuHours", "stranded GPU-h"),
    ("strandedPercent", "stranded %"),
    ("cost", "cost $"),
    ("jobsStarted", "jobs started"),
)


def rows(results: list[SimResult]) -> list[list[Any]]:
    out = []
    for r in results:
        out.append([r.policy, *(r.totals.get(key, "") for key, _ in COLUMNS[1:])])
    return out


def headers() -> list[str]:
    return [label for _, label in COLUMNS]


def pending_rows(results: list[SimResult]) -> list[list[Any]]:
    out = []
    for r in results:
        for cls, q in r.totals["pendingSeconds"].items():
            out.append([r.policy, cls, q["p50"], q["p95"], q["p99"]])
    return out
