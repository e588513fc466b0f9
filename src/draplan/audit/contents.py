"""Node versions by content, for the forks an audit works in.

Every change to a node gives it a new version, and the scheduler's evaluations (and the audit's
looks at nodes) are kept per node version. An audit's forks make the same changes audit after
audit (the pass places the same pods, the fixes move the same pods), each time under new
versions, so nothing kept from the last audit would hold. `Contents` gives a node the version
it had when it last had the same content: what the scheduler's evaluations read of a node (its
Node object, its pools and their devices, what its pods request, its devices' ledgers, and
what a plugin declares with `signature`), as scheduler.evaluations describes it. Only forks
get such versions: the state's own keep theirs, for every other reader.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from draplan.api.core_v1 import Node
from draplan.cluster.devices import Pool
from draplan.cluster.state import ClusterState, SharedUse
from draplan.scheduler.profile import Profile

MAX_CONTENTS = 1 << 17  # contents remembered (then forgotten at once)


def same_pools(a: tuple[Pool, ...], b: tuple[Pool, ...]) -> bool:
    """Whether two gatherings of a node's pools hold the same: a node changed in a fork has
    its pools gathered again, into new objects of the same devices."""
    if a is b:
        return True
    return len(a) == len(b) and all(
        p.id == q.id
        and p.generation == q.generation
        and p.incomplete == q.incomplete
        and p.invalid == q.invalid
        and p.counters == q.counters
        and len(p.devices) == len(q.devices)
        and all(x is y for x, y in zip(p.devices, q.devices, strict=True))
        for p, q in zip(a, b, strict=True)
    )


def _shared(use: SharedUse | None) -> Hashable:
    return None if use is None else (use.shares, tuple(sorted(use.consumed.items())))


class Contents:
    """Versions by node content, within forks of one state (see the module's note)."""

    def __init__(self, profile: Profile) -> None:
        self._extra: list[Callable[[ClusterState, Node], object]] = [
            p.signature
            for p in (*profile.filters, *(p for p, _ in profile.scores))
            if callable(getattr(p, "signature", None))
        ]
        self._seen: dict[Hashable, list[tuple[Node, tuple[Pool, ...], int]]] = {}
        self._named: set[tuple[str, int, int]] = set()  # (node, "*", version) in _seen
        self._state: ClusterState | None = None
        self._cursor = -1  # -1: not in a fork of the audit's

    def start(self, state: ClusterState) -> None:
        """From now on (in a fork of `state`), the nodes changed get versions by content."""
        if state is not self._state:
            self._seen.clear()
            self._named.clear()
            self._state = state
        self._cursor = len(state.change_log)

    def stop(self) -> None:
        self._cursor = -1

    def settle(self, state: ClusterState) -> None:
        """Give each node changed since the last call its version for its content."""
        if self._cursor < 0 or state is not self._state:
            return
        log = state.change_log
        tail = log[self._cursor :]
        self._cursor = len(log)
        if not tail or "*" in tail:
            return  # every version is new: nothing to find again
        if len(self._seen) > MAX_CONTENTS:
            self._seen.clear()
            self._named.clear()
        everywhere = state.node_version.get("*") or 0
        for name in set(tail):
            node = state.nodes.get(name)
            current = state.node_version.get(name) or 0
            if node is None or (name, everywhere, current) in self._named:
                continue  # gone, or back (a fork reverted) at a version already found
            pools = state.pools_for_node(node)
            key = (name, everywhere, self._content(state, node, pools))
            known = self._seen.setdefault(key, [])
            for old, old_pools, version in known:
                if old == node and same_pools(old_pools, pools):
                    state.node_version[name] = version
                    break
            else:
                known.append((node, pools, current))
                self._named.add((name, everywhere, current))

    def _content(self, state: ClusterState, node: Node, pools: tuple[Pool, ...]) -> Hashable:
        """What a node offers beyond its Node object and its pools' devices (compared apart)."""
        exclusive, shared = state.exclusive, state.shared
        ledgers = tuple(
            (
                tuple((exclusive.get(v.id) or 0, _shared(shared.get(v.id))) for v in pool.devices),
                tuple(state.counter_used(pool.id, k) for k in sorted(pool.counters)),
            )
            for pool in pools
        )
        requested = tuple(sorted(state.requested(node.metadata.name).items()))
        return (requested, ledgers, tuple(sig(state, node) for sig in self._extra))
