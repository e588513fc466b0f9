"""A Markdown summary of a policy comparison."""

from __future__ import annotations

from typing import TYPE_CHECKING

from draplan.report.info import ReportInfo
from draplan.report.table import headers, pending_rows, rows

if TYPE_CHECKING:
    from draplan.sim import SimResult


def _table(head: list[str], body: list[list[object]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return "\n".join(lines)


def markdown_summary(name: str, results: list[SimResult], info: ReportInfo | None = None) -> str:
    info = info or ReportInfo.make([])
    parts = [
        f"# draplan simulation: {name}",
        "",
        f"Inputs: {', '.join(info.inputs) or '—'}; draplan {info.version}; {info.date}.",
        "",
        _table(headers(), rows(results)),
        "",
        "## Pending time (seconds) per workload class",
        "",
        _table(["policy", "class", "p50", "p95", "p99"], pending_rows(results)),
        "",
    ]
    return "\n".join(parts)
