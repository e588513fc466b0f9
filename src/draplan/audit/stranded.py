"""Stranded accelerators: free GPU capacity that the workload's typical pods cannot use. The
one definition `draplan metrics` and the simulator's stranded GPU-hours share.

It is the FGD measure (Weng et al., USENIX ATC'23; `draplan.cluster.fragmentation`) counted
in physical accelerators (`draplan.cluster.accelerators`). For a node n and a request shape m
(a pod's devices of one class, with its CPU and memory), F_n(m) is the free GPU capacity of n
that m cannot use: all of it if n lacks the free CPU or memory for m, or if fewer than m's count
of units can be placed on its accelerators now; otherwise the free capacity of the accelerators
that cannot take one unit. An accelerator takes a unit when one of its devices passes m's class
and request selectors and is available under the ledgers as the allocator checks it: not held
exclusively, its consumable capacity (KEP-5075) and its counters (KEP-4815) fit. A partitioned
GPU takes as many units as its free partitions of m's kind fit together in its counters.
F_n = the mean of F_n(m) over the typical shapes, weighted by how many pods have each.

Two departures from the paper, so that stranded means "free, yet no typical pod can use it":
* Only the shapes that could run on n were it empty count for n (their weights renormalised):
  a node too small for a shape, of another model or short of allocatable CPU is not where that
  shape runs; its free capacity is idle for it, not stranded. So an empty node strands nothing,
  and a fully free GPU is stranded only when the node's allocations leave too few of its kind
  for a typical shape (2 free GPUs on a node whose typical pods take 4).
* Pods that ask no accelerator are not shapes (the paper keeps them, which makes every free GPU
  a fragment for them).

Free capacity is in GPUs: an accelerator's free fraction is 1 - `accelerators.used`, so the free
partitions of a GPU count once, as the part of that GPU they leave. A device under a NoSchedule
or NoExecute taint (its slice's or a DeviceTaintRule's, KEP-5055) is out of reach of a pod
without a toleration: it takes no unit, and an accelerator all of whose devices are tainted is
not free (metrics counts it apart, `out_of_reach`), as if the node lacked it. Shapes are FGD's
(devices, CPU, memory): node selectors, node taints and matchAttribute constraints are not part
of them; a pod whose accelerator requests are not one shape (several classes or selector sets,
firstAvailable, allocationMode All) is left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple, TypeVar

from draplan.allocator.capacity import consumption
from draplan.allocator.taints import taint_blocks
from draplan.api.core_v1 import Node, Pod
from draplan.api.features import DEFAULT as DEFAULT_FEATURES
from draplan.api.features import FeatureGates
from draplan.api.resource_v1 import DeviceClass, ResourceClaim
from draplan.cel import CelError, Selector, compile_selector
from draplan.cel.reads import Read, reads
from draplan.cluster.accelerators import (
    Accelerator,
    is_accelerator,
    node_accelerators,
    pool_accelerators,
    used,
)
from draplan.cluster.devices import CounterKey, DeviceView, Pool, nanos
from draplan.cluster.fragmentation import POPULARITY_THRESHOLD, popular
from draplan.cluster.podresources import node_allocatable, pod_requests
from draplan.cluster.state import ClusterState

# What a shape asks of one device: (device class, request selectors, capacity requests).
Demand = tuple[str, tuple[str, ...], tuple[tuple[str, int], ...]]


class RequestShape(NamedTuple):
    """`device_count` devices of `device_class` passing `selectors` (CEL), each consuming `capacity`
    (requested amounts, nanos; empty: the device's default, all of it unless a request policy
    says otherwise), for a pod requesting `cpu_milli` and `memory` (milli-bytes)."""

    cpu_milli: int
    memory: int
    device_class: str
    device_count: int
    selectors: tuple[str, ...] = ()
    capacity: tuple[tuple[str, int], ...] = ()


def pod_shape(
    pod: Pod,
    claims: Sequence[ResourceClaim],
    classes: Collection[str],
    features: FeatureGates = DEFAULT_FEATURES,
) -> RequestShape | None:
    """The pod's shape over the accelerator `classes`; None if it asks none of them, or its
    requests for them are not one shape."""
    found: set[Demand] = set()
    count = 0
    for claim in claims:
        for req in claim.spec.devices.requests:
            ex = req.exactly
            if ex is None:
                if any(sub.device_class_name in classes for sub in req.first_available):
                    return None
                continue
            if ex.device_class_name not in classes:
                continue
            if ex.allocation_mode not in ("", "ExactCount"):
                return None
            selectors = tuple(s.cel.expression for s in ex.selectors if s.cel is not None)
            requested = ex.capacity.requests if ex.capacity is not None else {}
            capacity = tuple(sorted((name, nanos(q)) for name, q in requested.items()))
            found.add((ex.device_class_name, selectors, capacity))
            count += ex.count or 1
    if len(found) != 1:
        return None
    device_class, selectors, capacity = found.pop()
    resources = pod_requests(pod, features)
    return RequestShape(
        resources.get("cpu", 0),
        resources.get("memory", 0),
        device_class,
        count,
        selectors,
        capacity,
    )


def typical(
    shapes: Iterable[RequestShape] | Mapping[RequestShape, int],
    pending: Collection[RequestShape] = (),
) -> list[tuple[RequestShape, float]]:
    """FGD's typical shapes (the most common, one per pod, until they cover 95 % of the pods)
    and every `pending` shape, weighted by their share of those pods; `shapes` one per pod,
    or how many pods have each."""
    counts = Counter(shapes)
    chosen = {s for s, _ in popular(counts, POPULARITY_THRESHOLD, lambda s: s)} | set(pending)
    total = sum(counts[s] for s in chosen)
    return [(s, counts[s] / total) for s in sorted(chosen)]


def accelerator_classes(
    classes: Mapping[str, DeviceClass], views: Iterable[DeviceView]
) -> dict[str, DeviceClass]:
    """The device classes that select at least one accelerator among `views`."""
    accelerators = [v for v in views if is_accelerator(v.driver)]
    out = {}
    for name, dc in sorted(classes.items()):
        selectors = _class_selectors(dc)
        if any(_selects(selectors, v) for v in accelerators):
            out[name] = dc
    return out


def tainted(view: DeviceView) -> bool:
    """Whether a NoSchedule / NoExecute taint keeps the device from a request that tolerates
    nothing (the allocator's own check, with no toleration)."""
    return bool(view.device.taints) and taint_blocks(view, ())


def out_of_reach(acc: Accelerator, taints: bool) -> bool:
    """Whether every device of the accelerator is tainted (with `taints`: the cluster's
    DRADeviceTaints gate): no pod without a toleration can get any of it."""
    return taints and all(tainted(v) for v in acc.devices)


Measured = tuple[tuple[Accelerator, float], ...]
Units = tuple[tuple[int, ...], ...]
# What a node's measure reads: relevant shapes, those lacking CPU or memory, free fractions, units.
Inputs = tuple[tuple[int, ...], frozenset[int], tuple[float, ...], Units]


class NodeStranded(NamedTuple):
    """A node's accelerators with their free fraction, the GPUs stranded, and how much of that
    the shapes of each device class account for."""

    accelerators: Measured
    stranded: float
    by_class: Mapping[str, float]


MEMO_ENTRIES = 1 << 18  # per memo; dropped wholesale when full

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def remember(memo: dict[K, V], key: K, value: V) -> V:
    """Keep `value` under `key` (a memo holding MEMO_ENTRIES starts over); `value`."""
    if len(memo) >= MEMO_ENTRIES:
        memo.clear()
    memo[key] = value
    return value


def alike(
    memo: dict[K, V],
    by_signature: dict[Hashable, V],
    key: K,
    signature_of: Callable[[], Hashable | None],
    compute: Callable[[], V],
) -> V:
    """What `memo` holds for `key`, else what a key of the same signature got (None: it
    shares with none), else `compute()`; remembered in both."""
    got = memo.get(key)
    if got is None:
        sig = signature_of()
        got = by_signature.get(sig) if sig is not None else None
        if got is None:
            got = compute()
            if sig is not None:
                remember(by_signature, sig, got)
        remember(memo, key, got)
    return got


NOTHING: Mapping[str, float] = MappingProxyType({})


class StrandedMeter:
    """Measures nodes against fixed weighted shapes. What each device can give each demand,
    and how many units of it an accelerator takes when free, are computed once per device and
    per accelerator, so re-measuring a node that changed costs one pass over its accelerators.
    `classes_of` (the classes that select a device) and `grouped` (a pool's accelerators) are
    the caller's, if it knows them already; the meter keeps its own memo otherwise."""

    def __init__(
        self,
        classes: Mapping[str, DeviceClass],
        weighted: Sequence[tuple[RequestShape, float]],
        classes_of: Callable[[DeviceView], Collection[str]] | None = None,
        grouped: Callable[[Pool], tuple[Accelerator, ...]] | None = None,
        taints: bool = True,
    ) -> None:
        """`taints`: device taints keep devices from the shapes (the DRADeviceTaints gate)."""
        self.taints = taints
        kept = [(s, w) for s, w in weighted if w and s.device_class in classes]
        self.shapes = [s for s, _ in kept]
        self.weights = [w for _, w in kept]
        self.demands: list[Demand] = sorted({_demand(s) for s in self.shapes})
        self._demand_of = [self.demands.index(_demand(s)) for s in self.shapes]
        self._most = [  # the most units of a demand any one shape needs
            max(s.device_count for s in self.shapes if _demand(s) == d) for d in self.demands
        ]
        self._class_selectors = {
            name: _class_selectors(classes[name]) for name in sorted({d[0] for d in self.demands})
        }
        self._request_selectors = {d[1]: [compile_selector(e) for e in d[1]] for d in self.demands}
        self._read = read_set(
            [
                *(s.expression for sels in self._class_selectors.values() for s in sels),
                *(e for d in self.demands for e in d[1]),
            ]
        )
        self._classes_of = classes_of or self._own_classes
        self._grouped = grouped or self._own_accelerators
        self._accelerator_memo: dict[Pool, tuple[Accelerator, ...]] = {}
        self._class_memo: dict[DeviceView, frozenset[str]] = {}
        self._classes_alike: dict[Hashable, frozenset[str]] = {}
        self._serves: dict[DeviceView, tuple[dict[str, int] | None, ...]] = {}
        self._serves_alike: dict[Hashable, tuple[dict[str, int] | None, ...]] = {}
        self._empty_units: dict[Accelerator, tuple[int, ...]] = {}
        self._empty_alike: dict[Hashable, tuple[int, ...]] = {}
        self._none = (0,) * len(self.demands)
        # Nodes repeat: memoised by what the measure reads of them.
        self._fits_empty: dict[tuple[int, int, tuple[tuple[int, ...], ...]], tuple[int, ...]] = {}
        self._measured: dict[Inputs, tuple[float, Mapping[str, float]]] = {}
        # Per node, while its version holds: its accelerators' free fractions and the key
        # of its measure (None: nothing to strand).
        self._state: ClusterState | None = None
        self._nodes: dict[str, tuple[object, Measured, Inputs | None]] = {}

    def keep_from(self, older: StrandedMeter) -> None:
        """Take over the memos of a meter over the same device classes (and the same
        `classes_of` and `grouped`) whose answers still hold for this one's shapes: when only
        the weights changed, what each device serves and each empty accelerator takes per
        demand, and which shapes an empty node could host."""
        if older.demands != self.demands or older._most != self._most:
            return
        if older.taints != self.taints:
            return
        self._accelerator_memo = older._accelerator_memo
        self._class_memo = older._class_memo
        self._classes_alike = older._classes_alike
        self._serves = older._serves
        self._serves_alike = older._serves_alike
        self._empty_units = older._empty_units
        self._empty_alike = older._empty_alike
        if older.shapes == self.shapes:
            self._fits_empty = older._fits_empty
            self._state, self._nodes = older._state, older._nodes

    def node(self, state: ClusterState, node: Node) -> NodeStranded:
        name = node.metadata.name
        if state is not self._state:  # node versions are one state's
            self._state, self._nodes = state, {}
        version = (state.version(name), node)
        seen = self._nodes.get(name)
        if seen is not None and seen[0] == version:
            measured, key = seen[1], seen[2]
        else:
            measured, key = self._inputs(state, node)
            remember(self._nodes, name, (version, measured, key))
        if key is None:
            return NodeStranded(measured, 0.0, NOTHING)
        got = self._measured.get(key)
        if got is None:
            got = remember(self._measured, key, self._strand(*key))
        return NodeStranded(measured, *got)

    def _inputs(self, state: ClusterState, node: Node) -> tuple[Measured, Inputs | None]:
        """The node's accelerators with their free fractions, and what its measure reads
        (None when there is nothing to strand)."""
        accs = node_accelerators(state, node, self._grouped)
        frees = tuple(0.0 if out_of_reach(a, self.taints) else 1.0 - used(state, a) for a in accs)
        measured = tuple(zip(accs, frees, strict=True))
        if not self.shapes or sum(frees) <= 0:
            return measured, None
        alloc = node_allocatable(node)
        cpu, memory = alloc.get("cpu", 0), alloc.get("memory", 0)
        relevant = self._relevant(cpu, memory, tuple(self._empty(a) for a in accs))
        if not relevant:
            return measured, None
        taken = state.requested(node.metadata.name)
        cpu_free, memory_free = cpu - taken.get("cpu", 0), memory - taken.get("memory", 0)
        lacking = frozenset(
            i
            for i in relevant
            if self.shapes[i].cpu_milli > cpu_free or self.shapes[i].memory > memory_free
        )
        none = self._none
        # A fully used accelerator takes nothing, unless a device of it is shared (one
        # without capacities takes more shares however many it has).
        now = tuple(
            self._units(state, a) if f > 0 or any(v.multi for v in a.devices) else none
            for a, f in zip(accs, frees, strict=True)
        )
        return measured, (relevant, lacking, frees, now)

    def _relevant(
        self, cpu: int, memory: int, empty: tuple[tuple[int, ...], ...]
    ) -> tuple[int, ...]:
        """The shapes a node with this allocatable CPU and memory and these accelerators
        could host were it empty."""
        key = (cpu, memory, empty)
        got = self._fits_empty.get(key)
        if got is None:
            got = tuple(
                i
                for i, (s, k) in enumerate(zip(self.shapes, self._demand_of, strict=True))
                if s.cpu_milli <= cpu
                and s.memory <= memory
                and sum(min(e[k], s.device_count) for e in empty) >= s.device_count
            )
            remember(self._fits_empty, key, got)
        return got

    def _strand(
        self,
        relevant: tuple[int, ...],
        lacking: frozenset[int],
        frees: tuple[float, ...],
        now: Units,
    ) -> tuple[float, Mapping[str, float]]:
        """F_n over the relevant shapes, and each class's part of it."""
        total_free = sum(frees)
        weight = lost = 0.0
        by_class: dict[str, float] = {}
        for i in relevant:
            shape, w, k = self.shapes[i], self.weights[i], self._demand_of[i]
            need = shape.device_count
            weight += w
            if i in lacking or sum(min(u[k], need) for u in now) < need:
                unusable = total_free
            else:
                unusable = sum(f for f, u in zip(frees, now, strict=True) if not u[k])
            if unusable:
                lost += w * unusable
                by_class[shape.device_class] = by_class.get(shape.device_class, 0.0) + w * unusable
        parts = {c: v / weight for c, v in sorted(by_class.items())}
        return lost / weight, MappingProxyType(parts)

    # --- which devices serve which demands -------------------------------------------------

    def _own_accelerators(self, pool: Pool) -> tuple[Accelerator, ...]:
        got = self._accelerator_memo.get(pool)
        if got is None:
            got = remember(self._accelerator_memo, pool, pool_accelerators(pool))
        return got

    def _own_classes(self, view: DeviceView) -> frozenset[str]:
        return alike(
            self._class_memo,
            self._classes_alike,
            view,
            lambda: signature(view, self._read),
            lambda: frozenset(c for c, sel in self._class_selectors.items() if _selects(sel, view)),
        )

    def _serving(self, view: DeviceView) -> tuple[dict[str, int] | None, ...]:
        """Per demand, what one unit consumes of the device; None where the class or request
        selectors do not admit it or it cannot meet the capacity request."""

        def serving() -> tuple[dict[str, int] | None, ...]:
            classes = self._classes_of(view)
            return tuple(
                consumption(view, dict(capacity))
                if cls in classes
                and (not selectors or _selects(self._request_selectors[selectors], view))
                else None
                for cls, selectors, capacity in self.demands
            )

        return alike(
            self._serves, self._serves_alike, view, lambda: signature(view, self._read), serving
        )

    def _empty(self, acc: Accelerator) -> tuple[int, ...]:
        def twins() -> Hashable | None:
            # A GPU of one device takes as its twins do: what it serves, its counters.
            sig = signature(acc.devices[0], self._read) if len(acc.devices) == 1 else None
            return None if sig is None else (sig, acc.counters)

        return alike(
            self._empty_units, self._empty_alike, acc, twins, lambda: self._units(None, acc)
        )

    def _units(self, state: ClusterState | None, acc: Accelerator) -> tuple[int, ...]:
        """Per demand, how many units the accelerator takes at once (up to the most a shape
        needs) under the ledgers of `state` (None: when nothing is allocated)."""
        if len(acc.devices) == 1:
            view = acc.devices[0]
            if state is not None and not view.multi and not view.consumes:
                # An exclusive device is either held or as good as on an empty node.
                return self._none if state.in_use(view.id) else self._empty(acc)
            totals = dict(acc.counters)
            return tuple(
                int(c is not None and _available(state, acc, view, c, totals, {}, self.taints))
                for c in self._serving(view)
            )
        totals = dict(acc.counters)
        # Partitions smallest first, so as many fit together as the counters allow.
        devices = sorted(acc.devices, key=lambda v: sum(a for _, a in v.consumes))
        out = []
        for k, most in enumerate(self._most):
            extra: dict[CounterKey, int] = {}
            units = 0
            for view in devices:
                consumed = self._serving(view)[k]
                if consumed is None or not _available(
                    state, acc, view, consumed, totals, extra, self.taints
                ):
                    continue
                units += 1
                if units == most:
                    break
                for ckey, amount in view.consumes:
                    extra[ckey] = extra.get(ckey, 0) + amount
            out.append(units)
        return tuple(out)


def _demand(shape: RequestShape) -> Demand:
    return (shape.device_class, shape.selectors, shape.capacity)


def _available(
    state: ClusterState | None,
    acc: Accelerator,
    view: DeviceView,
    consumed: dict[str, int],
    totals: dict[CounterKey, int],
    extra: dict[CounterKey, int],
    taints: bool,
) -> bool:
    """Can a unit consuming `consumed` take the device, with `extra` counters already taken by
    other units (the allocator's checks, tolerating no taint when `taints`; `state` None:
    nothing allocated)?"""
    if (state is not None and state.in_use(view.id)) or (taints and tainted(view)):
        return False
    shared = state.shared_use(view.id) if state is not None and view.multi else None
    for name, amount in consumed.items():
        base = shared.consumed.get(name, 0) if shared is not None else 0
        if base + amount > view.capacity[name]:
            return False
    if view.consumes and shared is None:
        pid = acc.pool_id
        for ckey, amount in view.consumes:
            base = state.counter_used(pid, ckey) if state is not None else 0
            if base + extra.get(ckey, 0) + amount > totals.get(ckey, 0):
                return False
    return True


_MISSING = ("missing",)


def read_set(expressions: Iterable[str]) -> frozenset[Read] | None:
    """Every attribute and capacity the selectors `expressions` read; None when one of them
    may read more than its text shows (`draplan.cel.reads`)."""
    out: set[Read] = set()
    for expression in expressions:
        found = reads(expression)
        if found is None:
            return None
        out |= found
    return frozenset(out)


def signature(view: DeviceView, read: frozenset[Read] | None) -> Hashable | None:
    """What selectors reading `read` and the capacity and counter checks see of the device:
    devices of equal signatures are selected alike and serve the same demands (a cluster of
    identical GPUs is evaluated once, not once per device). None when not known: no read set,
    or a read both bare and qualified (which one CEL sees depends on the publish order)."""
    if read is None:
        return None
    device = view.device
    values: list[object] = [
        view.id[0],
        view.multi,
        view.consumes,
        tainted(view),
        # What a request consumes: amounts (exact nanos) and policies.
        tuple(view.capacity.items()),
        tuple([c.request_policy for c in device.capacity.values()]) if device.capacity else (),
    ]
    for kind, domain, ident in sorted(read):
        source: Mapping[str, object] = (
            device.attributes if kind == "attributes" else device.capacity
        )
        value = source.get(f"{domain}/{ident}", _MISSING)
        if domain == view.driver and ident in source:
            if value is not _MISSING:
                return None
            value = source[ident]
        values.append(value)
    return tuple(values)


def _class_selectors(dc: DeviceClass) -> list[Selector]:
    return [compile_selector(s.cel.expression) for s in dc.spec.selectors if s.cel]


def _selects(selectors: Sequence[Selector], view: DeviceView) -> bool:
    try:
        return all(sel.matches(view.cel) for sel in selectors)
    except CelError:
        return False  # a selector that fails on a device does not select it
