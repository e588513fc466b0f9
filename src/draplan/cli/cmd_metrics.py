"""`draplan metrics`: physical GPUs and their partitions, allocation, shared capacity, and
stranded GPUs (with their cost) per cluster, device class, device plugin's resource, node pool,
resource pool and node;
each resource pool's status in ResourcePoolStatusRequest's terms, beside the server's answers."""

from __future__ import annotations

from typing import Any

import click

from draplan.audit.documents import metrics_document
from draplan.cli.common import (
    filename_option,
    load_state,
    output_option,
    prices_option,
    with_derived_pools,
)
from draplan.cli.output import emit_document, emit_table

HEADERS = [
    "NAME",
    "GPUS",
    "IN USE",
    "ALLOC %",
    "PARTITIONS",
    "SHARED %",
    "FREE GPUS",
    "TAINTED GPUS",
    "STRANDED GPUS",
    "STRANDED $/H",
]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _row(name: str, doc: dict[str, Any]) -> list[Any]:
    shared = [v["percent"] for v in doc["sharedCapacity"].values() if v["percent"] is not None]
    partitions = doc["partitions"]
    stranded = f"{doc['strandedGpus']:g}"
    if doc["strandedPercent"]:
        stranded += f" ({doc['strandedPercent']:g} %)"
    cost = doc["strandedCostPerHour"]
    return [
        name,
        doc["gpus"],
        doc["gpusInUse"],
        _pct(doc["gpuAllocationPercent"]),
        f"{partitions} ({doc['partitionsAllocated']} used)" if partitions else "-",
        _pct(max(shared)) if shared else "-",
        f"{doc['freeGpus']:g}",
        f"{doc['taintedGpus']:g}",
        stranded,
        "-" if cost is None else f"{cost:.2f}",
    ]


def most_stranded(scope: dict[str, Any], top: int = 0) -> list[tuple[str, dict[str, Any]]]:
    """Most stranded GPUs first, then by name; the first `top` (0: all)."""
    ranked = sorted(scope.items(), key=lambda item: (-item[1]["strandedGpus"], item[0]))
    return ranked[:top] if top > 0 else ranked


@click.command("metrics")
@filename_option()
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Table: how many resource pools and nodes to list, most stranded first (0: all).",
)
@prices_option
@output_option
def metrics_cmd(filenames: tuple[str, ...], top: int, prices_path: str | None, output: str) -> None:
    """Where GPUs go: allocated, partitioned, shared, free, and stranded (free, yet no typical
    pod's shape can use it)."""
    # Priced by the same pools `why` and `scale` judge with (derived when none is given).
    doc = metrics_document(with_derived_pools(load_state(filenames), prices_path))
    if emit_document(doc, output):
        return
    emit_table("Cluster", HEADERS, [_row("cluster", doc["cluster"])])
    if doc["deviceClasses"]:
        emit_table("Device classes", HEADERS, [_row(n, d) for n, d in doc["deviceClasses"].items()])
    if doc["extendedResources"]:
        rows = [_row(n, d) for n, d in doc["extendedResources"].items()]
        emit_table("Device plugins' resources", HEADERS, rows)
    if doc["nodePools"]:
        rows = [_row(n, d) for n, d in most_stranded(doc["nodePools"])]
        emit_table("Node pools (most stranded first)", HEADERS, rows)
    for title, key in (("Resource pools", "resourcePools"), ("Nodes", "nodes")):
        rows = [_row(n, d) for n, d in most_stranded(doc[key], top)]
        if rows:
            shown = f"{len(rows)} of {len(doc[key])}, most stranded first"
            emit_table(f"{title} ({shown})", HEADERS, rows)
    for req in doc["poolStatusRequests"]:
        _emit_comparison(req)


def _emit_comparison(req: dict[str, Any]) -> None:
    """One answered ResourcePoolStatusRequest: its pools' counts, the server's beside
    draplan's, and what differs."""
    rows = []
    for entry in req["pools"]:
        server, mine = entry["server"] or {}, entry["draplan"] or {}
        cells = [
            f"{server.get(k, '-')}/{mine.get(k, '-')}"
            for k in ("totalDevices", "allocatedDevices", "availableDevices", "unavailableDevices")
        ]
        fields = sorted({d["field"] for d in req["differences"] if d["pool"] == entry["pool"]})
        rows.append([entry["pool"], *cells, ", ".join(fields) or "-"])
    verdict = "agrees" if req["agrees"] else f"{len(req['differences'])} differences"
    emit_table(
        f"ResourcePoolStatusRequest {req['name']} (server/draplan; {verdict})",
        ["POOL", "TOTAL", "ALLOCATED", "AVAILABLE", "UNAVAILABLE", "DIFFERS"],
        rows,
    )


COMMANDS = [metrics_cmd]
