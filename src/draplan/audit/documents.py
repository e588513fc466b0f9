"""The result documents `why`, `metrics` and `scale` print with `-o json` and `draplan serve`
answers over HTTP: built once here, so the two never differ."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from draplan.audit.metrics import metrics
from draplan.audit.why import CATEGORIES, Diagnosis
from draplan.autoscaler import Autoscaler, Plan
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import gated_pods


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


def metrics_document(state: ClusterState) -> dict[str, Any]:
    return metrics(state).to_dict()


def plan_document(
    state: ClusterState, autoscaler: Autoscaler, *, moves: bool = True
) -> tuple[Plan, dict[str, Any]]:
    """The plan for the pending pods now, and its document with the scheduling-gated pods
    (which no scale-up is for)."""
    gated = gated_pods(state)
    plan = autoscaler.plan(state, moves=moves)
    doc = plan.to_dict()
    doc["gated"] = [
        {"pod": "/".join(key_of(p)), "schedulingGates": [g.name for g in p.spec.scheduling_gates]}
        for p in gated
    ]
    return plan, doc
