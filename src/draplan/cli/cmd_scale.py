"""`draplan scale`: the scale-up and scale-down plan from NodePools."""

from __future__ import annotations

import math
from typing import Any

import click
import msgspec

from draplan.api.autoscaling import (
    BEST_EFFORT_ATOMIC,
    PodSet,
    PodTemplateRef,
    ProvisioningRequest,
    ProvisioningRequestSpec,
)
from draplan.api.codec import encode
from draplan.api.core_v1 import PodTemplate, PodTemplateSpec
from draplan.api.meta import ObjectMeta
from draplan.autoscaler import DEFAULT_EXPANDERS, EXPANDERS, Autoscaler, Limits, Plan
from draplan.autoscaler.provreq import with_status
from draplan.cli.cmd_schedule import gate_text, profile_from
from draplan.cli.common import filename_option, load_state, output_option
from draplan.cli.output import emit_json, emit_table, emit_yaml
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import gated_pods
from draplan.scheduler.gangs import find_gangs

TARGET_SIZE = "draplan.io/target-size-increase"
# Moves that would spare some of the pool's new nodes: the user's other choice.
MOVES_INSTEAD = "draplan.io/moves-instead"


def gang_requests(state: ClusterState, plan: Plan) -> list[dict[str, Any]]:
    """For every gang the plan scales up, the PodTemplates and a best-effort-atomic
    ProvisioningRequest that ask Cluster Autoscaler for its capacity all at once."""
    scaled = {k for o in plan.scale_up for k in o.pods}
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, ...]] = set()
    for key, gang in sorted(find_gangs(state).items()):
        if key not in scaled or gang.key in seen:
            continue
        seen.add(gang.key)
        ns = key[0]
        base = "-".join(gang.key[2:]).strip("-") or key[1]
        specs: list[tuple[Any, int]] = []
        for member in gang.members:
            pod = state.pods.get(member)
            if pod is None:
                continue
            spec = msgspec.structs.replace(pod.spec, node_name="")
            for i, (known, n) in enumerate(specs):
                if known == spec:
                    specs[i] = (known, n + 1)
                    break
            else:
                specs.append((spec, 1))
        sets = []
        for i, (spec, count) in enumerate(specs):
            name = f"{base}-{i}"
            out.append(
                encode(
                    PodTemplate(
                        metadata=ObjectMeta(name=name, namespace=ns),
                        template=PodTemplateSpec(spec=spec),
                    )
                )
            )
            sets.append(PodSet(pod_template_ref=PodTemplateRef(name=name), count=count))
        out.append(
            encode(
                ProvisioningRequest(
                    metadata=ObjectMeta(name=base, namespace=ns),
                    spec=ProvisioningRequestSpec(
                        pod_sets=tuple(sets), provisioning_class_name=BEST_EFFORT_ATOMIC
                    ),
                )
            )
        )
    return out


def manifests(plan: Plan, state_pools: dict[str, Any], state: ClusterState) -> list[dict[str, Any]]:
    """What to apply: ProvisioningRequests with their new status, one per scaled gang (with its
    PodTemplates), and each pool's target size."""
    out: list[dict[str, Any]] = []
    for pr, conds in plan.provisioning:
        out.append(encode(with_status(pr, conds)))
    out.extend(gang_requests(state, plan))
    added: dict[str, int] = {}
    for o in plan.scale_up:
        added[o.pool.metadata.name] = added.get(o.pool.metadata.name, 0) + len(o.nodes)
    for name, n in sorted(added.items()):
        pool = state_pools[name]
        doc = encode(pool)
        annotations = doc.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[TARGET_SIZE] = str(n)
        instead = [m.text() for m in plan.moves if m.pool == name]
        if instead:
            annotations[MOVES_INSTEAD] = "; ".join(instead)
        out.append(doc)
    return out


