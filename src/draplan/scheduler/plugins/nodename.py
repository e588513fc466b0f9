"""NodeName: a pod that names its node fits only there."""

from __future__ import annotations

from draplan.api.core_v1 import Node
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import SUCCESS, CycleState, PodInfo, Status, unschedulable
from draplan.scheduler.plugins.names import NODE_NAME

REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NODE_NAME

    def filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        wanted = pod.pod.spec.node_name
        if wanted and wanted != node.metadata.name:
            return unschedulable(REASON, resolvable=False)
        return SUCCESS
