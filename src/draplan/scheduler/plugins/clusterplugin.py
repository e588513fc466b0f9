"""The extension points of a cluster plugin whose PreFilter and PreScore compute a value from
the whole cluster that Filter and Score then read per node (InterPodAffinity,
PodTopologySpread): the framework calls are the same; each plugin gives the values."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import ClassVar, Generic, Protocol, TypeVar

from draplan.api.core_v1 import Node, Pod
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import SKIP, SUCCESS, CycleState, PodInfo, Status

F = TypeVar("F")
S = TypeVar("S")


class Scored(Protocol):
    """A node's score as NormalizeScore rewrites it (fwk.NodeScore)."""

    name: str
    score: int


class ClusterPlugin(Generic[F, S]):
    """PreFilter keeps `filter_state` (None: Skip) in the cycle for Filter's `filter_node`;
    PreScore keeps `score_state` (None: Skip) for Score and NormalizeScore."""

    name: str
    # The answer for a node depends on other nodes (scheduler.framework: never cached).
    cluster: ClassVar[bool] = True

    @cached_property
    def _filter_key(self) -> str:
        return f"{self.name}/filter"  # in CycleState.data: node names have no "/", no clash

    @cached_property
    def _score_key(self) -> str:
        return f"{self.name}/score"

    def filter_state(self, state: ClusterState, pod: Pod) -> F | None:
        raise NotImplementedError

    def filter_node(self, fs: F, pod: Pod, node: Node) -> Status:
        raise NotImplementedError

    def score_state(self, state: ClusterState, pod: Pod, nodes: Sequence[Node]) -> S | None:
        raise NotImplementedError

    def score_node(self, ss: S, node: Node) -> int:
        raise NotImplementedError

    def normalize(self, ss: S, scores: Sequence[Scored]) -> None:
        raise NotImplementedError

    def pre_filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo) -> Status:
        fs = self.filter_state(state, pod.pod)
        if fs is None:
            return SKIP
        cycle.data[self._filter_key] = fs
        return SUCCESS

    def filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        fs: F | None = cycle.data.get(self._filter_key)
        return SUCCESS if fs is None else self.filter_node(fs, pod.pod, node)

    def pre_score(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, nodes: Sequence[Node]
    ) -> Status:
        ss = self.score_state(state, pod.pod, nodes)
        if ss is None:
            return SKIP
        cycle.data[self._score_key] = ss
        return SUCCESS

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> int:
        ss: S | None = cycle.data.get(self._score_key)
        return 0 if ss is None else self.score_node(ss, node)

    def normalize_score(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, scores: Sequence[Scored]
    ) -> None:
        ss: S | None = cycle.data.get(self._score_key)
        if ss is not None:
            self.normalize(ss, scores)
