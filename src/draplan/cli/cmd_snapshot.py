"""`draplan snapshot`: save what draplan reads as one `kind: List`, to run commands offline."""

from __future__ import annotations

from typing import Any

import click
import msgspec
import yaml

from draplan.api.codec import encode
from draplan.cli.common import filename_option, load_input
from draplan.cli.interrupts import write_whole
from draplan.cluster.state import ClusterState
from draplan.sources.kuberedact import snapshot_document

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@click.command()
@filename_option()
@click.option(
    "-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True
)
@click.option("--redact", is_flag=True, help="Replace node and pod names by stable pseudonyms.")
@click.option(
    "--redact-key",
    envvar="DRAPLAN_REDACT_KEY",
    default="",
    metavar="TEXT",
    help="Key of the pseudonyms: without one they are stable across runs, but a guessed "
    "name can be confirmed. [env: DRAPLAN_REDACT_KEY]",
)
def snapshot(filenames: tuple[str, ...], output: str, redact: bool, redact_key: str) -> None:
    """Save the cluster (or files) as a kind: List that every command reads with -f."""
    objects = load_input(filenames)
    # What cannot be loaded back (duplicates, bad selectors) is refused now, not later.
    ClusterState.from_objects(objects)
    doc = snapshot_document([encode(obj) for obj, _ in objects], redact=redact, key=redact_key)
    if output == "json":
        write_whole(msgspec.json.format(msgspec.json.encode(doc), indent=2).decode() + "\n")
    else:
        write_whole(yaml.dump(doc, Dumper=_Dumper, sort_keys=False))


COMMANDS = [snapshot]
