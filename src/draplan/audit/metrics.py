"""Where capacity goes, per cluster, node, resource pool, node pool and device class: physical
accelerators (GPUs) and their partitions, device allocation, counter utilization of
partitionable devices, consumed capacity of shared devices, and stranded GPUs with their cost
per hour.

GPUs are physical accelerators (`draplan.cluster.accelerators`): the whole-GPU device and the
MIG partitions of one A100 are one GPU, used as far as its counters are consumed. Stranded GPUs
are `draplan.audit.stranded`'s measure (the simulator's too) against the shapes of the pods in
the state: typical shapes (of running and pending pods, the most common until they cover 95 %
of them) and every pending shape. A node's stranded GPUs cost its price (`cluster.nodepools`:
its NodePool's, else its price label) times their share of its GPUs; they are shared among its
resource pools in proportion to their free GPUs. Nodes are grouped into node pools as
`cluster.nodepools` says (NodePool, else the provider's node-group label). Device counts,
counters and shared capacity count each device once (network-attached pools in the cluster,
pool and class scopes only); the stranded measure is per node.
"""

from __future__ import annotations

import gc
from collections.abc import Collection, Hashable
from dataclasses import dataclass, field
from typing import Any

from draplan.api.resource_v1 import DeviceClass
from draplan.audit.stranded import (
    MEMO_ENTRIES,
    NodeStranded,
    RequestShape,
    StrandedMeter,
    accelerator_classes,
    pod_shape,
    read_set,
    signature,
    typical,
)
from draplan.cel import CelError, Selector, compile_selector
from draplan.cel.reads import Read
from draplan.cluster.accelerators import Accelerator, allocated, pool_accelerators, usage
from draplan.cluster.devices import NANO, DeviceView, Pool, PoolID
from draplan.cluster.nodepools import pool_name, price_per_hour
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState
from draplan.scheduler.claims import ClaimNotFound, pod_claims


@dataclass
class Stranded:
    """One device class's part of a scope's stranded GPUs."""

    free: float = 0.0  # free GPUs among those the class has devices on
    stranded: float = 0.0
    cost: float | None = None  # per hour, when the nodes' prices are known

    def add(self, free: float, stranded: float, cost: float | None) -> None:
        self.free += free
        self.stranded += stranded
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost


@dataclass
class Tally:
    """Sums for one scope."""

    gpus: int = 0
    gpus_in_use: int = 0  # held whole or in part
    gpus_allocated: float = 0.0  # in GPUs: a GPU with half its counters consumed adds 0.5
    partitions: int = 0
    partitions_allocated: int = 0
    stranded_gpus: float = 0.0
    stranded_cost: float | None = None
    devices: int = 0
    allocated: int = 0
    counter_sets: list[float] = field(default_factory=list)  # fraction used, per counter set
    shared: dict[str, list[int]] = field(default_factory=dict)  # name: [consumed, capacity]
    stranded: dict[str, Stranded] = field(default_factory=dict)  # per device class
    price: float | None = None  # per hour, of the nodes in the scope

    def add_device(self, allocated: bool, shared: dict[str, tuple[int, int]]) -> None:
        self.devices += 1
        self.allocated += allocated
        for name, (consumed, total) in shared.items():
            entry = self.shared.setdefault(name, [0, 0])
            entry[0] += consumed
            entry[1] += total

    def add_gpu(self, used: float, in_use: bool, partitions: int, taken: int) -> None:
        self.gpus += 1
        self.gpus_in_use += in_use
        self.gpus_allocated += used
        self.partitions += partitions
        self.partitions_allocated += taken

    def add_stranded(self, stranded: float, cost: float | None) -> None:
        self.stranded_gpus += stranded
        if cost is not None:
            self.stranded_cost = (self.stranded_cost or 0.0) + cost

    def add_price(self, price: float | None) -> None:
        if price is not None:
            self.price = (self.price or 0.0) + price

    def to_dict(self) -> dict[str, Any]:
        free = self.gpus - self.gpus_allocated
        return {
            "gpus": self.gpus,
            "gpusInUse": self.gpus_in_use,
            "gpusAllocated": round(self.gpus_allocated, 3),
            "gpuAllocationPercent": _percent(self.gpus_allocated, self.gpus),
            "partitions": self.partitions,
            "partitionsAllocated": self.partitions_allocated,
            "freeGpus": round(free, 3),
            "strandedGpus": round(self.stranded_gpus, 3),
            "strandedPercent": _percent(self.stranded_gpus, free),
            "strandedCostPerHour": _money(self.stranded_cost),
            "devices": self.devices,
            "allocated": self.allocated,
            "allocationPercent": _percent(self.allocated, self.devices),
            "counterUtilizationPercent": (
                round(100 * sum(self.counter_sets) / len(self.counter_sets), 1)
                if self.counter_sets
                else None
            ),
            "sharedCapacity": {
                name: {
                    "consumed": consumed / NANO,
                    "capacity": total / NANO,
                    "percent": _percent(consumed, total),
                }
                for name, (consumed, total) in sorted(self.shared.items())
            },
            "stranded": {
                cls: {
                    "free": round(s.free, 3),
                    "stranded": round(s.stranded, 3),
                    "percent": _percent(s.stranded, s.free),
                    "costPerHour": _money(s.cost),
                }
                for cls, s in sorted(self.stranded.items())
            },
            "costPerHour": _money(self.price),
        }


