"""`draplan migrate`: device-plugin GPU counts in manifests rewritten into DRA claims."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import click
from rich.console import Console
from rich.table import Table

from draplan.api.errors import BadInput
from draplan.cli.common import filename_option, input_settings, load_input
from draplan.cli.interrupts import write_whole
from draplan.migrate import TOPOLOGY_MODES, Migration
from draplan.migrate import migrate as run_migration
from draplan.migrate.report import (
    CHECK_HEADERS,
    SITE_HEADERS,
    TEMPLATE_HEADERS,
    check_rows,
    diff,
    manifests,
    site_rows,
    summary,
    template_rows,
)
from draplan.migrate.scheduled import scheduler_check

OUTPUTS = ("table", "yaml", "diff")


@click.command("migrate")
@filename_option(required=False)
@click.option(
    "--mapping",
    "mapping_file",
    metavar="FILE",
    help="YAML: resources: {NAME: DEVICECLASS | {deviceClassName, selectors, topology, keep}}.",
)
@click.option(
    "--topology",
    type=click.Choice(TOPOLOGY_MODES),
    default="auto",
    show_default=True,
    help="auto: align multi-GPU pods on a PCIe root or NUMA node when the slices allow it.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Schedule the original and the migrated pods on the given cluster and compare.",
)
@click.option("-o", "--output", type=click.Choice(OUTPUTS), default="table", show_default=True)
def migrate(
    filenames: tuple[str, ...], mapping_file: str | None, topology: str, check: bool, output: str
) -> None:
    """Rewrite device-plugin requests (nvidia.com/gpu, MIG, mapped) into DRA claims.

    Pods and pod templates (Deployment, StatefulSet, Job, CronJob, PyTorchJob, ...) get a
    ResourceClaimTemplate per distinct shape; everything else is kept as written. Files that
    hold only Nodes, ResourceSlices and DeviceClasses are read as the cluster, not printed;
    with --kubeconfig / --context the cluster's own are read too.
    """
    if not filenames:
        raise BadInput("give the manifests to migrate with -f", path="-f")
    settings = input_settings()
    # Only the cluster comes from the server: the manifests are always the files.
    cluster = load_input((), live=settings.live_options()) if settings.live_requested else []
    result = run_migration(
        list(filenames),
        mapping_file=mapping_file,
        topology=topology,
        cluster=cluster,
        check=partial(scheduler_check, features=settings.features()) if check else None,
    )
    if output == "yaml":
        write_whole(manifests(result))
    elif output == "diff":
        write_whole(diff(result))
    else:
        _tables(result)


def _tables(result: Migration) -> None:
    _table(summary(result), SITE_HEADERS, list(site_rows(result)))
    if result.templates:
        _table("ResourceClaimTemplates", TEMPLATE_HEADERS, list(template_rows(result)))
    if result.checks:
        _table("check", CHECK_HEADERS, list(check_rows(result)))
    lost = [(f.source, ", ".join(f.reformatted)) for f in result.files if f.reformatted]
    if lost:
        _table("rewritten whole (comments and layout lost)", ("FILE", "OBJECTS"), lost)


def _table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    # As output.emit_table, but long names (attributes, paths) fold instead of being cut.
    table = Table(title=title, title_justify="left", box=None, header_style="bold")
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*row)
    Console(width=max(100, Console().width), soft_wrap=True).print(table)


COMMANDS = [migrate]
