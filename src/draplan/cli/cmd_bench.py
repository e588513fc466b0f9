"""`draplan bench`: benchmarks against published results (`openb`: the FGD paper's protocol on
the Alibaba GPU trace, draplan.sim.openb)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from draplan.api.errors import BadInput
from draplan.cli.output import emit_document, emit_table
from draplan.scheduler.profile import TIE_RULES
from draplan.sim import openb as bench_openb


def _pair(value: tuple[float, float] | None) -> str:
    return "-" if value is None else f"{value[0]:.2f} ± {value[1]:.2f}"


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _data_dir(data_dir: str | None) -> Path:
    if data_dir is not None:
        return Path(data_dir)
    found = bench_openb.default_data_dir()
    if found is None:
        raise BadInput(
            "no openb data: pass --data-dir (a directory with openb/ and, optionally, "
            "fgd-results/)",
            path="--data-dir",
        )
    return found


@contextmanager
def _progress(total: int) -> Iterator[Callable[[bench_openb.RunResult], None] | None]:
    """A bar with the time remaining, on a terminal only (stderr)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("runs", total=total)

        def done(result: bench_openb.RunResult) -> None:
            bar.update(task, advance=1, description=f"{result.trace} {result.policy}")

        yield done


@click.group("bench")
def bench() -> None:
    """Benchmarks against published results."""


@bench.command("openb")
@click.option(
    "--trace",
    default="default",
    show_default=True,
    help="openb pod list(s): a name (default, cpu050, gpushare40, ...), a CSV file, a "
    "comma-separated list, or 'all' for the 17 of the FGD paper.",
)
@click.option(
    "--policy",
    default="draplan",
    show_default=True,
    help="random, dotprod, clustering, packing, bestfit, fgd, draplan; a comma-separated "
    "list; 'paper' (the six of the paper) or 'all'.",
)
@click.option("--seeds", default="42-51", show_default=True, help="e.g. 42-51 or 42,45.")
@click.option(
    "--inflate",
    default=bench_openb.INFLATE,
    show_default=True,
    type=float,
    help="Pods are resampled up to this multiple of the cluster's GPUs.",
)
@click.option(
    "--ties",
    type=click.Choice(TIE_RULES),
    default=None,
    help="How ties between the best nodes break: 'name' (the simulator: a fixed random node "
    "order) or 'random' (kube-scheduler). Default: the policy's own (random for random).",
)
@click.option("-j", "--jobs", default=1, show_default=True, type=int, help="Processes.")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Holds openb/ (the trace) and fgd-results/ (the paper's raw results). "
    "Default: ../shared/data if it exists.",
)
@click.option("-o", "--output", type=click.Choice(("table", "json", "yaml")), default="table")
def openb(
    trace: str,
    policy: str,
    seeds: str,
    inflate: float,
    ties: str | None,
    jobs: int,
    data_dir: str | None,
    output: str,
) -> None:
    """The FGD paper's protocol: shuffle with the seed, inflate, place one by one with no
    departures and no retries; unallocated GPU % and fragmentation at arrived 100 % / 130 %
    per seed and as mean ± sd, beside the paper's numbers (fgd-results/) when present."""
    base = _data_dir(data_dir)
    traces, policies = bench_openb.expand(trace, policy)
    seed_list = bench_openb.parse_seeds(seeds)
    specs = [
        bench_openb.RunSpec(t, p, s, inflate, ties)
        for t in traces
        for p in policies
        for s in seed_list
    ]
    for t in traces:
        bench_openb.load_trace(t, base)  # bad input fails here, before any run
    click.echo(
        f"{len(specs)} runs: {len(traces)} trace(s) × {len(policies)} policies × "
        f"{len(seed_list)} seeds, {max(1, min(jobs, len(specs)))} process(es)",
        err=True,
    )
    with _progress(len(specs)) as done:
        results = bench_openb.run_many(specs, base, jobs, done)
    paper = bench_openb.PaperResults.load(base)
    summaries = bench_openb.summarize(results, paper)
    doc: dict[str, Any] = {
        "inflate": inflate,
        "runs": [r.to_dict() for r in results],
        "summary": [s.to_dict() for s in summaries],
    }
    if emit_document(doc, output):
        return
    bins = bench_openb.REPORT_BINS
    emit_table(
        f"{len(results)} runs (inflate {inflate})",
        [
            "TRACE",
            "POLICY",
            "TIES",
            "SEED",
            "PODS",
            "PLACED",
            *(f"UNALLOC@{b}%" for b in bins),
            *(f"FRAG@{b}%" for b in bins),
            "SECONDS",
            "CPU",
        ],
        [
            (
                r.trace,
                r.policy,
                r.ties,
                r.seed,
                r.pods,
                r.placed,
                *(_value(r.unallocated(b)) for b in bins),
                *(_value(r.frag.get(b)) for b in bins),
                f"{r.seconds:.1f}",
                f"{r.cpu_seconds:.1f}",
            )
            for r in results
        ],
    )
    emit_table(
        "mean ± sd over seeds (unallocated GPU %, fragmentation % of all GPUs); paper: fgd-results",
        [
            "TRACE",
            "POLICY",
            "TIES",
            "SEEDS",
            *(f"UNALLOC@{b}%" for b in bins),
            *(f"PAPER@{b}%" for b in bins),
            f"FRAG@{bins[0]}%",
            f"PAPER FRAG@{bins[0]}%",
            "SEC/RUN",
        ],
        [
            (
                s.trace,
                s.policy,
                s.ties,
                len(s.seeds),
                *(_pair(s.unallocated.get(b)) for b in bins),
                *((_pair(s.paper_unallocated.get(b)) if s.paper_seeds else "-") for b in bins),
                _pair(s.fragmentation.get(bins[0])),
                _pair(s.paper_fragmentation.get(bins[0])) if s.paper_seeds else "-",
                f"{s.seconds:.1f}",
            )
            for s in summaries
        ],
    )
    if paper is None:
        print("(no fgd-results/ in the data directory: paper columns empty)", file=sys.stderr)


COMMANDS = [bench]
