"""The self-contained HTML report: the comparison, then pictures (inline SVG)."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from draplan.report.svg import bar_chart, heat_map, line_chart
from draplan.report.table import headers, pending_rows, rows

if TYPE_CHECKING:
    from draplan.sim import SimResult

STYLE = """
body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border-bottom:1px solid #ddd;padding:4px 10px;
text-align:right}td:first-child,th:first-child{text-align:left}th{background:#f4f4f4}
.figs svg{margin:0.5em 0;display:block}.note{color:#555;font-size:0.9em}
"""


def _table(head: list[str], body: list[list[object]]) -> str:
    h = "".join(f"<th>{escape(x)}</th>" for x in head)
    b = "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in body
    )
    return f"<table><tr>{h}</tr>{b}</table>"


def _story(results: list[SimResult]) -> str:
    by = {r.policy: r.totals for r in results}
    if "legacy" not in by or len(by) < 2:
        return ""
    legacy = by["legacy"]
    best_name = min((p for p in by if p != "legacy"), key=lambda p: by[p]["cost"])
    best = by[best_name]
    saved = legacy["cost"] - best["cost"]
    return (
        f"<p>The legacy, count-based autoscaler added {legacy['nodesAdded']} nodes, "
        f"{legacy['wastedNodes']} of which never hosted the work they were added for "
        f"({legacy['wastedNodeHours']} node-hours), and partial gangs held "
        f"{legacy['partialGangGpuHours']} GPU-hours. With <b>{escape(best_name)}</b> "
        f"{best['wastedNodes']} node(s) were wasted and the run cost "
        f"${best['cost']} instead of ${legacy['cost']} "
        f"({'saving' if saved >= 0 else 'costing'} ${abs(saved):.2f}).</p>"
    )


def html_report(name: str, results: list[SimResult]) -> str:
    alloc = {r.policy: r.series["gpuAllocationPercent"] for r in results}
    pending = {r.policy: r.series["pendingPods"] for r in results}
    cost = {r.policy: r.series["costPerHour"] for r in results}
    stranded = {r.policy: r.series.get("strandedGpus", []) for r in results}
    classes = sorted({c for r in results for c in r.totals["pendingSeconds"]})
    p95 = {
        r.policy: [r.totals["pendingSeconds"].get(c, {}).get("p95", 0.0) for c in classes]
        for r in results
    }
    totals = bar_chart(
        "Total cost ($)", ["cost"], {r.policy: [r.totals["cost"]] for r in results}, "$"
    )
    waste = bar_chart(
        "Waste",
        ["wasted node-h", "GPU-h in partial gangs", "idle GPU-h", "stranded GPU-h"],
        {
            r.policy: [
                r.totals["wastedNodeHours"],
                r.totals["partialGangGpuHours"],
                r.totals["idleGpuHoursProvisioned"],
                r.totals.get("strandedGpuHours", 0.0),
            ]
            for r in results
        },
        "hours",
    )
    figs = [
        line_chart("GPU allocation over time", alloc, "hours", "% of GPUs allocated", 3600.0),
        line_chart("Pending pods over time", pending, "hours", "pods", 3600.0),
        line_chart("Stranded GPUs over time (FGD)", stranded, "hours", "GPUs", 3600.0),
        line_chart("Cost rate over time", cost, "hours", "$ per hour", 3600.0),
        bar_chart("Pending time p95 per workload class", classes, p95, "seconds"),
        totals,
        waste,
    ]
    for r in results:
        end = max((t for s in r.occupancy.values() for t, _ in s), default=0.0)
        figs.append(heat_map(f"Node × GPU occupancy — {r.policy}", r.occupancy, end))
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>draplan: "
        f"{escape(name)}</title><style>{STYLE}</style></head><body>"
        f"<h1>draplan simulation: {escape(name)}</h1>{_story(results)}"
        f"{_table(headers(), rows(results))}"
        "<p class='note'>Wasted nodes: added by the autoscaler, never hosted any pod that "
        "was pending when they were added. Partial gangs: GPUs held by members of gangs "
        "that had not all started. Stranded: free GPU capacity the workload's typical requests "
        "could not use (the FGD fragmentation measure), in GPUs; % of provisioned GPU time.</p>"
        f"<h2>Pending time (seconds)</h2>"
        f"{_table(['policy', 'class', 'p50', 'p95', 'p99'], pending_rows(results))}"
        f"<div class='figs'>{''.join(figs)}</div></body></html>"
    )
