"""Devices and pools as the allocator sees them: precomputed once per ResourceSlice.

Quantities become exact integers in nano units (Kubernetes never keeps precision finer than
1n), so the search adds and compares plain ints.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import msgspec

from draplan.api.core_v1 import NodeSelectorTerm
from draplan.api.quantity import Quantity
from draplan.api.resource_v1 import Device, DeviceCapacity, DeviceTaintRule, ResourceSlice
from draplan.cel import AttrValue, CelDevice, SemverValue

DeviceID = tuple[str, str, str]  # (driver, pool, device)
PoolID = tuple[str, str]  # (driver, pool)
CounterKey = tuple[str, str]  # (counter set, counter)

NANO = 10**9
# Attributes that name a topology group inside a node, most specific first: the standard ones
# (KEP-5491's pcieRoot; numaNode, stable in 1.37 by KEP-6072), then ids a driver publishes in
# its own domain (NVIDIA's `numa`).
TOPOLOGY_ATTRIBUTES = (
    "resource.kubernetes.io/pcieRoot",
    "resource.kubernetes.io/numaNode",
    "numa",
    "numaNode",
    "socket",
)


def topology_rank(qualified: str) -> int | None:
    """Where a `domain/id` attribute stands in TOPOLOGY_ATTRIBUTES (None: not a topology
    group); a bare entry stands for that id in any driver's domain."""
    if qualified in TOPOLOGY_ATTRIBUTES:
        return TOPOLOGY_ATTRIBUTES.index(qualified)
    ident = qualified.rpartition("/")[2]
    return next((i for i, a in enumerate(TOPOLOGY_ATTRIBUTES) if a == ident), None)


@lru_cache(maxsize=4096)
def nanos(q: Quantity) -> int:
    """Exact value in nano units (rounded up, as Kubernetes rounds sub-nano precision); cached,
    as every device of a model repeats the same few capacities."""
    frac = q.as_fraction() * NANO
    return math.ceil(frac)


def from_nanos(n: int) -> Quantity:
    """A Quantity for `n` nano units, in the shortest DecimalSI form."""
    if n % NANO == 0:
        return Quantity.parse(str(n // NANO))
    if n % (NANO // 1000) == 0:
        return Quantity.parse(f"{n // (NANO // 1000)}m")
    return Quantity.parse(f"{n}n")


@dataclass(frozen=True, eq=False)
class DeviceView:
    """One published device with everything the search needs precomputed."""

    id: DeviceID
    device: Device
    slice_name: str
    # How the device is bound to nodes: exactly one of these is set (nodeName, selector term,
    # or all nodes), taken from the device itself under perDeviceNodeSelection.
    node_name: str | None
    node_term: NodeSelectorTerm | None
    all_nodes: bool
    capacity: dict[str, int] = field(default_factory=dict)
    consumes: tuple[tuple[CounterKey, int], ...] = ()
    multi: bool = False

    @property
    def driver(self) -> str:
        return self.id[0]

    @property
    def pool_id(self) -> PoolID:
        return (self.id[0], self.id[1])

    @property
    def name(self) -> str:
        return self.id[2]

    @cached_property
    def cel(self) -> CelDevice:
        attrs: dict[str, AttrValue] = {}
        for key, attr in self.device.attributes.items():
            if attr.version is not None:
                attrs[key] = SemverValue.parse(attr.version)
            elif attr.versions is not None:
                attrs[key] = tuple(SemverValue.parse(v) for v in attr.versions)
            else:
                value = attr.value()
                if value is not None:
                    attrs[key] = value
        caps = {key: cap.value for key, cap in self.device.capacity.items()}
        return CelDevice(
            key=self.id,
            driver=self.driver,
            attributes=attrs,
            capacity=caps,
            allow_multiple_allocations=self.multi,
        )

    @cached_property
    def _qualified_attributes(self) -> dict[str, tuple[str, object]]:
        # Bare names live in the driver's domain; an explicit "domain/id" wins over a bare id.
        out: dict[str, tuple[str, object]] = {}
        for explicit in (False, True):
            for key, attr in self.device.attributes.items():
                if ("/" in key) != explicit:
                    continue
                kind = attr.type_name()
                if kind:
                    out[key if explicit else f"{self.driver}/{key}"] = (kind, attr.value())
        return out

    def attribute(self, qualified: str) -> tuple[str, object] | None:
        """(type, value) of `domain/id`, falling back to the bare id in the driver's domain."""
        return self._qualified_attributes.get(qualified)

    @cached_property
    def topology(self) -> object:
        """The value of the most specific topology attribute (PCIe root, NUMA node, socket)."""
        for attr in TOPOLOGY_ATTRIBUTES:
            value = self.attribute(attr if "/" in attr else f"{self.driver}/{attr}")
            if value is not None:
                return (attr, value)
        return None

    def capacity_spec(self, name: str) -> DeviceCapacity | None:
        return self.device.capacity.get(name)


def device_views(rs: ResourceSlice, rules: Iterable[DeviceTaintRule] = ()) -> list[DeviceView]:
    """The DeviceViews of one slice, in publish order, with the taints of the DeviceTaintRules
    that select them added to their own (KEP-5055: the scheduler sees both alike)."""
    spec = rs.spec
    out = []
    per_device = spec.per_device_node_selection is True
    selectors = [(r.spec.device_selector, r.spec.taint) for r in rules if r.spec.device_selector]
    driver, pool, slice_name = spec.driver, spec.pool.name, rs.metadata.name
    # The slice's own node selection, for every device unless each chooses its own.
    sel = spec.node_selector
    shared = (
        spec.node_name or None,
        sel.node_selector_terms[0] if sel and sel.node_selector_terms else None,
        spec.all_nodes is True,
    )
    for dev in spec.devices:
        if selectors:
            ruled = tuple(t for rule, t in selectors if rule.selects(driver, pool, dev.name))
            if ruled:
                dev = msgspec.structs.replace(dev, taints=(*dev.taints, *ruled))
        node_name, term, all_nodes = shared
        if per_device:
            sel = dev.node_selector
            node_name = dev.node_name or None
            term = sel.node_selector_terms[0] if sel and sel.node_selector_terms else None
            all_nodes = dev.all_nodes is True
        consumes = (
            tuple(
                ((cc.counter_set, cname), nanos(counter.value))
                for cc in dev.consumes_counters
                for cname, counter in cc.counters.items()
            )
            if dev.consumes_counters
            else ()
        )
        out.append(
            DeviceView(
                (driver, pool, dev.name),
                dev,
                slice_name,
                node_name,
                term,
                all_nodes,
                {k: nanos(c.value) for k, c in dev.capacity.items()},
                consumes,
                dev.allow_multiple_allocations is True,
            )
        )
    return out


@dataclass(frozen=True, eq=False)
class Pool:
    """A resource pool as seen from one node (dra-semantics §3.1)."""

    id: PoolID
    generation: int
    devices: tuple[DeviceView, ...]
    counters: dict[CounterKey, int]
    incomplete: bool = False
    invalid: str = ""

    def bound_nodes(self) -> tuple[str, ...]:
        """The nodes its devices are bound to, in name order."""
        return tuple(sorted({v.node_name for v in self.devices if v.node_name is not None}))

    def sole_node(self) -> str | None:
        """The node every one of its devices is bound to, if one is."""
        local = {v.node_name for v in self.devices}
        return next(iter(local)) if len(local) == 1 else None
