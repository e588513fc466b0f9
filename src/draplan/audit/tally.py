"""The sums of one scope of `draplan metrics` (`Tally`) and the measure as a document
(`Metrics`): what `audit.metrics` adds up and `audit.metrics_memo` keeps."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from draplan.cluster.devices import NANO, PoolID


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


@dataclass(eq=False)
class Tally:
    """Sums for one scope."""

    gpus: int = 0
    gpus_in_use: int = 0  # held whole or in part
    gpus_allocated: float = 0.0  # in GPUs: a GPU with half its counters consumed adds 0.5
    # The unallocated part of GPUs every device of which is under a NoSchedule / NoExecute
    # taint: out of reach of a pod without a toleration, so not free.
    gpus_tainted: float = 0.0
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

    def add_gpu(
        self, used: float, in_use: bool, partitions: int, taken: int, tainted: bool = False
    ) -> None:
        self.gpus += 1
        self.gpus_in_use += in_use
        self.gpus_allocated += used
        if tainted:
            self.gpus_tainted += 1.0 - used
        self.partitions += partitions
        self.partitions_allocated += taken

    def add_stranded(self, stranded: float, cost: float | None) -> None:
        self.stranded_gpus += stranded
        if cost is not None:
            self.stranded_cost = (self.stranded_cost or 0.0) + cost

    def value(self) -> tuple[object, ...]:
        """Every sum: equal values, equal tallies."""
        return (
            self.gpus,
            self.gpus_in_use,
            self.gpus_allocated,
            self.gpus_tainted,
            self.partitions,
            self.partitions_allocated,
            self.stranded_gpus,
            self.stranded_cost,
            self.devices,
            self.allocated,
            tuple(self.counter_sets),
            tuple((k, *v) for k, v in self.shared.items()),
            tuple((k, s.free, s.stranded, s.cost) for k, s in self.stranded.items()),
            self.price,
        )

    def merge(self, other: Tally) -> None:
        """Add another scope's sums (a part of this one)."""
        self.gpus += other.gpus
        self.gpus_in_use += other.gpus_in_use
        self.gpus_allocated += other.gpus_allocated
        self.gpus_tainted += other.gpus_tainted
        self.partitions += other.partitions
        self.partitions_allocated += other.partitions_allocated
        self.add_stranded(other.stranded_gpus, other.stranded_cost)
        self.devices += other.devices
        self.allocated += other.allocated
        self.counter_sets.extend(other.counter_sets)
        for name, (consumed, total) in other.shared.items():
            entry = self.shared.setdefault(name, [0, 0])
            entry[0] += consumed
            entry[1] += total
        for c, s in other.stranded.items():
            self.stranded.setdefault(c, Stranded()).add(s.free, s.stranded, s.cost)
        self.add_price(other.price)

    def add_price(self, price: float | None) -> None:
        if price is not None:
            self.price = (self.price or 0.0) + price

    def to_dict(self) -> dict[str, Any]:
        free = self.gpus - self.gpus_allocated - self.gpus_tainted
        return {
            "gpus": self.gpus,
            "gpusInUse": self.gpus_in_use,
            "gpusAllocated": round(self.gpus_allocated, 3),
            "gpuAllocationPercent": _percent(self.gpus_allocated, self.gpus),
            "partitions": self.partitions,
            "partitionsAllocated": self.partitions_allocated,
            "freeGpus": round(free, 3),
            "taintedGpus": round(self.gpus_tainted, 3),
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


Scope = tuple[str, str]  # (the document's section, the name in it)
CLUSTER: Scope = ("cluster", "")
SECTIONS = ("deviceClasses", "extendedResources", "nodePools", "resourcePools", "nodes")


@dataclass
class Metrics:
    """Every scope's tally, and each one as the document shows it."""

    tallies: dict[Scope, Tally] = field(default_factory=dict)
    shown: dict[Scope, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The document; its scopes' parts may be shared with a later measure's (read-only)."""
        sections: dict[str, dict[str, Any]] = {s: {} for s in SECTIONS}
        for section, name in sorted(self.tallies):
            if section != CLUSTER[0]:
                sections[section][name] = self._shown((section, name))
        return {"cluster": self._shown(CLUSTER), **sections}

    def _shown(self, scope: Scope) -> dict[str, Any]:
        got = self.shown.get(scope)
        return got if got is not None else self.tallies[scope].to_dict()


def pool_label(pid: PoolID) -> str:
    return f"{pid[0]}/{pid[1]}"


def merged(parts: Iterable[Tally]) -> Tally:
    out = Tally()
    for part in parts:
        out.merge(part)
    return out
