"""Options and input loading shared by every command."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from draplan.cli.output import FORMATS
from draplan.cluster.state import ClusterState
from draplan.sources import load_objects

F = TypeVar("F", bound=Callable[..., Any])


def filename_option(required: bool = True) -> Callable[[F], F]:
    return click.option(
        "-f",
        "--filename",
        "filenames",
        multiple=True,
        required=required,
        help="File, directory or - for stdin (repeatable).",
    )


output_option = click.option(
    "-o", "--output", type=click.Choice(FORMATS), default="table", show_default=True
)


def load_state(filenames: tuple[str, ...]) -> ClusterState:
    """The cluster snapshot described by the input files."""
    return ClusterState.from_objects(load_objects(list(filenames)))
