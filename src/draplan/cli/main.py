"""Command-line entry point: argument handling only; the work is in the library."""

from __future__ import annotations

import importlib
import os
import statistics
import sys
import time
from collections import Counter
from typing import Any

import click

from draplan import __version__
from draplan.allocator import AllocationError, Options, allocate
from draplan.allocator.validate import validate_allocation
from draplan.api.codec import encode
from draplan.api.errors import BadInput, escape
from draplan.api.resource_v1 import ResourceClaim
from draplan.autoscaler.templates import make_node
from draplan.cli import interrupts
from draplan.cli.cmd_completion import COMPLETE_VAR
from draplan.cli.common import (
    date_option,
    filename_option,
    input_settings,
    load_input,
    load_state,
    output_option,
)
from draplan.cli.output import emit_document, emit_json, emit_table, emit_yaml
from draplan.cluster.nodeselector import selector_matches
from draplan.cluster.state import ClusterState
from draplan.scheduler.claims import unavailable_on
from draplan.sources import gc_paused

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1


# The commands of the `draplan.cli.cmd_*` modules, by name: a module is imported when one of
# its commands runs (or help lists them), so a command does not pay for the others' imports.
COMMAND_MODULES = {
    "bench": "cmd_bench",
    "completion": "cmd_completion",
    "docs": "cmd_docs",
    "expander": "cmd_expander",
    "metrics": "cmd_metrics",
    "migrate": "cmd_migrate",
    "pools": "cmd_pools",
    "report": "cmd_simulate",
    "scale": "cmd_scale",
    "schedule": "cmd_schedule",
    "serve": "cmd_serve",
    "simulate": "cmd_simulate",
    "snapshot": "cmd_snapshot",
    "sweep": "cmd_simulate",
    "why": "cmd_why",
}


