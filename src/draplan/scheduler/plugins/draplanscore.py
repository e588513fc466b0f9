"""draplan's own placement policy: FGD's fragmentation gradient, then a look-ahead over the
typical pods that also counts CPU.

FGD (Weng et al., ATC'23) scores a node by how much placing the pod lowers F_n(M), the idle
device capacity that one typical pod could not use, as the integer int(100·sigmoid(Δ/1000)).
That integer groups near-equal placements, and ties then go to a fixed node order: the
grouping is half of FGD's result (openb-benchmark.md §2.9). Two things it cannot see:

* capacity a typical pod could use once but not again: a node with eight free GPUs and CPU
  for two more pods strands six GPUs, yet every typical pod still "fits" (FGD's Q3);
* capacity inside a device left over after whole units of a pod (1000 − 2·470 = 60).

draplan keeps FGD's integer score as the primary key and breaks its ties with the look-ahead
measure A_n(M) = idle − Σ_m p_m · (capacity the pods of shape m could take, counting every unit
that fits by devices and by CPU): the expected idle capacity the typical workload could not
absorb. Among the placements with FGD's best score, the change of A_n(M) is squashed and cut
into a few levels, so that placements still tie within a level and the tie rule keeps packing
nodes in a consistent order. The device inside the node is chosen the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from draplan.api.core_v1 import Node
from draplan.api.resource_v1 import ResourceClaim
from draplan.cluster.devices import NANO, DeviceView
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

# The secondary key: sigmoid(ΔA / SCALE) cut into LEVELS levels, weighted below one FGD point.
SCALE = 200.0
LEVELS = 4
WEIGHT = 0.9
import os as _os  # noqa: E402  (research override, to be removed)

_V = dict(kv.split("=") for kv in _os.environ.get("DRAPLAN_VARIANT", "").split(",") if kv)
LEVELS = int(_V.get("lv", LEVELS))
SCALE = float(_V.get("sc", SCALE))

Choices = dict[tuple[DeviceFree, ...], tuple[int, float]]  # taken -> (FGD score, level)


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


def level(delta: float) -> float:
    """ΔA (milli) as one of LEVELS levels in [0, 1)."""
    return math.floor(sigmoid(delta / SCALE) * LEVELS) / LEVELS


class _Memo:
    """Per-context caches of the policy (the context is shared with its device choice)."""

    def __init__(self, context: PlacementContext, state: ClusterState) -> None:
        self.absorbable = Absorbable(context.fragmentation(state).workload)
        self.choices: dict[tuple[int, object], Choices] = {}


def _memo(context: PlacementContext, state: ClusterState) -> _Memo:
    memo: _Memo | None = getattr(context, "_draplan", None)
    if memo is None:
        memo = _Memo(context, state)
        context._draplan = memo  # type: ignore[attr-defined]
    return memo


def choices(
    context: PlacementContext, state: ClusterState, info: NodeInfo, pod: PodRequest
) -> Choices:
    """(FGD score, look-ahead level) of each distinct way the pod fits on the node."""
    memo = _memo(context, state)
    key = (info.key, pod.shape)
    out = memo.choices.get(key)
    if out is not None:
        return out
    frag = context.fragmentation(state)
    absorbable = memo.absorbable
    scale = context.frag_scale(info)
    f_before = frag(info.free)
    a_before = absorbable(info.free)
    out = {}
    for taken, after in placements(info.free, pod.shape):
        delta = (f_before - frag(after)) * scale
        fgd = int(sigmoid(delta / MILLI) * MAX_SCORE)
        out[taken] = (fgd, level((a_before - absorbable(after)) * scale))
    if len(memo.choices) >= MEMO_ENTRIES:
        memo.choices.clear()
    memo.choices[key] = out
    return out


def rank(value: tuple[int, float]) -> float:
    """A choice's score: FGD's integer, then the look-ahead level below one point."""
    return value[0] + WEIGHT * value[1]


class DraplanScore(FGDScore):
    name = "DraplanScore"

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        ctx = self.context
        found = choices(ctx, state, ctx.node(state, node), self._pod())
        return max((rank(v) for v in found.values()), default=0.0)


class DraplanDevices(FGDDevices):
    """The device whose placement ranks best (FGD's score, then the look-ahead level), the
    lowest index on ties; whole devices in index order."""

    def order(
        self,
        state: ClusterState,
        node: Node,
        claim: ResourceClaim,
        request: str,
        views: Sequence[DeviceView],
    ) -> Sequence[DeviceView]:
        ctx = self.context
        pod = ctx.current
        if pod is None or not pod.sharing:
            return views
        info, index = self._index(state, node, views)
        found = choices(ctx, state, info, pod)
        n = len(info.devices)
        value = [
            rank(found[(info.devices[i][1],)]) if i < n and (info.devices[i][1],) in found else -1.0
            for i in index
        ]
        order = sorted(range(len(views)), key=lambda k: (-value[k], index[k]))
        return [views[k] for k in order]
