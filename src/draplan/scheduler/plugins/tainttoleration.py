"""TaintToleration (taint_toleration.go): a node's NoSchedule and NoExecute taints must be
tolerated; among the nodes left, fewer untolerated PreferNoSchedule taints score higher."""

from __future__ import annotations

from draplan.api.core_v1 import Node, Taint, Toleration
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import (
    MAX_NODE_SCORE,
    SUCCESS,
    CycleState,
    NodeScore,
    PodInfo,
    Status,
    default_normalize_score,
    unschedulable,
)
from draplan.scheduler.plugins.names import TAINT_TOLERATION

# Since kubernetes#134740 (1.35, in 1.36 and 1.37) the message no longer names the taint.
REASON = "node(s) had untolerated taint(s)"
PREFER_NO_SCHEDULE = "PreferNoSchedule"


def tolerates(tol: Toleration, taint: Taint) -> bool:
    """core/v1 Toleration.ToleratesTaint."""
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    if tol.operator == "Exists":
        return True
    return tol.operator in ("", "Equal") and tol.value == taint.value


def untolerated(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> Taint | None:
    """The first NoSchedule or NoExecute taint no toleration tolerates."""
    for taint in taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def intolerable_preferences(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> int:
    """countIntolerableTaintsPreferNoSchedule, with the tolerations of effect PreferNoSchedule
    or none (PreScore's getAllTolerationPreferNoSchedule)."""
    soft = [t for t in tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
    return sum(
        1
        for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE and not any(tolerates(t, taint) for t in soft)
    )


class TaintToleration:
    name = TAINT_TOLERATION

    def filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        if untolerated(node.spec.taints, pod.pod.spec.tolerations) is None:
            return SUCCESS
        return unschedulable(REASON, resolvable=False)

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> int:
        return intolerable_preferences(node.spec.taints, pod.pod.spec.tolerations)

    def normalize_score(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, scores: list[NodeScore]
    ) -> None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
