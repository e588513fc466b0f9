"""NodeResourcesFit (filter and score) and NodeResourcesBalancedAllocation (score) with
kube-scheduler's integer arithmetic (noderesources: fit.go, resource_allocation.go,
least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go,
balanced_allocation.go); and draplan's LeastAllocated / MostAllocated, the score plugins a
draplan.io SchedulerProfile names.

Units: draplan keeps every quantity in milli units, upstream cpu in milli and memory in bytes;
each score divides a request by an allocatable of the same unit, and scaling both by 1000
changes neither an integer quotient nor a float64 one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from draplan.api.core_v1 import Node
from draplan.cluster.podresources import (
    NONZERO_CPU,
    NONZERO_MEMORY,
    PODS,
    Resources,
    is_extended,
    node_allocatable,
)
from draplan.cluster.state import ClusterState
from draplan.scheduler.extended import node_resource_requests
from draplan.scheduler.framework import (
    MAX_NODE_SCORE,
    SUCCESS,
    CycleState,
    PodInfo,
    Status,
    unschedulable,
)
from draplan.scheduler.plugins.dynamicresources import DraState
from draplan.scheduler.plugins.names import (
    BALANCED_ALLOCATION,
    DYNAMIC_RESOURCES,
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    NODE_RESOURCES_FIT,
)

SCORED = ("cpu", "memory")  # draplan's LeastAllocated / MostAllocated
NATIVE = ("cpu", "memory", "ephemeral-storage", PODS)
MAX_UTILIZATION = 100
# config.MaxCustomPriorityScore: a shape's scores (0..10) are scaled to MaxNodeScore.
MAX_CUSTOM_PRIORITY_SCORE = 10

LEAST = "LeastAllocated"
MOST = "MostAllocated"
RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST, MOST, RATIO)


@dataclass(frozen=True)
class ResourceSpec:
    """config.ResourceSpec: a resource the score reads and its weight."""

    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec("cpu"), ResourceSpec("memory"))


@dataclass(frozen=True)
class ScoringStrategy:
    """NodeResourcesFitArgs.scoringStrategy: the type, its resources, and the
    RequestedToCapacityRatio shape as (utilization, score) points."""

    type: str = LEAST
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class InsufficientResource:
    """Typed evidence beside the reason string (upstream keeps both for autoscalers)."""

    resource: str
    requested: int
    used: int
    capacity: int

    @property
    def unresolvable(self) -> bool:
        """More than the node has at all: no preemption helps (fit.go's
        InsufficientResource.Unresolvable; never so for the pod count)."""
        return self.resource != PODS and self.requested > self.capacity


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

    def __init__(
        self,
        strategy: ScoringStrategy | None = None,
        ignored: frozenset[str] = frozenset(),
        ignored_groups: frozenset[str] = frozenset(),
    ) -> None:
        self.strategy = strategy or ScoringStrategy()
        self.ignored = ignored
        self.ignored_groups = ignored_groups

    def _ignores(self, name: str) -> bool:
        if not is_extended(name):
            return False
        return name in self.ignored or name.split("/", 1)[0] in self.ignored_groups

    def filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        dra = cycle.data.get(DYNAMIC_RESOURCES)
        served = dra.served if isinstance(dra, DraState) else frozenset()
        requests = node_resource_requests(pod.requests, served, node)
        if self.ignored or self.ignored_groups:
            # ignoredResources(Groups) are not checked at all.
            requests = {k: v for k, v in requests.items() if not self._ignores(k)}
        used, alloc = state.requested(node.metadata.name), node_allocatable(node)
        missing = insufficient(requests, used, alloc)
        if not missing:
            return SUCCESS
        return unschedulable(
            *(_reason(m) for m in missing),
            detail=missing,
            resolvable=not any(m.unresolvable for m in missing),
        )

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> int:
        strategy = self.strategy
        requested, allocatable = _amounts(state, pod, node, strategy.resources, False)
        weights = [r.weight for r in strategy.resources]
        if strategy.type == MOST:
            return _weighted(requested, allocatable, weights, _most)
        if strategy.type == RATIO:
            return _ratio(requested, allocatable, weights, strategy.shape)
        return _weighted(requested, allocatable, weights, _least)


class NodeResourcesBalancedAllocation:
    """Prefer nodes whose fractions of the resources in use stay close to each other."""

    name = BALANCED_ALLOCATION

    def __init__(self, resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES) -> None:
        self.resources = resources

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> int:
        requests = pod.requests
        if not any(requests.get(r.name, 0) for r in self.resources):
            return 0  # a best-effort pod: PreScore says Skip (kubernetes#129138)
        requested, allocatable = _amounts(state, pod, node, self.resources, True)
        fractions = [min(r / a, 1.0) for r, a in zip(requested, allocatable, strict=True) if a]
        std = 0.0
        if len(fractions) == 2:
            std = abs((fractions[0] - fractions[1]) / 2)
        elif len(fractions) > 2:
            mean = sum(fractions) / len(fractions)
            std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
        return int((1 - std) * MAX_NODE_SCORE)


def _amounts(
    state: ClusterState,
    pod: PodInfo,
    node: Node,
    resources: tuple[ResourceSpec, ...],
    use_requested: bool,
) -> tuple[list[int], list[int]]:
    """calculateResourceAllocatableRequest for each resource: the node's allocatable and the
    amount requested with the pod (cpu and memory non-zero unless `use_requested`); both 0 to
    leave a resource out (an extended one the pod does not ask for, or the node lacks)."""
    alloc = node_allocatable(node)
    used = state.requested(node.metadata.name)
    mine = pod.requests
    requested: list[int] = []
    allocatable: list[int] = []
    for spec in resources:
        name = spec.name
        if not use_requested and name == "cpu":
            have, ask = used.get(NONZERO_CPU, 0), pod.nonzero[NONZERO_CPU]
        elif not use_requested and name == "memory":
            have, ask = used.get(NONZERO_MEMORY, 0), pod.nonzero[NONZERO_MEMORY]
        else:
            have, ask = used.get(name, 0), mine.get(name, 0)
        cap = alloc.get(name, 0)
        if (ask == 0 and name not in NATIVE) or cap == 0:
            requested.append(0)
            allocatable.append(0)
        else:
            requested.append(have + ask)
            allocatable.append(cap)
    return requested, allocatable


def _least(requested: int, capacity: int) -> int:
    """leastRequestedScore."""
    if requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def _most(requested: int, capacity: int) -> int:
    """mostRequestedScore: pods with no requests get minimum values, so cap at capacity."""
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def _weighted(
    requested: list[int], allocatable: list[int], weights: list[int], per: Callable[[int, int], int]
) -> int:
    """leastResourceScorer / mostResourceScorer: the weighted mean, integer division."""
    total = weight_sum = 0
    for r, a, w in zip(requested, allocatable, weights, strict=True):
        if a == 0:
            continue
        total += per(r, a) * w
        weight_sum += w
    return total // weight_sum if weight_sum else 0


def _truncate(a: int, b: int) -> int:
    """Go's integer division, which truncates toward zero (b > 0)."""
    return a // b if a >= 0 else -((-a) // b)


