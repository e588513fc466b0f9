"""`draplan schedule`: place every pending pod with the scheduling framework."""

from __future__ import annotations

from typing import Any

import click

from draplan.allocator.validate import validate_allocation
from draplan.api.codec import encode
from draplan.api.core_v1 import Binding, ObjectReference, Pod
from draplan.api.meta import ObjectMeta
from draplan.cli.common import filename_option, load_state, output_option, shown_pods
from draplan.cli.output import emit_json, emit_table, emit_yaml
from draplan.cli.profiles import chosen_profile, profile_option
from draplan.cluster.podresources import extended_devices, node_allocatable
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import PodResult, Profile, Scheduler, gated_pods
from draplan.scheduler.profile import draplan_profile


def result_doc(r: PodResult, other: PodResult | None = None) -> dict[str, Any]:
    doc = {
        "namespace": r.key[0],
        "name": r.key[1],
        "node": r.node,
        "claims": [encode(c) for c in r.claims],
        "reason": r.reason.to_dict() if r.reason is not None else None,
    }
    if r.nominated:
        doc["nominatedNode"] = r.nominated
        doc["victims"] = [
            {"namespace": v.metadata.namespace, "name": v.metadata.name, "node": v.spec.node_name}
            for v in r.victims
        ]
    if other is not None and _answer(other) != _answer(r):
        doc["draplan"] = {"node": other.node, "devices": _devices(other)}
    return doc


def victim_rows(results: list[PodResult], wide: int) -> list[list[int | str]]:
    """A row per pod preemption evicts (the event kube-scheduler records on it is Preempted);
    `wide`: how many -o wide columns follow."""
    rows: list[list[int | str]] = []
    for r in results:
        for v in r.victims:
            row: list[int | str] = [
                v.metadata.namespace,
                v.metadata.name,
                "Preempted",
                v.spec.node_name,
                0,
                f"preempted by {r.key[0]}/{r.key[1]} on {r.nominated}",
            ]
            rows.append([*row, *["<none>"] * wide])
    return rows


def _devices(r: PodResult) -> list[str]:
    return [
        f"{d.driver}/{d.pool}/{d.device}"
        for c in r.claims
        if c.status.allocation
        for d in c.status.allocation.devices.results
    ]


def _plugin_devices(state: ClusterState, r: PodResult) -> int:
    """The device-plugin devices a placed pod holds: its extended resources that its node's
    allocatable has (kube-scheduler counts those against the node, not through DRA)."""
    node = state.nodes.get(r.node) if r.node else None
    pod = state.pods.get(r.key)
    if node is None or pod is None:
        return 0
    return extended_devices(pod, node_allocatable(node))


def _answer(r: PodResult) -> tuple[str | None, list[str]]:
    return r.node, _devices(r)


def _draplan_cell(r: PodResult, other: PodResult | None) -> str:
    """Where draplan's profile puts the pod, when that is not the answer shown: its node, or
    its devices on the same node; "=" when it agrees."""
    if other is None or _answer(other) == _answer(r):
        return "="
    if other.node is None:
        return "<none>"
    if other.node != r.node:
        return other.node
    return ",".join(_devices(other)) or "<none>"


def draplan_answers(state: ClusterState, profile: Profile) -> dict[ObjectKey, PodResult]:
    """What draplan's own profile answers on the same state (run in a fork, reverted), for
    showing beside the modelled scheduler's; nothing when that is already draplan's."""
    if not profile.kube:
        return {}
    with state.forked():
        return {r.key: r for r in Scheduler(draplan_profile(), post_filter=True).run(state)}


def gated_doc(pod: Pod) -> dict[str, Any]:
    return {
        "namespace": pod.metadata.namespace,
        "name": pod.metadata.name,
        "node": None,
        "claims": [],
        "reason": None,
        "schedulingGates": [g.name for g in pod.spec.scheduling_gates],
    }


def gate_text(pod: Pod) -> str:
    return "waiting for scheduling gates: " + ", ".join(g.name for g in pod.spec.scheduling_gates)


def manifests(results: list[PodResult], kind: str = "objects") -> list[dict[str, Any]]:
    """What `-o yaml` writes, by `--manifests`:

    - objects: the bound Pods (spec.nodeName set) and their allocated ResourceClaims, the
      cluster as it would be after scheduling, to read back with -f; a pod that preempted is
      not bound in the same cycle: it is listed with status.nominatedNodeName, as the
      scheduler patches it (its victims' deletion is no manifest and is not written);
    - claim-status: per claim, the status the scheduler writes before binding (allocation and
      reservedFor), as an apply configuration for
      `kubectl apply --server-side --subresource=status` (KEP-2590);
    - bindings: a v1 Binding per scheduled pod, what the scheduler posts to pods/binding, for
      `kubectl create` (a pod's nodeName cannot be changed by an update).
    """
    out: list[dict[str, Any]] = []
    for r in results:
        if r.nominated and kind == "objects":
            out.append(encode(r.pod))
        if not r.node:
            continue
        if kind == "objects":
            out.append(encode(r.pod))
            out.extend(encode(c) for c in r.claims)
        elif kind == "claim-status":
            for claim in r.claims:
                doc = encode(claim)
                names = {"name": claim.metadata.name, "namespace": claim.metadata.namespace}
                out.append({**_type_of(doc), "metadata": names, "status": doc.get("status", {})})
        else:
            meta = ObjectMeta(name=r.key[1], namespace=r.key[0], uid=r.pod.metadata.uid)
            target = ObjectReference(api_version="v1", kind="Node", name=r.node)
            out.append(encode(Binding(metadata=meta, target=target)))
    return out


