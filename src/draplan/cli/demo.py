"""`draplan demo`: the seed's story on a built-in AI cluster, simulated under the three
autoscaler policies; prints the comparison and writes an HTML report."""

from __future__ import annotations

from importlib import resources

import click

from draplan.api.draplan_v1alpha1 import (
    Scenario,
    ScenarioSpec,
    ScenarioWorkload,
    SyntheticWorkload,
)
from draplan.api.meta import ObjectMeta
from draplan.cli.cmd_simulate import emit_results, progress_bar, write_reports
from draplan.sim.compare import compare
from draplan.sim.demo import demo_objects
from draplan.sim.scenario import build_input

EXAMPLE = "ai-cluster.yaml"
REPORT = "draplan-demo-report.html"
SUMMARY = "draplan-demo-report.md"


def example_path() -> str:
    """A static example cluster with pending pods (for `validate`, `schedule`, `why`)."""
    return str(resources.files("draplan.examples").joinpath(EXAMPLE))


def demo_scenario(jobs: int = 30, seed: int = 42) -> Scenario:
    workload = ScenarioWorkload(synthetic=SyntheticWorkload(jobs=jobs))
    return Scenario(
        metadata=ObjectMeta(name="ai-cluster-demo"), spec=ScenarioSpec(seed=seed, workload=workload)
    )


def run_demo(report: str = REPORT, summary: str = SUMMARY) -> None:
    sim = build_input([(o, "<demo>") for o in demo_objects()] + [(demo_scenario(), "<demo>")])
    click.echo(
        "An AI cluster grown from node pools: 8-GPU NVLink H100 nodes (racks of 4), "
        "cheap PCIe nodes (NICs on 2 of 4 PCIe roots), PCIe-switch nodes (4 GPUs + NIC "
        "per root), MIG-partitionable A100 nodes; "
        f"{len(sim.jobs)} jobs: training gangs in one NVLink rack, fine-tuning with 4 "
        "GPUs + RDMA NIC on one PCIe root, inference on MIG slices.\n"
    )
    horizon = max(j.arrival for j in sim.jobs) * 2
    with progress_bar(horizon) as tick:
        results = compare(sim, None, tick)
    emit_results(sim.name, results, "table")
    write_reports(sim.name, results, report, summary)
    click.echo(f"\nwrote {report} and {summary}")
