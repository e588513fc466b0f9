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
partitions of a GPU count once, as the part of that GPU they leave. Shapes are FGD's (devices,
CPU, memory): node selectors, taints and matchAttribute constraints are not part of them; a pod
whose accelerator requests are not one shape (several classes or selector sets, firstAvailable,
allocationMode All) is left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from draplan.allocator.capacity import consumption
from draplan.api.core_v1 import Node, Pod
from draplan.api.resource_v1 import DeviceClass, ResourceClaim
from draplan.cel import CelError, Selector, compile_selector
from draplan.cluster.accelerators import Accelerator, is_accelerator, node_accelerators, used
from draplan.cluster.devices import CounterKey, DeviceView, nanos
from draplan.cluster.fragmentation import POPULARITY_THRESHOLD, popular
from draplan.cluster.podresources import node_allocatable, pod_requests
from draplan.cluster.state import ClusterState


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
    pod: Pod, claims: Sequence[ResourceClaim], classes: Collection[str]
) -> RequestShape | None:
    """The pod's shape over the accelerator `classes`; None if it asks none of them, or its
    requests for them are not one shape."""
    found: set[tuple[str, tuple[str, ...], tuple[tuple[str, int], ...]]] = set()
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
    (device_class, selectors, capacity) = found.pop()
    resources = pod_requests(pod)
    return RequestShape(
        resources.get("cpu", 0),
        resources.get("memory", 0),
        device_class,
        count,
        selectors,
        capacity,
    )


def typical(
    shapes: Iterable[RequestShape], pending: Collection[RequestShape] = ()
) -> list[tuple[RequestShape, float]]:
    """FGD's typical shapes (the most common, one per pod, until they cover 95 % of the pods)
    and every `pending` shape, weighted by their share of those pods."""
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


class NodeStranded(NamedTuple):
    """A node's accelerators with their free fraction, the GPUs stranded, and how much of that
    the shapes of each device class account for."""

    accelerators: tuple[tuple[Accelerator, float], ...]
    stranded: float
    by_class: dict[str, float]


class StrandedMeter:
    """Measures nodes against fixed weighted shapes. Which shapes a device can serve, and how
    many units of each an accelerator takes when free, are computed once per device and per
    accelerator, so re-measuring a node that changed costs one pass over its accelerators."""

    def __init__(
        self, classes: Mapping[str, DeviceClass], weighted: Sequence[tuple[RequestShape, float]]
    ) -> None:
        self.shapes = [s for s, w in weighted if w and s.device_class in classes]
        self.weights = [w for s, w in weighted if w and s.device_class in classes]
        self._class_selectors = {
            name: _class_selectors(classes[name])
            for name in sorted({s.device_class for s in self.shapes})
        }
        self._request_selectors = {
            s.selectors: [compile_selector(e) for e in s.selectors] for s in self.shapes
        }
        self._serves: dict[DeviceView, tuple[tuple[int, dict[str, int]], ...]] = {}
        self._empty_units: dict[Accelerator, tuple[int, ...]] = {}

    def node(self, state: ClusterState, node: Node) -> NodeStranded:
        accs = node_accelerators(state, node)
        frees = [1.0 - used(state, a) for a in accs]
        measured = tuple(zip(accs, frees, strict=True))
        total_free = sum(frees)
        if not self.shapes or total_free <= 0:
            return NodeStranded(measured, 0.0, {})
        alloc = node_allocatable(node)
        taken = state.requested(node.metadata.name)
        cpu, memory = alloc.get("cpu", 0), alloc.get("memory", 0)
        cpu_free, memory_free = cpu - taken.get("cpu", 0), memory - taken.get("memory", 0)
        empty = [self._empty(a) for a in accs]
        weight = lost = 0.0
        by_class: dict[str, float] = {}
        for i, (shape, w) in enumerate(zip(self.shapes, self.weights, strict=True)):
            if shape.cpu_milli > cpu or shape.memory > memory:
                continue
            if sum(e[i] for e in empty) < shape.device_count:
                continue  # cannot run here even on an empty node: not this node's shape
            weight += w
            if shape.cpu_milli > cpu_free or shape.memory > memory_free:
                unusable = total_free
            else:
                units = [self._units(state, a, i) for a in accs]
                if sum(units) < shape.device_count:
                    unusable = total_free
                else:
                    unusable = sum(f for f, u in zip(frees, units, strict=True) if not u)
            if unusable:
                lost += w * unusable
                by_class[shape.device_class] = by_class.get(shape.device_class, 0.0) + w * unusable
        if not weight:
            return NodeStranded(measured, 0.0, {})
        return NodeStranded(
            measured, lost / weight, {c: v / weight for c, v in sorted(by_class.items())}
        )

    # --- which devices serve which shapes --------------------------------------------------

    def _serving(self, view: DeviceView) -> tuple[tuple[int, dict[str, int]], ...]:
        """(shape index, what one unit consumes of the device) for every shape whose class
        and request selectors admit the device and whose capacity request it can meet."""
        got = self._serves.get(view)
        if got is None:
            admits: dict[str, bool] = {}
            out = []
            for i, shape in enumerate(self.shapes):
                cls = shape.device_class
                if cls not in admits:
                    admits[cls] = _selects(self._class_selectors[cls], view)
                if not admits[cls] or not _selects(self._request_selectors[shape.selectors], view):
                    continue
                consumed = consumption(view, dict(shape.capacity))
                if consumed is not None:
                    out.append((i, consumed))
            got = self._serves[view] = tuple(out)
        return got

    def _empty(self, acc: Accelerator) -> tuple[int, ...]:
        got = self._empty_units.get(acc)
        if got is None:
            got = self._empty_units[acc] = tuple(
                self._units(None, acc, i) for i in range(len(self.shapes))
            )
        return got

    def _units(self, state: ClusterState | None, acc: Accelerator, i: int) -> int:
        """How many units of shape `i` the accelerator takes at once under the ledgers of
        `state` (None: when nothing is allocated). Partitions are taken smallest first."""
        need = self.shapes[i].device_count
        totals = dict(acc.counters)
        extra: dict[CounterKey, int] = {}
        units = 0
        devices = acc.devices
        if len(devices) > 1:
            devices = tuple(sorted(devices, key=lambda v: sum(a for _, a in v.consumes)))
        for view in devices:
            consumed = next((c for j, c in self._serving(view) if j == i), None)
            if consumed is None:
                continue
            if not _available(state, acc, view, consumed, totals, extra):
                continue
            units += 1
            if units == need:
                break
            for ckey, amount in view.consumes:
                extra[ckey] = extra.get(ckey, 0) + amount
        return units


def _available(
    state: ClusterState | None,
    acc: Accelerator,
    view: DeviceView,
    consumed: dict[str, int],
    totals: dict[CounterKey, int],
    extra: dict[CounterKey, int],
) -> bool:
    """Can a unit consuming `consumed` take the device, with `extra` counters already taken by
    other units (the allocator's checks; `state` None: nothing allocated)?"""
    if state is not None and state.in_use(view.id):
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


def _class_selectors(dc: DeviceClass) -> list[Selector]:
    return [compile_selector(s.cel.expression) for s in dc.spec.selectors if s.cel]


def _selects(selectors: Sequence[Selector], view: DeviceView) -> bool:
    try:
        return all(sel.matches(view.cel) for sel in selectors)
    except CelError:
        return False  # a selector that fails on a device does not select it
