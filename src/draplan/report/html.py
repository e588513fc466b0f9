"""The self-contained HTML report: what was run, the comparison with the questions it raises
answered beside it, then the charts (inline SVG from `charts`)."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from draplan.report.info import ReportInfo
from draplan.report.table import headers, pending_rows, rows

if TYPE_CHECKING:
    from draplan.sim import SimResult

STYLE = """
body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:1em 0}td,th{border-bottom:1px solid #ddd;padding:4px 10px;
text-align:right}td:first-child,th:first-child{text-align:left}th{background:#f4f4f4}
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto}figcaption,.note{color:#555;
font-size:0.9em}dl.info{display:grid;grid-template-columns:max-content auto;gap:2px 12px}
dl.info dt{font-weight:bold}dl.info dd{margin:0}
"""

STRANDED_NOTE = (
    "<b>Why can stranded % be higher for a policy that allocates more?</b> Stranded % divides "
    "by all provisioned GPU time, so a policy that adds fewer spare, empty nodes (DRA) has a "
    "smaller denominator: the same stranded GPU-hours are a larger share of it. Compare "
    "stranded GPU-h, not %, across policies."
)
GANG_NOTE = (
    "<b>Why is p95 pending time higher with gang-atomic placement?</b> dra+gang-atomic places "
    "a gang's pods all at once or not at all, so no GPU is held by a half-placed gang (GPU-h "
    "in partial gangs is 0). The price is in the tail: a gang waits until every member fits "
    "in one topology domain at the same moment, while without it members start as GPUs free "
    "up and the last ones follow. The slowest gangs wait longer; the cluster wastes less."
)
DEFINITIONS = (
    "Wasted nodes: added by the autoscaler, never hosted any pod that was pending when they "
    "were added. GPU-h in partial gangs: GPUs held by members of gangs that had not all "
    "started. Idle GPU-h (new nodes): unallocated GPU time on nodes the autoscaler added. "
    "Stranded GPUs: free GPUs on nodes in use that the workload's typical requests cannot use "
    "(the FGD measure, in whole GPUs: e.g. 3 free GPUs on a node when jobs ask for 4, or a "
    "partition no typical request fits); it counts GPUs, models and partitions, not topology "
    "constraints or NICs, so a GPU that only a missing NIC keeps idle is not counted; empty "
    "nodes are idle, not stranded. "
    "Cost: each node's NodePool pricePerHour (else its draplan.io/price-per-hour label) times "
    "the hours it existed."
)


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
        f"<p>The legacy, count-based autoscaler (one that counts device-plugin GPUs, as "
        "Cluster Autoscaler does without DRA; with DRA, CA simulates each claim on its "
        "templates' ResourceSlices and rejects wrongly shaped groups itself) added "
        f"{legacy['nodesAdded']} nodes, "
        f"{legacy['wastedNodes']} of which never hosted the work they were added for "
        f"({legacy['wastedNodeHours']} node-hours), and partial gangs held "
        f"{legacy['partialGangGpuHours']} GPU-hours. With <b>{escape(best_name)}</b> "
        f"{best['wastedNodes']} node(s) were wasted and the run cost "
        f"${best['cost']} instead of ${legacy['cost']} "
        f"({'saving' if saved >= 0 else 'costing'} ${abs(saved):.2f}).</p>"
    )


def _info(info: ReportInfo, results: list[SimResult]) -> str:
    hours = max((r.totals.get("simulatedHours", 0.0) for r in results), default=0.0)
    items = [
        ("inputs", ", ".join(info.inputs) or "—"),
        ("policies", ", ".join(r.policy for r in results)),
        ("simulated", f"{hours} hours"),
        ("draplan", info.version),
        ("date", info.date),
    ]
    body = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in items)
    return f"<dl class='info'>{body}</dl>"


def _figure(svg: str, caption: str = "") -> str:
    note = f"<figcaption>{caption}</figcaption>" if caption else ""
    return f"<figure>{svg}{note}</figure>"


def _stranded_share_misleads(results: list[SimResult]) -> bool:
    """Whether a policy that allocates more shows a higher stranded % than another: the case
    a reader would question."""
    pairs = [
        (r.totals.get("gpuAllocationPercent", 0.0), r.totals.get("strandedPercent", 0.0))
        for r in results
    ]
    return any(a1 > a2 and s1 > s2 for a1, s1 in pairs for a2, s2 in pairs)


def _notes(results: list[SimResult]) -> str:
    policies = {r.policy for r in results}
    notes = [DEFINITIONS]
    if _stranded_share_misleads(results):
        notes.append(STRANDED_NOTE)
    if "dra+gang-atomic" in policies and "dra" in policies:
        notes.append(GANG_NOTE)
    return "".join(f"<p class='note'>{n}</p>" for n in notes)


def html_report(name: str, results: list[SimResult], info: ReportInfo | None = None) -> str:
    # matplotlib costs a second to import: only a command that writes a report pays for it.
    from draplan.report.charts import bar_chart, heat_map, line_chart

    info = info or ReportInfo.make([])
    alloc = {r.policy: r.series["gpuAllocationPercent"] for r in results}
    pending = {r.policy: r.series["pendingPods"] for r in results}
    cost = {r.policy: r.series["costPerHour"] for r in results}
    stranded = {r.policy: r.series.get("strandedGpus", []) for r in results}
    classes = sorted({c for r in results for c in r.totals["pendingSeconds"]})
    p95 = {
        r.policy: [r.totals["pendingSeconds"].get(c, {}).get("p95", 0.0) for c in classes]
        for r in results
    }
    waste_groups = ["wasted node-h", "GPU-h in partial gangs", "idle GPU-h", "stranded GPU-h"]
    waste = {
        r.policy: [
            r.totals["wastedNodeHours"],
            r.totals["partialGangGpuHours"],
            r.totals["idleGpuHoursProvisioned"],
            r.totals.get("strandedGpuHours", 0.0),
        ]
        for r in results
    }
    figs = [
        _figure(line_chart("GPU allocation", alloc, "% of GPUs allocated", percent=True)),
        _figure(line_chart("Pending pods", pending, "pods")),
        _figure(
            line_chart("Stranded GPUs (FGD)", stranded, "GPUs"),
            "Free GPUs the workload's typical requests cannot use; see the note above.",
        ),
        _figure(line_chart("Cost rate", cost, "$ per hour")),
        _figure(
            bar_chart("Pending time p95 per workload class", classes, p95, "seconds"),
            "From a job's arrival to the moment all its pods run.",
        ),
        _figure(
            bar_chart("Total cost", ["cost"], {r.policy: [r.totals["cost"]] for r in results}, "$")
        ),
        _figure(bar_chart("Waste", waste_groups, waste, "hours")),
    ]
    for r in results:
        end = max((t for s in r.occupancy.values() for t, _ in s), default=0.0)
        end = max(end, r.totals.get("simulatedHours", 0.0) * 3600.0)
        figs.append(
            _figure(
                heat_map(f"Node × GPU occupancy — {r.policy}", r.occupancy, end),
                "Every node a row; blank where the node did not exist.",
            )
        )
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>draplan: "
        f"{escape(name)}</title><style>{STYLE}</style></head><body>"
        f"<h1>draplan simulation: {escape(name)}</h1>{_info(info, results)}{_story(results)}"
        f"{_table(headers(), rows(results))}{_notes(results)}"
        f"<h2>Pending time (seconds)</h2>"
        f"{_table(['policy', 'class', 'p50', 'p95', 'p99'], pending_rows(results))}"
        f"<h2>Over time</h2>{''.join(figs)}</body></html>"
    )
