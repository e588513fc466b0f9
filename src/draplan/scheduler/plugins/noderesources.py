"""NodeResourcesFit (filter) and its LeastAllocated / MostAllocated scoring strategies."""

from __future__ import annotations

from dataclasses import dataclass

from draplan.api.core_v1 import Node
from draplan.cluster.podresources import (
    NONZERO_CPU,
    NONZERO_MEMORY,
    PODS,
    Resources,
    node_allocatable,
)
from draplan.cluster.state import ClusterState
from draplan.scheduler.extended import node_resource_requests
from draplan.scheduler.framework import SUCCESS, CycleState, PodInfo, Status, unschedulable
from draplan.scheduler.plugins.dynamicresources import DraState
from draplan.scheduler.plugins.names import (
    DYNAMIC_RESOURCES,
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    NODE_RESOURCES_FIT,
)

SCORED = ("cpu", "memory")  # kube-scheduler's default resources for the score strategies


@dataclass(frozen=True)
class InsufficientResource:
    """Typed evidence beside the reason string (upstream keeps both for autoscalers)."""

    resource: str
    requested: int
    used: int
    capacity: int


def insufficient(
    requests: Resources, used: Resources, allocatable: Resources
) -> list[InsufficientResource]:
    """The pure rule: every requested resource fits in allocatable minus what is used."""
    out = []
    for name, amount in requests.items():
        if amount <= 0 and name != PODS:
            continue
        cap = allocatable.get(name, 0)
        have = used.get(name, 0)
        if have + amount > cap:
            out.append(InsufficientResource(name, amount, have, cap))
    return out


def _reason(item: InsufficientResource) -> str:
    return "Too many pods" if item.resource == PODS else f"Insufficient {item.resource}"


class NodeResourcesFit:
    name = NODE_RESOURCES_FIT

    def filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        dra = cycle.data.get(DYNAMIC_RESOURCES)
        served = dra.served if isinstance(dra, DraState) else frozenset()
        requests = node_resource_requests(pod.requests, served, node)
        used, alloc = state.requested(node.metadata.name), node_allocatable(node)
        missing = insufficient(requests, used, alloc)
        if not missing:
            return SUCCESS
        # A request larger than the whole node is beyond preemption's help (fit.go's
        # InsufficientResource.Unresolvable; the pod count never is).
        beyond = any(m.requested > m.capacity for m in missing if m.resource != PODS)
        return unschedulable(*(_reason(m) for m in missing), detail=missing, resolvable=not beyond)


def _fractions(state: ClusterState, pod: PodInfo, node: Node) -> list[float]:
    alloc = node_allocatable(node)
    used = state.requested(node.metadata.name)
    mine = pod.nonzero
    out = []
    for name, key in zip(SCORED, (NONZERO_CPU, NONZERO_MEMORY), strict=True):
        cap = alloc.get(name, 0)
        if cap <= 0:
            continue
        out.append(min(1.0, (used.get(key, 0) + mine[key]) / cap))
    return out


class LeastAllocated:
    """Spread: prefer nodes with the most free cpu and memory after placing the pod."""

    name = LEAST_ALLOCATED

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        fr = _fractions(state, pod, node)
        return 100.0 * (1 - sum(fr) / len(fr)) if fr else 0.0


class MostAllocated:
    """Bin-pack: prefer the fullest node that still fits."""

    name = MOST_ALLOCATED

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        fr = _fractions(state, pod, node)
        return 100.0 * sum(fr) / len(fr) if fr else 0.0
