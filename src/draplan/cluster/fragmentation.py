"""The FGD fragmentation measure (Weng et al., USENIX ATC'23), generalised to DRA devices.

For a node n and a request shape m, F_n(m) is the free device capacity of n that m cannot use
(openb-benchmark.md §2.3, the simulator's `frag.go`):

* all free capacity, if m asks for no device, if n lacks CPU or memory for m, or if fewer
  than `m.device_count` devices of n can host one unit of m (wrong kind, too little free
  capacity, or not untouched when m wants whole devices);
* otherwise only the free capacity of the devices that cannot host one unit of m.

Against a workload M of shapes with popularity p_m, F_n(M) = Σ_m p_m · F_n(m): the expected
capacity of n that the next typical pod could not use. A cluster's fragmentation is Σ_n F_n(M).

The paper has no memory in the model: shapes with `memory=0` never lack memory. Capacities are
nano-units (draplan.cluster.devices); results are in units of the measured capacity (milli-GPU
for openb). At the end: reading a node's free state and a pod's shape out of DRA objects.
`draplan.audit.stranded` counts stranded GPUs with this measure in physical accelerators.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from draplan.api.core_v1 import Node
from draplan.api.resource_v1 import DeviceClass, ExactDeviceRequest, ResourceClaim
from draplan.cel import CelError, Selector, compile_selector
from draplan.cluster.devices import NANO, DeviceView, nanos
from draplan.cluster.state import ClusterState

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

T = TypeVar("T")

# Typical pods: the most popular shapes until they cover 95 % of the trace's pods (§2.3,
# `podPopularityThreshold: 95`).
POPULARITY_THRESHOLD = 0.95


class DeviceFree(NamedTuple):
    """One device's free state: its kind (e.g. model), free capacity (nanos), untouched."""

    kind: str
    free: int
    whole: bool


class NodeFree(NamedTuple):
    """A node's free resources. Build it with `node_free`: the measure and the caches need the
    canonical (sorted) form, so that equal states are equal."""

    cpu_milli: int
    memory: int  # bytes
    devices: tuple[DeviceFree, ...]


def node_free(cpu_milli: int, memory: int, devices: Iterable[DeviceFree]) -> NodeFree:
    """A canonical NodeFree: the measure ignores device order, so devices are sorted."""
    return NodeFree(cpu_milli, memory, tuple(sorted(devices)))


def placed(
    node: NodeFree, *, cpu_milli: int, memory: int, takes: Iterable[tuple[DeviceFree, int]]
) -> NodeFree:
    """`node` after a pod takes `cpu_milli`, `memory` and, from a device in each given state,
    the given amount of capacity (nanos; pass the device's `free` to take it whole)."""
    devices = list(node.devices)
    for dev, amount in takes:
        devices.remove(dev)  # ValueError if the node has no device in that state
        devices.append(DeviceFree(dev.kind, dev.free - amount, False))
    return node_free(node.cpu_milli - cpu_milli, node.memory - memory, devices)


def idle(node: NodeFree) -> int:
    """Free device capacity of the node, nanos."""
    return sum(d.free for d in node.devices)


class Shape(NamedTuple):
    """A request shape: `device_count` devices (0: none) of an allowed kind (`kinds` None: any),
    each giving `share` nanos of the measured capacity or, if `share` is 0, untouched. A tuple,
    so hashing it (a cache key in every score) runs in C."""

    cpu_milli: int = 0
    memory: int = 0
    device_count: int = 0
    share: int = 0
    kinds: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class _Group:
    """Shapes with equal (share, kinds, count), sorted by CPU, with suffix sums of weight."""

    count: int
    cpus: tuple[int, ...]
    mems: tuple[int, ...]
    weights: tuple[float, ...]
    suffix: tuple[float, ...]  # suffix[i] = Σ weights[i:]; suffix[0] is the group's weight
    uses_memory: bool

    def lacking(self, cpu_milli: int, memory: int) -> float:
        """Weight of the shapes that lack CPU or memory on a node with these free amounts."""
        i = bisect_right(self.cpus, cpu_milli)
        lack = self.suffix[i]
        if self.uses_memory:
            lack += sum(
                w for m, w in zip(self.mems[:i], self.weights[:i], strict=True) if m > memory
            )
        return lack


