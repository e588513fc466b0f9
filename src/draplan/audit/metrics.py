"""Where capacity goes, per cluster, node, resource pool, node pool and device class: physical
accelerators (GPUs) and their partitions, device allocation, counter utilization of
partitionable devices, consumed capacity of shared devices, and stranded GPUs with their cost
per hour.

GPUs are physical accelerators (`draplan.cluster.accelerators`): the whole-GPU device and the
MIG partitions of one A100 are one GPU, used as far as its counters are consumed. A GPU every
device of which is under a NoSchedule / NoExecute taint (the slice's or a DeviceTaintRule's)
is not free but tainted: out of reach of a pod without a toleration. Stranded GPUs
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

from collections.abc import Collection

from draplan.api.core_v1 import Node
from draplan.audit.metrics_memo import (
    Layout,
    MetricsMemo,
    NodePart,
    PluginPart,
    PoolPart,
    StrandedPart,
)
from draplan.audit.plugin_gpus import (
    PluginNode,
    PluginUnits,
    Weighted,
    measure,
    plugin_shapes,
    plugin_units,
)
from draplan.audit.stranded import (
    NodeStranded,
    RequestShape,
    accelerator_classes,
    out_of_reach,
    tainted,
    typical,
)
from draplan.audit.tally import CLUSTER, Metrics, Scope, Stranded, Tally, merged, pool_label
from draplan.cluster.accelerators import (
    Accelerator,
    allocated,
    is_accelerator,
    usage,
)
from draplan.cluster.devices import DeviceView, Pool, PoolID
from draplan.cluster.nodepools import pool_name, price_per_hour
from draplan.cluster.state import ClusterState
from draplan.sources.files import gc_paused


class _Collector:
    def __init__(self, state: ClusterState, memo: MetricsMemo) -> None:
        self.state = state
        memo.refresh(state)
        self.memo = memo
        # Device taints keep devices from pods without a toleration (KEP-5055).
        self.taints = "DRADeviceTaints" in state.features
        self.classes_of = memo.classes_of
        self.accelerators = memo.accelerators
        self.node_pool: dict[str, str] = {}  # node: its pool's name
        self.price: dict[str, float] = {}  # node: price per hour
        self.parts: dict[Scope, list[Tally]] = {CLUSTER: []}
        self._scopes: dict[str | None, list[list[Tally]]] = {None: [self.parts[CLUSTER]]}

    def scopes(self, node: str | None) -> list[list[Tally]]:
        """The parts of the cluster, and of the node and its node pool when the device is
        node-local."""
        got = self._scopes.get(node)
        if got is None:
            got = self._scopes[None]
            if node is not None and ("nodes", node) in self.parts:
                got = [*got, self.parts["nodes", node]]
                pool = self.node_pool.get(node)
                if pool is not None:
                    got.append(self.parts["nodePools", pool])
            self._scopes[node] = got
        return got

    def add(self, scope: Scope, part: Tally) -> None:
        got = self.parts.get(scope)
        if got is None:
            got = self.parts[scope] = []
        got.append(part)

    def collect(self) -> Metrics:
        nodes = sorted(self.state.nodes.items())
        self.nodes(nodes)
        accelerator_classes: set[str] = set()
        kept, self.memo.pool_parts = self.memo.pool_parts, {}
        for pool in self.pools(nodes):
            accelerator_classes |= self.pool(pool, kept)
        self.stranded(nodes, accelerator_classes)
        self.plugin_gpus(nodes)
        m = Metrics()
        for scope, parts in self.parts.items():
            m.tallies[scope], m.shown[scope] = self.memo.sum(parts)
        self.memo.forget_unused()
        return m

    def nodes(self, nodes: list[tuple[str, Node]]) -> None:
        state, memo = self.state, self.memo
        pools_key = tuple(state.node_pools.items())
        for name in sorted(state.node_pools):
            self.parts["nodePools", name] = []
        kept, memo.node_parts = memo.node_parts, {}
        for name, node in nodes:
            self.parts["nodes", name] = []
            part = kept.get(name)
            if part is None or part.node is not node or part.pools_key != pools_key:
                price = price_per_hour(state, node)
                tally = Tally()
                tally.add_price(price)
                tally = memo.intern(tally)
                pool = pool_name(state, node)
                part = NodePart(node, pools_key, pool, price, tally, plugin_units(node))
            memo.node_parts[name] = part
            if part.pool:
                self.node_pool[name] = part.pool
                self.parts.setdefault(("nodePools", part.pool), [])
            if part.price is not None:
                self.price[name] = part.price
            for parts in self.scopes(name):
                parts.append(part.tally)

    def pools(self, nodes: list[tuple[str, Node]]) -> list[Pool]:
        """Every resource pool some node sees, once, in (driver, pool) order."""
        seen: dict[PoolID, Pool] = {}
        for _, node in nodes:
            for pool in self.state.pools_for_node(node):
                seen.setdefault(pool.id, pool)
        return [seen[k] for k in sorted(seen)]

    def pool(self, pool: Pool, kept: dict[Pool, PoolPart]) -> frozenset[str]:
        """Add the pool's part (`kept` from the last measure, if still right); the classes
        that select one of its GPUs."""
        part = kept.get(pool)
        where = part.where if part is not None else pool.bound_nodes()
        key = self.state.ledgers_version(where)
        if part is None or part.key != key:
            part = self.pool_part(pool, where, key)
        self.memo.pool_parts[pool] = part
        for node, tally in part.nodes:
            for parts in self.scopes(node):
                parts.append(tally)
        self.add(("resourcePools", pool_label(pool.id)), part.pool)
        for c, tally in part.classes:
            self.add(("deviceClasses", c), tally)
        return part.accelerator_classes

    def pool_part(self, pool: Pool, where: tuple[str, ...], key: object) -> PoolPart:
        state = self.state
        node = pool.sole_node()
        if (
            node is not None
            and not pool.counters
            and not any(v.multi or v.consumes for v in pool.devices)
        ):
            part = self.exclusive_part(pool, node, where, key)
            if part is not None:
                return part
        mine = Tally()
        at = {node: mine}
        classes: dict[str, Tally] = {}
        sets_classes: dict[str, set[str]] = {}
        for view in pool.devices:
            of = self.classes_of(view)
            shared = _shared(state, view)
            taken = allocated(state, view)
            mine.add_device(taken, shared)
            for c in of:
                got = classes.get(c)
                if got is None:
                    got = classes[c] = Tally()
                got.add_device(taken, shared)
            for cset, _ in (ckey for ckey, _ in view.consumes):
                sets_classes.setdefault(cset, set()).update(of)
        for cset, fraction in sorted(_counter_use(state, pool).items()):
            mine.counter_sets.append(fraction)
            for c in sorted(sets_classes.get(cset, ())):
                classes[c].counter_sets.append(fraction)
        gpu_classes: set[str] = set()
        for acc in self.accelerators(pool):
            here = at.get(acc.node_name)
            if here is None:
                here = at[acc.node_name] = Tally()
            self.accelerator(acc, here, classes, gpu_classes)
        intern = self.memo.intern
        # The pool itself has them all (one part when they are on one node).
        whole = intern(mine if len(at) == 1 else merged(at.values()))
        return PoolPart(
            where,
            key,
            tuple((n, whole if t is mine and len(at) == 1 else intern(t)) for n, t in at.items()),
            whole,
            tuple((c, intern(t)) for c, t in sorted(classes.items())),
            frozenset(gpu_classes),
        )

    def exclusive_part(
        self, pool: Pool, node: str, where: tuple[str, ...], key: object
    ) -> PoolPart | None:
        """`pool_part` of a pool of one node's exclusive devices, none partitioned: each is
        used whole or not at all and, on an accelerator driver, is a GPU of its own (the
        same sums, counted by the classes that select the devices). None if one of them is
        shared after all (a claim's share of it: `pool_part` measures how much)."""
        in_use, shared_use = self.state.in_use, self.state.shared_use
        gpus = is_accelerator(pool.id[0])
        taints = self.taints
        # classes: [devices, in use, tainted and free]
        alike: dict[int, tuple[list[str], list[int]]] = {}
        for view in pool.devices:
            of = self.classes_of(view)
            got = alike.get(id(of))
            if got is None:
                got = alike[id(of)] = (of, [0, 0, 0])
            got[1][0] += 1
            if in_use(view.id):
                got[1][1] += 1
            elif shared_use(view.id) is not None:
                return None
            elif taints and tainted(view):
                got[1][2] += 1
        mine = Tally()
        classes: dict[str, Tally] = {}
        for of, (n, taken, out) in alike.values():
            for t in (mine, *(classes.setdefault(c, Tally()) for c in of)):
                t.devices += n
                t.allocated += taken
                if gpus:
                    # Whole GPUs: their allocated sum is a count, exact in any order.
                    t.gpus += n
                    t.gpus_in_use += taken
                    t.gpus_allocated += taken
                    t.gpus_tainted += out
        intern = self.memo.intern
        whole = intern(mine)
        return PoolPart(
            where,
            key,
            ((node, whole),),
            whole,
            tuple((c, intern(t)) for c, t in sorted(classes.items())),
            frozenset(c for of, _ in alike.values() for c in of) if gpus else frozenset(),
        )

    def accelerator(
        self, acc: Accelerator, here: Tally, classes: dict[str, Tally], gpu_classes: set[str]
    ) -> None:
        state = self.state
        share, held = usage(state, acc)
        taken = [allocated(state, v) for v in acc.partitions]
        out = out_of_reach(acc, self.taints)
        here.add_gpu(share, held, len(acc.partitions), sum(taken), out)
        if len(acc.devices) == 1:
            for c in self.classes_of(acc.devices[0]):
                gpu_classes.add(c)
                classes[c].add_gpu(share, held, 0, 0, out)
            return
        partitions = dict(zip(acc.partitions, taken, strict=True))
        for c in sorted({c for v in acc.devices for c in self.classes_of(v)}):
            gpu_classes.add(c)
            mine = [partitions[v] for v in acc.partitions if c in self.classes_of(v)]
            classes[c].add_gpu(share, held, len(mine), sum(mine), out)

    # --- device plugins' accelerators -------------------------------------------------------

    def plugin_gpus(self, nodes: list[tuple[str, Node]]) -> None:
        """Each node's device-plugin accelerators (`audit.plugin_gpus`) in its scopes and in
        their resource's (the section `extendedResources`); a node's part kept while its
        version, price and the shapes stay the same."""
        units = {n: u for n, _ in nodes if (u := self.memo.node_parts[n].plugin_units)}
        kept, self.memo.plugin_parts = self.memo.plugin_parts, {}
        if not units:
            return
        found, self.memo.plugin_asks = plugin_shapes(self.state, units, self.memo.plugin_asks)
        shapes = tuple(found)
        for name, node in nodes:
            if name not in units:
                continue
            key = (self.state.version(name), self.price.get(name), shapes)
            part = kept.get(name)
            if part is None or part.source is not node or part.key != key:
                part = self.plugin_part(key, node, units[name], shapes)
            self.memo.plugin_parts[name] = part
            for scope, tally in part.resources:
                self.add(scope, tally)
            for parts in self.scopes(name):
                parts.append(part.node)

    def plugin_part(
        self, key: object, node: Node, units: PluginUnits, shapes: Weighted
    ) -> PluginPart:
        measured = measure(self.state, node, units, shapes)
        whole = sum(measured.units.devices.values()) or 1
        # A node's stranded devices cost its price times their share of its devices.
        price = self.price.get(node.metadata.name)
        per_device = None if price is None else price / whole

        def cost(stranded: float) -> float | None:
            return None if per_device is None else per_device * stranded

        intern = self.memo.intern
        mine = Tally()
        resources = []
        for resource in (*measured.units.devices, *measured.units.parts):
            of = Tally()
            for t in (mine, of):
                _add_units(t, measured, resource)
            part = measured.by_resource.get(resource)
            if part is not None:
                free = measured.free(resource)
                for t in (mine, of):
                    t.stranded.setdefault(resource, Stranded()).add(free, part, cost(part))
                of.add_stranded(part, cost(part))
            resources.append((("extendedResources", resource), intern(of)))
        mine.add_stranded(measured.stranded, cost(measured.stranded))
        return PluginPart(node, key, intern(mine), tuple(resources))

    # --- stranded GPUs ---------------------------------------------------------------------

    def stranded(self, nodes: list[tuple[str, Node]], accelerator_classes: set[str]) -> None:
        state, memo = self.state, self.memo
        classes = {c: state.device_classes[c] for c in accelerator_classes}
        shapes = typical(*memo.shapes(state, classes))
        meter = memo.meter(classes, shapes, self.taints)
        asked = frozenset(s.device_class for s in meter.shapes)
        kept, memo.stranded_parts = memo.stranded_parts, {}
        for name, node in nodes:
            measured = meter.node(state, node)
            if not measured.accelerators:
                continue
            part = self.stranded_part(measured, self.price.get(name), asked, kept.get(name))
            memo.stranded_parts[name] = part
            for parts in self.scopes(name):
                parts.append(part.node)
            for c, tally in part.classes:
                self.add(("deviceClasses", c), tally)
            for label, tally in zip(part.labels, part.pools, strict=True):
                self.add(("resourcePools", label), tally)

    def stranded_part(
        self,
        measured: NodeStranded,
        price: float | None,
        asked: frozenset[str],
        old: StrandedPart | None,
    ) -> StrandedPart:
        """The node's stranded part; `old` its last, whose layout holds while its GPUs' free
        fractions do. Nodes of the same layout and measure share their tallies."""
        if (
            old is not None
            and old.measured.accelerators is measured.accelerators
            and old.asked == asked
        ):
            if (
                old.measured.stranded == measured.stranded
                and old.measured.by_class == measured.by_class
                and old.price == price
            ):
                return old
            labels, layout = old.labels, old.layout
        else:
            labels, layout = self.layout(measured, asked)
        key = (layout, measured.stranded, tuple(measured.by_class.items()), price)
        values = self.memo.stranded_values
        got = values.get(key)
        if got is None:
            got = values.put(key, self.stranded_tallies(layout, measured, price))
        node, classes, pools = got
        return StrandedPart(measured, price, asked, labels, layout, node, classes, pools)

    def layout(
        self, measured: NodeStranded, asked: frozenset[str]
    ) -> tuple[tuple[str, ...], Layout]:
        """The labels of the node's resource pools, and its layout: how many GPUs, the free
        GPUs of each pool (labels' order), all of them, and per class asked the free GPUs
        of its devices, in all and per pool."""
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
        pids = sorted(free_by_pool)
        index = {pid: i for i, pid in enumerate(pids)}
        per_class = tuple(
            (
                c,
                sum(f for (_, k), f in free_by_class.items() if k == c),
                tuple((index[pid], f) for (pid, k), f in sorted(free_by_class.items()) if k == c),
            )
            for c in sorted({c for _, c in free_by_class})
        )
        layout = (len(measured.accelerators), tuple(free_by_pool[p] for p in pids), idle, per_class)
        return tuple(pool_label(p) for p in pids), layout

    def stranded_tallies(
        self, layout: Layout, measured: NodeStranded, price: float | None
    ) -> tuple[Tally, tuple[tuple[str, Tally], ...], tuple[Tally, ...]]:
        """What a node of this layout and measure adds to its scopes, to each class and to
        each of its resource pools. A node's stranded GPUs cost its price times their share
        of its GPUs, shared among its pools in proportion to their free GPUs."""
        gpus, pool_free, idle, per_class = layout

        def cost(stranded: float) -> float | None:
            return None if price is None else price * stranded / gpus

        mine = Tally()
        mine.add_stranded(measured.stranded, cost(measured.stranded))
        pools = [Tally() for _ in pool_free]
        classes = []
        entries = {c: (free, by_pool) for c, free, by_pool in per_class}
        for c in sorted(set(entries) | set(measured.by_class)):
            part = measured.by_class.get(c, 0.0)
            free, by_pool = entries.get(c, (0.0, ()))
            dc = Tally()
            dc.add_stranded(part, cost(part))
            for t in (mine, dc):
                t.stranded.setdefault(c, Stranded()).add(free, part, cost(part))
            for i, in_pool in by_pool:
                share = in_pool / free if free else 0.0
                pools[i].stranded.setdefault(c, Stranded()).add(
                    in_pool, part * share, _scaled(cost(part), share)
                )
            classes.append((c, dc))
        for i, in_pool in enumerate(pool_free):
            share = in_pool / idle if idle else 0.0
            pools[i].add_stranded(
                measured.stranded * share, _scaled(cost(measured.stranded), share)
            )
        intern = self.memo.intern
        return (
            intern(mine),
            tuple((c, intern(t)) for c, t in classes),
            tuple(intern(t) for t in pools),
        )


def workload_shapes(
    state: ClusterState,
    classes: Collection[str] | None = None,
    memo: MetricsMemo | None = None,
) -> list[tuple[RequestShape, float]]:
    """The typical shapes of the state's pods over the accelerator `classes` (default: every
    class that selects an accelerator): the most common shapes of running and pending pods
    until they cover 95 % of them, and every pending shape, weighted by their share of those
    pods. A `memo` kept between calls keeps each pod's shape while it and its claims stay."""
    if classes is None:
        views = (v for name in sorted(state.slices.keys()) for v in state.slice_devices(name))
        classes = accelerator_classes(state.device_classes, views)
    return typical(*(memo or MetricsMemo()).shapes(state, classes))


def _add_units(tally: Tally, measured: PluginNode, resource: str) -> None:
    """A device plugin's units of `resource`: whole devices, or partitions."""
    got = measured.units
    if resource in got.devices:
        tally.gpus += got.devices[resource]
        tally.gpus_in_use += measured.in_use[resource]
        tally.gpus_allocated += measured.allocated[resource]
    else:
        tally.partitions += got.parts[resource]
        tally.partitions_allocated += measured.parts_used[resource]


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
    with gc_paused(freeze=False):
        return _Collector(state, memo or MetricsMemo()).collect()
