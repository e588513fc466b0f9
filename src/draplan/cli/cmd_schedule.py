"""`draplan schedule`: place every pending pod with the scheduling framework."""

from __future__ import annotations

from typing import Any

import click

from draplan.allocator.validate import validate_allocation
from draplan.api.codec import decode, encode
from draplan.api.draplan_v1alpha1 import SchedulerProfile
from draplan.api.errors import BadInput
from draplan.cli.common import filename_option, load_state, output_option
from draplan.cli.output import emit_json, emit_table, emit_yaml
from draplan.cluster.state import ClusterState
from draplan.scheduler import PodResult, Scheduler, build_profile
from draplan.sources import read_documents


def load_profile(path: str | None) -> SchedulerProfile | None:
    if path is None:
        return None
    docs = list(read_documents([path]))
    if len(docs) != 1:
        raise BadInput("expected exactly one SchedulerProfile", source=path)
    profile = decode(docs[0].data, source=path)
    if not isinstance(profile, SchedulerProfile):
        raise BadInput(
            f"expected kind SchedulerProfile, got {getattr(profile, 'kind', '')}",
            source=path,
            path="kind",
        )
    return profile


def result_doc(r: PodResult) -> dict[str, Any]:
    return {
        "namespace": r.key[0],
        "name": r.key[1],
        "node": r.node,
        "claims": [encode(c) for c in r.claims],
        "reason": r.reason.to_dict() if r.reason is not None else None,
    }


def manifests(results: list[PodResult]) -> list[dict[str, Any]]:
    """The bound Pods (spec.nodeName set) and their allocated ResourceClaims (status.allocation
    and reservedFor), ready to apply."""
    out: list[dict[str, Any]] = []
    for r in results:
        if r.node:
            out.append(encode(r.pod))
            out.extend(encode(c) for c in r.claims)
    return out


def check_results(state: ClusterState, results: list[PodResult]) -> list[str]:
    problems = []
    for r in results:
        if r.node and r.claims:
            for p in validate_allocation(state, state.nodes[r.node], r.claims):
                problems.append(f"{r.key[0]}/{r.key[1]}: {p}")
    return problems


@click.command("schedule")
@filename_option()
@click.option("--profile", "profile_path", help="A draplan.io/v1alpha1 SchedulerProfile file.")
@click.option("--check", is_flag=True, help="Validate every allocation independently.")
@output_option
def schedule(
    filenames: tuple[str, ...], profile_path: str | None, check: bool, output: str
) -> None:
    """Place every pod without spec.nodeName; print placements, allocations and reasons."""
    profile = build_profile(load_profile(profile_path))
    state = load_state(filenames)
    results = Scheduler(profile).run(state)
    scheduled = sum(1 for r in results if r.node)
    doc: dict[str, Any] = {
        "pods": [result_doc(r) for r in results],
        "summary": {"scheduled": scheduled, "unschedulable": len(results) - scheduled},
    }
    problems = check_results(state, results) if check else []
    if check:
        doc["check"] = {"valid": not problems, "problems": problems}
    if output == "json":
        emit_json(doc)
    elif output == "yaml":
        emit_yaml(manifests(results))
    else:
        headers = ["NAMESPACE", "NAME", "STATUS", "NODE", "DEVICES", "REASON"]
        wide = output == "wide"
        rows = []
        for r in results:
            devices = [
                f"{d.driver}/{d.pool}/{d.device}"
                for c in r.claims
                if c.status.allocation
                for d in c.status.allocation.devices.results
            ]
            row = [
                r.key[0],
                r.key[1],
                # The PodScheduled condition's reason when it is False.
                "Scheduled" if r.node else "Unschedulable",
                r.node or "<none>",
                len(devices),
                r.reason.message if r.reason else "",
            ]
            rows.append([*row, ",".join(devices) or "<none>"] if wide else row)
        emit_table(
            f"{scheduled} scheduled, {len(results) - scheduled} unschedulable",
            [*headers, "ALLOCATED"] if wide else headers,
            rows,
        )
    if problems:
        raise click.exceptions.Exit(1)


COMMANDS = [schedule]