def _type_of(doc: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": doc["apiVersion"], "kind": doc["kind"]}


def check_results(state: ClusterState, results: list[PodResult]) -> list[str]:
    problems = []
    for r in results:
        if r.node and r.claims:
            for p in validate_allocation(state, state.nodes[r.node], r.claims):
                problems.append(f"{r.key[0]}/{r.key[1]}: {p}")
    return problems


@click.command("schedule")
@filename_option()
@profile_option
@click.option("--check", is_flag=True, help="Validate every allocation independently.")
@click.option(
    "--manifests",
    "manifest_kind",
    type=click.Choice(["objects", "claim-status", "bindings"]),
    default="objects",
    show_default=True,
    help="What -o yaml writes: the scheduled Pods and ResourceClaims (to read back with -f); "
    "the claims' status for `kubectl apply --server-side --subresource=status`; or the "
    "Bindings for `kubectl create`.",
)
@output_option
def schedule(
    filenames: tuple[str, ...],
    check: bool,
    manifest_kind: str,
    output: str,
) -> None:
    """Place every pod without spec.nodeName; print placements, allocations and reasons."""
    profile = chosen_profile()
    state = load_state(filenames, select=False)
    shown = shown_pods(state)
    gated = [p for p in gated_pods(state) if shown(key_of(p))]
    compared = draplan_answers(state, profile) if output in ("json", "wide") else {}
    results = [r for r in Scheduler(profile, post_filter=True).run(state) if shown(r.key)]
    scheduled = sum(1 for r in results if r.node)
    nominated = sum(1 for r in results if r.nominated)
    preempted = sum(len(r.victims) for r in results)
    doc: dict[str, Any] = {
        "pods": [result_doc(r, compared.get(r.key)) for r in results]
        + [gated_doc(p) for p in gated],
        "summary": {
            "scheduled": scheduled,
            "unschedulable": len(results) - scheduled,
            "gated": len(gated),
            "nominated": nominated,
            "preempted": preempted,
        },
    }
    problems = check_results(state, results) if check else []
    if check:
        doc["check"] = {"valid": not problems, "problems": problems}
    if output == "json":
        emit_json(doc)
    elif output == "yaml":
        emit_yaml(manifests(results, manifest_kind))
    else:
        headers = ["NAMESPACE", "NAME", "STATUS", "NODE", "DEVICES", "REASON"]
        wide = output == "wide"
        rows = []
        for r in results:
            devices = _devices(r)
            held = len(devices) + _plugin_devices(state, r)
            reason = r.reason.message if r.reason else ""
            if r.nominated:
                evicted = ", ".join(f"{v.metadata.namespace}/{v.metadata.name}" for v in r.victims)
                reason = f"nominated to {r.nominated}, preempting {evicted}; {reason}"
            row = [
                r.key[0],
                r.key[1],
                # The PodScheduled condition's reason when it is False; a pod that preempted
                # waits (Unschedulable) for its nominated node.
                "Scheduled" if r.node else "Nominated" if r.nominated else "Unschedulable",
                r.node or "<none>",
                held,
                reason,
            ]
            extra = [r.nominated or "<none>", ",".join(devices) or "<none>"]
            if compared:
                extra.append(_draplan_cell(r, compared.get(r.key)))
            rows.append([*row, *extra] if wide else row)
        for pod in gated:
            # kube-scheduler's PodScheduled reason for a pod it keeps out of its queue.
            row = [*key_of(pod), "SchedulingGated", "<none>", 0, gate_text(pod)]
            rows.append([*row, "<none>", "<none>", *(["="] if compared else [])] if wide else row)
        rows.extend(victim_rows(results, (3 if compared else 2) if wide else 0))
        emit_table(
            f"{scheduled} scheduled, {len(results) - scheduled} unschedulable"
            + (f" ({nominated} nominated, {preempted} pod(s) preempted)" if nominated else "")
            + (f", {len(gated)} gated" if gated else ""),
            [*headers, "NOMINATED NODE", "ALLOCATED", *(["DRAPLAN"] if compared else [])]
            if wide
            else headers,
            rows,
        )
    if problems:
        raise click.exceptions.Exit(1)


COMMANDS = [schedule]
