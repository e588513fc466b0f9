"""A ClusterState kept equal to `ClusterState.from_objects` of a set of objects that changes one
object at a time (what a watch delivers), with node versions and the change log kept current so
per-node caches stay valid.

The ledgers of consumed counters are sums over allocated devices' views, and a device's view
comes from the newest generation of its pool's slices; so a slice change is applied to its whole
pool (its slices re-added in the order they first came, as `from_objects` would see them) with
the claims allocated in that pool taken out of the ledgers before and put back after. Whatever
order the events come in, the ledgers then equal the sum over the current claims of the current
views.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from draplan.api.apps_v1 import ReplicaSet, StatefulSet
from draplan.api.core_v1 import Namespace, Node, Pod, ReplicationController, Service
from draplan.api.features import DEFAULT as DEFAULT_FEATURES
from draplan.api.features import FeatureGates
from draplan.api.meta import KubeStruct
from draplan.api.resource_v1 import (
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceSlice,
)
from draplan.cluster.devices import PoolID
from draplan.cluster.objectlog import CLAIM, NODE, POD, SLICE, ObjectLog
from draplan.cluster.state import (
    PLAIN_KINDS,
    ClusterState,
    ObjectKey,
    OriginKey,
    key_of,
    origin_key,
)
from draplan.sources.files import gc_paused


def needs_rebuild(obj: KubeStruct) -> bool:
    """Kinds whose change is better met by a new state than by an update: a DeviceClass
    resolves requests in caches keyed by pod shape (no node version names them), and a
    DeviceTaintRule rewrites the views of every slice."""
    return isinstance(obj, DeviceClass | DeviceTaintRule)


def selects(obj: KubeStruct) -> object:
    """What of an object the scheduler reads for pod affinity and topology spread: a
    namespace's labels, the selector of a Service or a workload controller. Their status
    changes all the time; only a change of this is one for the scheduler."""
    if isinstance(obj, Namespace):
        return obj.metadata.labels
    if isinstance(obj, Service):
        return obj.spec.selector
    if isinstance(obj, ReplicationController):
        return obj.selector
    if isinstance(obj, ReplicaSet | StatefulSet):
        return obj.spec.selector
    return obj


def table_of(obj: KubeStruct) -> str | None:
    """The state's table (its attribute) that holds objects of `obj`'s kind; None for kinds
    kept in `others`."""
    if isinstance(obj, Pod):
        return POD
    if isinstance(obj, ResourceClaim):
        return CLAIM
    if isinstance(obj, Node):
        return NODE
    if isinstance(obj, ResourceSlice):
        return SLICE
    plain = PLAIN_KINDS.get(type(obj))
    return plain[0] if plain is not None else None


def _pool_of(rs: ResourceSlice) -> PoolID:
    return (rs.spec.driver, rs.spec.pool.name)


def _claim_pools(claim: ResourceClaim) -> set[PoolID]:
    alloc = claim.status.allocation
    if alloc is None:
        return set()
    return {(r.driver, r.pool) for r in alloc.devices.results}


class IncrementalState:
    """`state` under `put` (add or replace) and `delete`; equal, after `flush`, to
    `ClusterState.from_objects` of the objects put and not deleted, in the order first put."""

    def __init__(
        self,
        objects: Iterable[tuple[KubeStruct, str]] = (),
        features: FeatureGates = DEFAULT_FEATURES,
    ) -> None:
        items = list(objects)
        self.state = ClusterState.from_objects(items, features)
        self.log = self.state.object_log = ObjectLog()
        self.log.pods_version = self.state.pods.version
        self._seq = itertools.count()
        self._slice_seq: dict[str, int] = {}
        self._pool_slices: dict[PoolID, set[str]] = {}
        self._pool_claims: dict[PoolID, set[ObjectKey]] = {}
        self._others: dict[OriginKey, KubeStruct] = {}
        self._others_dirty = False
        for obj, _ in items:
            if isinstance(obj, ResourceSlice):
                self._index_slice(obj)
        for key, claim in self.state.claims.items():
            self._index_claim(key, claim, +1)
        for obj in self.state.others:
            self._others[origin_key(obj)] = obj

    # --- indexes --------------------------------------------------------------------------

    def _index_slice(self, rs: ResourceSlice) -> None:
        self._slice_seq.setdefault(rs.metadata.name, next(self._seq))
        self._pool_slices.setdefault(_pool_of(rs), set()).add(rs.metadata.name)

    def _index_claim(self, key: ObjectKey, claim: ResourceClaim, sign: int) -> None:
        for pid in _claim_pools(claim):
            keys = self._pool_claims.setdefault(pid, set())
            if sign > 0:
                keys.add(key)
            else:
                keys.discard(key)

    # --- changes --------------------------------------------------------------------------

    def put(self, obj: KubeStruct, source: str = "") -> None:
        """Add `obj`, or replace the object of the same kind and key."""
        state = self.state
        state.origin[origin_key(obj)] = source
        key = key_of(obj)
        self._logged(obj, key)
        if isinstance(obj, Node):
            state.add_node(obj)
        elif isinstance(obj, Pod):
            state.put_pod(obj)
            self.log.pods_version = state.pods.version
        elif isinstance(obj, ResourceClaim):
            old = state.claims.get(key)
            if old is not None:
                self._index_claim(key, old, -1)
            state.put_claim(obj)
            self._index_claim(key, obj, +1)
        elif isinstance(obj, ResourceSlice):
            self._change_slice(state.slices.get(key[1]), obj)
        elif (plain := state.plain_table(obj)) is not None:
            table, at = plain
            old = table.get(at)
            table[at] = obj
            if old is None or selects(old) != selects(obj):
                self._plain_changed(obj)
        else:
            self._others[origin_key(obj)] = obj
            self._others_dirty = True

    def delete(self, obj: KubeStruct) -> None:
        """Remove the object of `obj`'s kind and key (a no-op when there is none)."""
        state = self.state
        state.origin.pop(origin_key(obj), None)
        key = key_of(obj)
        self._logged(obj, key)
        if isinstance(obj, Node):
            state.delete_node(key[1])
        elif isinstance(obj, Pod):
            state.delete_pod(key)
            self.log.pods_version = state.pods.version
        elif isinstance(obj, ResourceClaim):
            old = state.claims.get(key)
            if old is not None:
                self._index_claim(key, old, -1)
            state.remove_claim(key)
        elif isinstance(obj, ResourceSlice):
            self._change_slice(state.slices.get(key[1]), None)
        elif (plain := state.plain_table(obj)) is not None:
            table, at = plain
            if table.pop(at, None) is not None:
                self._plain_changed(obj)
        elif self._others.pop(origin_key(obj), None) is not None:
            self._others_dirty = True

    def _logged(self, obj: KubeStruct, key: ObjectKey) -> None:
        table = table_of(obj)
        if table == POD and self.state.pods.version != self.log.pods_version:
            self.log.restart()  # the pods were written to since, not by an event
        if table is not None:
            self.log.add(table, key)

    def _plain_changed(self, obj: KubeStruct) -> None:
        """What a changed taint rule, device class or selecting object invalidates: the
        devices' taints, or every node's evaluations (which pods a namespace selector, or a
        default spread constraint's selector, takes in)."""
        if isinstance(obj, DeviceTaintRule):
            self._reindex(set(self._pool_slices))
        elif isinstance(
            obj,
            DeviceClass | Namespace | Service | ReplicationController | ReplicaSet | StatefulSet,
        ):
            self.state.touch("*")

    def flush(self) -> ClusterState:
        """The state with every change so far in place."""
        if self._others_dirty:
            self.state.others = list(self._others.values())
            self._others_dirty = False
        return self.state

    # --- slices ---------------------------------------------------------------------------

    def _change_slice(self, old: ResourceSlice | None, new: ResourceSlice | None) -> None:
        pools: set[PoolID] = set()
        if old is not None:
            pools.add(_pool_of(old))
            self._pool_slices[_pool_of(old)].discard(old.metadata.name)
            if new is None:
                del self._slice_seq[old.metadata.name]
        if new is not None:
            pools.add(_pool_of(new))
            self._index_slice(new)
        self._reindex(pools, old, new)

    def _reindex(
        self,
        pools: set[PoolID],
        old: ResourceSlice | None = None,
        new: ResourceSlice | None = None,
    ) -> None:
        """Re-add the slices of `pools` (`old` replaced by `new`) in first-seen order, the
        claims allocated there out of the ledgers while their devices' views change."""
        state = self.state
        keys = sorted({k for pid in pools for k in self._pool_claims.get(pid, ())})
        claims = [c for c in (state.claims.get(k) for k in keys) if c is not None]
        for claim in claims:
            state.remove_claim(key_of(claim))
        if old is not None:
            state.remove_slice(old.metadata.name)
        names = sorted(
            (n for pid in pools for n in self._pool_slices.get(pid, ())),
            key=self._slice_seq.__getitem__,
        )
        slices = []
        for name in names:
            rs = new if new is not None and name == new.metadata.name else state.slices[name]
            slices.append(rs)
            state.remove_slice(name)
        for rs in slices:
            state.add_slice(rs)
        for claim in claims:
            state.put_claim(claim)
        for pid in pools:
            if not self._pool_slices.get(pid):
                self._pool_slices.pop(pid, None)


