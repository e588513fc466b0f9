"""Sums over nodes kept current as nodes change: what pod affinity and topology spread count
per topology domain, without a pass over every pod for every pod scheduled.

A `NodeSums` adds up one part per node (a small mapping of keys to counts, e.g. topology pair
to matching pods). It keeps each node's part as it last computed it; when asked again it
recomputes only the nodes the state's change log names since then (every node changed by a
bind, an unbind, a Node object replaced, a fork reverted) and moves the total by the
difference. A cluster-wide change ("*", or a first look) computes every node, or only the nodes
`where` says can have a part.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from draplan.cluster.state import ClusterState

K = TypeVar("K", bound=Hashable)
Part = Mapping[K, int]

MAX_SUMS = 4096  # sums kept per store (then all dropped at once)


class NodeSums(Generic[K]):
    """Σ over nodes of `part(state, node_name)`; `where(state)`, when given, names the nodes
    that can have a non-empty part (a full pass looks only at them). With `grouped`, the keys
    are (group, key) pairs and the total is also kept by group (`groups`)."""

    __slots__ = (
        "_cursor",
        "_grouped",
        "_part",
        "_parts",
        "_where",
        "generation",
        "groups",
        "total",
    )

    def __init__(
        self,
        part: Callable[[ClusterState, str], Part[K]],
        where: Callable[[ClusterState], Iterable[str]] | None = None,
        grouped: bool = False,
    ) -> None:
        self._part = part
        self._where = where
        self._grouped = grouped
        self._cursor = -1
        self._parts: dict[str, Part[K]] = {}
        self.total: dict[K, int] = {}
        self.groups: dict[Hashable, dict[Hashable, int]] = {}
        # Changes whenever the total does: callers keep what they derived from it under it.
        self.generation = 0

    def refresh(self, state: ClusterState) -> dict[K, int]:
        changed = state.changed_since(self._cursor)
        self._cursor = len(state.change_log)
        if changed is None:
            self._parts.clear()
            self.total = {}
            self.groups = {}
            self.generation += 1
            names = self._where(state) if self._where is not None else state.nodes.keys()
            for name in names:
                self._add(state, name)
            return self.total
        moved = False
        for name in changed:
            old = self._parts.pop(name, None)
            if old:
                self._shift(old, -1)
                moved = True
            moved = self._add(state, name) or moved
        if moved:
            self.generation += 1
        return self.total

    def _add(self, state: ClusterState, name: str) -> bool:
        if name not in state.nodes:
            return False
        part = self._part(state, name)
        if not part:
            return False
        self._parts[name] = part
        self._shift(part, +1)
        return True

    def _shift(self, part: Part[K], sign: int) -> None:
        total = self.total
        for key, n in part.items():
            value = total.get(key, 0) + sign * n
            if value:
                total[key] = value
            else:
                del total[key]
            if self._grouped:
                pair: tuple[Hashable, Hashable] = key  # type: ignore[assignment]
                group, inner = pair
                members = self.groups.get(group)
                if members is None:
                    members = self.groups[group] = {}
                if value:
                    members[inner] = value
                else:
                    del members[inner]
                    if not members:
                        del self.groups[group]

    def part(self, name: str) -> Part[K]:
        """A node's part as last computed (empty when it has none)."""
        return self._parts.get(name) or {}


class SumsStore:
    """The NodeSums of one state, by what they sum (a hashable spec); dropped when the state
    is another."""

    def __init__(self) -> None:
        self._state: ClusterState | None = None
        self._sums: dict[Hashable, NodeSums[Any]] = {}

    def __getstate__(self) -> object:
        return True  # a cache of closures over one state: another process starts afresh

    def __setstate__(self, _: object) -> None:
        self.__init__()  # type: ignore[misc]

    def get(
        self,
        state: ClusterState,
        spec: Hashable,
        part: Callable[[ClusterState, str], Part[Any]],
        where: Callable[[ClusterState], Iterable[str]] | None = None,
        grouped: bool = False,
    ) -> NodeSums[Any]:
        if state is not self._state:
            self._state = state
            self._sums.clear()
        sums = self._sums.get(spec)
        if sums is None:
            if len(self._sums) >= MAX_SUMS:
                self._sums.clear()
            sums = self._sums[spec] = NodeSums(part, where, grouped)
        sums.refresh(state)
        return sums
