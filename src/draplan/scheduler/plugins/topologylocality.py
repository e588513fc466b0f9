"""TopologyLocality: prefer nodes where the pod's devices come from groups that are already in
use, keeping whole NUMA / PCIe-root / NVLink groups and whole partitionable GPUs free."""

from __future__ import annotations

from draplan.allocator import Outcome
from draplan.api.core_v1 import Node
from draplan.cluster.devices import DeviceView
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import CycleState, PodInfo
from draplan.scheduler.plugins.names import DYNAMIC_RESOURCES, TOPOLOGY_LOCALITY


def _groups(view: DeviceView) -> list[object]:
    groups: list[object] = []
    if view.topology is not None:
        groups.append(("topology", view.pool_id, view.topology))
    for ckey, _ in view.consumes:
        groups.append(("counters", view.pool_id, ckey[0]))
    return groups


def group_breakage(state: ClusterState, node: Node, outcome: Outcome) -> tuple[int, int]:
    """(groups the allocation touches, of which entirely free before it)."""
    chosen: list[DeviceView] = []
    for claim in outcome.claims:
        alloc = claim.status.allocation
        for res in alloc.devices.results if alloc else ():
            view = state.device((res.driver, res.pool, res.device))
            if view is not None:
                chosen.append(view)
    touched: set[object] = set()
    for view in chosen:
        touched.update(_groups(view))
    if not touched:
        return 0, 0
    busy: set[object] = set()
    for pool in state.pools_for_node(node):
        for view in pool.devices:
            if state.in_use(view.id) or state.shared_use(view.id) is not None:
                busy.update(_groups(view))
    return len(touched), len(touched - busy)


class TopologyLocality:
    name = TOPOLOGY_LOCALITY

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        outcome = cycle.data.get((DYNAMIC_RESOURCES, node.metadata.name))
        if not isinstance(outcome, Outcome) or not outcome.ok:
            return 0.0
        touched, broken = group_breakage(state, node, outcome)
        if not touched:
            return 100.0
        return 100.0 * (1 - broken / touched)