@dataclass(frozen=True)
class Changes:
    """How one set of objects became another: the objects to put (new ones, and new instances
    of a key: objects are frozen values, so an unchanged one is the same instance), with their
    sources, and the keys that went."""

    put: list[tuple[KubeStruct, str]]
    gone: list[OriginKey]


Held = dict[int, KubeStruct]
"""A set of objects by identity (holding them keeps their ids unique)."""


def changes_between(
    held: Held, objects: Iterable[KubeStruct], source_of: Callable[[KubeStruct], str]
) -> tuple[Held, Changes]:
    """`objects` as held, and how `held` became them; only what changed is keyed and sourced,
    so the cost over unchanged objects is one identity lookup each."""
    now = {id(obj): obj for obj in objects}
    put = [obj for i, obj in now.items() if i not in held]
    renewed = {origin_key(obj) for obj in put}
    went = (origin_key(obj) for i, obj in held.items() if i not in now)
    gone = [key for key in went if key not in renewed]
    return now, Changes([(obj, source_of(obj)) for obj in put], gone)


class MirrorState:
    """A ClusterState of its own, kept equal to another's objects by `Changes`: work on it
    (another process's) runs while the other state moves on."""

    def __init__(self) -> None:
        self._state: IncrementalState | None = None
        self._objects: dict[OriginKey, tuple[KubeStruct, str]] = {}

    def apply(self, changes: Changes, features: FeatureGates) -> ClusterState:
        """The state once `changes` are in, under `features`."""
        gone = [self._objects.pop(key)[0] for key in changes.gone if key in self._objects]
        for obj, source in changes.put:
            self._objects[origin_key(obj)] = (obj, source)
        if (
            self._state is None
            or self._state.state.features != features
            or any(needs_rebuild(obj) for obj, _ in changes.put)
            or any(needs_rebuild(obj) for obj in gone)
        ):
            # Its objects live until the next rebuild: frozen, the collector's full passes
            # scan only what changed since (as `serve`'s model does).
            with gc_paused():
                self._state = IncrementalState(self._objects.values(), features)
            return self._state.flush()
        for obj in gone:
            self._state.delete(obj)
        for obj, source in changes.put:
            self._state.put(obj, source)
        return self._state.flush()


