"""Per-node filter and score results, cached per pod shape and node version.

Pods of one shape (same requests, selectors, tolerations and claim specs: typically one
template) get the same answer from a node until that node changes, so each node is evaluated
once per shape and re-evaluated only when the cluster state's change log names it. A heap of
(-score, node) gives the best node without scanning all nodes for every pod.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from draplan.api.core_v1 import Node
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import Code, CycleState, PodInfo, Status
from draplan.scheduler.profile import Profile


@dataclass
class NodeEval:
    version: tuple[int, int]
    status: Status
    score: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class ShapeEvaluations:
    cursor: int = -1
    evals: dict[str, NodeEval] = field(default_factory=dict)
    heap: list[tuple[float, str]] = field(default_factory=list)


def evaluate_node(
    profile: Profile, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node
) -> NodeEval:
    """Run every filter (stopping at the first failure), then the weighted scores."""
    name = node.metadata.name
    details: dict[str, Any] = {}
    for plugin in profile.filters:
        status = plugin.filter(state, cycle, pod, node)
        if not status.ok:
            return NodeEval(state.version(name), status.with_plugin(plugin.name))
        if status.detail is not None:
            details[plugin.name] = status.detail
            cycle.data[(plugin.name, name)] = status.detail
    score = sum(weight * plugin.score(state, cycle, pod, node) for plugin, weight in profile.scores)
    return NodeEval(state.version(name), Status(), score, details)


class Evaluator:
    """Keeps ShapeEvaluations for every shape seen; answers "best node" and "why not"."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.shapes: dict[bytes, ShapeEvaluations] = {}

    def refresh(self, state: ClusterState, cycle: CycleState, pod: PodInfo) -> ShapeEvaluations:
        ev = self.shapes.setdefault(pod.shape, ShapeEvaluations())
        log = state.change_log
        if ev.cursor < 0 or "*" in log[ev.cursor :]:
            todo = list(state.nodes.keys())
            ev.evals.clear()
            ev.heap.clear()
        else:
            todo = sorted(set(log[ev.cursor :]))
        ev.cursor = len(log)
        for name in todo:
            node = state.nodes.get(name)
            if node is None:
                ev.evals.pop(name, None)
                continue
            current = ev.evals.get(name)
            if current is not None and current.version == state.version(name):
                continue
            result = evaluate_node(self.profile, state, cycle, pod, node)
            ev.evals[name] = result
            if result.status.ok:
                heapq.heappush(ev.heap, (-result.score, name))
        return ev

    def best(self, state: ClusterState, ev: ShapeEvaluations) -> str | None:
        """The highest-scoring feasible node (ties: the smallest name, deterministic)."""
        heap = ev.heap
        while heap:
            neg, name = heap[0]
            current = ev.evals.get(name)
            if (
                current is not None
                and current.status.ok
                and current.score == -neg
                and current.version == state.version(name)
                and name in state.nodes
            ):
                return name
            heapq.heappop(heap)
        return None

    def best_among(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, candidates: list[str]
    ) -> str | None:
        ev = self.refresh(state, cycle, pod)
        best: tuple[float, str] | None = None
        for name in candidates:
            e = ev.evals.get(name)
            if e is not None and e.status.ok and (best is None or (-e.score, name) < best):
                best = (-e.score, name)
        return best[1] if best is not None else None

    @staticmethod
    def failures(ev: ShapeEvaluations, only: list[str] | None = None) -> dict[str, Status]:
        names = only if only is not None else list(ev.evals)
        return {
            n: ev.evals[n].status
            for n in names
            if n in ev.evals and ev.evals[n].status.code != Code.SUCCESS
        }
