"""`draplan scale`: the scale-up and scale-down plan from NodePools."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import click

from draplan.api.core_v1 import Pod
from draplan.audit.documents import plan_document
from draplan.autoscaler import DEFAULT_EXPANDERS, EXPANDERS, Autoscaler, Limits
from draplan.autoscaler.manifests import TARGETS, manifests
from draplan.autoscaler.options import EXPENDABLE_CUTOFF
from draplan.cli.ca_flags import scale_down_flags, scale_down_options
from draplan.cli.cmd_schedule import gate_text
from draplan.cli.common import (
    filename_option,
    input_settings,
    load_state,
    output_option,
    prices_option,
    with_derived_pools,
)
from draplan.cli.output import emit_json, emit_table, emit_yaml
from draplan.cli.profiles import chosen_profile, profile_option
from draplan.cluster.labelselector import parse_selector
from draplan.cluster.podresources import is_waiting
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import gated_pods


def unselected(state: ClusterState) -> list[Pod]:
    """The pending pods `-l` does not select, taken out of `state`: the plan is for the
    selected ones, but scale-down keeps room for every pending pod."""
    selector = input_settings().selector
    if not selector:
        return []
    selects = parse_selector(selector)
    left = [p for p in state.pods.values() if not p.spec.node_name]
    left = [p for p in left if not selects(p.metadata.labels)]
    for pod in left:
        del state.pods[key_of(pod)]
    return [p for p in left if is_waiting(p)]


def _price_cap(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    # click's float takes "nan" and "inf", which no budget arithmetic survives.
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise click.BadParameter(f"{value!r} is not a finite non-negative number")
    return value


@click.command("scale")
@filename_option()
@click.option("--legacy", is_flag=True, help="Plan with device-plugin counts (today's failure).")
@profile_option
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
    "--expendable-pods-priority-cutoff",
    "cutoff",
    type=click.IntRange(-(1 << 31), (1 << 31) - 1),
    default=EXPENDABLE_CUTOFF,
    show_default=True,
    help="As Cluster Autoscaler's flag: pods of lower priority are not scaled for and do not "
    "keep a node from being removed.",
)
@click.option(
    "--moves/--no-moves",
    default=True,
    show_default=True,
    help="Show moves of running pods that would spare new nodes (DRA-aware plans).",
)
@click.option(
    "--target",
    type=click.Choice(TARGETS),
    default="auto",
    show_default=True,
    help="What -o yaml writes: auto (each pool as the autoscaler that grows it reads it), ca "
    "(ProvisioningRequests and PodTemplates for Cluster Autoscaler), karpenter (NodeClaims), "
    "draplan (NodePools with their target size). A pool that cannot be written so is one "
    "warning line; the others are written.",
)
@click.option(
    "--check-capacity",
    is_flag=True,
    help="With --target ca: check-capacity requests (ask whether the room exists first) "
    "instead of best-effort-atomic-scale-up.",
)
@scale_down_flags
@prices_option
@output_option
def scale(
    filenames: tuple[str, ...],
    legacy: bool,
    expander: str,
    max_nodes_total: int | None,
    max_devices_total: int | None,
    max_cost_per_hour: float | None,
    cutoff: int,
    moves: bool,
    target: str,
    check_capacity: bool,
    prices_path: str | None,
    output: str,
    **flags: Any,
) -> None:
    """Plan node additions (and removals) for the pending pods, from the NodePools given
    (or, with none, from the cluster's node groups); removals by Cluster Autoscaler's rules
    and flags, and of Karpenter's nodes by Karpenter's consolidation."""
    chain = tuple(e.strip() for e in expander.split(",") if e.strip())
    unknown = [e for e in chain if e not in EXPANDERS]
    if unknown or not chain:
        raise click.BadParameter(
            f"unknown expander {unknown[0] if unknown else ''!r}", param_hint="--expander"
        )
    state = load_state(filenames, select=False)
    profile = chosen_profile()
    state = with_derived_pools(state, prices_path, profile.kube)
    autoscaler = Autoscaler(
        profile,
        Limits(max_nodes_total, max_devices_total, max_cost_per_hour, cutoff),
        chain,
        legacy=legacy,
        scale_down=scale_down_options(flags),
        unplanned=unselected(state),
    )
    gated = gated_pods(state)
    plan, doc = plan_document(
        state,
        autoscaler,
        moves=moves,
        reasons=output in ("json", "wide"),
        ca=output in ("table", "wide", "json"),
    )
    if output == "json":
        emit_json(doc)
    elif output == "yaml":
        docs, refused = manifests(plan, state, target, check_capacity)
        for line in refused:
            click.echo(f"warning: {line}", err=True)
        emit_yaml(docs)
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
        if "clusterAutoscaler" in doc:
            emit_ca_table(doc["clusterAutoscaler"])
        made = [m for m in doc["moves"] if m["made"]]
        offered = [m for m in doc["moves"] if not m["made"]]
        if made:
            _moves_table(f"moves made instead of adding {len(made)} node(s)", made, wide)
        if offered:
            title = f"or move running pods instead of adding {len(offered)} of these nodes"
            _moves_table(title, offered, wide)
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
                    ": Cluster Autoscaler's after --scale-down-delay-after-add (it removes "
                    "nothing in a loop that adds nodes)"
                    if delayed
                    else ""
                ),
                ["NODE", "POOL", "AUTOSCALER", "AFTER", "REASON"],
                [
                    (
                        r["node"],
                        r.get("pool", ""),
                        r["autoscaler"],
                        r.get("unneededFor", r.get("after", "")),
                        r["reason"],
                    )
                    for r in doc["scaleDown"]
                ],
            )
        if kept := doc.get("scaleDownKept", []):
            emit_kept(kept, wide)
        if doc["pending"]:
            # The pools' side (and, in a legacy plan, the count view's mistake) in wide output
            # and always for --legacy, whose point is that mistake.
            why_pools = wide or legacy
            emit_table(
                "still pending",
                ["NAMESPACE", "NAME", "REASON"] + (["AUTOSCALER"] if why_pools else []),
                [
                    [*p["pod"].split("/", 1), _reason_text(p["reason"], why_pools)]
                    + ([p["reason"].get("autoscaler", "")] if why_pools else [])
                    for p in doc["pending"]
                ],
            )
        if blocked := doc.get("notTriggerScaleUp", []):
            emit_table(
                "not triggering scale-up (per node group, as Cluster Autoscaler's "
                "NotTriggerScaleUp event)",
                ["NAMESPACE", "NAME", "NODE GROUP", "REASON"],
                [
                    [*b["pod"].split("/", 1), group, why]
                    for b in blocked
                    for group, why in sorted(b["nodeGroups"].items())
                ],
            )
        if gated:
            emit_table(
                "scheduling-gated (not scaled for)",
                ["NAMESPACE", "NAME", "REASON"],
                [(*key_of(p), gate_text(p)) for p in gated],
            )


def _reason_text(reason: dict[str, Any], autoscaler_column: bool) -> str:
    """A pod nominated to a node has no scheduler message now (it binds there once its
    victims are gone): without the AUTOSCALER column, the autoscaler's words say why it pends."""
    message = str(reason.get("message", ""))
    if message or autoscaler_column:
        return message
    return str(reason.get("autoscaler", ""))


def _moves_table(title: str, moves: list[dict[str, Any]], wide: bool) -> None:
    saving = round(sum(m["savingPerHour"] for m in moves), 4)
    emit_table(
        f"{title} (saves ${saving}/h; checked by the scheduler)",
        (["INSTEAD OF"] if wide else []) + ["POOL", "SAVES/H", "MOVE", "THEN"],
        [
            ([m["insteadOf"]] if wide else [])
            + [
                m["pool"],
                m["savingPerHour"],
                ", ".join(f"{p} to {n}" for p, n in m["move"].items()) or "-",
                ", ".join(f"{p} on {n}" for p, n in m["place"].items()),
            ]
            for m in moves
        ],
    )


def emit_kept(kept: list[dict[str, Any]], wide: bool) -> None:
    """The nodes scale-down keeps: each with the autoscaler that owns it and its rule in wide
    output, else a count per autoscaler and rule (most are simply in use)."""
    if wide:
        emit_table(
            "kept by scale-down",
            ["NODE", "POOL", "AUTOSCALER", "RULE", "WHY"],
            [
                (k["node"], k.get("pool", ""), k["autoscaler"], k["reason"], k["message"])
                for k in kept
            ],
        )
        return
    counts = Counter((k["autoscaler"], k["reason"]) for k in kept)
    emit_table(
        f"kept by scale-down: {len(kept)} nodes (-o wide names each)",
        ["AUTOSCALER", "RULE", "NODES"],
        [(by, rule, n) for (by, rule), n in sorted(counts.items())],
    )


def emit_ca_table(ca: dict[str, Any]) -> None:
    """What Cluster Autoscaler itself does on the same cluster, group by group."""
    chosen = ca["scaleUp"]
    if not ca["nodeGroups"]:
        title = "no node group it manages (Karpenter's nodes are not its)"
        emit_table(
            f"Cluster Autoscaler {ca['version']} on the same cluster: {title}", ["NODE GROUP"], []
        )
        return
    if chosen is None:
        title = "nothing: no node group's template hosts a pending pod"
    else:
        title = (
            f"+{chosen['add']} {chosen['nodeGroup']} for {len(chosen['pods'])} pods, "
            f"{len(chosen['podsStarted'])} start"
        )
    options = {o["nodeGroup"]: o for o in ca["options"]}
    rows = []
    for g in ca["nodeGroups"]:
        option = options.get(g["nodeGroup"])
        offered = f"+{option['add']} for {len(option['pods'])} pods" if option else "-"
        template = g["template"] + (f"; {g['note']}" if g.get("note") else "")
        rows.append([g["nodeGroup"], offered, template])
    emit_table(
        f"Cluster Autoscaler {ca['version']} ({ca['expander']}) on the same cluster: {title}",
        ["NODE GROUP", "OPTION", "TEMPLATE"],
        rows,
    )
    if left := ca.get("notTriggerScaleUp", []):
        emit_table(
            "pods draplan's plan adds nodes for and Cluster Autoscaler never would (its event)",
            ["NAMESPACE", "NAME", "MESSAGE"],
            [[*b["pod"].split("/", 1), b["message"]] for b in left],
        )


COMMANDS = [scale]