def broken_linear(shape: tuple[tuple[int, int], ...], p: int) -> int:
    """helper.BuildBrokenLinearFunction over (utilization, score) points."""
    for i, (utilization, score) in enumerate(shape):
        if p <= utilization:
            if i == 0:
                return score
            u0, s0 = shape[i - 1]
            return s0 + _truncate((score - s0) * (p - u0), utilization - u0)
    return shape[-1][1]


def _ratio(
    requested: list[int],
    allocatable: list[int],
    weights: list[int],
    shape: tuple[tuple[int, int], ...],
) -> int:
    """requestedToCapacityRatioScorer: the shape (scores scaled to 0..100) at each resource's
    utilization; the weighted mean of the non-zero ones, rounded half away from zero."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    points = tuple((u, s * scale) for u, s in shape)
    total = weight_sum = 0
    for r, a, w in zip(requested, allocatable, weights, strict=True):
        if a == 0:
            continue
        p = MAX_UTILIZATION if r > a else r * MAX_UTILIZATION // a
        score = broken_linear(points, p)
        if score > 0:
            total += score * w
            weight_sum += w
    return (2 * total + weight_sum) // (2 * weight_sum) if weight_sum else 0


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
    """draplan's spread score: the mean free fraction of cpu and memory after the pod."""

    name = LEAST_ALLOCATED

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        fr = _fractions(state, pod, node)
        return 100.0 * (1 - sum(fr) / len(fr)) if fr else 0.0


class MostAllocated:
    """draplan's bin-packing score: the mean used fraction of cpu and memory."""

    name = MOST_ALLOCATED

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        fr = _fractions(state, pod, node)
        return 100.0 * sum(fr) / len(fr) if fr else 0.0
