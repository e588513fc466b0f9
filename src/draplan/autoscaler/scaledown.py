"""Scale-down: remove under-utilized nodes only when every pod on them, claims included, can be
placed elsewhere by the same scheduler; never break a running gang; honour safe-to-evict."""

from __future__ import annotations

from dataclasses import dataclass

from draplan.api.draplan_v1alpha1 import NodePool
from draplan.autoscaler.templates import POOL_LABEL, pool_members
from draplan.autoscaler.utilization import scale_down_utilization
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import Scheduler
from draplan.scheduler.claims import release_claims
from draplan.scheduler.gangs import find_gangs

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
THRESHOLD = 0.5  # --scale-down-utilization-threshold and --scale-down-gpu-utilization-threshold


@dataclass(frozen=True)
class Removal:
    node: str
    reason: str


def plan_scale_down(
    state: ClusterState, scheduler: Scheduler, pools: dict[str, NodePool], protected: set[str]
) -> list[Removal]:
    """Candidates in name order; each accepted removal is kept in `state` for the next one."""
    removals: list[Removal] = []
    gangs = find_gangs(state)
    for name in sorted(state.nodes.keys()):
        if name in protected:
            continue
        node = state.nodes[name]
        pool = pools.get(node.metadata.labels.get(POOL_LABEL, ""))
        if pool is not None and len(pool_members(state, pool)) <= pool.spec.min_nodes:
            continue
        utilization = scale_down_utilization(state, node)
        if utilization > THRESHOLD:
            continue
        pods = [p for p in state.pods.values() if p.spec.node_name == name and not is_terminal(p)]
        if any(p.metadata.annotations.get(SAFE_TO_EVICT) == "false" for p in pods):
            continue
        if any(key_of(p) in gangs for p in pods):
            continue  # never break a running gang
        keys = {key_of(p) for p in pods}
        with state.forked():
            if release_claims(state, keys):
                continue
            for pod in pods:
                state.unbind_pod(pod)
            state.remove_node(name)
            moved = all(scheduler.schedule_pod(state, state.pods[k]).node for k in sorted(keys))
            if moved:
                state.commit()
                state.fork()
        if moved:
            what = f"{len(pods)} pod(s) fit elsewhere" if pods else "no pod uses it"
            removals.append(Removal(name, f"utilization {utilization:.2f} <= {THRESHOLD}; {what}"))
    return removals