def _price_cap(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    # click's float takes "nan" and "inf", which no budget arithmetic survives.
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise click.BadParameter(f"{value!r} is not a finite non-negative number")
    return value


@click.command("scale")
@filename_option()
@click.option("--legacy", is_flag=True, help="Plan with device-plugin counts (today's failure).")
@click.option("--profile", "profile_path", help="A draplan.io/v1alpha1 SchedulerProfile file.")
@click.option(
    "--expander",
    default=",".join(DEFAULT_EXPANDERS),
    show_default=True,
    help=f"Comma-separated chain of {', '.join(EXPANDERS)}.",
)
@click.option("--max-nodes-total", type=click.IntRange(min=0), help="Cluster-wide node limit.")
@click.option(
    "--max-devices-total", type=click.IntRange(min=0), help="Cluster-wide DRA device limit."
)
@click.option(
    "--max-cost-per-hour",
    type=float,
    callback=_price_cap,
    help="Cap on the cost the plan adds.",
)
@click.option(
    "--moves/--no-moves",
    default=True,
    show_default=True,
    help="Show moves of running pods that would spare new nodes (DRA-aware plans).",
)
@output_option
def scale(
    filenames: tuple[str, ...],
    legacy: bool,
    profile_path: str | None,
    expander: str,
    max_nodes_total: int | None,
    max_devices_total: int | None,
    max_cost_per_hour: float | None,
    moves: bool,
    output: str,
) -> None:
    """Plan node additions (and removals) for the pending pods, from the NodePools given."""
    chain = tuple(e.strip() for e in expander.split(",") if e.strip())
    unknown = [e for e in chain if e not in EXPANDERS]
    if unknown or not chain:
        raise click.BadParameter(
            f"unknown expander {unknown[0] if unknown else ''!r}", param_hint="--expander"
        )
    state = load_state(filenames)
    pools = dict(state.node_pools)
    autoscaler = Autoscaler(
        profile_from(profile_path),
        Limits(max_nodes_total, max_devices_total, max_cost_per_hour),
        chain,
        legacy=legacy,
    )
    gated = gated_pods(state)
    plan = autoscaler.plan(state, moves=moves)
    doc = plan.to_dict()
    doc["gated"] = [
        {"pod": "/".join(key_of(p)), "schedulingGates": [g.name for g in p.spec.scheduling_gates]}
        for p in gated
    ]
    if output == "json":
        emit_json(doc)
    elif output == "yaml":
        emit_yaml(manifests(plan, pools, state))
    else:
        s = doc["summary"]
        wide = output == "wide"  # node names only in wide: a big plan adds hundreds
        emit_table(
            f"{'legacy' if legacy else 'DRA-aware'} plan: +{s['nodesAdded']} nodes, "
            f"${s['costPerHour']}/h, {s['podsPlaced']} pods placed, "
            f"{s['podsFitExisting']} fit existing nodes, "
            f"{s['podsStillPending']} pending, {s['wastedNodes']} wasted",
            ["POOL", "ADD", "PODS", "COST/H"] + (["NODES"] if wide else []),
            [
                [u["pool"], u["add"], len(u["pods"]), u["costPerHour"]]
                + ([",".join(u["nodes"])] if wide else [])
                for u in doc["scaleUp"]
            ],
        )
        if doc["moves"]:
            saving = round(sum(m["savingPerHour"] for m in doc["moves"]), 4)
            emit_table(
                f"or move running pods instead of adding {len(doc['moves'])} of these nodes "
                f"(saves ${saving}/h; checked by the scheduler)",
                (["INSTEAD OF"] if wide else []) + ["POOL", "SAVES/H", "MOVE", "THEN"],
                [
                    ([m["insteadOf"]] if wide else [])
                    + [
                        m["pool"],
                        m["savingPerHour"],
                        ", ".join(f"{p} to {n}" for p, n in m["move"].items()) or "-",
                        ", ".join(f"{p} on {n}" for p, n in m["place"].items()),
                    ]
                    for m in doc["moves"]
                ],
            )
        if doc["wasted"]:
            emit_table(
                "wasted nodes",
                ["POOL", "NODE", "REASON"],
                [(w["pool"], w["node"], w["reason"]) for w in doc["wasted"]],
            )
        if doc["scaleDown"]:
            delayed = any(r.get("delayedByScaleUp") for r in doc["scaleDown"])
            emit_table(
                "scale-down"
                + (
                    " after --scale-down-delay-after-add (Cluster Autoscaler removes nothing "
                    "in a loop that adds nodes)"
                    if delayed
                    else ""
                ),
                ["NODE", "POOL", "REASON"],
                [(r["node"], r.get("pool", ""), r["reason"]) for r in doc["scaleDown"]],
            )
        if doc["pending"]:
            # The pools' side (and, in a legacy plan, the count view's mistake) in wide output
            # and always for --legacy, whose point is that mistake.
            why_pools = wide or legacy
            emit_table(
                "still pending",
                ["NAMESPACE", "NAME", "REASON"] + (["AUTOSCALER"] if why_pools else []),
                [
                    [*p["pod"].split("/", 1), p["reason"].get("message", "")]
                    + ([p["reason"].get("autoscaler", "")] if why_pools else [])
                    for p in doc["pending"]
                ],
            )
        if gated:
            emit_table(
                "scheduling-gated (not scaled for)",
                ["NAMESPACE", "NAME", "REASON"],
                [(*key_of(p), gate_text(p)) for p in gated],
            )


COMMANDS = [scale]
