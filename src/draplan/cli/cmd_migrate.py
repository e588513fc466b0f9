"""`draplan migrate`: device-plugin GPU counts in manifests rewritten into DRA claims."""

from __future__ import annotations

from functools import partial

import click

from draplan.api.errors import BadInput
from draplan.cli.common import filename_option, input_settings, load_input
from draplan.cli.interrupts import write_whole
from draplan.cli.output import emit_table, remember_format
from draplan.migrate import TOPOLOGY_MODES, Migration
from draplan.migrate import migrate as run_migration
from draplan.migrate.report import (
    CHECK_HEADERS,
    RECREATE_HEADERS,
    SITE_HEADERS,
    TEMPLATE_HEADERS,
    check_rows,
    diff,
    manifests,
    recreate_rows,
    site_rows,
    summary,
    template_rows,
)
from draplan.migrate.scheduled import scheduler_check

OUTPUTS = ("table", "wide", "yaml", "diff")


def _remember(ctx: click.Context, param: click.Parameter, value: str) -> str:
    remember_format(ctx, param, value)  # tables read it: `wide` prints every cell whole
    return value


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
@click.option(
    "-o",
    "--output",
    type=click.Choice(OUTPUTS),
    default="table",
    show_default=True,
    callback=_remember,
    help="table (cells cut with …), wide (every cell whole), yaml (the migrated manifests) "
    "or diff.",
)
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
    # kubectl's tables: a row never wraps; -o wide prints every cell whole.
    emit_table(summary(result), SITE_HEADERS, list(site_rows(result)))
    if result.recreated:
        emit_table(
            "made again, not rewritten (running pods, objects a controller owns)",
            RECREATE_HEADERS,
            list(recreate_rows(result)),
        )
    if result.templates:
        emit_table("ResourceClaimTemplates", TEMPLATE_HEADERS, list(template_rows(result)))
    if result.checks:
        emit_table("check", CHECK_HEADERS, list(check_rows(result)))
    lost = [(f.source, ", ".join(f.reformatted)) for f in result.files if f.reformatted]
    if lost:
        emit_table("rewritten whole (comments and layout lost)", ("FILE", "OBJECTS"), lost)


COMMANDS = [migrate]
