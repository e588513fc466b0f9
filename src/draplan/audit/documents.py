"""The result documents `why`, `metrics` and `scale` print with `-o json` and `draplan serve`
answers over HTTP: built once here, so the two never differ."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from draplan.audit.metrics import metrics
from draplan.audit.metrics_memo import MetricsMemo
from draplan.audit.poolstatus import pool_status_report
from draplan.audit.why import CATEGORIES, Diagnosis
from draplan.autoscaler import Autoscaler, Plan
from draplan.autoscaler.ca import ca_outcome
from draplan.autoscaler.notriggered import NotTriggered, not_triggered
from draplan.autoscaler.plan import default_now
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import gated_pods
from draplan.sources.files import gc_paused


def why_document(
    diagnoses: Sequence[Diagnosis], shown: Callable[[ObjectKey], bool] | None = None
) -> dict[str, Any]:
    """The pods shown (all by default), each with its category, and the count per category."""
    kept = [d for d in diagnoses if shown is None or shown(d.pod)]
    summary = Counter(d.category for d in kept)
    return {
        "pods": [d.to_dict() for d in kept],
        "summary": {c: summary[c] for c in CATEGORIES if summary[c]},
    }


def metrics_document(state: ClusterState, memo: MetricsMemo | None = None) -> dict[str, Any]:
    """The metrics, and each resource pool in ResourcePoolStatusRequest's terms."""
    statuses = memo.pool_status if memo is not None else None
    with gc_paused(freeze=False):
        return {**metrics(state, memo).to_dict(), **pool_status_report(state, statuses)}


def scale_up_document(state: ClusterState, autoscaler: Autoscaler) -> dict[str, Any]:
    """The plan document's `scaleUp` alone: the nodes the plan adds, without the reasons, the
    moves offered and the scale-down that `plan_document` adds to it (a node a one-pod move
    spares is not added, as there). `state` is left as it was."""
    with state.forked():
        plan = autoscaler.plan(state, explain=False, scale_down=False, moves=True)
        return {"scaleUp": plan.to_dict()["scaleUp"]}


def plan_document(
    state: ClusterState,
    autoscaler: Autoscaler,
    *,
    moves: bool = True,
    reasons: bool = True,
    ca: bool = True,
) -> tuple[Plan, dict[str, Any]]:
    """The plan for the pending pods now, and its document with the scheduling-gated pods
    (which no scale-up is for); with `reasons`, what an empty node of each pool, as draplan
    sees it, says to the pods still pending (in CA's NotTriggerScaleUp words); with `ca`, what
    Cluster Autoscaler itself does on the same cluster, with its own events for the pods it
    never scales for. `state` is left as it was."""
    gated = gated_pods(state)
    with state.forked():  # the plan places pods on the state it is given
        plan = autoscaler.plan(state, moves=moves)
        doc = plan.to_dict()
    doc["gated"] = [
        {"pod": "/".join(key_of(p)), "schedulingGates": [g.name for g in p.spec.scheduling_gates]}
        for p in gated
    ]
    now = default_now(state)
    if reasons and plan.pending:
        added: dict[str, int] = {}
        for o in plan.scale_up:
            added[o.pool.metadata.name] = added.get(o.pool.metadata.name, 0) + len(o.nodes)
        blocked = not_triggered(
            state,
            autoscaler.scheduler,
            [(p, "") for _, p in sorted(state.node_pools.items())],
            [
                state.pods[k]
                for k, _, _ in plan.pending
                if k in state.pods and k not in plan.unscaled
            ],
            added,
        )
        doc["notTriggerScaleUp"] = [_not_triggered(b) for b in blocked]
    if ca:
        outcome = ca_outcome(state, now, autoscaler.limits, autoscaler.ca_scheduler)
        doc["clusterAutoscaler"] = outcome.to_dict()
        # What draplan's plan adds nodes of CA's groups for and no option of CA's ever would:
        # CA's own words, from its groups alone.
        offered = {k for o in outcome.options for k in o.pods}
        theirs = {g.pool.metadata.name for g in outcome.groups}
        grown = {n.node.metadata.name for o in plan.scale_up if o.pool.metadata.name in theirs
                 for n in o.nodes}  # fmt: skip
        left = [k for k, node in sorted(plan.placed_on_new.items()) if node in grown]
        left = [k for k in left if k not in offered and k not in outcome.started]
        own = [(g.template, g.note) for g in outcome.groups if g.template is not None]
        blocked = not_triggered(
            state, autoscaler.scheduler, own, [state.pods[k] for k in left if k in state.pods]
        )
        doc["clusterAutoscaler"]["notTriggerScaleUp"] = [_not_triggered(b) for b in blocked]
    return plan, doc


def _not_triggered(b: NotTriggered) -> dict[str, Any]:
    return {
        "pod": "/".join(b.pod),
        "message": b.message,
        "nodeGroups": b.groups,
        **({"notes": b.notes} if b.notes else {}),
    }
