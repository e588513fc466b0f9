"""Pool status in the terms of resource.k8s.io/v1alpha3 ResourcePoolStatusRequest (KEP-5677),
computed from draplan's model, and set beside what the server's controller answered.

The counts follow kube-controller-manager's resourcepoolstatusrequest controller (1.37): a
pool is the slices of its newest generation; fewer slices than `resourceSliceCount` is an
incomplete pool (a validationError, no counts); a device is unavailable when it carries a
NoSchedule or NoExecute taint of its own or of a DeviceTaintRule (allocated or not), and
available devices are `max(0, total - allocated - unavailable)`. A device is allocated when
a claim other than an admin-access one holds it (draplan's ledgers). partitionSummary groups
counter-consuming devices by their partition type attribute and counts, per type, how many
free ones the counters left after the devices in use could still take, one type at a time;
shareableSummary counts shared devices with and without allocations and sums their capacity.
The two summaries are 1.37's (1.36's controller reports counts only), so they are neither
computed nor compared for a 1.36 cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from draplan.api.codec import to_builtins
from draplan.api.resource_v1 import Device, DeviceCounterConsumption, ResourceSlice
from draplan.api.resource_v1alpha3 import (
    LIMIT_DEFAULT,
    PartitionTypeStatus,
    PoolStatus,
    ResourcePoolStatusRequest,
    ShareableCapacityStatus,
    ShareableSummaryStatus,
)
from draplan.cluster.devices import from_nanos, nanos
from draplan.cluster.objectlog import SLICE, ObjectLog
from draplan.cluster.state import ClusterState

UNAVAILABLE_EFFECTS = ("NoSchedule", "NoExecute")
SUMMARIES = ("partitionSummary", "shareableSummary")
# The fields compared between the server's answer and draplan's.
COUNTS = (
    "resourceSliceCount",
    "totalDevices",
    "allocatedDevices",
    "availableDevices",
    "unavailableDevices",
)


@dataclass
class _Pool:
    driver: str
    name: str
    generation: int
    expected: int  # resourceSliceCount at that generation
    slices: list[ResourceSlice] = field(default_factory=list)

    def devices(self) -> Iterable[tuple[ResourceSlice, Device]]:
        return ((rs, d) for rs in self.slices for d in rs.spec.devices)


def _pools(state: ClusterState, driver: str | None, pool_name: str | None) -> list[_Pool]:
    by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
    for _, rs in sorted(state.slices.items()):
        spec = rs.spec
        if (driver is not None and spec.driver != driver) or (
            pool_name is not None and spec.pool.name != pool_name
        ):
            continue
        by_pool.setdefault((spec.driver, spec.pool.name), []).append(rs)
    return [_newest(by_pool[k]) for k in sorted(by_pool)]


def _newest(slices: list[ResourceSlice]) -> _Pool:
    """A pool of its slices (in name order) of the newest generation."""
    spec = slices[0].spec
    pool = _Pool(spec.driver, spec.pool.name, -1, 0)
    for rs in slices:
        gen = rs.spec.pool.generation
        if gen > pool.generation:
            pool.generation, pool.expected = gen, rs.spec.pool.resource_slice_count
            pool.slices = []
        if gen == pool.generation:
            pool.slices.append(rs)
    return pool


def _unavailable(state: ClusterState, driver: str, pool: str, device: Device) -> bool:
    if any(t.effect in UNAVAILABLE_EFFECTS for t in device.taints):
        return True
    if "DRADeviceTaintRules" not in state.features:
        return False
    return any(
        r.spec.taint.effect in UNAVAILABLE_EFFECTS
        and r.spec.device_selector is not None
        and r.spec.device_selector.selects(driver, pool, device.name)
        for r in state.taint_rules.values()
    )


def _in_use(state: ClusterState, driver: str, pool: str, device: Device) -> bool:
    did = (driver, pool, device.name)
    return state.in_use(did) or state.shared_use(did) is not None


def _partition_type(driver: str, device: Device, attribute: str) -> str | None:
    """The string value of `attribute` (explicit `domain/id` first, then the bare id in the
    driver's domain); None when absent or not a string."""
    attr = device.attributes.get(attribute)
    bare = attribute.removeprefix(f"{driver}/")
    if attr is None and bare != attribute:
        attr = device.attributes.get(bare)
    return attr.string if attr is not None else None


def _cost(consumes: tuple[DeviceCounterConsumption, ...]) -> dict[tuple[str, str], int]:
    return {
        (cc.counter_set, name): nanos(c.value) for cc in consumes for name, c in cc.counters.items()
    }


def _fits(cost: dict[tuple[str, str], int], avail: dict[tuple[str, str], int]) -> bool:
    return all(k in avail and avail[k] >= v for k, v in cost.items())


def _deduct(cost: dict[tuple[str, str], int], avail: dict[tuple[str, str], int]) -> None:
    for k, v in cost.items():
        if k in avail:
            avail[k] -= v


def _partition_summary(
    state: ClusterState, pool: _Pool, default_attribute: str | None
) -> tuple[tuple[PartitionTypeStatus, ...], str]:
    # The request's default applies only where no slice with devices names an attribute.
    declares = any(rs.spec.partition_type_attribute and rs.spec.devices for rs in pool.slices)
    if not declares and not default_attribute:
        return (), ""  # no device names a partition type
    avail: dict[tuple[str, str], int] = {
        (cs.name, name): nanos(c.value)
        for rs in pool.slices
        for cs in rs.spec.shared_counters
        for name, c in cs.counters.items()
    }
    groups: dict[tuple[str, str], tuple[list[Device], list[int]]] = {}  # -> fresh, [total]
    costs: dict[tuple[str, str], dict[tuple[str, str], int]] = {}
    grouped = False
    for rs, dev in pool.devices():
        if _in_use(state, pool.driver, pool.name, dev):
            _deduct(_cost(dev.consumes_counters), avail)
        attribute = rs.spec.partition_type_attribute or (None if declares else default_attribute)
        if not attribute:
            continue
        grouped = True
        if not dev.consumes_counters:
            continue  # not a partition
        kind = _partition_type(pool.driver, dev, attribute)
        if kind is None:
            return (), (
                f"PartitionTypeMissing: device {dev.name!r} in pool {pool.driver}/{pool.name} "
                f"does not carry partition type attribute {attribute!r}"
            )
        key = (attribute, kind)
        cost = _cost(dev.consumes_counters)
        if costs.setdefault(key, cost) != cost:
            return (), (
                f"PartitionCostMismatch: devices of partition type {kind!r} in pool "
                f"{pool.driver}/{pool.name} consume different counters"
            )
        fresh, total = groups.setdefault(key, ([], [0]))
        total[0] += 1
        if not _in_use(state, pool.driver, pool.name, dev):
            fresh.append(dev)
    if grouped and not avail:
        return (), (
            f"PartitionTypeMissing: pool {pool.driver}/{pool.name} declares "
            "partitionTypeAttribute but publishes no sharedCounters"
        )
    out = []
    for (attribute, kind), (fresh, total) in sorted(groups.items()):
        left = dict(avail)
        takes = 0
        for dev in fresh:
            cost = _cost(dev.consumes_counters)
            if _fits(cost, left):
                takes += 1
                _deduct(cost, left)
        out.append(PartitionTypeStatus(attribute, kind, total[0], takes))
    return tuple(out), ""


def _shareable_summary(state: ClusterState, pool: _Pool) -> ShareableSummaryStatus | None:
    full = partial = 0
    total: dict[str, int] = {}
    consumed: dict[str, int] = {}
    for _, dev in pool.devices():
        if dev.allow_multiple_allocations is not True:
            continue
        if not _in_use(state, pool.driver, pool.name, dev):
            full += 1
        else:
            partial += 1  # in use at all, however much capacity is left
            use = state.shared_use((pool.driver, pool.name, dev.name))
            for name, amount in (use.consumed if use is not None else {}).items():
                consumed[name] = consumed.get(name, 0) + amount
        for name, cap in dev.capacity.items():
            total[name] = total.get(name, 0) + nanos(cap.value)
    if not full and not partial:
        return None
    capacity = tuple(
        ShareableCapacityStatus(
            name=name,
            total=from_nanos(amount),
            consumed=from_nanos(consumed.get(name, 0)),
            available=from_nanos(max(0, amount - consumed.get(name, 0))),
        )
        for name, amount in sorted(total.items())
    )
    return ShareableSummaryStatus(full, partial, capacity)


def _summaries(state: ClusterState) -> bool:
    """Whether the modelled release's controller reports partition and shareable summaries."""
    return tuple(int(p) for p in state.features.version.split(".")) >= (1, 37)


def _status(state: ClusterState, pool: _Pool, default_attribute: str | None) -> PoolStatus:
    nodes = {rs.spec.node_name or "" for rs in pool.slices}
    node = next(iter(nodes)) if len(nodes) == 1 else ""
    base = PoolStatus(
        driver=pool.driver,
        pool_name=pool.name,
        generation=pool.generation,
        node_name=node or None,
    )
    if len(pool.slices) < pool.expected:
        return PoolStatus(
            driver=base.driver,
            pool_name=base.pool_name,
            generation=base.generation,
            node_name=base.node_name,
            validation_error=(
                f"PoolIncomplete: pool {pool.driver}/{pool.name} is incomplete: observed "
                f"{len(pool.slices)}/{pool.expected} slices at generation {pool.generation}"
            ),
        )
    total = allocated = unavailable = 0
    # Without DeviceTaintRules that could make one unavailable, a device's own taints say.
    ruled = "DRADeviceTaintRules" in state.features and any(
        r.spec.taint.effect in UNAVAILABLE_EFFECTS and r.spec.device_selector is not None
        for r in state.taint_rules.values()
    )
    for _, dev in pool.devices():
        total += 1
        allocated += _in_use(state, pool.driver, pool.name, dev)
        if dev.taints or ruled:
            unavailable += _unavailable(state, pool.driver, pool.name, dev)
    partitions: tuple[PartitionTypeStatus, ...] = ()
    error, shareable = "", None
    if _summaries(state):
        partitions, error = _partition_summary(state, pool, default_attribute)
        shareable = _shareable_summary(state, pool)
    return PoolStatus(
        driver=base.driver,
        pool_name=base.pool_name,
        generation=base.generation,
        resource_slice_count=len(pool.slices),
        total_devices=total,
        allocated_devices=allocated,
        available_devices=max(0, total - allocated - unavailable),
        unavailable_devices=unavailable,
        node_name=base.node_name,
        validation_error=error or None,
        partition_summary=partitions,
        shareable_summary=shareable,
    )


def pool_statuses(
    state: ClusterState,
    driver: str | None = None,
    pool_name: str | None = None,
    default_partition_attribute: str | None = None,
) -> list[PoolStatus]:
    """Every pool (of `driver`, named `pool_name`, when given) as the controller reports it,
    sorted by driver, then pool name."""
    return [
        _status(state, p, default_partition_attribute) for p in _pools(state, driver, pool_name)
    ]


class PoolStatusMemo:
    """Each pool's status document, kept between reports on one changing state while its
    slices are the same objects and the versions of the nodes its devices are bound to hold
    (a device's allocation moves its node's version, or "*" for a device bound to none). On a
    state `cluster.incremental` keeps, a report looks again only at the pools of the slices
    its object log names and of the nodes its change log names."""

    def __init__(self) -> None:
        self.state: ClusterState | None = None
        # Per pool: its slices, the nodes its devices are bound to (None: some to none),
        # what else its status reads, and its document.
        self.kept: dict[tuple[str, str], _Kept] = {}
        self._common: object = None
        self._log: ObjectLog | None = None
        self._cursor = 0  # the object log read up to
        self._nodes_cursor = 0  # the change log read up to
        self._slice_pool: dict[str, tuple[str, str]] = {}
        self._pool_slices: dict[tuple[str, str], set[str]] = {}
        self._bound: dict[str, set[tuple[str, str]]] = {}  # node ("": none): pools there
        self._order: list[tuple[str, str]] = []

    def documents(self, state: ClusterState) -> list[dict[str, Any]]:
        rules = tuple(state.taint_rules.items()) if "DRADeviceTaintRules" in state.features else ()
        common = (state.features, rules)
        changed = self._changed(state, common)
        if changed is None:
            self._all(state, common)
        else:
            for pid in sorted(changed):
                self._one(state, pid, common)
            if changed:
                self._order = sorted(self.kept)
        self.state, self._common, self._log = state, common, state.object_log
        self._cursor = state.object_log.end if state.object_log is not None else 0
        self._nodes_cursor = len(state.change_log)
        return [self.kept[pid][3] for pid in self._order]

    def _changed(self, state: ClusterState, common: object) -> set[tuple[str, str]] | None:
        """The pools to look at again; None: every pool."""
        log = state.object_log
        if state is not self.state or common != self._common or log is None or log is not self._log:
            return None
        entries = log.since(self._cursor)
        nodes = state.changed_since(self._nodes_cursor)
        if entries is None or nodes is None:
            return None
        out: set[tuple[str, str]] = set()
        for node in nodes:
            out.update(self._bound.get(node, ()))
        for kind, (_, name) in entries:
            if kind != SLICE:
                continue
            old = self._slice_pool.pop(name, None)
            if old is not None:
                self._pool_slices[old].discard(name)
                out.add(old)
            rs = state.slices.get(name)
            if rs is not None:
                pid = (rs.spec.driver, rs.spec.pool.name)
                self._slice_pool[name] = pid
                self._pool_slices.setdefault(pid, set()).add(name)
                out.add(pid)
        return out

    def _all(self, state: ClusterState, common: object) -> None:
        kept, self.kept, self._bound = self.kept if state is self.state else {}, {}, {}
        self._slice_pool, self._pool_slices = {}, {}
        for pool in _pools(state, None, None):
            pid = (pool.driver, pool.name)
            for rs in pool.slices:
                self._slice_pool[rs.metadata.name] = pid
            self._keep(state, pid, pool, kept.get(pid), common)
        # Slices of older generations name their pool too.
        for name, rs in state.slices.items():
            pid = self._slice_pool.setdefault(name, (rs.spec.driver, rs.spec.pool.name))
            self._pool_slices.setdefault(pid, set()).add(name)
        self._order = sorted(self.kept)

    def _one(self, state: ClusterState, pid: tuple[str, str], common: object) -> None:
        seen = self.kept.pop(pid, None)
        if seen is not None:
            for node in seen[1] if seen[1] is not None else ("",):
                self._bound.get(node, set()).discard(pid)
        names = self._pool_slices.get(pid)
        if not names:
            self._pool_slices.pop(pid, None)
            return
        self._keep(state, pid, _newest([state.slices[n] for n in sorted(names)]), seen, common)

    def _keep(
        self,
        state: ClusterState,
        pid: tuple[str, str],
        pool: _Pool,
        seen: _Kept | None,
        common: object,
    ) -> None:
        slices = tuple(pool.slices)
        where = seen[1] if seen is not None and seen[0] == slices else _bound_to(state, pool)
        versions = state.version("") if where is None else tuple(state.version(n) for n in where)
        key = (common, versions)
        if seen is None or seen[0] != slices or seen[2] != key:
            seen = (slices, where, key, _flat(_status(state, pool, None)))
        self.kept[pid] = seen
        for node in where if where is not None else ("",):
            self._bound.setdefault(node, set()).add(pid)


_Kept = tuple[tuple[ResourceSlice, ...], tuple[str, ...] | None, object, dict[str, Any]]


def _bound_to(state: ClusterState, pool: _Pool) -> tuple[str, ...] | None:
    nodes = {
        v.node_name
        for rs in pool.slices
        for v in (
            state.slice_devices(rs.metadata.name)
            if rs.spec.per_device_node_selection or not rs.spec.node_name
            else state.slice_devices(rs.metadata.name)[:1]  # all bound to the slice's node
        )
    }
    if None in nodes or not nodes:
        return None
    return tuple(sorted(n for n in nodes if n is not None))


@dataclass(frozen=True)
class Difference:
    pool: str  # driver/pool
    field: str
    server: Any
    draplan: Any


def _flat(status: PoolStatus | None) -> dict[str, Any]:
    doc = to_builtins(status) if status is not None else {}
    assert isinstance(doc, dict)
    return doc


def compare_request(state: ClusterState, req: ResourcePoolStatusRequest) -> dict[str, Any]:
    """One answered request beside draplan's numbers for the same filter: each pool with
    both sides, and every count, summary or pool that differs."""
    spec = req.spec
    mine = pool_statuses(state, spec.driver, spec.pool_name, spec.default_partition_type_attribute)
    limit = spec.limit or LIMIT_DEFAULT
    theirs = req.status.pools if req.status is not None else ()
    by_key = {(p.driver, p.pool_name): p for p in mine}
    differences: list[Difference] = []
    pools = []
    for server in theirs:
        key = (server.driver, server.pool_name)
        ours = by_key.get(key)
        label = "/".join(key)
        s, d = _flat(server), _flat(ours)
        if ours is None:
            differences.append(Difference(label, "pool", "present", "absent"))
        else:
            compared = (*COUNTS, "validationError", *(SUMMARIES if _summaries(state) else ()))
            for name in compared:
                if s.get(name) != d.get(name):
                    differences.append(Difference(label, name, s.get(name), d.get(name)))
        pools.append({"pool": label, "server": s, "draplan": d or None})
    listed = {(p.driver, p.pool_name) for p in theirs}
    for ours in mine[:limit]:
        if (ours.driver, ours.pool_name) not in listed:
            label = f"{ours.driver}/{ours.pool_name}"
            differences.append(Difference(label, "pool", "absent", "present"))
            pools.append({"pool": label, "server": None, "draplan": _flat(ours)})
    server_count = req.status.pool_count if req.status is not None else None
    if server_count is not None and server_count != len(mine):
        differences.append(Difference("*", "poolCount", server_count, len(mine)))
    return {
        "name": req.metadata.name,
        "driver": spec.driver,
        "poolCount": {"server": server_count, "draplan": len(mine)},
        "pools": pools,
        "agrees": not differences,
        "differences": [
            {"pool": x.pool, "field": x.field, "server": x.server, "draplan": x.draplan}
            for x in differences
        ],
    }


def answered_requests(state: ClusterState) -> list[ResourcePoolStatusRequest]:
    """The ResourcePoolStatusRequests in the input that the controller has answered."""
    found = [o for o in state.others if isinstance(o, ResourcePoolStatusRequest)]
    return sorted((r for r in found if r.status is not None), key=lambda r: r.metadata.name)


def pool_status_report(state: ClusterState, memo: PoolStatusMemo | None = None) -> dict[str, Any]:
    """`metrics`' part in KEP-5677's terms: draplan's status of every pool, and each answered
    request compared with it; a `memo` kept from reporting on the same state before it changed
    spares computing again the pools that did not change."""
    return {
        "poolStatus": (memo or PoolStatusMemo()).documents(state),
        "poolStatusRequests": [compare_request(state, r) for r in answered_requests(state)],
    }