class LazyGroup(click.Group):
    """A group whose `COMMAND_MODULES` commands are imported when first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMAND_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            for command in importlib.import_module(f"draplan.cli.{module}").COMMANDS:
                self.add_command(command)
        return super().get_command(ctx, cmd_name)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=True,
)
@click.version_option(__version__, prog_name="draplan")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """draplan: one DRA allocator for the Kubernetes scheduler and the autoscaler."""
    if ctx.invoked_subcommand is None:  # no command: the help, as kubectl prints it, exit 0
        click.echo(ctx.get_help())


@cli.command()
@filename_option()
@output_option
def validate(filenames: tuple[str, ...], output: str) -> None:
    """Load and validate objects; summarise what was read."""
    objects = load_input(filenames)
    with gc_paused():  # the indexes of a 100 MB dump are a bulk load too
        state = ClusterState.from_objects(objects, input_settings().features())
    for pool in state.node_pools.values():
        make_node(state, pool, "node-0", {})  # as deep as `scale`: fromNode, slices as stamped
    kinds = Counter(
        f"{getattr(o, 'kind', '')} ({getattr(o, 'api_version', '')})" for o, _ in objects
    )
    drivers: Counter[str] = Counter()
    for rs in state.slices.values():
        drivers[rs.spec.driver] += len(rs.spec.devices)
    summary = {
        "objects": len(objects),
        "kinds": dict(sorted(kinds.items())),
        "devicesPerDriver": dict(sorted(drivers.items())),
    }
    if not emit_document(summary, output):
        emit_table(f"{len(objects)} objects", ["KIND", "COUNT"], sorted(kinds.items()))
        if drivers:
            emit_table("devices", ["DRIVER", "DEVICES"], sorted(drivers.items()))


def _pick_node(state: ClusterState, node: str | None) -> str:
    if node:
        if node not in state.nodes:
            raise BadInput(f"node {node!r} is not in the input", path="--node")
        return node
    names = sorted(state.nodes.keys())
    if len(names) != 1:
        raise BadInput(f"--node is required when the input has {len(names)} nodes", path="--node")
    return names[0]


ALLOCATED_ELSEWHERE = "AllocatedElsewhere"


def _pick_claims(state: ClusterState, refs: tuple[str, ...]) -> list[ResourceClaim]:
    if not refs:
        return [c for c in state.claims.values() if c.status.allocation is None]
    out = []
    for ref in refs:
        ns, sep, name = ref.partition("/")
        key = (ns, name) if sep else ("default", ns)
        claim = state.claims.get(key)
        if claim is None:
            raise BadInput(f"claim {key[0]}/{key[1]} is not in the input", path="--claim")
        out.append(claim)
    return out


@cli.command("allocate")
@filename_option()
@click.option("--node", help="The node the pod would run on.")
@click.option("--claim", "claim_refs", multiple=True, help="NAMESPACE/NAME, in order.")
@click.option(
    "--device-order",
    type=click.Choice(["tight", "first-fit"]),
    default="first-fit",
    show_default=True,
)
@click.option("--check", is_flag=True, help="Re-derive every invariant of the result.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, help="Time N runs.")
@click.option("--timeout", type=float, default=10.0, show_default=True, help="Seconds.")
@output_option
def allocate_cmd(
    filenames: tuple[str, ...],
    node: str | None,
    claim_refs: tuple[str, ...],
    device_order: str,
    check: bool,
    repeat: int,
    timeout: float,
    output: str,
) -> None:
    """Allocate claims together on one node, as the DRA scheduler plugin would."""
    state = load_state(filenames)
    node_name = _pick_node(state, node)
    claims = _pick_claims(state, claim_refs)
    elsewhere = unavailable_on(state.nodes[node_name], claims)
    if elsewhere:
        reason = _allocated_elsewhere(state, node_name, elsewhere[0])
        _emit_allocation({"satisfiable": False, "claims": [], "reason": reason}, node_name, output)
        return
    pending = [c for c in claims if c.status.allocation is None]
    options = Options(device_order=device_order, timeout_seconds=timeout)  # type: ignore[arg-type]
    times = []
    outcome = None
    for _ in range(repeat):
        start = time.perf_counter()
        outcome = allocate(state, state.nodes[node_name], pending, options)
        times.append((time.perf_counter() - start) * 1e6)
    assert outcome is not None
    done = iter(outcome.claims)
    result_claims = (
        [c if c.status.allocation is not None else next(done) for c in claims] if outcome.ok else []
    )
    doc: dict[str, Any] = {
        "satisfiable": outcome.ok,
        "claims": [encode(c) for c in result_claims],
        "reason": outcome.reason.to_dict() if outcome.reason else None,
    }
    if check and outcome.ok:
        problems = validate_allocation(state, state.nodes[node_name], list(outcome.claims))
        doc["check"] = {"valid": not problems, "problems": problems}
    if repeat > 1:
        doc["timing"] = {
            "firstMicros": round(times[0], 1),
            "medianMicros": round(statistics.median(times[1:]), 1),
            "repeat": repeat,
        }
    _emit_allocation(doc, node_name, output)
    if check and outcome.ok and doc["check"]["problems"]:
        raise click.exceptions.Exit(EXIT_INTERNAL)


def _emit_allocation(doc: dict[str, Any], node_name: str, output: str) -> None:
    if output == "json":
        emit_json(doc)
    elif output == "yaml":
        emit_yaml(doc["claims"] or [doc], listed=False)  # as `kubectl get` one claim
    else:
        _allocation_table(doc, node_name)


def _allocated_elsewhere(state: ClusterState, node: str, claim: ResourceClaim) -> dict[str, Any]:
    """Why `node` cannot take a claim allocated for other nodes: which, and which devices."""
    allocation = claim.status.allocation
    assert allocation is not None and allocation.node_selector is not None
    nodes = [
        name
        for name, other in sorted(state.nodes.items())
        if selector_matches(allocation.node_selector, other)
    ]
    devices = [f"{r.driver}/{r.pool}/{r.device}" for r in allocation.devices.results]
    where = (
        f"node {nodes[0]}"
        if len(nodes) == 1
        else f"{len(nodes)} nodes ({', '.join(nodes[:3])}{', ...' if len(nodes) > 3 else ''})"
        if nodes
        else "nodes none of the input's match"
    )
    ref = f"{claim.metadata.namespace}/{claim.metadata.name}"
    message = (
        f"claim {ref} is already allocated ({', '.join(devices) or 'no devices'}) for {where}, "
        f"not for {node}: kube-scheduler rejects every other node for a pod that uses it "
        "(resourceclaim not available on the node)"
    )
    return {
        "code": ALLOCATED_ELSEWHERE,
        "message": message,
        "claim": ref,
        "allocatedNodes": nodes,
        "devices": devices,
    }


def _allocation_table(doc: dict[str, Any], node: str) -> None:
    if not doc["satisfiable"]:
        reason = doc["reason"] or {}
        emit_table(
            f"node {node}: not satisfiable",
            ["REASON", "MESSAGE"],
            [(reason.get("code", ""), reason.get("message", ""))],
        )
        return
    rows = []
    for claim in doc["claims"]:
        meta = claim["metadata"]
        for res in claim["status"]["allocation"]["devices"]["results"]:
            rows.append(
                (
                    f"{meta.get('namespace', '')}/{meta['name']}",
                    res["request"],
                    res["driver"],
                    res["pool"],
                    res["device"],
                    res.get("shareID", ""),
                )
            )
    emit_table(
        f"node {node}: satisfiable", ["CLAIM", "REQUEST", "DRIVER", "POOL", "DEVICE", "SHARE"], rows
    )


@cli.command()
@click.option(
    "--export",
    "export_dir",
    metavar="DIR",
    help="Write the demo's inputs (cluster.yaml, pools.yaml, scenario.yaml, profile.yaml, "
    "claim.yaml, k8s/) into DIR as ordinary YAML, for README's tour; run nothing.",
)
@click.option(
    "--report",
    default="draplan-demo-report.html",
    show_default=True,
    metavar="PATH",
    help="Where the HTML report goes; the Markdown summary goes beside it (PATH with .md).",
)
@date_option
def demo(export_dir: str | None, report: str, date: str | None) -> None:
    """Simulate a built-in AI cluster, grown from NodePools, under the legacy autoscaler,
    DRA and DRA with gang-atomic placement; print the comparison and write an HTML report.
    With --export, write its inputs as files instead."""
    from draplan.cli.demo import EXPORTS, export, run_demo

    if export_dir is None:
        run_demo(report, date)
        return
    for name, path in export(export_dir):
        click.echo(f"wrote {path}: {EXPORTS[name]}")


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; bad input exits 2 with one line, internal errors exit 1, Ctrl-C 130, no
    traceback."""
    previous = interrupts.install()
    try:
        cli.main(
            args=argv,
            prog_name=_prog_name(),
            standalone_mode=False,
            complete_var=COMPLETE_VAR,
        )
    except click.exceptions.Exit as err:
        sys.exit(err.exit_code)
    except click.ClickException as err:
        err.show()
        sys.exit(EXIT_BAD_INPUT)
    except click.exceptions.Abort as err:
        if isinstance(err.__context__, KeyboardInterrupt):
            _interrupted()
        sys.exit(EXIT_INTERNAL)
    except (BadInput, AllocationError) as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        _interrupted()
    except Exception as err:
        if os.environ.get("DRAPLAN_DEBUG"):
            raise
        click.echo(f"internal error: {type(err).__name__}: {escape(str(err))}", err=True)
        sys.exit(EXIT_INTERNAL)
    finally:
        interrupts.restore(previous)
    sys.exit(0)


def _interrupted() -> None:
    """Ctrl-C seen as KeyboardInterrupt (off the main thread, the handler is not installed)."""
    sys.stderr.write("interrupted\n")
    sys.exit(interrupts.EXIT_INTERRUPTED)


def _prog_name() -> str:
    base = os.path.basename(sys.argv[0]) if sys.argv else "draplan"
    return "kubectl draplan" if base.startswith("kubectl-") else "draplan"