def _group(count: int, members: list[tuple[Shape, float]]) -> _Group:
    members.sort(key=lambda sw: sw[0].cpu_milli)
    weights = tuple(w for _, w in members)
    suffix = [0.0] * (len(weights) + 1)
    for i in range(len(weights) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + weights[i]
    return _Group(
        count=count,
        cpus=tuple(s.cpu_milli for s, _ in members),
        mems=tuple(s.memory for s, _ in members),
        weights=weights,
        suffix=tuple(suffix),
        uses_memory=any(s.memory for s, _ in members),
    )


class Workload:
    """Weighted shapes, grouped so a node's devices are examined once per (share, kinds)."""

    def __init__(self, weighted: Iterable[tuple[Shape, float]]) -> None:
        self.shapes = tuple((s, float(w)) for s, w in weighted if w)
        self.no_device = sum(w for s, w in self.shapes if s.device_count == 0)
        buckets: dict[tuple[int, frozenset[str] | None], dict[int, list[tuple[Shape, float]]]]
        buckets = {}
        for s, w in self.shapes:
            if s.device_count > 0:
                buckets.setdefault((s.share, s.kinds), {}).setdefault(s.device_count, []).append(
                    (s, w)
                )
        # (share, kinds, groups by count); the order is fixed so sums are reproducible.
        self.keys = tuple(
            (share, kinds, tuple(_group(n, by_count[n]) for n in sorted(by_count)))
            for (share, kinds), by_count in sorted(buckets.items(), key=_key_order)
        )

    @classmethod
    def typical(cls, shapes: Iterable[Shape], threshold: float = POPULARITY_THRESHOLD) -> Workload:
        """The paper's typical pods from one shape per pod: the most frequent shapes until they
        cover `threshold` of the pods, weights renormalised to 1 (§2.3). Equal counts are
        ranked by shape (the simulator leaves them in Go map order), so the cut is stable."""
        chosen = popular(Counter(shapes), threshold, _shape_order)
        covered = sum(n for _, n in chosen)
        return cls((s, n / covered) for s, n in chosen)


def popular(
    counts: Mapping[T, int], threshold: float, order: Callable[[T], SupportsRichComparison]
) -> list[tuple[T, int]]:
    """The most frequent items, with their counts, until they cover `threshold` of the total;
    equal counts ranked by `order`, so the cut is stable."""
    total = sum(counts.values())
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], order(kv[0])))
    chosen: list[tuple[T, int]] = []
    covered = 0
    for item, n in ranked:
        if covered >= threshold * total:
            break
        chosen.append((item, n))
        covered += n
    return chosen


def _key_order(
    item: tuple[tuple[int, frozenset[str] | None], object],
) -> tuple[int, tuple[str, ...], bool]:
    share, kinds = item[0]
    return (share, tuple(sorted(kinds or ())), kinds is not None)


def _shape_order(s: Shape) -> tuple[int, int, int, int, bool, tuple[str, ...]]:
    kinds = s.kinds
    return (
        s.cpu_milli,
        s.memory,
        s.device_count,
        s.share,
        kinds is not None,
        tuple(sorted(kinds or ())),
    )


def node_fragmentation(node: NodeFree, workload: Workload) -> float:
    """F_n(M): the expected free device capacity of `node` that a shape of `workload` could not
    use, in units of the measured capacity. O(devices + (share, kinds) keys × log devices) for
    a node of one device kind, O(devices × keys) otherwise; nothing is allocated per shape."""
    devices = node.devices
    if not devices:
        return 0.0
    frees = [d.free for d in devices]
    total_idle = sum(frees)
    if not total_idle:
        return 0.0
    kind = devices[0].kind
    one_kind = devices[-1].kind == kind  # sorted by kind first, so the ends tell
    if one_kind:
        # Sorted by (kind, free): frees ascend, so "free >= share" is a suffix.
        prefix = [0]
        for f in frees:
            prefix.append(prefix[-1] + f)
        n_whole = 0
        whole_free = 0
        for d in devices:
            if d.whole:
                n_whole += 1
                whole_free += d.free
    total = workload.no_device * total_idle
    cpu, memory = node.cpu_milli, node.memory
    for share, kinds, groups in workload.keys:
        if one_kind:
            if kinds is not None and kind not in kinds:
                hosts, stuck = 0, total_idle
            elif share:
                i = bisect_left(frees, share)
                hosts, stuck = len(frees) - i, prefix[i]
            else:
                hosts, stuck = n_whole, total_idle - whole_free
        else:
            hosts, stuck = _hosts(devices, share, kinds)
        for g in groups:
            if hosts < g.count:
                # Too few devices can host it (wrong kind, too full): all idle is fragment.
                total += g.suffix[0] * total_idle
            else:
                lack = g.lacking(cpu, memory)
                total += lack * total_idle + (g.suffix[0] - lack) * stuck
    return total / NANO


