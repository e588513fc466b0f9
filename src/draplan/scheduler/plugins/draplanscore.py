"""draplan's own placement policy: FGD's fragmentation gradient, refined by what the
typical pods can still absorb, by how well partly used devices will fill, and by which device
kinds constrained pods need.

FGD (Weng et al., ATC'23) scores a node by how much placing the pod lowers F_n(M), the idle
device capacity that one typical pod could not use, as the integer int(100·sigmoid(Δ/1000)).
That integer groups near-equal placements, and ties then go to a fixed node order: the
grouping is half of FGD's result (openb-benchmark.md §2.9). What it cannot see:

* capacity a typical pod could use once but not again: a node with eight free GPUs and CPU
  for two more pods strands six GPUs, yet every typical pod still "fits" (FGD's Q3);
* how a partly used device will end: 1000 − 470 leaves room for another 470 and then 60
  that nothing uses, 1000 − 650 − 220 leaves 130; FGD only asks whether one more pod fits;
* which kinds of device are scarce for the pods that may use only them (`gpu_spec`);
* device capacity the node's CPU cannot keep busy: B_n = max(0, free device milli − free
  CPU / ρ), ρ the typical pods' CPU per device milli.

draplan's score is FGD's integer computed on Δ = ΔF + β·ΔH + γ·ΔB − e·X, where H_n sums over
the node's partly used devices their expected final waste (below) and X is the capacity taken
from device kinds more pressed than the least pressed kind the pod admits, times the
difference (an unconstrained pod keeps off the T4s that T4-only pods need); for a pod that
shares one device, on Δ = 3·ΔH + 3·ΔB − 6·X (its choice is which hole to fill, which ΔF
hardly tells apart). Below one point comes a level of ΔA + h·ΔH + 2·ΔB − k·(pressure of
the kinds taken): A_n(M) = idle − Σ_m p_m · (capacity the pods of shape m could take,
counting every unit that fits by devices and by CPU). The level has a few steps so that
placements still tie and the tie rule keeps packing nodes in a consistent order. The device
inside the node is chosen the same way (joint node and device choice).

Expected final waste of a device with r free (V, from the sharing shapes that admit its
kind, p their popularity among those): the next such pod either fits and the device goes on
with r − share, or does not; then it goes elsewhere and the device waits, except with a small
chance CLOSING that the cluster fills before another pod comes and r is wasted:
V(r) = min(r, (Σ_fit p·V(r − share) + CLOSING·P_no-fit·r) / (P_fit + CLOSING·P_no-fit)).
A whole device wastes nothing: whole-device pods take it. (With CLOSING = 1 every pod that
does not fit ends the device, so opening a device for a sharing pod looked dearer than leaving
a remainder that only rare pods fit: 230s went beside 650s and 320s beside 550s while
thousands of devices were still free.)

All four measures are per node (cached per free state), so the scheduler's per-node score
cache holds; the kind pressure is fixed per run (constrained demand over supply per kind).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from draplan.api.core_v1 import Node
from draplan.cluster.devices import NANO
from draplan.cluster.fragmentation import DeviceFree, NodeFree, Workload, placements
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import CycleState, PodInfo
from draplan.scheduler.plugins.placement import (
    MAX_SCORE,
    MEMO_ENTRIES,
    MILLI,
    FGDDevices,
    FGDScore,
    NodeInfo,
    PlacementContext,
    PodRequest,
    sigmoid,
)

# Weights, measured on openb (default seeds 42-46, six other traces on two seeds): β of ΔH
# inside FGD's integer (0.5 and more let hole-filling override CPU fit and lose), then the
# level below one point: sigmoid(x / SCALE) cut into LEVELS steps, weighted WEIGHT, of
# x = ΔA + HOLES·ΔH − PRESSURE·(capacity taken × its kind's pressure).
BETA = 0.25
# The CPU-balance term B (GPU capacity the node's free CPU cannot keep busy): its weight in
# FGD's integer and in the level; for pods that share one device, the integer reads only
# ΔH and ΔB, FGD's ΔF being the measure of whole-device demand.
BALANCE = 0.75
BALANCE_LEVEL = 2.0
SHARING_HOLES = 3.0
SHARING_BALANCE = 3.0
HOLES = 2.0
PRESSURE = 4.0
# In the integer: the capacity a pod takes from kinds that constrained pods need, weighted by
# how much more pressed they are than the least pressed kind the pod admits (0 for a pod that
# may use only pressed kinds). Measured on gpuspec33 (seeds 42-43): without it 14.8 %, 1/1
# (whole-device / sharing) 5.9 %, 1/3 5.0 %, 1/6 4.8 %, 2/6 5.0 %, 1/10 4.8 %.
EXCESS = 1.0
SHARING_EXCESS = 6.0
SCALE = 200.0
LEVELS = 4
WEIGHT = 0.9
# The chance that a pod which does not fit a partly used device is the device's last chance
# (HoleWaste). Measured on default (seeds 42-46): 1 (every such pod ends it) 4.05 %, 0.5
# 4.13 %, 0.2 4.07 %, 0.05 4.03 %, 0.02 4.02 %, 0.01 3.97 %, 0.005 4.00 %, 0.002 4.09 %, 0 (a
# device always waits for a pod that fits) 4.20 %.
CLOSING = 0.01

Choices = dict[tuple[DeviceFree, ...], tuple[int, float]]  # taken -> (integer score, level)


class Absorbable:
    """A_n(M): the idle device capacity (milli) of a node that the typical pods could not
    absorb, counting for each shape every unit that fits by devices and by CPU. Cached per
    node state; the device part (units per shape) per device states."""

    def __init__(self, workload: Workload) -> None:
        groups: dict[tuple[int, frozenset[str] | None], list[tuple[int, int, float]]] = {}
        for shape, p in workload.shapes:
            if shape.device_count:
                groups.setdefault((shape.share, shape.kinds), []).append(
                    (shape.device_count, shape.cpu_milli, p)
                )
        self.groups: list[
            tuple[int, frozenset[str] | None, bool, tuple[tuple[int, int, float], ...]]
        ] = []
        for (share, kinds), members in sorted(
            groups.items(), key=lambda kv: (kv[0][0], sorted(kv[0][1] or ()))
        ):
            sharing = 0 < share < MILLI * NANO
            unit = share if share else MILLI * NANO
            # (cpu, devices per pod, p · capacity one pod takes in milli), by CPU
            rows = sorted((cpu, count, p * count * unit / NANO) for count, cpu, p in members)
            self.groups.append((share, kinds, sharing, tuple(rows)))
        self._units: dict[tuple[DeviceFree, ...], tuple[int, ...]] = {}
        self._memo: dict[NodeFree, float] = {}

    def units(self, devices: tuple[DeviceFree, ...]) -> tuple[int, ...]:
        """Per (share, kinds) group: how many single-device units fit on the devices."""
        hit = self._units.get(devices)
        if hit is not None:
            return hit
        out = []
        for share, kinds, sharing, _ in self.groups:
            fit = [d for d in devices if kinds is None or d.kind in kinds]
            if sharing:
                out.append(sum(d.free // share for d in fit))
            else:
                out.append(sum(1 for d in fit if d.whole))
        value = tuple(out)
        if len(self._units) >= MEMO_ENTRIES:
            self._units.clear()
        self._units[devices] = value
        return value

    def __call__(self, node: NodeFree) -> float:
        hit = self._memo.get(node)
        if hit is not None:
            return hit
        devices = node.devices
        idle = sum(d.free for d in devices) / NANO
        absorbed = 0.0
        if idle:
            cpu = node.cpu_milli
            for (_, _, _, rows), units in zip(self.groups, self.units(devices), strict=True):
                if not units:
                    continue
                for cpu_m, count, capacity in rows:
                    k = units // count if count > 1 else units
                    if cpu_m > 0 and cpu // cpu_m < k:
                        k = cpu // cpu_m
                    if k > 0:
                        absorbed += capacity * k
        value = idle - absorbed
        if len(self._memo) >= MEMO_ENTRIES:
            self._memo.clear()
        self._memo[node] = value
        return value


class HoleWaste:
    """H_n: the expected final waste (milli) of the node's partly used devices, Σ V(free)
    (see the module docstring). V is tabulated per kind on a grid of thousandths of a device
    (free rounded down, shares up), bottom-up: no recursion however small the shares."""

    def __init__(self, workload: Workload) -> None:
        self.shares = [
            (-(-s.share // NANO), s.kinds, p)
            for s, p in workload.shapes
            if s.device_count == 1 and 0 < s.share < MILLI * NANO
        ]
        self._tables: dict[str, list[float]] = {}
        self._memo: dict[tuple[DeviceFree, ...], float] = {}

    def dist(self, kind: str) -> list[tuple[int, float]]:
        """The sharing shapes that admit `kind`: (share in thousandths, popularity among
        them), by share."""
        fit = [(share, p) for share, kinds, p in self.shares if kinds is None or kind in kinds]
        total = sum(p for _, p in fit)
        return sorted((share, p / total) for share, p in fit) if total else []

    def value(self, kind: str, free: int) -> float:
        """V(free) of a device of `kind`, milli."""
        table = self._tables.get(kind)
        if table is None:
            dist = self.dist(kind)
            table = [0.0] * (MILLI + 1)
            for r in range(1, MILLI + 1):
                waste = float(r)
                expected = fits = 0.0
                for share, p in dist:
                    if share <= r:
                        expected += p * table[r - share]
                        fits += p
                closing = CLOSING * (1.0 - fits)
                if fits:
                    waste = min(waste, (expected + closing * r) / (fits + closing))
                table[r] = waste
            self._tables[kind] = table
        return table[min(free // NANO, MILLI)]

    def __call__(self, node: NodeFree) -> float:
        devices = node.devices
        hit = self._memo.get(devices)
        if hit is not None:
            return hit
        total = 0.0
        for d in devices:
            if d.free and not d.whole:
                total += self.value(d.kind, d.free)
        if len(self._memo) >= MEMO_ENTRIES:
            self._memo.clear()
        self._memo[devices] = total
        return total


def kind_pressure(supply: dict[str, int], workload: Workload) -> dict[str, float]:
    """Per device kind: the share of the workload's device demand that may use only some kinds
    (split over them by supply) that falls on this kind, over its share of the supply. 0 for a
    kind no constrained shape names; 1 if constrained demand alone matches its supply share."""
    total = sum(supply.values())
    mass = sum(p * s.device_count * (s.share or MILLI * NANO) for s, p in workload.shapes)
    if not total or not mass:
        return {}
    demand: dict[str, float] = {}
    for s, p in workload.shapes:
        if s.kinds is None or not s.device_count:
            continue
        offered = sum(supply.get(k, 0) for k in s.kinds)
        if not offered:
            continue
        amount = p * s.device_count * (s.share or MILLI * NANO)
        for k in sorted(s.kinds):
            demand[k] = demand.get(k, 0.0) + amount * supply.get(k, 0) / offered
    return {k: demand.get(k, 0.0) / mass / (v / total) for k, v in sorted(supply.items()) if v}


def level(delta: float) -> float:
    """A secondary change (milli) as one of LEVELS levels in [0, 1)."""
    return math.floor(sigmoid(delta / SCALE) * LEVELS) / LEVELS


class _Memo:
    """Per-context state of the policy (the context is shared with its device choice)."""

    def __init__(self, context: PlacementContext, state: ClusterState) -> None:
        workload = context.fragmentation(state).workload
        self.absorbable = Absorbable(workload)
        self.holes = HoleWaste(workload)
        # Capacity per kind, from the nodes' device units (whole devices, used or not).
        supply: dict[str, int] = {}
        for name in sorted(state.nodes):
            info = context.node(state, state.nodes[name])
            for _, d in info.devices:
                supply[d.kind] = supply.get(d.kind, 0) + info.unit
        self.pressure = kind_pressure(supply, workload)
        self._least: dict[frozenset[str] | None, float] = {}
        self.choices: dict[tuple[int, object], Choices] = {}
        # The typical pods' CPU per device milli: how much CPU keeps a unit of device busy.
        cpu = milli = 0.0
        for shape, p in workload.shapes:
            if shape.device_count:
                cpu += p * shape.cpu_milli
                milli += p * shape.device_count * (shape.share or MILLI * NANO) / NANO
        self.cpu_per_milli = cpu / milli if milli else 0.0

    def least_pressure(self, kinds: frozenset[str] | None) -> float:
        """The lowest pressure among the kinds a pod admits (None: every kind)."""
        hit = self._least.get(kinds)
        if hit is None:
            values = [v for k, v in self.pressure.items() if kinds is None or k in kinds]
            hit = self._least[kinds] = min(values, default=0.0)
        return hit

    def balance(self, node: NodeFree) -> float:
        """B_n: free device milli beyond what the node's free CPU can keep busy."""
        if not self.cpu_per_milli:
            return 0.0
        idle = sum(d.free for d in node.devices) / NANO
        return max(0.0, idle - node.cpu_milli / self.cpu_per_milli)


