"""Scale-down: remove under-utilized nodes only when every pod on them, claims included, can be
placed elsewhere by the same scheduler; never break a running gang; honour safe-to-evict."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from draplan.api.draplan_v1alpha1 import NodePool
from draplan.autoscaler.templates import POOL_LABEL, pool_members
from draplan.autoscaler.utilization import scale_down_utilization
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import Scheduler
from draplan.scheduler.gangs import find_gangs

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
THRESHOLD = 0.5  # --scale-down-utilization-threshold and --scale-down-gpu-utilization-threshold


@dataclass(frozen=True)
class Removal:
    node: str
    reason: str


def _deallocate_for_move(state: ClusterState, node_name: str, pods: set[ObjectKey]) -> str:
    """Release the claims of the node's pods so they can be allocated elsewhere; a claim also
    used by a pod elsewhere cannot move (returns why), as upstream never reallocates it."""
    for claim in list(state.claims.values()):
        alloc = claim.status.allocation
        if alloc is None:
            continue
        users = {(claim.metadata.namespace, r.name) for r in claim.status.reserved_for}
        if not users & pods:
            continue
        if users - pods:
            return (
                f"claim {claim.metadata.namespace}/{claim.metadata.name} is also used by "
                "pods on other nodes"
            )
        status = msgspec.structs.replace(claim.status, allocation=None, reserved_for=())
        state.put_claim(msgspec.structs.replace(claim, status=status))
    return ""


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
            if _deallocate_for_move(state, name, keys):
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