def _hosts(
    devices: tuple[DeviceFree, ...], share: int, kinds: frozenset[str] | None
) -> tuple[int, int]:
    """(devices that can host one unit, free capacity of the others)."""
    hosts = stuck = 0
    for d in devices:
        if (kinds is None or d.kind in kinds) and (d.free >= share if share else d.whole):
            hosts += 1
        else:
            stuck += d.free
    return hosts, stuck


def placements(node: NodeFree, shape: Shape) -> list[tuple[tuple[DeviceFree, ...], NodeFree]]:
    """Every distinct way `shape` fits on `node`, as (device states taken, node after); empty if
    it does not fit. Devices in equal states are interchangeable in the measure, so a node of
    untouched GPUs has one way, and a sharing pod one per distinct free amount (FGD tries every
    GPU, §2.3). CPU and memory are not checked here: that is the scheduler's filter."""
    share = shape.share
    kinds = shape.kinds
    fits = [
        d
        for d in node.devices
        if (kinds is None or d.kind in kinds) and (d.free >= share if share else d.whole)
    ]
    if len(fits) < shape.device_count:
        return []
    out = []
    for taken in sorted(set(combinations(fits, shape.device_count))):
        takes = [(d, share or d.free) for d in taken]
        after = placed(node, cpu_milli=shape.cpu_milli, memory=shape.memory, takes=takes)
        out.append((taken, after))
    return out


def cluster_fragmentation(
    nodes: Iterable[NodeFree], fragmentation: Callable[[NodeFree], float]
) -> tuple[float, float]:
    """(Σ_n F_n(M), Σ_n idle_n), in units of the measured capacity (§2.3: the fragmentation
    amount; the ratio is their quotient). `fragmentation` is e.g. a FragmentationCache."""
    frag = 0.0
    free = 0
    for node in nodes:
        frag += fragmentation(node)
        free += idle(node)
    return frag, free / NANO


Choice = tuple[tuple[DeviceFree, ...], float]  # (device states taken, F_n(M) after)


class FragmentationCache:
    """`node_fragmentation` memoised by the node's free state (a canonical NodeFree), and the
    per-device choices of a shape memoised by (state, shape): run states repeat a lot."""

    def __init__(self, workload: Workload, max_entries: int = 1 << 18) -> None:
        self.workload = workload
        self.max_entries = max_entries
        self._memo: dict[NodeFree, float] = {}
        self._choices: dict[tuple[NodeFree, Shape], tuple[Choice, ...]] = {}
        self.hits = 0
        self.misses = 0

    def __call__(self, node: NodeFree) -> float:
        value = self._memo.get(node)
        if value is not None:
            self.hits += 1
            return value
        self.misses += 1
        value = node_fragmentation(node, self.workload)
        if len(self._memo) >= self.max_entries:
            self._memo.clear()  # dropping all at once is cheaper than tracking recency
        self._memo[node] = value
        return value

    def choices(self, node: NodeFree, shape: Shape) -> tuple[Choice, ...]:
        """`placements(node, shape)` with F_n(M) of each state after; FGD's score of a choice
        is `self(node) - after` (§2.3). Empty if the devices do not fit."""
        key = (node, shape)
        out = self._choices.get(key)
        if out is None:
            out = tuple((taken, self(after)) for taken, after in placements(node, shape))
            if len(self._choices) >= self.max_entries:
                self._choices.clear()
            self._choices[key] = out
        return out


# --- DRA objects -> free states and shapes ----------------------------------------------------


def _selects(selectors: Sequence[Selector], view: DeviceView) -> bool:
    try:
        return all(sel.matches(view.cel) for sel in selectors)
    except CelError:
        return False  # a selector that fails on a device does not select it


def _class_selectors(device_class: DeviceClass) -> list[Selector]:
    return [compile_selector(s.cel.expression) for s in device_class.spec.selectors if s.cel]


def device_free(state: ClusterState, view: DeviceView, capacity: str) -> tuple[int, bool]:
    """(free nanos of `capacity`, untouched) of one device under the ledgers. A device without
    that capacity counts as one unit (NANO), free only while unallocated."""
    total = view.capacity.get(capacity)
    if view.multi:
        use = state.shared_use(view.id)
        if use is None:
            return (NANO if total is None else total), True
        if total is None:
            return 0, False
        return max(0, total - use.consumed.get(capacity, 0)), False
    if state.in_use(view.id):
        return 0, False
    return (NANO if total is None else total), True


