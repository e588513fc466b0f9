"""`draplan simulate`, `draplan report` and `draplan sweep`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import msgspec

from draplan.api.draplan_v1alpha1 import Scenario
from draplan.api.errors import BadInput
from draplan.cli.common import (
    date_option,
    filename_option,
    input_settings,
    output_option,
    prices_option,
)
from draplan.cli.common import load_input as load_cluster_input
from draplan.cli.outfile import check_target, write_file
from draplan.cli.output import emit_document, emit_table
from draplan.report import ReportInfo, html_report, markdown_summary
from draplan.report.table import headers, pending_rows, rows
from draplan.sim import POLICIES, SimResult
from draplan.sim.compare import check_started, compare, from_dict, horizon_of, to_dict
from draplan.sim.scenario import SimInput, build_input
from draplan.sources.prices import load_prices


def parse_policies(text: str | None) -> list[str] | None:
    if not text:
        return None
    policies = [p.strip() for p in text.split(",") if p.strip()]
    for p in policies:
        if p not in POLICIES:
            raise BadInput(f"unknown policy {p!r}; one of {', '.join(POLICIES)}", path="--policies")
    return policies


# Each seed is a whole simulation per policy: far more than anyone runs, few enough to end.
MAX_SEEDS = 10_000


def parse_seeds(text: str) -> list[int]:
    """ "42-45" or "1,5,9"."""
    try:
        if "-" in text:
            lo, hi = (int(part) for part in text.split("-", 1))
            seeds: range | list[int] = range(lo, hi + 1)
        else:
            seeds = [int(s) for s in text.split(",")]
    except ValueError:
        raise BadInput(f"invalid seeds {text!r}: use 42-51 or 1,2,3", path="--seeds") from None
    if not 0 < len(seeds) <= MAX_SEEDS:
        raise BadInput(f"{len(seeds)} seeds: give 1 to {MAX_SEEDS}", path="--seeds")
    return list(seeds)


@contextmanager
def progress_bar(total: float) -> Iterator[Any]:
    """A progress bar on a terminal only (stderr); a no-op callback otherwise."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task("simulating", total=total)

        def update(policy: str, t: float) -> None:
            bar.update(task, description=f"simulating {policy}", completed=min(t, total))

        yield update


def write_reports(
    name: str,
    results: list[SimResult],
    html: tuple[str | None, str],
    markdown: tuple[str | None, str],
    info: ReportInfo,
) -> None:
    """The reports asked for, each (path, option) checked first with `check_target`."""
    if html[0] is not None:
        write_file(html[0], html_report(name, results, info), html[1])
    if markdown[0] is not None:
        write_file(markdown[0], markdown_summary(name, results, info), markdown[1])


def emit_results(name: str, results: list[SimResult], output: str) -> None:
    doc = {"scenario": name, "results": [to_dict(r) for r in results]}
    if not emit_document(doc, output):
        emit_table(f"simulation {name}", headers(), rows(results))
        emit_table(
            "pending time (seconds)",
            ["POLICY", "CLASS", "P50", "P95", "P99"],
            pending_rows(results),
        )


def load_input(
    filenames: tuple[str, ...], seed: int | None, prices_path: str | None = None
) -> SimInput:
    """The scenario and its cluster, read as every command reads its input (files, a live
    cluster when asked, `-l`), simulated under the release and gates of the command line."""
    features = input_settings().features()
    objects = load_cluster_input(filenames)
    if seed is not None:
        objects = [
            (_with_seed(o, seed) if isinstance(o, Scenario) else o, source) for o, source in objects
        ]
    sim = build_input(objects, features)
    return replace(sim, prices=load_prices(prices_path)) if prices_path else sim


def _with_seed(scenario: Scenario, seed: int) -> Scenario:
    spec = msgspec.structs.replace(scenario.spec, seed=seed)
    return msgspec.structs.replace(scenario, spec=spec)


@click.command("simulate")
@filename_option()
@click.option("--policies", help=f"Comma-separated subset of {', '.join(POLICIES)}.")
@click.option("--seed", type=int, help="Override the Scenario's seed.")
@click.option("--report", "html", help="Also write the HTML report to this file.")
@click.option("--markdown", help="Also write a Markdown summary to this file.")
@date_option
@prices_option
@output_option
def simulate_cmd(
    filenames: tuple[str, ...],
    policies: str | None,
    seed: int | None,
    html: str | None,
    markdown: str | None,
    date: str | None,
    prices_path: str | None,
    output: str,
) -> None:
    """Replay a workload on a cluster under autoscaler policies; compare them."""
    info = ReportInfo.make(filenames, date)  # a bad date is reported before the runs
    check_target(html, "--report")
    check_target(markdown, "--markdown")
    sim = load_input(filenames, seed, prices_path)
    horizon = horizon_of(sim)
    if horizon is None:  # the runs end when the work is done: a guess for the bar
        horizon = max((j.arrival for j in sim.jobs), default=0.0) * 2
    with progress_bar(horizon) as tick:
        results = compare(sim, parse_policies(policies), tick)
    check_started(sim, results)
    # Results first: a report that cannot be written after all (a full disk) loses nothing.
    emit_results(sim.name, results, output)
    write_reports(sim.name, results, (html, "--report"), (markdown, "--markdown"), info)


