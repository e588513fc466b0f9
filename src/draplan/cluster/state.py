"""ClusterState: the objects of one cluster snapshot and the ledgers the allocator reads.

Every table is a LayeredDict, so `fork()` / `revert()` are O(number of tables) and `commit()`
is linear in what the fork wrote (the contract of Cluster Autoscaler's delta snapshot).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import msgspec

from draplan.api.apps_v1 import ReplicaSet, StatefulSet
from draplan.api.codec import decode
from draplan.api.core_v1 import (
    Namespace,
    Node,
    Pod,
    PodTemplate,
    ReplicationController,
    Service,
)
from draplan.api.draplan_v1alpha1 import NodePool, Scenario
from draplan.api.errors import BadInput
from draplan.api.features import DEFAULT as DEFAULT_FEATURES
from draplan.api.features import FeatureGates
from draplan.api.meta import KubeStruct
from draplan.api.resource_v1 import (
    DeviceClass,
    DeviceRequestAllocationResult,
    DeviceSelector,
    DeviceTaintRule,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from draplan.cel import CelError, check_without_list_attributes, compile_selector
from draplan.cluster.devices import (
    CounterKey,
    DeviceID,
    DeviceView,
    Pool,
    PoolID,
    device_views,
    nanos,
)
from draplan.cluster.layered import LayeredDict, VersionedDict
from draplan.cluster.nodeselector import selector_matches, term_matches
from draplan.cluster.objectlog import ObjectLog
from draplan.cluster.podlabels import PodLabels
from draplan.cluster.podresources import (
    Resources,
    bound_usage,
    host_ports,
    is_gated,
    is_terminal,
)

ObjectKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped kinds


@dataclass(frozen=True)
class SharedUse:
    """Allocations of one multi-allocatable device: how many shares, capacity they consume."""

    shares: int
    consumed: dict[str, int]


def key_of(obj: KubeStruct) -> ObjectKey:
    meta = obj.metadata  # type: ignore[attr-defined]
    return (meta.namespace, meta.name)


OriginKey = tuple[str, ObjectKey]  # ("apiVersion/kind", (namespace, name)), as `origin` keys


def origin_key(obj: KubeStruct) -> OriginKey:
    """An object's identity across kinds: two kinds may share a name."""
    return (f"{getattr(obj, 'api_version', '')}/{getattr(obj, 'kind', '')}", key_of(obj))


def _check_gated_fields(obj: ResourceSlice, source: str, features: FeatureGates) -> None:
    """Fields of an alpha feature whose gate is off: the API server drops them, which leaves
    the object invalid or different, so their presence is an error here."""
    lists_off = "DRAListTypeAttributes" not in features
    groups_off = "DRADeviceCompatibilityGroups" not in features
    if not (lists_off or groups_off):
        return
    for i, dev in enumerate(obj.spec.devices):
        if lists_off:
            for name, attr in dev.attributes.items():
                # Inline rather than list_field(): this runs for every attribute of a dump.
                if (
                    attr.ints is None
                    and attr.bools is None
                    and attr.strings is None
                    and attr.versions is None
                ):
                    continue
                raise BadInput(
                    f"list-typed attribute values need the DRAListTypeAttributes feature "
                    f"gate (off in Kubernetes {features.version})",
                    source=source,
                    kind=obj.kind,
                    name=obj.metadata.name,
                    path=f"spec.devices[{i}].attributes[{name}].{attr.list_field()}",
                )
        if groups_off:
            for j, cc in enumerate(dev.consumes_counters):
                if cc.compatibility_groups:
                    raise BadInput(
                        f"compatibilityGroups need the DRADeviceCompatibilityGroups feature "
                        f"gate (off in Kubernetes {features.version})",
                        source=source,
                        kind=obj.kind,
                        name=obj.metadata.name,
                        path=f"spec.devices[{i}].consumesCounters[{j}].compatibilityGroups",
                    )


def _check_selectors(
    obj: DeviceClass | ResourceClaim | ResourceClaimTemplate, source: str, features: FeatureGates
) -> None:
    """CEL selectors must compile, as the API server checks at admission; draplan.api cannot
    check it (it sits below draplan.cel), so it is checked where a snapshot is assembled.
    Without DRAListTypeAttributes there is no includes()."""
    groups: list[tuple[str, tuple[DeviceSelector, ...]]] = []
    if isinstance(obj, DeviceClass):
        groups.append(("spec.selectors", obj.spec.selectors))
    else:
        claim = obj.spec if isinstance(obj, ResourceClaim) else obj.spec.spec
        prefix = "spec" if isinstance(obj, ResourceClaim) else "spec.spec"
        for i, req in enumerate(claim.devices.requests):
            path = f"{prefix}.devices.requests[{i}]"
            if req.exactly is not None:
                groups.append((f"{path}.exactly.selectors", req.exactly.selectors))
            for j, sub in enumerate(req.first_available):
                groups.append((f"{path}.firstAvailable[{j}].selectors", sub.selectors))
    for path, selectors in groups:
        for k, sel in enumerate(selectors):
            if sel.cel is None:
                continue
            try:
                compile_selector(sel.cel.expression)
                if "DRAListTypeAttributes" not in features:
                    check_without_list_attributes(sel.cel.expression)
            except CelError as err:
                raise BadInput(
                    str(err),
                    source=source,
                    kind=getattr(obj, "kind", ""),
                    name=key_of(obj)[1],
                    path=f"{path}[{k}].cel.expression",
                ) from None