def node_devices(
    state: ClusterState,
    node: Node,
    device_class: DeviceClass,
    capacity: str,
    kind_attribute: str = "model",
) -> list[tuple[DeviceView, DeviceFree]]:
    """The devices of `device_class` visible from `node`, in pool order, with their free state
    (kind = the value of attribute `kind_attribute`, "" if absent)."""
    selectors = _class_selectors(device_class)
    out = []
    for pool in state.pools_for_node(node):
        for view in pool.devices:
            if not _selects(selectors, view):
                continue
            attr = view.attribute(f"{view.driver}/{kind_attribute}")
            free, whole = device_free(state, view, capacity)
            out.append((view, DeviceFree("" if attr is None else str(attr[1]), free, whole)))
    return out


def free_state(
    state: ClusterState,
    node: Node,
    *,
    cpu_milli: int,
    memory: int,
    device_class: DeviceClass,
    capacity: str,
    kind_attribute: str = "model",
) -> NodeFree:
    """A node's NodeFree from the ledgers. Free CPU (milli-cores) and memory (bytes) are the
    caller's to give: allocatable minus the requests of the pods on the node."""
    devices = node_devices(state, node, device_class, capacity, kind_attribute)
    return node_free(cpu_milli, memory, (d for _, d in devices))


class DeviceKinds:
    """One device per kind of a class, to learn which kinds a request's selectors admit."""

    def __init__(self, views: Iterable[DeviceView], kind_attribute: str = "model") -> None:
        self.examples: dict[str, DeviceView] = {}
        for view in views:
            attr = view.attribute(f"{view.driver}/{kind_attribute}")
            self.examples.setdefault("" if attr is None else str(attr[1]), view)
        self._memo: dict[tuple[str, ...], frozenset[str] | None] = {}

    @classmethod
    def of_state(
        cls, state: ClusterState, device_class: DeviceClass, kind_attribute: str = "model"
    ) -> DeviceKinds:
        selectors = _class_selectors(device_class)
        views = (
            view
            for name in sorted(state.slices.keys())
            for view in state.slice_devices(name)
            if _selects(selectors, view)
        )
        return cls(views, kind_attribute)

    def admitted(self, expressions: Sequence[str]) -> frozenset[str] | None:
        """The kinds whose example device passes every selector; None if that is all kinds.
        Exact when selectors look only at the kind attribute (as openb's gpu_spec does)."""
        key = tuple(expressions)
        if key not in self._memo:
            selectors = [compile_selector(e) for e in expressions]
            kinds = frozenset(k for k, v in self.examples.items() if _selects(selectors, v))
            self._memo[key] = None if len(kinds) == len(self.examples) else kinds
        return self._memo[key]


def _request_share(req: ExactDeviceRequest, capacity: str) -> int:
    requests = req.capacity.requests if req.capacity is not None else {}
    for name, q in requests.items():
        if name == capacity or name.endswith("/" + capacity):
            return nanos(q)
    return 0


def claims_shape(
    claims: Sequence[ResourceClaim],
    *,
    cpu_milli: int,
    memory: int = 0,
    device_class: str,
    capacity: str,
    kinds: DeviceKinds,
) -> Shape | None:
    """A pod's Shape from its CPU and memory requests (memory 0: ignored, as in the paper) and
    its claims' requests for `device_class`. None if they do not fit one shape: several kinds
    of request, firstAvailable or allocationMode All."""
    found: set[tuple[int, frozenset[str] | None]] = set()
    count = 0
    for claim in claims:
        for req in claim.spec.devices.requests:
            if req.exactly is None:
                if any(sub.device_class_name == device_class for sub in req.first_available):
                    return None
                continue
            ex = req.exactly
            if ex.device_class_name != device_class:
                continue
            if ex.allocation_mode not in ("", "ExactCount"):
                return None
            exprs = [s.cel.expression for s in ex.selectors if s.cel is not None]
            found.add((_request_share(ex, capacity), kinds.admitted(exprs)))
            count += ex.count or 1
    if len(found) > 1:
        return None
    if not found:
        return Shape(cpu_milli, memory)
    share, allowed = found.pop()
    return Shape(cpu_milli, memory, count, share, allowed)
