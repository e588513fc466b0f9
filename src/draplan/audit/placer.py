"""The scheduler `why` places the queue with, and what it keeps between audits of one state."""

from __future__ import annotations

from draplan.api.core_v1 import Pod
from draplan.audit.contents import Contents
from draplan.audit.reach import ReachMemo
from draplan.audit.supply import MatchMemo, NodeSupply
from draplan.cluster.state import ClusterState, ObjectKey
from draplan.scheduler import PodResult, Profile, Scheduler
from draplan.scheduler.framework import Status
from draplan.scheduler.gangs import Gang

# A look at one node for one pod shape: ((shape, claim names), node) → (node version, the
# scheduler's status there, the node's supply for the shape or whether it has room).
LookKey = tuple[tuple[bytes, tuple[str, ...]], str]
Look = tuple[tuple[int, int], Status, NodeSupply | bool]


class Placer(Scheduler):
    """The scheduler, for one pass over the queue that only needs to know who gets placed
    (`Scheduler.run`'s placements_only: later pods of a shape found to fit nowhere are not
    tried again)."""

    def __init__(self, profile: Profile | None = None) -> None:
        super().__init__(profile)
        # Kept with the placer between audits of one state, like its evaluations.
        self.reaches = ReachMemo()
        self.matches = MatchMemo()
        self.looks: dict[LookKey, Look] = {}
        # Within the audit's fork, nodes changed get the versions they had with the same
        # content (in an earlier audit too): the evaluations and looks kept per version hold.
        self.contents = Contents(self.profile)

    def place(
        self, state: ClusterState, gangs: dict[ObjectKey, Gang] | None = None
    ) -> list[PodResult]:
        """`run` over the whole queue for its placements (`gangs`: `gangs_of` the state,
        if the caller has it)."""
        return self.run(state, gangs=gangs, placements_only=True)

    def evaluate(self, state: ClusterState, pod: Pod) -> tuple[Status, dict[str, Status]]:
        self.contents.settle(state)
        return super().evaluate(state, pod)

    def schedule_pod(
        self, state: ClusterState, pod: Pod, candidates: list[str] | None = None
    ) -> PodResult:
        self.contents.settle(state)
        return super().schedule_pod(state, pod, candidates)
