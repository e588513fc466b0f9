"""Where capacity goes, per cluster, node, resource pool, NodePool and device class: device
allocation, counter utilization of partitionable devices, consumed capacity of shared devices,
and stranded capacity with its cost per hour.

Stranded capacity is the FGD fragmentation measure generalised to DRA request shapes
(`draplan.cluster.fragmentation`, the same function the scheduler's fragmentation-aware policy
scores with): per node and device class, the free capacity the pending and typical request
shapes of that class could not use, weighted by how common each shape is. Typical shapes are
the most common shapes of the pods (running and pending) that ask for the class, until they
cover 95 % of them; every pending shape counts too. Pods that ask nothing of a class do not
make its capacity stranded: that capacity is idle, not stranded. Shapes carry the pods' cpu
and memory requests: a node without room for a shape strands all its free devices for it.

Units: a class whose devices are shared (allowMultipleAllocations with a capacity) is measured
in that capacity, any other class in whole devices. Device counts, counters and shared capacity
count each device once (network-attached pools in the cluster, pool and class scopes only);
the stranded measure is per node, as FGD defines it. A node's stranded capacity is shared
among its resource pools in proportion to their free capacity, and costs the node's NodePool
price times the stranded fraction of the class's capacity on the node.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from draplan.api.core_v1 import Pod
from draplan.api.resource_v1 import DeviceClass
from draplan.cel import CelError, compile_selector
from draplan.cluster.devices import NANO, DeviceView, Pool, PoolID
from draplan.cluster.fragmentation import (
    POPULARITY_THRESHOLD,
    DeviceFree,
    DeviceKinds,
    FragmentationCache,
    Shape,
    Workload,
    node_stranding,
    pod_shape,
)
from draplan.cluster.nodepools import POOL_LABEL
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState
from draplan.scheduler.claims import ClaimNotFound, pod_claims

DEVICES = "devices"  # the unit of a class measured in whole devices


@dataclass
class Stranded:
    free: float = 0.0  # idle capacity, in the class's unit
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

    devices: int = 0
    allocated: int = 0
    counter_sets: list[float] = field(default_factory=list)  # fraction used, per counter set
    shared: dict[str, list[int]] = field(default_factory=dict)  # name: [consumed, capacity]
    stranded: dict[str, Stranded] = field(default_factory=dict)  # per device class
    price: float | None = None  # per hour, of the nodes in the scope

    def add_device(self, allocated: bool, shared: dict[str, tuple[int, int]]) -> None:
        self.devices += 1
        self.allocated += allocated
        for name, (used, total) in shared.items():
            entry = self.shared.setdefault(name, [0, 0])
            entry[0] += used
            entry[1] += total

    def add_price(self, price: float | None) -> None:
        if price is not None:
            self.price = (self.price or 0.0) + price

    def to_dict(self, units: dict[str, str]) -> dict[str, Any]:
        return {
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
                    "consumed": used / NANO,
                    "capacity": total / NANO,
                    "percent": _percent(used, total),
                }
                for name, (used, total) in sorted(self.shared.items())
            },
            "stranded": {
                cls: {
                    "unit": units[cls],
                    "free": round(s.free, 3),
                    "stranded": round(s.stranded, 3),
                    "percent": _percent(s.stranded, s.free),
                    "costPerHour": None if s.cost is None else round(s.cost, 4),
                }
                for cls, s in sorted(self.stranded.items())
            },
            "costPerHour": None if self.price is None else round(self.price, 4),
        }


def _percent(part: float, whole: float) -> float | None:
    return round(100 * part / whole, 1) if whole else None


@dataclass
class Metrics:
    cluster: Tally = field(default_factory=Tally)
    nodes: dict[str, Tally] = field(default_factory=dict)
    resource_pools: dict[str, Tally] = field(default_factory=dict)
    node_pools: dict[str, Tally] = field(default_factory=dict)
    device_classes: dict[str, Tally] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)  # device class: unit of its capacity

    def to_dict(self) -> dict[str, Any]:
        def scope(tallies: dict[str, Tally]) -> dict[str, Any]:
            return {k: t.to_dict(self.units) for k, t in sorted(tallies.items())}

        return {
            "cluster": self.cluster.to_dict(self.units),
            "deviceClasses": scope(self.device_classes),
            "nodePools": scope(self.node_pools),
            "resourcePools": scope(self.resource_pools),
            "nodes": scope(self.nodes),
        }


def pool_label(pid: PoolID) -> str:
    return f"{pid[0]}/{pid[1]}"


class _Collector:
    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.m = Metrics()
        self.classes = {
            name: [compile_selector(s.cel.expression) for s in dc.spec.selectors if s.cel]
            for name, dc in sorted(state.device_classes.items())
        }
        self.node_pool: dict[str, str] = {}  # node: NodePool name
        self.price: dict[str, float] = {}  # node: price per hour
        self.shared_capacity: dict[str, set[str]] = {}  # class: capacities of shared devices

    def scopes(self, node: str | None) -> list[Tally]:
        """The cluster, and the node and its NodePool when the device is node-local."""
        out = [self.m.cluster]
        if node is not None and node in self.m.nodes:
            out.append(self.m.nodes[node])
            pool = self.node_pool.get(node)
            if pool is not None:
                out.append(self.m.node_pools[pool])
        return out

    def classes_of(self, view: DeviceView) -> list[str]:
        out = []
        for name, selectors in self.classes.items():
            try:
                if all(s.matches(view.cel) for s in selectors):
                    out.append(name)
            except CelError:
                continue  # a selector that fails on a device does not select it
        return out

    def collect(self) -> Metrics:
        self.nodes()
        for pool in self.pools():
            self.pool(pool)
        for name in self.classes:
            self.stranded(name)
        return self.m

    def nodes(self) -> None:
        for name in sorted(self.state.node_pools):
            self.m.node_pools[name] = Tally()
        for name, node in sorted(self.state.nodes.items()):
            self.m.nodes[name] = Tally()
            pool = self.state.node_pools.get(node.metadata.labels.get(POOL_LABEL, ""))
            if pool is not None:
                self.node_pool[name] = pool.metadata.name
                self.price[name] = float(pool.spec.price_per_hour)
            for t in self.scopes(name):
                t.add_price(self.price.get(name))

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
            if view.multi:
                for c in classes:
                    self.shared_capacity.setdefault(c, set()).update(view.capacity)
            allocated = state.in_use(view.id) or state.shared_use(view.id) is not None
            shared = _shared(state, view)
            for t in [*scopes, *(self.m.device_classes.setdefault(c, Tally()) for c in classes)]:
                t.add_device(allocated, shared)
            for cset, _ in (ckey for ckey, _ in view.consumes):
                sets_classes.setdefault(cset, set()).update(classes)
        for cset, used in sorted(_counter_use(state, pool).items()):
            for t in scopes:
                t.counter_sets.append(used)
            for c in sorted(sets_classes.get(cset, ())):
                self.m.device_classes[c].counter_sets.append(used)

    # --- stranded capacity ---------------------------------------------------------------

    def stranded(self, class_name: str) -> None:
        state = self.state
        dc = state.device_classes[class_name]
        unit = min(self.shared_capacity.get(class_name, ()), default="")
        self.m.units[class_name] = unit or DEVICES
        self.m.device_classes.setdefault(class_name, Tally())
        workload = workload_for(state, dc, unit)
        if workload is None:
            return  # no pod asks for the class: its free capacity is idle, not stranded
        measure = FragmentationCache(workload)
        for name, node in sorted(state.nodes.items()):
            measured = node_stranding(state, node, dc, unit, measure)
            if measured is None:
                continue
            devices, free, frag, total = measured
            idle = sum(d.free for d in free.devices) / NANO
            price = self.price.get(name)
            cost = price * frag / total if price is not None and total else None
            for t in [*self.scopes(name), self.m.device_classes[class_name]]:
                t.stranded.setdefault(class_name, Stranded()).add(idle, frag, cost)
            self._share_among_pools(class_name, devices, idle, frag, cost)

    def _share_among_pools(
        self,
        class_name: str,
        devices: list[tuple[DeviceView, DeviceFree]],
        idle: float,
        frag: float,
        cost: float | None,
    ) -> None:
        by_pool: Counter[PoolID] = Counter()
        for view, d in devices:
            by_pool[view.pool_id] += d.free
        for pid, free in sorted(by_pool.items()):
            share = (free / NANO) / idle if idle else 0.0
            rp = self.m.resource_pools.setdefault(pool_label(pid), Tally())
            rp.stranded.setdefault(class_name, Stranded()).add(
                free / NANO, frag * share, None if cost is None else cost * share
            )


def _shared(state: ClusterState, view: DeviceView) -> dict[str, tuple[int, int]]:
    """Consumed and total capacity of a shared (multi-allocatable) device, per capacity."""
    if not view.multi or not view.capacity:
        return {}
    use = state.shared_use(view.id)
    consumed = use.consumed if use is not None else {}
    return {name: (consumed.get(name, 0), total) for name, total in view.capacity.items()}


def _counter_use(state: ClusterState, pool: Pool) -> dict[str, float]:
    """Per counter set, the mean fraction consumed over its counters. (Cluster Autoscaler
    takes the most used counter, which calls a GPU with one of seven memory slices taken
    fully used; the mean says 1/7, and equals the maximum when partitions consume every
    counter in proportion.)"""
    fractions: dict[str, list[float]] = {}
    for (cset, cname), total in sorted(pool.counters.items()):
        if total > 0:
            used = state.counter_used(pool.id, (cset, cname)) / total
            fractions.setdefault(cset, []).append(used)
    return {cset: sum(f) / len(f) for cset, f in fractions.items()}


def _pod_shape(
    state: ClusterState, pod: Pod, dc: DeviceClass, unit: str, kinds: DeviceKinds
) -> Shape | None:
    try:
        claims = pod_claims(state, pod)
    except ClaimNotFound:
        return None
    return pod_shape(
        claims=claims, pod=pod, device_class=dc.metadata.name, capacity=unit, kinds=kinds
    )


def workload_for(state: ClusterState, dc: DeviceClass, unit: str) -> Workload | None:
    """The request shapes of the class: typical shapes (of running and pending pods) and every
    pending shape, weighted by how many pods have each. None if no pod asks for the class."""
    kinds = DeviceKinds.of_state(state, dc)
    shapes: list[Shape] = []
    waiting: set[Shape] = set()
    for _, pod in sorted(state.pods.items()):
        if is_terminal(pod) or not pod.spec.resource_claims:
            continue
        shape = _pod_shape(state, pod, dc, unit, kinds)
        if shape is None or shape.device_count == 0:
            continue
        shapes.append(shape)
        if not pod.spec.node_name:
            waiting.add(shape)
    if not shapes:
        return None
    counts = Counter(shapes)
    chosen = {s for s, _ in Workload.typical(shapes, POPULARITY_THRESHOLD).shapes} | waiting
    total = sum(counts[s] for s in chosen)
    return Workload((s, counts[s] / total) for s in sorted(chosen, key=_order))


def _order(s: Shape) -> tuple[int, int, int, int, tuple[str, ...]]:
    return (s.cpu_milli, s.memory, s.device_count, s.share, tuple(sorted(s.kinds or ())))


def metrics(state: ClusterState) -> Metrics:
    """Metrics of the state as it is (nothing is scheduled)."""
    return _Collector(state).collect()
