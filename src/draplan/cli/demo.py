"""`draplan demo`: the seed's story on a built-in AI cluster, simulated under the three
autoscaler policies; prints the comparison and writes an HTML report. `--export DIR` writes the
inputs of README's tour instead, as ordinary YAML files."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import click

from draplan.api.codec import encode, yaml_text
from draplan.api.draplan_v1alpha1 import NodePool, Scenario
from draplan.api.errors import BadInput
from draplan.cli.cmd_simulate import emit_results, progress_bar, write_reports
from draplan.cli.outfile import check_target
from draplan.report import ReportInfo
from draplan.report.reference import all_fields
from draplan.sim.compare import check_started, compare
from draplan.sim.demo import (
    demo_claim,
    demo_objects,
    demo_profile,
    demo_scenario,
    tour_training_pods,
)
from draplan.sim.scenario import build_input

EXAMPLE = "ai-cluster.yaml"
REPORT = "draplan-demo-report.html"

# README's tour reads exactly these files (tests/test_readme.py runs it).
EXPORTS = {
    "cluster.yaml": "an AI cluster today: nodes, ResourceSlices, DeviceClasses, pending pods",
    "pools.yaml": "the NodePools the autoscaler grows it from (prices, delays, topology)",
    "scenario.yaml": "the demo's Scenario: the synthetic AI mix, every field spelled out",
    "profile.yaml": "a SchedulerProfile: the default score plugins and weights",
    "claim.yaml": "a ResourceClaim to allocate: 2 GPUs and an RDMA NIC on one PCIe root",
    "k8s/workloads.yaml": "workloads asking for GPUs from the device plugin, for `migrate`",
}
# `k8s/`: what README's `draplan migrate -f k8s/ -f cluster.yaml` rewrites into DRA claims.
TOUR_WORKLOADS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: embed, namespace: ml}
spec:
  replicas: 2
  selector: {matchLabels: {app: embed}}
  template:
    metadata: {labels: {app: embed}}
    spec:
      containers:
      - name: tei
        image: ghcr.io/huggingface/text-embeddings-inference:1.8
        resources:
          limits: {nvidia.com/mig-1g.5gb: 1}
---
apiVersion: batch/v1
kind: Job
metadata: {name: finetune, namespace: ml}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: trainer
        image: nvcr.io/nvidia/pytorch:25.09-py3
        resources:
          limits: {nvidia.com/gpu: 4}
"""


def example_path() -> str:
    """A static example cluster with pending pods (for `validate`, `schedule`, `why`)."""
    return str(resources.files("draplan.examples").joinpath(EXAMPLE))


def _spelled_out(scenario: Scenario) -> dict[str, Any]:
    """The Scenario with every synthetic field written, defaults included, so the file shows
    what can be changed (docs/reference.md has each field)."""
    doc = encode(scenario)
    synthetic = scenario.spec.workload.synthetic
    assert synthetic is not None
    spec = all_fields(scenario.spec)
    spec["workload"] = {"synthetic": all_fields(synthetic)}
    doc["spec"] = spec
    return doc


def export(directory: str) -> list[tuple[str, Path]]:
    """Write the tour's inputs into `directory` (created if needed); each name (EXPORTS') and
    path written."""
    out = Path(directory)
    pools = [encode(o) for o in demo_objects() if isinstance(o, NodePool)]
    texts = {
        "cluster.yaml": Path(example_path()).read_text(encoding="utf-8")
        + "---\n# draplan demo --export: four more 8-GPU training pods than the H100s hold\n"
        + yaml_text(tour_training_pods()),
        "pools.yaml": yaml_text(pools),
        "scenario.yaml": yaml_text([_spelled_out(demo_scenario())]),
        "profile.yaml": yaml_text([encode(demo_profile())]),
        "claim.yaml": yaml_text([demo_claim()]),
        "k8s/workloads.yaml": TOUR_WORKLOADS,
    }
    written: list[tuple[str, Path]] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            path = out / name
            path.parent.mkdir(parents=True, exist_ok=True)
            header = "" if text.startswith("#") else f"# draplan demo --export: {EXPORTS[name]}\n"
            path.write_text(header + text, encoding="utf-8")
            written.append((name, path))
    except OSError as err:
        raise BadInput(f"cannot write the tour's files: {err}", path="--export") from None
    return written


def run_demo(report: str = REPORT, date: str | None = None) -> None:
    info = ReportInfo.make(["built-in demo (draplan demo --export DIR writes it)"], date)
    check_target(report, "--report")
    summary = str(Path(report).with_suffix(".md"))
    check_target(summary, "--report")
    objects = [o for o in demo_objects()] + [demo_scenario()]
    sim = build_input([(o, "<demo>") for o in objects])
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
    check_started(sim, results)
    emit_results(sim.name, results, "table")
    write_reports(sim.name, results, (report, "--report"), (summary, "--report"), info)
    click.echo(f"\nwrote {report} and {summary}")
