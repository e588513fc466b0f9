"""`draplan why`: a category, evidence and a fix for every pending pod."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import click

from draplan.audit import CATEGORIES, why
from draplan.audit.documents import why_document
from draplan.cli.common import (
    filename_option,
    load_state,
    output_option,
    prices_option,
    shown_pods,
    with_derived_pools,
)
from draplan.cli.output import emit_document, emit_table, no_headers
from draplan.cli.profiles import chosen_profile, profile_option
from draplan.cluster.state import ClusterState
from draplan.sources import gc_paused


@click.command("why")
@filename_option()
@profile_option
@prices_option
@output_option
def why_cmd(
    filenames: tuple[str, ...],
    prices_path: str | None,
    output: str,
) -> None:
    """Explain every pending pod: capacity, topology, fragmentation, gangs, pools."""
    state = load_state(filenames, select=False)
    # What the audit makes lives to the end of the command: a collection of it (a quarter of
    # a second at 10,000 nodes) would free nothing, so it is frozen like the input.
    with gc_paused():
        _why(state, prices_path, output)


def _why(state: ClusterState, prices_path: str | None, output: str) -> None:
    profile = chosen_profile()
    state = with_derived_pools(state, prices_path, profile.kube)
    shown = shown_pods(state)
    diagnoses = [d for d in why(state, profile) if shown(d.pod)]
    if emit_document(why_document(diagnoses), output):
        return
    groups: dict[str, list[Any]] = defaultdict(list)
    for d in diagnoses:
        groups[d.category].append(d)
    # Most costly first: the categories holding back the most devices.
    order = sorted(groups, key=lambda c: (-sum(d.devices for d in groups[c]), CATEGORIES.index(c)))
    wide = output == "wide"
    headers = ["NAMESPACE", "NAME", "DEVICES", "MESSAGE"] + (["FIX"] if wide else [])
    rows = {
        category: [
            [d.pod[0], d.pod[1], d.devices, d.message] + ([_fix(d.fix)] if wide else [])
            for d in groups[category]
        ]
        for category in order
    }
    if no_headers():  # the tables' titles name the categories; without them, a column does
        emit_table("", ["CATEGORY", *headers], [[c, *r] for c in order for r in rows[c]])
        return
    for category in order:
        emit_table(f"{category} ({len(rows[category])})", headers, rows[category])
    if not diagnoses:
        click.echo("No pending pods.")


def _fix(fix: dict[str, Any] | None) -> str:
    if not fix:
        return "<none>"
    return ", ".join(f"{k}={_value(v)}" for k, v in fix.items())


def _value(value: Any) -> str:
    """A fix's value; moves read pod->node."""
    if isinstance(value, list):
        return ",".join(map(_item, value))
    if isinstance(value, dict):
        return ",".join(f"{k}->{v}" for k, v in value.items())
    return str(value)


def _item(value: Any) -> str:
    """A list item of a fix; a toleration reads key:operator:effect."""
    if isinstance(value, dict):
        return ":".join(str(v) for v in value.values())
    return str(value)


COMMANDS = [why_cmd]