def _memo(context: PlacementContext, state: ClusterState) -> _Memo:
    memo: _Memo | None = getattr(context, "_draplan", None)
    if memo is None:
        memo = _Memo(context, state)
        context._draplan = memo  # type: ignore[attr-defined]
    return memo


def choices(
    context: PlacementContext, state: ClusterState, info: NodeInfo, pod: PodRequest
) -> Choices:
    """(integer score, level) of each distinct way the pod fits on the node."""
    memo = _memo(context, state)
    key = (info.key, pod.shape)
    out = memo.choices.get(key)
    if out is not None:
        return out
    frag = context.fragmentation(state)
    absorbable = memo.absorbable
    holes = memo.holes
    scale = context.frag_scale(info)
    f_before = frag(info.free)
    a_before = absorbable(info.free)
    h_before = holes(info.free)
    b_before = memo.balance(info.free)
    share = pod.shape.share
    sharing = 0 < share < MILLI * NANO and pod.shape.device_count == 1
    least = memo.least_pressure(pod.shape.kinds)
    out = {}
    for taken, after in placements(info.free, pod.shape):
        dh = (h_before - holes(after)) * scale
        db = (b_before - memo.balance(after)) * scale
        # The mean pressure of the devices taken, times the capacity taken (milli).
        taken_milli = sum(share or d.free for d in taken) / NANO * scale
        pressure = sum(memo.pressure.get(d.kind, 0.0) for d in taken) / max(1, len(taken))
        # What the pod takes from scarce kinds beyond the least pressed kind it admits.
        excess = max(0.0, pressure - least) * taken_milli
        if sharing:
            delta = SHARING_HOLES * dh + SHARING_BALANCE * db - SHARING_EXCESS * excess
        else:
            delta = (f_before - frag(after)) * scale + BETA * dh + BALANCE * db - EXCESS * excess
        secondary = (
            (a_before - absorbable(after)) * scale
            + HOLES * dh
            + BALANCE_LEVEL * db
            - PRESSURE * pressure * taken_milli
        )
        out[taken] = (int(sigmoid(delta / MILLI) * MAX_SCORE), level(secondary))
    if len(memo.choices) >= MEMO_ENTRIES:
        memo.choices.clear()
    memo.choices[key] = out
    return out


def rank(value: tuple[int, float]) -> float:
    """A choice's score: the integer, then the level below one point."""
    return value[0] + WEIGHT * value[1]


class DraplanScore(FGDScore):
    name = "DraplanScore"

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        ctx = self.context
        found = choices(ctx, state, ctx.node(state, node), self._pod())
        return max((rank(v) for v in found.values()), default=0.0)


class DraplanDevices(FGDDevices):
    """The device whose placement ranks best (the integer score, then the level)."""

    def key(
        self, state: ClusterState, info: NodeInfo, pod: PodRequest
    ) -> Callable[[DeviceFree | None], float]:
        found = choices(self.context, state, info, pod)

        def key(device: DeviceFree | None) -> float:
            value = found.get((device,)) if device is not None else None
            return -rank(value) if value is not None else 1.0

        return key
