"""TaintToleration: NoSchedule and NoExecute node taints must be tolerated."""

from __future__ import annotations

from draplan.api.core_v1 import Node, Taint, Toleration
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import SUCCESS, CycleState, PodInfo, Status, unschedulable
from draplan.scheduler.plugins.names import TAINT_TOLERATION


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
    for taint in taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


class TaintTolerationPlugin:
    name = TAINT_TOLERATION

    def filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        taint = untolerated(node.spec.taints, pod.pod.spec.tolerations)
        if taint is None:
            return SUCCESS
        return unschedulable(
            f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}", resolvable=False
        )
