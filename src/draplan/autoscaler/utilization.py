"""How much of a node is used, in DRA terms (devices, shared counters, consumed capacity) and
in cpu / memory: for least-waste (scale-up) and for scale-down eligibility."""

from __future__ import annotations

from dataclasses import dataclass

from draplan.api.core_v1 import Node
from draplan.cluster.devices import Pool
from draplan.cluster.podresources import node_allocatable
from draplan.cluster.state import ClusterState


@dataclass(frozen=True)
class Usage:
    cpu: float
    memory: float
    devices: float | None  # None: the node has no DRA devices
    counters: float | None
    capacity: float | None


def _pool_device_use(state: ClusterState, pool: Pool) -> float:
    used = sum(1 for v in pool.devices if state.in_use(v.id) or state.shared_use(v.id) is not None)
    return used / len(pool.devices) if pool.devices else 0.0


def _pool_counter_use(state: ClusterState, pool: Pool) -> float:
    """Cluster Autoscaler's rule for partitionable pools: the average over counter sets of the
    most used counter in the set."""
    per_set: dict[str, float] = {}
    for (cset, cname), total in pool.counters.items():
        if total <= 0:
            continue
        frac = state.counter_used(pool.id, (cset, cname)) / total
        per_set[cset] = max(per_set.get(cset, 0.0), frac)
    return sum(per_set.values()) / len(per_set) if per_set else 0.0


def _pool_capacity_use(state: ClusterState, pool: Pool) -> float | None:
    fracs = []
    for v in pool.devices:
        if not v.multi or not v.capacity:
            continue
        use = state.shared_use(v.id)
        consumed = use.consumed if use is not None else {}
        fracs.append(max(consumed.get(k, 0) / c for k, c in v.capacity.items() if c > 0))
    return sum(fracs) / len(fracs) if fracs else None


def node_usage(state: ClusterState, node: Node) -> Usage:
    name = node.metadata.name
    alloc = node_allocatable(node)
    used = state.requested(name)
    cpu = used.get("cpu", 0) / alloc["cpu"] if alloc.get("cpu") else 0.0
    mem = used.get("memory", 0) / alloc["memory"] if alloc.get("memory") else 0.0
    local = [
        p
        for p in state.pools_for_node(node)
        if p.devices and all(v.node_name == name for v in p.devices)
    ]
    if not local:
        return Usage(cpu, mem, None, None, None)
    devices = sum(_pool_device_use(state, p) for p in local) / len(local)
    partitionable = [p for p in local if p.counters]
    counters = (
        sum(_pool_counter_use(state, p) for p in partitionable) / len(partitionable)
        if partitionable
        else None
    )
    caps = [c for c in (_pool_capacity_use(state, p) for p in local) if c is not None]
    capacity = sum(caps) / len(caps) if caps else None
    return Usage(cpu, mem, devices, counters, capacity)


def waste(state: ClusterState, nodes: list[Node]) -> float:
    """least-waste over new nodes: the mean unused fraction of every resource kind they offer,
    DRA devices, counters and shared capacity included (Cluster Autoscaler counts only cpu and
    memory)."""
    if not nodes:
        return 1.0
    fractions: list[float] = []
    for node in nodes:
        u = node_usage(state, node)
        parts = [u.cpu, u.memory] + [
            x for x in (u.devices, u.counters, u.capacity) if x is not None
        ]
        fractions.append(1.0 - sum(parts) / len(parts))
    return sum(fractions) / len(fractions)


def scale_down_utilization(state: ClusterState, node: Node) -> float:
    """Cluster Autoscaler's utilization for DRA nodes: the maximum over node-local pools of
    allocated/total devices (or, for partitionable pools, counter utilization); else
    max(cpu, memory)."""
    name = node.metadata.name
    local = [
        p
        for p in state.pools_for_node(node)
        if p.devices and all(v.node_name == name for v in p.devices)
    ]
    if local:
        return max(
            _pool_counter_use(state, p) if p.counters else _pool_device_use(state, p) for p in local
        )
    u = node_usage(state, node)
    return max(u.cpu, u.memory)
