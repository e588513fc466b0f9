"""A score plugin that fails only in `serve`'s planner process, as a bug met there would: the
audits' own scheduling (the parent's) never calls it wrongly. Its own module, so the spawned
planner can import it to unpickle the profile."""

from __future__ import annotations

import multiprocessing

from draplan.api.core_v1 import Node
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import CycleState, PodInfo


class FailsInThePlanner:
    name = "FailsInThePlanner"

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        if multiprocessing.parent_process() is not None:
            raise RuntimeError("a bug met only while planning")
        return 0.0