# The tables of every object but `others`, in the order `state_objects` lists them, and whether
# each is keyed by the name alone.
TABLES = (
    ("namespaces", True),
    ("device_classes", True),
    ("taint_rules", True),
    (SLICE, True),
    (NODE, True),
    ("claim_templates", False),
    ("claims", False),
    ("pod_templates", False),
    ("pods", False),
    ("node_pools", True),
    ("services", False),
    ("replication_controllers", False),
    ("replica_sets", False),
    ("stateful_sets", False),
)
# Written outside `IncrementalState` too (`autoscaler.derived` adds the pools it derives), so
# never read off the log.
UNLOGGED = frozenset({"node_pools"})


def state_objects(state: ClusterState) -> tuple[KubeStruct, ...]:
    """Every object the state holds, kind by kind, in key order."""
    tables: list[Iterable[tuple[Any, KubeStruct]]] = [
        getattr(state, table).items() for table, _ in TABLES
    ]
    out = [obj for table in tables for _, obj in sorted(table)]
    return (*out, *state.others)


class ObjectsInOrder:
    """`state_objects` of a state `IncrementalState` keeps, and how they changed since the
    last look (`changes_between`'s answer), read off the state's object log: a look costs the
    objects changed, and one tuple of them all."""

    def __init__(self) -> None:
        self._log: ObjectLog | None = None
        self._cursor = 0
        # Per table, its keys in order and the objects under them.
        self._keys: dict[str, list[Any]] = {table: [] for table, _ in TABLES}
        self._objects: dict[str, list[KubeStruct]] = {table: [] for table, _ in TABLES}
        self._others: Held = {}

    def look(self, state: ClusterState) -> tuple[tuple[KubeStruct, ...], Changes]:
        log = state.object_log
        entries = None
        if log is not None and log is self._log and log.pods_version == state.pods.version:
            entries = log.since(self._cursor)
        named: dict[str, set[Any]] = {}
        for kind, key in entries or ():
            named.setdefault(kind, set()).add(key)
        put: list[tuple[int, Any, KubeStruct]] = []
        gone: list[tuple[int, Any, OriginKey]] = []
        for at, (table, by_name) in enumerate(TABLES):
            current: Mapping[Any, KubeStruct] = getattr(state, table)
            if entries is None or table in UNLOGGED:
                keys = sorted(k for k, _ in current.items())
            else:
                keys = sorted(k[1] if by_name else k for k in named.get(table, ()))
            self._follow(table, current, keys, entries is None or table in UNLOGGED, at, put, gone)
        self._log, self._cursor = log, log.end if log is not None else 0
        self._others, others = changes_between(self._others, state.others, state.source_of)
        put.sort(key=lambda p: p[:2])
        gone.sort(key=lambda g: g[:2])
        objects = (*itertools.chain.from_iterable(self._objects.values()), *state.others)
        return objects, Changes(
            [*((obj, state.source_of(obj)) for _, _, obj in put), *others.put],
            [*(key for _, _, key in gone), *others.gone],
        )

    def _follow(
        self,
        table: str,
        current: Mapping[Any, KubeStruct],
        keys: list[Any],
        whole: bool,
        at: int,
        put: list[tuple[int, Any, KubeStruct]],
        gone: list[tuple[int, Any, OriginKey]],
    ) -> None:
        """Bring the table's kept keys and objects to `current` at `keys` (with `whole`: the
        keys are all of `current`'s, and any other kept key went)."""
        kept_keys, kept = self._keys[table], self._objects[table]
        if whole:
            before = dict(zip(kept_keys, kept, strict=True))
            now = [current[k] for k in keys]
            for key, obj in zip(keys, now, strict=True):
                if before.pop(key, None) is not obj:
                    put.append((at, key, obj))
            gone.extend((at, key, origin_key(obj)) for key, obj in before.items())
            self._keys[table], self._objects[table] = keys, now
            return
        for key in keys:
            found = current.get(key)
            i = bisect.bisect_left(kept_keys, key)
            there = i < len(kept_keys) and kept_keys[i] == key
            if found is None:
                if there:
                    gone.append((at, key, origin_key(kept[i])))
                    del kept_keys[i], kept[i]
            elif not there:
                kept_keys.insert(i, key)
                kept.insert(i, found)
                put.append((at, key, found))
            elif kept[i] is not found:
                kept[i] = found
                put.append((at, key, found))
