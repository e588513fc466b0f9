"""Values computed from a state's pods and other objects (Workloads, PodGroups, priority
classes...), kept while those stay as they were: the gangs and the pending pods are asked for
several times in one audit and in one plan, each a pass over every pod."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar
from weakref import WeakKeyDictionary

from draplan.api.meta import KubeStruct
from draplan.cluster.state import ClusterState

T = TypeVar("T")


class PodsMemo(Generic[T]):
    """`compute(state)`, again only once the state's pods table has another version (see
    `layered.VersionedDict`) or its list of other objects was replaced or grew (the list is
    only ever appended to or replaced); `pods=False`: a value of the other objects alone.
    Callers must not change what it returns."""

    def __init__(self, compute: Callable[[ClusterState], T], pods: bool = True) -> None:
        self._compute = compute
        self._pods = pods
        # The list itself is kept, not its id: a new list could take a freed one's id.
        self._kept: WeakKeyDictionary[ClusterState, tuple[int, list[KubeStruct], int, T]] = (
            WeakKeyDictionary()
        )

    def __call__(self, state: ClusterState) -> T:
        version, others = state.pods.version if self._pods else 0, state.others
        hit = self._kept.get(state)
        if hit is not None and hit[0] == version and hit[1] is others and hit[2] == len(others):
            return hit[3]
        value = self._compute(state)
        self._kept[state] = (version, others, len(others), value)
        return value