def _admit(
    origin: dict[OriginKey, str],
    obj: KubeStruct,
    source: str,
    features: FeatureGates = DEFAULT_FEATURES,
) -> None:
    """One object joins a snapshot: unique by kind and name, CEL that compiles; a Scenario's
    job objects join too (they share the cluster's names once they arrive)."""
    okey = origin_key(obj)
    if okey in origin:
        raise BadInput(
            f"duplicate object (also in {origin[okey] or 'input'})",
            source=source,
            kind=getattr(obj, "kind", ""),
            name="/".join(p for p in okey[1] if p),
        )
    origin[okey] = source
    check_object(obj, source, features)
    if isinstance(obj, Scenario):
        kind, key = obj.kind, okey[1]
        for i, job in enumerate(obj.spec.workload.jobs):
            for k, doc in enumerate(job.objects):
                try:
                    _admit(origin, decode(doc, source=source), source, features)
                except BadInput as err:
                    path = f"spec.workload.jobs[{i}].objects[{k}]"
                    raise BadInput(
                        err.message,
                        source=source,
                        kind=kind,
                        name=key[1],
                        path=f"{path}.{err.path}" if err.path else path,
                    ) from None


def admit(
    objects: Iterable[tuple[KubeStruct, str]], features: FeatureGates = DEFAULT_FEATURES
) -> None:
    """Raise BadInput where `ClusterState.from_objects` would, without building anything."""
    origin: dict[OriginKey, str] = {}
    for obj, source in objects:
        _admit(origin, obj, source, features)


def check_object(obj: KubeStruct, source: str, features: FeatureGates) -> None:
    """BadInput unless every CEL selector of `obj` compiles and it uses no field of a gate
    that is off: what `from_objects` checks of each object."""
    # Only these kinds have either (a dump's pods, the most objects, skip both at once).
    if isinstance(obj, ResourceSlice):
        _check_gated_fields(obj, source, features)
    elif isinstance(obj, DeviceClass | ResourceClaim | ResourceClaimTemplate):
        _check_selectors(obj, source, features)


FEW_SLICES = 16
"""Above this many slices in a pool, changing one forgets every node's pools (sparing the scan)."""


# Kinds kept as they are: the ClusterState table of each, and whether it is keyed by name alone
# (cluster-scoped) rather than by namespace and name.
PLAIN_KINDS: dict[type, tuple[str, bool]] = {
    DeviceTaintRule: ("taint_rules", True),
    DeviceClass: ("device_classes", True),
    ResourceClaimTemplate: ("claim_templates", False),
    Namespace: ("namespaces", True),
    PodTemplate: ("pod_templates", False),
    NodePool: ("node_pools", True),
    Service: ("services", False),
    ReplicationController: ("replication_controllers", False),
    ReplicaSet: ("replica_sets", False),
    StatefulSet: ("stateful_sets", False),
}


