"""NodeAffinity: spec.nodeSelector and required node affinity (all operators)."""

from __future__ import annotations

from draplan.api.core_v1 import Node, Pod
from draplan.cluster.nodeselector import selector_matches
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import SUCCESS, CycleState, PodInfo, Status, unschedulable
from draplan.scheduler.plugins.names import NODE_AFFINITY

REASON = "node(s) didn't match Pod's node affinity/selector"


def pod_matches_node(pod: Pod, node: Node) -> bool:
    """nodeSelector labels all equal, and (if set) one required affinity term matches."""
    labels = node.metadata.labels
    for key, value in pod.spec.node_selector.items():
        if labels.get(key) != value:
            return False
    aff = pod.spec.affinity
    required = (
        aff.node_affinity.required_during_scheduling_ignored_during_execution
        if (aff is not None and aff.node_affinity is not None)
        else None
    )
    return required is None or selector_matches(required, node)


class NodeAffinity:
    name = NODE_AFFINITY

    def filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        if pod_matches_node(pod.pod, node):
            return SUCCESS
        return unschedulable(REASON, resolvable=False)