def _percent(part: float, whole: float) -> float | None:
    return round(100 * part / whole, 1) if whole > 1e-9 else None


def _money(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


@dataclass
class Metrics:
    cluster: Tally = field(default_factory=Tally)
    nodes: dict[str, Tally] = field(default_factory=dict)
    resource_pools: dict[str, Tally] = field(default_factory=dict)
    node_pools: dict[str, Tally] = field(default_factory=dict)
    device_classes: dict[str, Tally] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        def scope(tallies: dict[str, Tally]) -> dict[str, Any]:
            return {k: t.to_dict() for k, t in sorted(tallies.items())}

        return {
            "cluster": self.cluster.to_dict(),
            "deviceClasses": scope(self.device_classes),
            "nodePools": scope(self.node_pools),
            "resourcePools": scope(self.resource_pools),
            "nodes": scope(self.nodes),
        }


def pool_label(pid: PoolID) -> str:
    return f"{pid[0]}/{pid[1]}"


class MetricsMemo:
    """What measuring may keep between measures of one changing state (`draplan serve`'s):
    the classes that select each device and each pool's accelerators (values of the device
    object and the pool object alone, while the device classes stay the same), and the
    stranded meter while the classes and shapes it measures against stay the same."""

    def __init__(self) -> None:
        self._classes_key: object = None
        self.classes: dict[str, list[Selector]] = {}
        self._read: frozenset[Read] | None = frozenset()
        self.device_classes: dict[DeviceView, list[str]] = {}
        self._by_signature: dict[Hashable, list[str]] = {}
        self.grouped: dict[Pool, tuple[Accelerator, ...]] = {}  # a pool's accelerators
        self._meter_key: tuple[object, object] = (None, None)
        self._meter: StrandedMeter | None = None

    def refresh(self, state: ClusterState) -> None:
        """Forget what the state's device classes no longer answer the same."""
        key = tuple(sorted(state.device_classes.items()))
        if key == self._classes_key:
            return
        self._classes_key = key
        self.classes = {
            name: [compile_selector(s.cel.expression) for s in dc.spec.selectors if s.cel]
            for name, dc in key
        }
        self._read = read_set(s.expression for sels in self.classes.values() for s in sels)
        self.device_classes = {}
        self._by_signature = {}
        self._meter_key, self._meter = (None, None), None

    def classes_of(self, view: DeviceView) -> list[str]:
        out = self.device_classes.get(view)
        if out is None:
            sig = signature(view, self._read)
            out = self._by_signature.get(sig) if sig is not None else None
            if out is None:
                out = self._select(view)
                if sig is not None:
                    if len(self._by_signature) >= MEMO_ENTRIES:
                        self._by_signature.clear()
                    self._by_signature[sig] = out
            if len(self.device_classes) >= MEMO_ENTRIES:
                self.device_classes.clear()
            self.device_classes[view] = out
        return out

    def _select(self, view: DeviceView) -> list[str]:
        out = []
        for name, selectors in self.classes.items():
            try:
                if all(s.matches(view.cel) for s in selectors):
                    out.append(name)
            except CelError:
                continue  # a selector that fails on a device does not select it
        return out

    def accelerators(self, pool: Pool) -> tuple[Accelerator, ...]:
        got = self.grouped.get(pool)
        if got is None:
            if len(self.grouped) >= MEMO_ENTRIES:
                self.grouped.clear()
            got = self.grouped[pool] = pool_accelerators(pool)
        return got

    def meter(
        self, classes: dict[str, DeviceClass], shapes: list[tuple[RequestShape, float]]
    ) -> StrandedMeter:
        key = (tuple(sorted(classes)), tuple(shapes))
        if self._meter is None or key != self._meter_key:
            meter = StrandedMeter(classes, shapes, self.classes_of, self.accelerators)
            if self._meter is not None and key[0] == self._meter_key[0]:
                meter.keep_from(self._meter)  # a pod came or went: the shapes' weights changed
            self._meter_key, self._meter = key, meter
        return self._meter


class _Collector:
    def __init__(self, state: ClusterState, memo: MetricsMemo) -> None:
        self.state = state
        self.m = Metrics()
        memo.refresh(state)
        self.memo = memo
        self.classes_of = memo.classes_of
        self.accelerators = memo.accelerators
        self.node_pool: dict[str, str] = {}  # node: its pool's name
        self.price: dict[str, float] = {}  # node: price per hour
        self.accelerator_classes: set[str] = set()  # classes that select some accelerator

    def scopes(self, node: str | None) -> list[Tally]:
        """The cluster, and the node and its node pool when the device is node-local."""
        out = [self.m.cluster]
        if node is not None and node in self.m.nodes:
            out.append(self.m.nodes[node])
            pool = self.node_pool.get(node)
            if pool is not None:
                out.append(self.m.node_pools[pool])
        return out

    def collect(self) -> Metrics:
        self.nodes()
        for pool in self.pools():
            self.pool(pool)
        self.stranded()
        return self.m

    def nodes(self) -> None:
        state = self.state
        for name in sorted(state.node_pools):
            self.m.node_pools[name] = Tally()
        for name, node in sorted(state.nodes.items()):
            self.m.nodes[name] = Tally()
            pool = pool_name(state, node)
            if pool:
                self.node_pool[name] = pool
                self.m.node_pools.setdefault(pool, Tally())
            price = price_per_hour(state, node)
            if price is not None:
                self.price[name] = price
            for t in self.scopes(name):
                t.add_price(price)

    def pools(self) -> list[Pool]:
        """Every resource pool some node sees, once, in (driver, pool) order."""
        seen: dict[PoolID, Pool] = {}
        for _, node in sorted(self.state.nodes.items()):
            for pool in self.state.pools_for_node(node):
                seen.setdefault(pool.id, pool)
        return [seen[k] for k in sorted(seen)]

    def pool(self, pool: Pool) -> None:
        state = self.state
        rp = self.m.resource_pools.setdefault(pool_label(pool.id), Tally())
        local = {v.node_name for v in pool.devices}
        node = next(iter(local)) if len(local) == 1 else None
        scopes = [*self.scopes(node), rp]
        sets_classes: dict[str, set[str]] = {}
        for view in pool.devices:
            classes = self.classes_of(view)
            shared = _shared(state, view)
            taken = allocated(state, view)
            for t in [*scopes, *(self.m.device_classes.setdefault(c, Tally()) for c in classes)]:
                t.add_device(taken, shared)
            for cset, _ in (ckey for ckey, _ in view.consumes):
                sets_classes.setdefault(cset, set()).update(classes)
        for cset, fraction in sorted(_counter_use(state, pool).items()):
            for t in scopes:
                t.counter_sets.append(fraction)
            for c in sorted(sets_classes.get(cset, ())):
                self.m.device_classes[c].counter_sets.append(fraction)
        for acc in self.accelerators(pool):
            here = scopes if acc.node_name == node else [*self.scopes(acc.node_name), rp]
            self.accelerator(acc, here)

    def accelerator(self, acc: Accelerator, scopes: list[Tally]) -> None:
        state = self.state
        share, held = usage(state, acc)
        taken = [allocated(state, v) for v in acc.partitions]
        for t in scopes:
            t.add_gpu(share, held, len(acc.partitions), sum(taken))
        if len(acc.devices) == 1:
            for c in self.classes_of(acc.devices[0]):
                self.accelerator_classes.add(c)
                self.m.device_classes[c].add_gpu(share, held, 0, 0)
            return
        partitions = dict(zip(acc.partitions, taken, strict=True))
        for c in sorted({c for v in acc.devices for c in self.classes_of(v)}):
            self.accelerator_classes.add(c)
            mine = [partitions[v] for v in acc.partitions if c in self.classes_of(v)]
            self.m.device_classes[c].add_gpu(share, held, len(mine), sum(mine))

    # --- stranded GPUs ---------------------------------------------------------------------

    def stranded(self) -> None:
        state = self.state
        classes = {c: state.device_classes[c] for c in self.accelerator_classes}
        shapes = workload_shapes(state, classes)
        meter = self.memo.meter(classes, shapes)
        asked = {s.device_class for s in meter.shapes}
        for name, node in sorted(state.nodes.items()):
            measured = meter.node(state, node)
            if measured.accelerators:
                self.node_stranded(name, measured, asked)

    def node_stranded(self, name: str, measured: NodeStranded, asked: set[str]) -> None:
        price = self.price.get(name)
        gpus = len(measured.accelerators)

        def cost(stranded: float) -> float | None:
            return None if price is None else price * stranded / gpus

        scopes = self.scopes(name)
        for t in scopes:
            t.add_stranded(measured.stranded, cost(measured.stranded))
        free_by_pool: dict[PoolID, float] = {}
        free_by_class: dict[tuple[PoolID, str], float] = {}
        for acc, free in measured.accelerators:
            free_by_pool[acc.pool_id] = free_by_pool.get(acc.pool_id, 0.0) + free
            if not free:
                continue
            for c in {c for v in acc.devices for c in self.classes_of(v) if c in asked}:
                key = (acc.pool_id, c)
                free_by_class[key] = free_by_class.get(key, 0.0) + free
        idle = sum(free_by_pool.values())
        for c in sorted({c for _, c in free_by_class} | set(measured.by_class)):
            part = measured.by_class.get(c, 0.0)
            free = sum(f for (_, k), f in free_by_class.items() if k == c)
            dc = self.m.device_classes[c]
            dc.add_stranded(part, cost(part))
            for t in [*scopes, dc]:
                t.stranded.setdefault(c, Stranded()).add(free, part, cost(part))
            for (pid, k), pool_free in sorted(free_by_class.items()):
                if k == c:
                    share = pool_free / free if free else 0.0
                    rp = self.m.resource_pools[pool_label(pid)]
                    rp.stranded.setdefault(c, Stranded()).add(
                        pool_free, part * share, _scaled(cost(part), share)
                    )
        for pid, pool_free in sorted(free_by_pool.items()):
            share = pool_free / idle if idle else 0.0
            rp = self.m.resource_pools[pool_label(pid)]
            rp.add_stranded(measured.stranded * share, _scaled(cost(measured.stranded), share))


def workload_shapes(
    state: ClusterState, classes: Collection[str] | None = None
) -> list[tuple[RequestShape, float]]:
    """The typical shapes of the state's pods over the accelerator `classes` (default: every
    class that selects an accelerator): the most common shapes of running and pending pods
    until they cover 95 % of them, and every pending shape, weighted by their share of those
    pods."""
    if classes is None:
        views = (v for name in sorted(state.slices.keys()) for v in state.slice_devices(name))
        classes = accelerator_classes(state.device_classes, views)
    shapes: list[RequestShape] = []
    pending: set[RequestShape] = set()
    for _, pod in sorted(state.pods.items()):
        if is_terminal(pod) or not pod.spec.resource_claims:
            continue
        try:
            claims = pod_claims(state, pod)
        except ClaimNotFound:
            continue
        shape = pod_shape(pod, claims, classes)
        if shape is None:
            continue
        shapes.append(shape)
        if not pod.spec.node_name:
            pending.add(shape)
    return typical(shapes, pending)


def _scaled(cost: float | None, share: float) -> float | None:
    return None if cost is None else cost * share


def _shared(state: ClusterState, view: DeviceView) -> dict[str, tuple[int, int]]:
    """Consumed and total capacity of a shared (multi-allocatable) device, per capacity."""
    if not view.multi or not view.capacity:
        return {}
    use = state.shared_use(view.id)
    consumed = use.consumed if use is not None else {}
    return {name: (consumed.get(name, 0), total) for name, total in view.capacity.items()}


def _counter_use(state: ClusterState, pool: Pool) -> dict[str, float]:
    """Per counter set, the mean fraction consumed over its counters (as
    `accelerators.used` measures a partitionable GPU)."""
    fractions: dict[str, list[float]] = {}
    for (cset, cname), total in sorted(pool.counters.items()):
        if total > 0:
            fraction = state.counter_used(pool.id, (cset, cname)) / total
            fractions.setdefault(cset, []).append(fraction)
    return {cset: sum(f) / len(f) for cset, f in fractions.items()}


def metrics(state: ClusterState, memo: MetricsMemo | None = None) -> Metrics:
    """Metrics of the state as it is (nothing is scheduled); a `memo` kept from measuring the
    same state before it changed spares measuring again what did not change."""
    collect = gc.isenabled()
    # Measuring makes a few small containers per device and node, all kept to the end: the
    # cyclic collector's passes over a large state's heap free nothing (the sources pause it
    # likewise) and cost a third of the time at 10,000 nodes.
    gc.disable()
    try:
        return _Collector(state, memo or MetricsMemo()).collect()
    finally:
        if collect:
            gc.enable()
