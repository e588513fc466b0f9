"""Render command results as kubectl does: a table by default, or JSON / YAML documents."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click
import yaml
from rich.console import Console
from rich.table import Table

FORMATS = ("table", "wide", "json", "yaml")


def emit_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=False) + "\n")


def emit_yaml(docs: Sequence[Any]) -> None:
    sys.stdout.write(yaml.safe_dump_all(list(docs), sort_keys=False, default_flow_style=False))


def emit_document(doc: Any, output: str) -> bool:
    """Print `doc` as JSON or YAML when `output` asks for one; False leaves it to a table."""
    if output == "json":
        emit_json(doc)
    elif output == "yaml":
        emit_yaml([doc])
    else:
        return False
    return True


def emit_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    ctx = click.get_current_context(silent=True)
    headerless = bool(ctx is not None and ctx.find_root().meta.get("draplan.no_headers"))
    table = Table(
        title=None if headerless else title,
        title_justify="left",
        box=None,
        header_style="bold",
        show_header=not headerless,
    )
    for h in headers:
        table.add_column(h)
    for row in rows:
        table.add_row(*(str(c) for c in row))
    Console(width=max(160, Console().width), soft_wrap=True).print(table)
