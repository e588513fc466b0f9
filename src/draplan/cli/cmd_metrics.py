"""`draplan metrics`: device allocation, counter and shared-capacity use, and stranded capacity
(with its cost) per cluster, device class, NodePool, resource pool and node."""

from __future__ import annotations

from typing import Any

import click

from draplan.audit.metrics import metrics
from draplan.cli.common import filename_option, load_state, output_option
from draplan.cli.output import emit_document, emit_table

HEADERS = ["NAME", "DEVICES", "ALLOC %", "COUNTERS %", "SHARED %", "STRANDED", "STRANDED $/H"]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _amount(value: float, unit: str, named: bool = True) -> str:
    """`value` of a capacity (bytes shown binary-SI, as Kubernetes prints memory)."""
    text = f"{value:g}"
    if unit != "devices":
        for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
            if value >= size:
                text = f"{value / size:.3g}{suffix}"
                break
    return f"{text} {unit}" if named else text


def _stranded(doc: dict[str, Any]) -> tuple[str, str]:
    parts, costs = [], []
    for cls, s in doc["stranded"].items():
        parts.append(
            f"{cls}: {_amount(s['stranded'], s['unit'], named=False)} of "
            f"{_amount(s['free'], s['unit'])} free"
        )
        if s["costPerHour"] is not None:
            costs.append(s["costPerHour"])
    return "; ".join(parts) or "-", f"{sum(costs):.2f}" if costs else "-"


def _row(name: str, doc: dict[str, Any]) -> list[Any]:
    shared = [v["percent"] for v in doc["sharedCapacity"].values() if v["percent"] is not None]
    stranded, cost = _stranded(doc)
    return [
        name,
        doc["devices"],
        _pct(doc["allocationPercent"]),
        _pct(doc["counterUtilizationPercent"]),
        _pct(max(shared)) if shared else "-",
        stranded,
        cost,
    ]


def _costliest(scope: dict[str, Any], top: int) -> list[tuple[str, dict[str, Any]]]:
    """Most stranded cost first, then most stranded capacity (as a share of free), then name."""

    def key(item: tuple[str, dict[str, Any]]) -> tuple[float, float, str]:
        strands = item[1]["stranded"].values()
        cost = sum(s["costPerHour"] or 0.0 for s in strands)
        share = sum(s["stranded"] / s["free"] for s in strands if s["free"])
        return (-cost, -share, item[0])

    ranked = sorted(scope.items(), key=key)
    return ranked[:top] if top > 0 else ranked


@click.command("metrics")
@filename_option()
@click.option(
    "--top",
    type=int,
    default=10,
    show_default=True,
    help="Table: how many resource pools and nodes to list, most stranded first (0: all).",
)
@output_option
def metrics_cmd(filenames: tuple[str, ...], top: int, output: str) -> None:
    """Where device capacity goes: allocated, partitioned, shared, and stranded."""
    doc = metrics(load_state(filenames)).to_dict()
    if emit_document(doc, output):
        return
    emit_table("Cluster", HEADERS, [_row("cluster", doc["cluster"])])
    for title, key in (("Device classes", "deviceClasses"), ("NodePools", "nodePools")):
        if doc[key]:
            emit_table(title, HEADERS, [_row(n, d) for n, d in doc[key].items()])
    for title, key in (("Resource pools", "resourcePools"), ("Nodes", "nodes")):
        rows = [_row(n, d) for n, d in _costliest(doc[key], top)]
        if rows:
            shown = f"{len(rows)} of {len(doc[key])}, most stranded first"
            emit_table(f"{title} ({shown})", HEADERS, rows)


COMMANDS = [metrics_cmd]
