"""The scheduler `why` places the queue with, and what it keeps between audits of one state."""

from __future__ import annotations

from draplan.api.core_v1 import Pod
from draplan.audit.contents import Contents
from draplan.audit.reach import ReachMemo
from draplan.audit.supply import MatchMemo, NodeSupply
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import PodResult, Profile, Scheduler
from draplan.scheduler.framework import CycleState, PodInfo, Status
from draplan.scheduler.gangs import Gang, find_gangs

# A look at one node for one pod shape: ((shape, claim names), node) → (node version, the
# scheduler's status there, the node's supply for the shape or whether it has room).
LookKey = tuple[tuple[bytes, tuple[str, ...]], str]
Look = tuple[tuple[int, int], Status, NodeSupply | bool]


class Placer(Scheduler):
    """The scheduler, for one pass over the queue that only needs to know who gets placed.

    Within a pass, placing pods only takes capacity (a preemption's evictions aside, after
    which every shape is tried again), so a pod shape that fits no node fits none for the rest
    of the pass: later pods of that shape (of no higher priority: the queue's order) are not
    tried again (kube-scheduler parks them in its unschedulable queue likewise). That saves
    building the "0/N nodes are available" text over every node for each of them, which is
    most of a pass on a large cluster. Only pods outside gangs mark a shape: gang members are
    tried in forks that are rolled back."""

    def __init__(self, profile: Profile | None = None) -> None:
        super().__init__(profile)
        # Kept with the placer between audits of one state, like its evaluations.
        self.reaches = ReachMemo()
        self.matches = MatchMemo()
        self.looks: dict[LookKey, Look] = {}
        self._hopeless: set[bytes] | None = None
        self._gangs: dict[ObjectKey, Gang] = {}
        self._prefiltered: tuple[Pod, tuple[PodInfo, CycleState, Status]] | None = None
        # Within the audit's fork, nodes changed get the versions they had with the same
        # content (in an earlier audit too): the evaluations and looks kept per version hold.
        self.contents = Contents(self.profile)

    def place(
        self, state: ClusterState, gangs: dict[ObjectKey, Gang] | None = None
    ) -> list[PodResult]:
        """`run` over the whole queue, skipping shapes already found to fit nowhere (`gangs`:
        find_gangs of the state, if the caller has it)."""
        self._hopeless, self._gangs = set(), find_gangs(state) if gangs is None else gangs
        try:
            return self.run(state, gangs=self._gangs)
        finally:
            self._hopeless, self._gangs = None, {}

    def evaluate(self, state: ClusterState, pod: Pod) -> tuple[Status, dict[str, Status]]:
        self.contents.settle(state)
        return super().evaluate(state, pod)

    def schedule_pod(
        self, state: ClusterState, pod: Pod, candidates: list[str] | None = None
    ) -> PodResult:
        self.contents.settle(state)
        if self._hopeless is None or candidates is not None:
            return super().schedule_pod(state, pod, candidates)
        found = super()._pre_filter(state, pod)
        shape = found[0].shape
        if shape in self._hopeless:
            return PodResult(key_of(pod), pod)
        self._prefiltered = (pod, found)  # the cycle starts with it: nothing changed since
        try:
            result = super().schedule_pod(state, pod)
        finally:
            self._prefiltered = None
        given_up = not (result.node or result.nominated or key_of(pod) in self._gangs)
        if result.victims:
            self._hopeless.clear()  # evictions free room the shapes given up on may take
        elif given_up and result.monotone:
            self._hopeless.add(shape)
        return result

    def _pre_filter(self, state: ClusterState, pod: Pod) -> tuple[PodInfo, CycleState, Status]:
        kept, self._prefiltered = self._prefiltered, None
        if kept is not None and kept[0] is pod:
            return kept[1]
        return super()._pre_filter(state, pod)
