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

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from draplan.api.apps_v1 import ReplicaSet, StatefulSet
from draplan.api.core_v1 import Namespace, Node, Pod, ReplicationController, Service
from draplan.api.features import DEFAULT as DEFAULT_FEATURES
from draplan.api.features import FeatureGates
from draplan.api.meta import KubeStruct
from draplan.api.resource_v1 import (
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from draplan.cluster.devices import PoolID
from draplan.cluster.objectlog import CLAIM, POD, TEMPLATE, ObjectLog
from draplan.cluster.state import ClusterState, ObjectKey, OriginKey, key_of, origin_key


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
        if isinstance(obj, Pod):
            if self.state.pods.version != self.log.pods_version:
                self.log.restart()  # the pods were written to since, not by an event
            self.log.add(POD, key)
        elif isinstance(obj, ResourceClaim):
            self.log.add(CLAIM, key)
        elif isinstance(obj, ResourceClaimTemplate):
            self.log.add(TEMPLATE, key)

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
            self._state = IncrementalState(self._objects.values(), features)
            return self._state.flush()
        for obj in gone:
            self._state.delete(obj)
        for obj, source in changes.put:
            self._state.put(obj, source)
        return self._state.flush()