@click.command("report")
@click.option("--input", "input_path", required=True, help="JSON from `draplan simulate -o json`.")
@click.option("--html", default="draplan-report.html", show_default=True)
@click.option("--markdown", help="Also write a Markdown summary.")
@date_option
def report_cmd(input_path: str, html: str, markdown: str | None, date: str | None) -> None:
    """Turn simulation results into a self-contained HTML report (and Markdown)."""
    check_target(html, "--html")
    check_target(markdown, "--markdown")
    try:
        doc = json.loads(Path(input_path).read_text(encoding="utf-8"))
        results = [from_dict(r) for r in doc["results"]]
        name = str(doc.get("scenario", "simulation"))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise BadInput(
            f"not a `draplan simulate -o json` result: {err}", source=input_path
        ) from None
    info = ReportInfo.make([input_path], date)
    write_reports(name, results, (html, "--html"), (markdown, "--markdown"), info)
    click.echo(f"wrote {html}" + (f" and {markdown}" if markdown else ""))


def sweep_run(args: tuple[tuple[str, ...], int, str]) -> dict[str, Any]:
    """One run of a sweep: (files, seed, policy) → its totals (a process pool's task)."""
    filenames, seed, policy = args
    sim = load_input(filenames, seed)
    result = compare(sim, [policy])[0]
    return {
        "seed": seed,
        "policy": policy,
        **{k: v for k, v in result.totals.items() if k != "pendingSeconds"},
    }


@click.command("sweep")
@filename_option()
@click.option("--seeds", default="42-45", show_default=True)
@click.option("--policies", help=f"Comma-separated subset of {', '.join(POLICIES)}.")
@click.option(
    "-j",
    "--jobs",
    "workers",
    type=click.IntRange(0, 1024),
    default=0,
    help="Processes (0: all cores).",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="dask needs the draplan[dask] extra.",
)
@output_option
def sweep_cmd(
    filenames: tuple[str, ...],
    seeds: str,
    policies: str | None,
    workers: int,
    executor: str,
    output: str,
) -> None:
    """Many runs (seeds × policies), in parallel processes or on a Dask cluster."""
    seed_list = parse_seeds(seeds)
    base = load_input(filenames, None)
    policy_list = parse_policies(policies) or list(base.scenario.spec.policies)
    if base.scenario.spec.workload.synthetic is None and len(seed_list) > 1:
        # Only the synthetic mix draws from the seed: jobs given as YAML and trace replays are
        # the same for every seed, so more seeds would repeat identical runs.
        click.echo(
            f"notice: seeds do not apply: the workload has no synthetic part; running each "
            f"policy once (seed {seed_list[0]}) instead of {len(seed_list)} times",
            err=True,
        )
        seed_list = seed_list[:1]
    tasks = [(filenames, s, p) for s in seed_list for p in policy_list]
    if executor == "dask":
        rows_ = _dask_map(tasks, workers)
    else:
        with ProcessPoolExecutor(max_workers=workers or None) as pool:
            rows_ = list(pool.map(sweep_run, tasks))
    if not emit_document({"runs": rows_}, output):
        keys = [
            "seed",
            "policy",
            "nodesAdded",
            "wastedNodes",
            "partialGangGpuHours",
            "gpuAllocationPercent",
            "strandedGpuHours",
            "cost",
        ]
        emit_table(f"sweep: {len(rows_)} runs", keys, [[r[k] for k in keys] for r in rows_])


def _dask_map(tasks: list[tuple[tuple[str, ...], int, str]], workers: int) -> list[dict[str, Any]]:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise BadInput(
            "--executor dask needs Dask: pip install 'draplan[dask]'", path="--executor"
        ) from None
    # Dask's API is untyped; keep it to these few lines.
    cluster = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, Client(cluster) as client:  # type: ignore[no-untyped-call]
        return list(client.gather(client.map(sweep_run, tasks)))


COMMANDS = [simulate_cmd, report_cmd, sweep_cmd]
