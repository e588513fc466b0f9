"""Values computed from a state's pods and other objects (Workloads, PodGroups, priority
classes...), kept while those stay as they were: the gangs and the pending pods are asked for
several times in one audit and in one plan, each a pass over every pod. `PodsIndex` keeps what
such a pass reads of each pod, so that on a state that changes a few pods at a time (`draplan
serve`'s) the pass visits only the pods changed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar
from weakref import WeakKeyDictionary

from draplan.api.core_v1 import Pod
from draplan.api.meta import KubeStruct
from draplan.cluster.objectlog import POD
from draplan.cluster.state import ClusterState, ObjectKey

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


@dataclass
class _Index(Generic[T]):
    others: list[KubeStruct]
    count: int
    value: Callable[[Pod], T | None]
    values: dict[ObjectKey, T] = field(default_factory=dict)  # of the pods' bottom layer
    base: int = -1  # the bottom layer's version `values` are of
    cursor: int | None = None  # where the object log was read up to
    fork: int = -1  # the pods' version `in_fork` is of
    in_fork: dict[ObjectKey, T] = field(default_factory=dict)


class PodsIndex(Generic[T]):
    """Per pod, the value `of(state)` gives it (None: the pod is left out). `of` may read the
    state's other objects: its values are taken again, for every pod, once those change (as
    `PodsMemo` sees them). Otherwise only changed pods are looked at again: those the state's
    object log names (`cluster.incremental`), and in a fork those the fork wrote. Callers must
    not change what it returns."""

    def __init__(self, of: Callable[[ClusterState], Callable[[Pod], T | None]]) -> None:
        self._of = of
        self._kept: WeakKeyDictionary[ClusterState, _Index[T]] = WeakKeyDictionary()

    def __call__(self, state: ClusterState) -> Mapping[ObjectKey, T]:
        pods, others = state.pods, state.others
        kept = self._kept.get(state)
        if kept is None or kept.others is not others or kept.count != len(others):
            kept = self._kept[state] = _Index(others, len(others), self._of(state))
        if kept.base != pods.base_version:
            self._catch_up(state, kept)
        if pods.depth == 1:
            return kept.values
        if kept.fork != pods.version:  # a version names the whole content, forks included
            values = dict(kept.values)
            for key in pods.forked_keys():
                pod = pods.get(key)
                got = kept.value(pod) if pod is not None else None
                if got is None:
                    values.pop(key, None)
                else:
                    values[key] = got
            kept.fork, kept.in_fork = pods.version, values
        return kept.in_fork

    def _catch_up(self, state: ClusterState, kept: _Index[T]) -> None:
        """Bring `kept.values` to the pods' bottom layer: by the object log where it names
        every write since the last time, else by a pass over every pod."""
        pods, log = state.pods, state.object_log
        if log is not None and log.pods_version != pods.base_version:
            log = None  # the pods were written to unlogged
        entries = log.since(kept.cursor) if log is not None and kept.cursor is not None else None
        value, values = kept.value, kept.values
        if entries is None:
            values.clear()
            for key, pod in pods.base_items():
                got = value(pod)
                if got is not None:
                    values[key] = got
        else:
            for kind, key in entries:
                if kind != POD:
                    continue
                now = pods.base_get(key)
                got = value(now) if now is not None else None
                if got is None:
                    values.pop(key, None)
                else:
                    values[key] = got
        kept.base = pods.base_version
        kept.cursor = log.end if log is not None else None
        kept.fork = -1
