"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint."""

from __future__ import annotations

from draplan.api.core_v1 import Node, Taint
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import SUCCESS, CycleState, PodInfo, Status, unschedulable
from draplan.scheduler.plugins.names import NODE_UNSCHEDULABLE
from draplan.scheduler.plugins.tainttoleration import tolerates

UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


class NodeUnschedulable:
    name = NODE_UNSCHEDULABLE

    def filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        if not node.spec.unschedulable:
            return SUCCESS
        if any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.pod.spec.tolerations):
            return SUCCESS
        return unschedulable("node(s) were unschedulable", resolvable=False)