class ClusterState:
    """Nodes, pods, DRA objects and the device / counter / capacity ledgers."""

    def __init__(self) -> None:
        self.nodes: LayeredDict[str, Node] = LayeredDict()
        self.pods: VersionedDict[ObjectKey, Pod] = VersionedDict()
        self.claims: LayeredDict[ObjectKey, ResourceClaim] = LayeredDict()
        self.slices: LayeredDict[str, ResourceSlice] = LayeredDict()
        self.device_classes: dict[str, DeviceClass] = {}
        self.claim_templates: dict[ObjectKey, ResourceClaimTemplate] = {}
        self.namespaces: dict[str, Namespace] = {}
        self.pod_templates: dict[ObjectKey, PodTemplate] = {}
        self.node_pools: dict[str, NodePool] = {}
        # What selects pods, for PodTopologySpread's default constraints.
        self.services: dict[ObjectKey, Service] = {}
        self.replication_controllers: dict[ObjectKey, ReplicationController] = {}
        self.replica_sets: dict[ObjectKey, ReplicaSet] = {}
        self.stateful_sets: dict[ObjectKey, StatefulSet] = {}
        # Taints applied to the devices they select; given before the slices they apply to.
        self.taint_rules: dict[str, DeviceTaintRule] = {}
        # The modelled cluster's version and feature gates (what it allocates and how).
        self.features: FeatureGates = DEFAULT_FEATURES
        self.others: list[KubeStruct] = []
        self.origin: dict[OriginKey, str] = {}
        # Derived indexes of the slices.
        self._slice_devices: LayeredDict[str, tuple[DeviceView, ...]] = LayeredDict()
        self._slices_by_node: LayeredDict[str, tuple[str, ...]] = LayeredDict()
        self._slices_by_pool: LayeredDict[PoolID, tuple[str, ...]] = LayeredDict()
        self._shared_slices: LayeredDict[str, bool] = LayeredDict()
        self._devices: LayeredDict[DeviceID, DeviceView] = LayeredDict()
        # Ledgers (dra-semantics §3.0 AllocatedState, plus consumed counters per pool).
        self.exclusive: LayeredDict[DeviceID, int] = LayeredDict()
        self.shared: LayeredDict[DeviceID, SharedUse] = LayeredDict()
        self.counters: LayeredDict[tuple[PoolID, CounterKey], int] = LayeredDict()
        # Pods' requests summed per node (NodeInfo.Requested upstream; nominated pods' too).
        self.node_requested: LayeredDict[str, Resources] = LayeredDict()
        # The pods each node holds (NodeInfo.Pods: bound and not finished), in binding order,
        # and those with pod affinity or anti-affinity terms by node (NodeInfo.PodsWithAffinity).
        self.node_pods: LayeredDict[str, tuple[ObjectKey, ...]] = LayeredDict()
        self.affinity_pods: LayeredDict[ObjectKey, str] = LayeredDict()
        # Of each node's pods, those with host ports (NodeInfo.UsedPorts' pods), in binding
        # order: most pods have none, and NodePorts reads a node's ports for every node.
        self.port_pods: LayeredDict[str, tuple[ObjectKey, ...]] = LayeredDict()
        # Every pod ever held, filed by namespace and label (a superset, across forks).
        self.pod_labels = PodLabels()
        # The waiting pods whose requests count on the node they are nominated to (the
        # scheduling queue's nominator): in node_requested, not among node_pods.
        self.held: LayeredDict[ObjectKey, str] = LayeredDict()
        # A version per node, unique over the whole run (so a revert restores an old version
        # that still names the old state), and a log of nodes whose version changed: schedulers
        # keep per-node results keyed by version and re-check only logged nodes. "*" = all.
        self.node_version: LayeredDict[str, int] = LayeredDict()
        self.change_log: list[str] = []
        # The pods, claims and claim templates changed since, on a state `cluster.incremental`
        # keeps (None on others): changes in a fork are not in it.
        self.object_log: ObjectLog | None = None
        # Per scheduler profile, kube-scheduler's nextStartNodeIndex: where the next cycle
        # starts looking for feasible nodes. Kept with the state, so a fork's trial cycles
        # leave it as it was once reverted.
        self.search_start: LayeredDict[str, int] = LayeredDict()
        self._clock = itertools.count(1)
        # Per fork layer, the pools each node sees; a layer without a slice change since it
        # was forked reads the layers below too (their Pool objects, kept by identity in
        # the schedulers' and the metrics' memos, are still right).
        self._pool_cache: list[dict[str, tuple[Pool, ...]]] = [{}]
        self._pool_barrier: list[bool] = [True]  # True: the layer reads no layer below
        self._tables = (
            self.nodes,
            self.pods,
            self.claims,
            self.slices,
            self._slice_devices,
            self._slices_by_node,
            self._slices_by_pool,
            self._shared_slices,
            self._devices,
            self.exclusive,
            self.shared,
            self.counters,
            self.node_requested,
            self.node_pods,
            self.affinity_pods,
            self.port_pods,
            self.held,
            self.node_version,
            self.search_start,
        )

    # --- building ------------------------------------------------------------------------

    @classmethod
    def from_objects(
        cls,
        objects: Iterable[tuple[KubeStruct, str] | KubeStruct],
        features: FeatureGates = DEFAULT_FEATURES,
    ) -> ClusterState:
        """Index objects (optionally paired with the file they came from) of a cluster with
        these feature gates."""
        state = cls()
        state.features = features
        claims: list[ResourceClaim] = []
        slices: list[ResourceSlice] = []
        pods: list[tuple[ObjectKey, Pod]] = []
        for item in objects:
            obj, source = item if isinstance(item, tuple) else (item, "")
            key = key_of(obj)
            _admit(state.origin, obj, source, features)
            if isinstance(obj, Node):
                state.nodes[key[1]] = obj
            elif isinstance(obj, Pod):
                state.pods[key] = obj
                state.pod_labels.add(key, obj)
                pods.append((key, obj))
            elif isinstance(obj, ResourceClaim):
                claims.append(obj)
            elif isinstance(obj, ResourceSlice):
                slices.append(obj)
            elif (plain := state.plain_table(obj)) is not None:
                table, at = plain
                table[at] = obj
            else:
                state.others.append(obj)
        state._place_new(pods)
        for rs in slices:
            state.add_slice(rs)
        for claim in claims:
            state.put_claim(claim)
        return state

    def plain_table(self, obj: KubeStruct) -> tuple[MutableMapping[Any, Any], Any] | None:
        """For an object of a kind kept as it is (no index over it), the table that holds it and
        its key there; None for other kinds."""
        entry = PLAIN_KINDS.get(type(obj))
        if entry is None:
            return None
        attribute, by_name = entry
        key = key_of(obj)
        return getattr(self, attribute), key[1] if by_name else key

    def source_of(self, obj: KubeStruct) -> str:
        return self.origin.get(origin_key(obj), "")

    # --- fork / commit / revert ----------------------------------------------------------

    def fork(self) -> None:
        for table in self._tables:
            table.fork()
        self._pool_cache.append({})
        self._pool_barrier.append(False)

    def revert(self) -> None:
        self.change_log.extend(self.node_version.top_keys())
        for table in self._tables:
            table.revert()
        self._pool_cache.pop()
        self._pool_barrier.pop()

    def commit(self) -> None:
        for table in self._tables:
            table.commit()
        top = self._pool_cache.pop()
        if self._pool_barrier.pop():
            # Slices changed in the committed layer: only its cache stays valid.
            self._pool_cache[-1] = top
            self._pool_barrier[-1] = True
        else:
            self._pool_cache[-1].update(top)

    @contextmanager
    def forked(self, *, commit: bool = False) -> Iterator[ClusterState]:
        """Fork for the body; revert afterwards unless `commit` (then commit on success)."""
        self.fork()
        try:
            yield self
        except BaseException:
            self.revert()
            raise
        if commit:
            self.commit()
        else:
            self.revert()

    @contextmanager
    def set_aside(self) -> Iterator[ClusterState]:
        """The state as it was before the top fork, for a body that leaves it as it found it
        (its own forks reverted); then the fork's changes again, as they were. The nodes the
        fork changed are logged both ways, so per-version caches follow."""
        changed = self.node_version.top_keys()
        tables: tuple[LayeredDict[Any, Any], ...] = self._tables
        lifted = [table.lift() for table in tables]
        pools = self._pool_cache.pop(), self._pool_barrier.pop()
        depth = len(self._pool_cache)
        self.change_log.extend(changed)
        try:
            yield self
        finally:
            if len(self._pool_cache) != depth:
                raise RuntimeError("set_aside: the body left a fork open")
            for table, layer in zip(tables, lifted, strict=True):
                table.lower(layer)
            self._pool_cache.append(pools[0])
            self._pool_barrier.append(pools[1])
            self.change_log.extend(changed)

    def attempt(self, body: Callable[[], bool]) -> bool:
        """Run `body` in a fork: kept (committed) when it returns True, else reverted."""
        self.fork()
        ok = False
        try:
            ok = body()
        finally:
            if ok:
                self.commit()
            else:
                self.revert()
        return ok

    # --- slices and pools ----------------------------------------------------------------

    def add_slice(self, rs: ResourceSlice) -> None:
        name = rs.metadata.name
        if name in self.slices:
            self.remove_slice(name)
        spec = rs.spec
        self.slices[name] = rs
        rules = self.taint_rules.values() if "DRADeviceTaintRules" in self.features else ()
        views = tuple(device_views(rs, rules))
        self._slice_devices[name] = views
        if spec.node_name:
            self._slices_by_node[spec.node_name] = (
                *(self._slices_by_node.get(spec.node_name) or ()),
                name,
            )
        else:
            self._shared_slices[name] = True
        pool_id = (spec.driver, spec.pool.name)
        self._slices_by_pool[pool_id] = (*(self._slices_by_pool.get(pool_id) or ()), name)
        for view in views:
            current = self._devices.get(view.id)
            if current is None or self._generation(current) <= spec.pool.generation:
                self._devices[view.id] = view
        self._slices_changed(pool_id, spec.node_name)
        self.touch(spec.node_name or "*")

    def remove_slice(self, name: str) -> None:
        rs = self.slices.get(name)
        if rs is None:
            return
        spec = rs.spec
        del self.slices[name]
        for view in self._slice_devices.get(name) or ():
            if self._devices.get(view.id) is view:
                del self._devices[view.id]
        del self._slice_devices[name]
        if spec.node_name:
            rest = tuple(n for n in self._slices_by_node.get(spec.node_name) or () if n != name)
            self._slices_by_node[spec.node_name] = rest
        else:
            del self._shared_slices[name]
        pool_id = (spec.driver, spec.pool.name)
        rest = tuple(n for n in self._slices_by_pool.get(pool_id) or () if n != name)
        self._slices_by_pool[pool_id] = rest
        self._slices_changed(pool_id, spec.node_name)
        self.touch(spec.node_name or "*")

    def _generation(self, view: DeviceView) -> int:
        rs = self.slices.get(view.slice_name)
        return rs.spec.pool.generation if rs is not None else -1

    def device(self, device_id: DeviceID) -> DeviceView | None:
        return self._devices.get(device_id)

    def slice_devices(self, name: str) -> tuple[DeviceView, ...]:
        return self._slice_devices.get(name) or ()

    def node_slices(self, node_name: str) -> list[ResourceSlice]:
        """The slices published for one node (spec.nodeName), in the order they were added."""
        return [self.slices[n] for n in self._slices_by_node.get(node_name) or ()]

    def pools_for_node(self, node: Node) -> tuple[Pool, ...]:
        """Pools visible from `node`, sorted by (driver, pool) as Kubernetes 1.36 does."""
        name = node.metadata.name
        caches = self._pool_cache
        pools = caches[-1].get(name)
        if pools is not None:
            return pools
        for i in range(len(caches) - 1, 0, -1):
            if self._pool_barrier[i]:
                break
            pools = caches[i - 1].get(name)
            if pools is not None:
                return pools
        pools = caches[-1][name] = self._gather_pools(node)
        return pools

    def _slices_changed(self, pool_id: PoolID, node_name: str | None) -> None:
        """Forget the pools gathered with pool `pool_id`'s slices, one of which (for node
        `node_name`, none when shared) changed. A node sees a node-local slice only when it is
        its own: while the pool's slices are all node-local, only their nodes are concerned."""
        slices = self._slices_by_pool.get(pool_id) or ()
        nodes = {node_name or ""}
        if len(slices) <= FEW_SLICES:
            nodes.update(self.slices[name].spec.node_name or "" for name in slices)
        if "" in nodes or len(slices) > FEW_SLICES:
            self._pool_cache[-1] = {}
            self._pool_barrier[-1] = True
            return
        for name in nodes:
            self._node_changed(name)

    def _node_changed(self, name: str) -> None:
        """Forget the pools gathered for node `name` (dropped from every layer: gathered
        again when asked, they are equal to those dropped where nothing changed)."""
        for cache in self._pool_cache:
            cache.pop(name, None)

    def _targets(self, rs: ResourceSlice, node: Node) -> bool:
        spec = rs.spec
        if spec.node_name:
            return spec.node_name == node.metadata.name
        if spec.all_nodes:
            return True
        if spec.node_selector is not None:
            return selector_matches(spec.node_selector, node)
        if spec.per_device_node_selection:
            return any(visible(v, node) for v in self.slice_devices(rs.metadata.name))
        return False

    def _gather_pools(self, node: Node) -> tuple[Pool, ...]:
        # dra-semantics §3.1 with the 1.36 index (PR #136588): node-local slices by name,
        # shared slices checked one by one.
        name = node.metadata.name
        relevant: dict[PoolID, list[ResourceSlice]] = {}
        candidates = [*(self._slices_by_node.get(name) or ()), *self._shared_slices.keys()]
        for sname in candidates:
            rs = self.slices[sname]
            if not self._targets(rs, node):
                continue
            pid = (rs.spec.driver, rs.spec.pool.name)
            have = relevant.get(pid)
            gen = rs.spec.pool.generation
            if have is None or gen > have[0].spec.pool.generation:
                relevant[pid] = [rs]
            elif gen == have[0].spec.pool.generation:
                have.append(rs)
        pools = []
        for pid in sorted(relevant):
            pool = self._build_pool(pid, relevant[pid], node)
            if pool is not None:
                pools.append(pool)
        return tuple(pools)

    def _build_pool(self, pid: PoolID, targeting: list[ResourceSlice], node: Node) -> Pool | None:
        generation = targeting[0].spec.pool.generation
        expected = targeting[0].spec.pool.resource_slice_count
        all_slices = [self.slices[n] for n in self._slices_by_pool.get(pid) or ()]
        if any(rs.spec.pool.generation > generation for rs in all_slices):
            return None  # obsolete: a newer generation exists elsewhere
        same_gen = [rs for rs in all_slices if rs.spec.pool.generation == generation]
        incomplete = len(same_gen) != expected
        targeting.sort(key=lambda rs: rs.metadata.name)
        devices: list[DeviceView] = []
        counters: dict[CounterKey, int] = {}
        invalid = ""
        seen_devices: set[str] = set()
        seen_sets: set[str] = set()
        for rs in sorted(same_gen, key=lambda rs: rs.metadata.name):
            for cs in rs.spec.shared_counters:
                if cs.name in seen_sets:
                    invalid = invalid or f"counter set {cs.name!r} is defined twice"
                seen_sets.add(cs.name)
                for cname, counter in cs.counters.items():
                    counters[(cs.name, cname)] = nanos(counter.value)
        for rs in targeting:
            for view in self.slice_devices(rs.metadata.name):
                if rs.spec.per_device_node_selection and not visible(view, node):
                    continue
                if view.name in seen_devices:
                    invalid = invalid or f"device {view.name!r} is published twice"
                seen_devices.add(view.name)
                devices.append(view)
        if not incomplete and not invalid:
            for rs in same_gen:
                for view in self.slice_devices(rs.metadata.name):
                    for ckey, _ in view.consumes:
                        if ckey[0] not in seen_sets:
                            invalid = (
                                f"device {view.name!r} consumes unknown counter set {ckey[0]!r}"
                            )
                        elif ckey not in counters:
                            invalid = (
                                f"device {view.name!r} consumes unknown counter "
                                f"{ckey[1]!r} of set {ckey[0]!r}"
                            )
        return Pool(pid, generation, tuple(devices), counters, incomplete, invalid)

    # --- nodes and pods ------------------------------------------------------------------

    def touch(self, node_name: str) -> None:
        """Record that what `node_name` offers changed ("*": every node)."""
        self.node_version[node_name] = next(self._clock)
        self.change_log.append(node_name)

    def changed_since(self, cursor: int) -> list[str] | None:
        """The nodes the change log names from `cursor` on, sorted; None when every node may
        have changed (a cluster-wide change, or a cursor of -1: nothing seen yet)."""
        if cursor < 0:
            return None
        tail = self.change_log[cursor:]
        return None if "*" in tail else sorted(set(tail))

    def version(self, node_name: str) -> tuple[int, int]:
        return (self.node_version.get("*") or 0, self.node_version.get(node_name) or 0)

    def ledgers_version(self, nodes: tuple[str, ...]) -> object:
        """What names the ledgers of devices bound to `nodes`: their versions (a device's
        ledger moves its node's); of devices bound to none, every node's ("*")."""
        return tuple(self.version(n) for n in nodes) if nodes else self.version("")

    def add_node(self, node: Node) -> None:
        self.nodes[node.metadata.name] = node
        # Slices may select nodes by label: a replaced Node object gathers its pools again.
        self._node_changed(node.metadata.name)
        self.touch(node.metadata.name)

    def remove_node(self, name: str) -> None:
        """Remove a node and its node-local slices (its pods are the caller's business)."""
        for sname in self._slices_by_node.get(name) or ():
            self.remove_slice(sname)
        self.nodes.pop(name)
        self.touch(name)

    def _add_usage(self, node_name: str, pod: Pod, sign: int) -> None:
        used = dict(self.node_requested.get(node_name) or {})
        for name, amount in self.usage(pod).items():
            used[name] = used.get(name, 0) + sign * amount
        self.node_requested[node_name] = used
        self.touch(node_name)

    def _hold(self, pod: Pod, node_name: str, sign: int) -> None:
        """`pod` starts (+1) or stops (-1) counting on `node_name`: its requests, its place
        among the node's pods."""
        self._add_usage(node_name, pod, sign)
        key = key_of(pod)
        held = self.node_pods.get(node_name) or ()
        ported = self.port_pods.get(node_name) or ()
        if sign > 0:
            self.node_pods[node_name] = (*held, key)
            if has_pod_affinity(pod):
                self.affinity_pods[key] = node_name
            if host_ports(pod):
                self.port_pods[node_name] = (*ported, key)
        else:
            self.node_pods[node_name] = tuple(k for k in held if k != key)
            if key in self.affinity_pods:
                del self.affinity_pods[key]
            if key in ported:
                self.port_pods[node_name] = tuple(k for k in ported if k != key)

    def pods_on(self, node_name: str) -> list[Pod]:
        """The pods `node_name` holds (bound, not finished), in the order they were bound."""
        pods = self.pods
        return [pods[k] for k in self.node_pods.get(node_name) or ()]

    def usage(self, pod: Pod) -> Resources:
        """What a bound pod takes from its node: requests, and the non-zero sums scores use."""
        return bound_usage(pod, self.features)

    def requested(self, node_name: str) -> Resources:
        return self.node_requested.get(node_name) or {}

    def _place(self, key: ObjectKey, pod: Pod, sign: int) -> None:
        """Count (sign +1) or uncount a pod where it takes room: its node if bound, the node
        it is nominated to if it waits there (see `nominate`)."""
        if is_terminal(pod):
            return
        if pod.spec.node_name:
            self._hold(pod, pod.spec.node_name, sign)
            return
        node_name = pod.status.nominated_node_name
        if not node_name or is_gated(pod) or (key in self.held) == (sign > 0):
            return
        if sign > 0:
            self.held[key] = node_name
        else:
            self.held.pop(key)
        self._add_usage(node_name, pod, sign)

    def _place_new(self, pods: list[tuple[ObjectKey, Pod]]) -> None:
        """`_place` of every pod of a state being built, each node written once: its pods'
        requests summed in place and its pods listed, not a copy of both per pod."""
        requested: dict[str, Resources] = {}
        bound: dict[str, list[ObjectKey]] = {}
        # Pods of one template ask alike: their usage is worked out once.
        usages: dict[Hashable, Resources] = {}
        for key, pod in pods:
            if is_terminal(pod):
                continue
            node_name = pod.spec.node_name
            if node_name:
                bound.setdefault(node_name, []).append(key)
                if has_pod_affinity(pod):
                    self.affinity_pods[key] = node_name
                if host_ports(pod):
                    self.port_pods[node_name] = (*(self.port_pods.get(node_name) or ()), key)
            else:
                node_name = pod.status.nominated_node_name
                if not node_name or is_gated(pod):
                    continue
                self.held[key] = node_name
            spec = pod.spec
            alike: Hashable = None
            if not (spec.init_containers or spec.overhead or spec.resources):
                alike = tuple(tuple(c.resources.requests.items()) for c in spec.containers)
            usage = usages.get(alike) if alike is not None else None
            if usage is None:
                usage = self.usage(pod)
                if alike is not None:
                    usages[alike] = usage
            used = requested.setdefault(node_name, {})
            for name, amount in usage.items():
                used[name] = used.get(name, 0) + amount
        for node_name, keys in bound.items():
            self.node_pods[node_name] = tuple(keys)
        for node_name, used in requested.items():
            self.node_requested[node_name] = used
            self.touch(node_name)

    def release(self, key: ObjectKey) -> None:
        """Stop counting a nominated pod's requests on its node (for one scheduling cycle of a
        pod that must not see it); `rehold` counts them again."""
        pod = self.pods.get(key)
        if pod is not None and not pod.spec.node_name:
            self._place(key, pod, -1)

    def rehold(self, key: ObjectKey) -> None:
        pod = self.pods.get(key)
        if pod is not None and not pod.spec.node_name:
            self._place(key, pod, +1)

    def bind_pod(self, pod: Pod, node_name: str) -> Pod:
        """Place `pod` on `node_name`: its requests count against the node from now on (and no
        longer where it was nominated)."""
        key = key_of(pod)
        old = self.pods.get(key)
        if old is not None:
            self._place(key, old, -1)
        bound = msgspec.structs.replace(
            pod, spec=msgspec.structs.replace(pod.spec, node_name=node_name)
        )
        self.pods[key] = bound
        self._place(key, bound, +1)
        return bound

    def unbind_pod(self, pod: Pod) -> None:
        """Take a bound pod off its node (it stays in the state, pending)."""
        if pod.spec.node_name:
            key = key_of(pod)
            self._place(key, pod, -1)
            spec = msgspec.structs.replace(pod.spec, node_name="")
            self.pods[key] = msgspec.structs.replace(pod, spec=spec)

    def nominate(self, pod: Pod, node_name: str) -> Pod:
        """Set (or, with "", clear) a waiting pod's status.nominatedNodeName: its requests
        count on that node for the pods of equal or lower priority scheduled after it (the
        scheduler asks `held` which pods to leave out for a pod of higher priority)."""
        key = key_of(pod)
        old = self.pods.get(key) or pod
        self._place(key, old, -1)
        status = msgspec.structs.replace(old.status, nominated_node_name=node_name)
        new = msgspec.structs.replace(old, status=status)
        self.pods[key] = new
        self._place(key, new, +1)
        return new

    def put_pod(self, pod: Pod) -> None:
        """Add or replace a pod as the API server holds it (a watch event): its node share
        moves with its binding; its claims are untouched (they are objects of their own)."""
        key = key_of(pod)
        self.delete_pod(key)
        self.pods[key] = pod
        labels = self.pod_labels
        if labels.crowded and self.pods.depth == 1:
            labels.rebuild(self.pods.items())
        labels.add(key, pod)
        self._place(key, pod, +1)

    def delete_pod(self, key: ObjectKey) -> None:
        """Forget a pod the API server deleted, freeing its node share; unlike `remove_pod`,
        its claims stay (the resourceclaim controller deletes them in events of their own)."""
        pod = self.pods.get(key)
        if pod is None:
            return
        self._place(key, pod, -1)
        del self.pods[key]

    def delete_node(self, name: str) -> None:
        """Forget a Node object the API server deleted; unlike `remove_node`, its slices and
        pods stay until their own deletions arrive."""
        if self.nodes.get(name) is None:
            return
        del self.nodes[name]
        self._node_changed(name)
        self.touch(name)

    def remove_pod(self, key: ObjectKey) -> None:
        """A pod finished: free its node share, delete the claims generated for it, and release
        (and, once nobody holds them, deallocate) the claims it named."""
        pod = self.pods.get(key)
        if pod is None:
            return
        self._place(key, pod, -1)
        del self.pods[key]
        ns = pod.metadata.namespace
        generated = {
            s.resource_claim_name
            for s in pod.status.resource_claim_statuses
            if s.resource_claim_name
        }
        named = {r.resource_claim_name for r in pod.spec.resource_claims if r.resource_claim_name}
        for name in sorted(generated):
            self.remove_claim((ns, name))
        for name in sorted(named):
            claim = self.claims.get((ns, name))
            if claim is not None:
                self.unreserve_claim(claim, key)

    def unreserve_claim(self, claim: ResourceClaim, pod: ObjectKey) -> None:
        """`claim` no longer reserved for the pod `pod`: deallocated (its devices free) once
        nothing reserves it, kept allocated while others still do."""
        users = tuple(
            r
            for r in claim.status.reserved_for
            if (r.resource, claim.metadata.namespace, r.name) != ("pods", *pod)
        )
        allocation = claim.status.allocation if users else None
        status = msgspec.structs.replace(claim.status, allocation=allocation, reserved_for=users)
        self.put_claim(msgspec.structs.replace(claim, status=status))

    # --- claims and ledgers --------------------------------------------------------------

    def put_claim(self, claim: ResourceClaim) -> None:
        """Add or replace a claim; its allocation (if any) moves into the ledgers."""
        key = key_of(claim)
        old = self.claims.get(key)
        if old is not None and old.status.allocation is not None:
            self._account(old.status.allocation.devices.results, -1)
        self.claims[key] = claim
        if claim.status.allocation is not None:
            self._account(claim.status.allocation.devices.results, +1)

    def remove_claim(self, key: ObjectKey) -> None:
        old = self.claims.get(key)
        if old is None:
            return
        if old.status.allocation is not None:
            self._account(old.status.allocation.devices.results, -1)
        del self.claims[key]

    def _account(self, results: Iterable[DeviceRequestAllocationResult], sign: int) -> None:
        for res in results:
            if res.admin_access:
                continue  # admin access never makes a device "in use" (§3.0)
            dev_id = (res.driver, res.pool, res.device)
            view = self._devices.get(dev_id)
            self.touch(view.node_name if view is not None and view.node_name else "*")
            if res.share_id is not None:
                use = self.shared.get(dev_id) or SharedUse(0, {})
                consumed = dict(use.consumed)
                for name, q in res.consumed_capacity.items():
                    consumed[name] = consumed.get(name, 0) + sign * nanos(q)
                shares = use.shares + sign
                first_or_last = (sign > 0 and use.shares == 0) or (sign < 0 and shares == 0)
                if shares:
                    self.shared[dev_id] = SharedUse(shares, consumed)
                else:
                    self.shared.pop(dev_id)
                if first_or_last and view is not None:
                    self._consume_counters(view, sign)
            else:
                count = (self.exclusive.get(dev_id) or 0) + sign
                if count > 0:
                    self.exclusive[dev_id] = count
                else:
                    self.exclusive.pop(dev_id)
                if view is not None:
                    self._consume_counters(view, sign)

    def _consume_counters(self, view: DeviceView, sign: int) -> None:
        pid = view.pool_id
        for ckey, amount in view.consumes:
            k = (pid, ckey)
            self.counters[k] = (self.counters.get(k) or 0) + sign * amount

    def in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.exclusive

    def shared_use(self, device_id: DeviceID) -> SharedUse | None:
        return self.shared.get(device_id)

    def counter_used(self, pool_id: PoolID, ckey: CounterKey) -> int:
        return self.counters.get((pool_id, ckey)) or 0


def has_pod_affinity(pod: Pod) -> bool:
    """Whether the pod has pod affinity or anti-affinity terms (NodeInfo.PodsWithAffinity)."""
    aff = pod.spec.affinity
    return aff is not None and (aff.pod_affinity is not None or aff.pod_anti_affinity is not None)


def visible(view: DeviceView, node: Node) -> bool:
    """Is the device reachable from `node` by its own (or its slice's) node selection."""
    if view.all_nodes:
        return True
    if view.node_name is not None:
        return view.node_name == node.metadata.name
    if view.node_term is not None:
        return term_matches(view.node_term, node)
    return False
