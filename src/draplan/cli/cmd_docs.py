"""`draplan docs reference`: docs/reference.md, generated from the API types."""

from __future__ import annotations

import click


@click.group("docs")
def docs() -> None:
    """Documentation generated from the code."""


@docs.command("reference")
def reference() -> None:
    """Print the reference of the draplan.io/v1alpha1 kinds (docs/reference.md)."""
    from draplan.report.reference import reference_markdown

    click.echo(reference_markdown(), nl=False)


COMMANDS = [docs]
