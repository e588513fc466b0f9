"""Placement policies for devices that pods share: the six of the FGD paper (Weng et al.,
USENIX ATC'23; openb-benchmark.md §2.3-§2.4, written from the simulator's plugins) and the
choice of a device inside the node that goes with each.

Every policy is a score plugin plus a `DevicePreference` for the allocator. They measure one
device resource, named by a `DeviceResource` (a DeviceClass, the consumable capacity of its
devices, the attribute that names a device's kind): nothing here knows a driver. Scores are the
simulator's integers (0-100); kube-scheduler's integer scores create the ties its tie rule then
resolves, and FGD depends on them (§2.9).

Units follow the simulator: CPU in milli-cores, a device's capacity in thousandths of a whole
device ("milli"), normalised by `DeviceResource.max_cpu_milli` / `max_devices` (the paper's
MaxSpecCpu 128 vCPU, MaxSpecGpu 8 GPUs).

A `PlacementContext` is shared by a policy's plugins: the pod being scheduled (its request
`Shape`, set in PreFilter), each node's free state (cached per node version) and, for
GpuClustering, the kinds of pods on each node.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from draplan.api.core_v1 import Node, Pod
from draplan.api.resource_v1 import ResourceClaim, ResourceClaimSpec
from draplan.cel import CelError, Selector, compile_selector
from draplan.cluster.devices import NANO, DeviceView, Pool
from draplan.cluster.fragmentation import (
    DeviceFree,
    DeviceKinds,
    FragmentationCache,
    NodeFree,
    Shape,
    Workload,
    claims_shape,
    device_free,
    node_free,
)
from draplan.cluster.podresources import NONZERO_CPU, node_allocatable, nonzero_requests
from draplan.cluster.state import ClusterState, ObjectKey
from draplan.scheduler.claims import ClaimNotFound, pod_claims
from draplan.scheduler.framework import SUCCESS, CycleState, PodInfo, Status
from draplan.scheduler.plugins.names import DYNAMIC_RESOURCES

RANDOM = "random"
DOT_PRODUCT = "dotprod"
GPU_CLUSTERING = "clustering"
GPU_PACKING = "packing"
BEST_FIT = "bestfit"
FGD = "fgd"
DRAPLAN = "draplan"
PAPER_POLICIES = (RANDOM, DOT_PRODUCT, GPU_CLUSTERING, GPU_PACKING, BEST_FIT, FGD)
POLICIES = (*PAPER_POLICIES, DRAPLAN)

MAX_SCORE = 100
MILLI = 1000
MEMO_ENTRIES = 1 << 18
PLACEMENT = "Placement"  # the PreFilter plugin that tells the context which pod is scheduled


@dataclass(frozen=True)
class DeviceResource:
    """The devices a policy measures and the normalisation of its vectors."""

    device_class: str
    capacity: str  # a consumable capacity of the devices (e.g. gpuMilli)
    kind_attribute: str = "model"  # devices of different kinds never substitute
    max_cpu_milli: int = 128_000  # MaxSpecCpu
    max_devices: int = 8  # MaxSpecGpu / 1000


class NodeInfo(NamedTuple):
    """A node as the policies see it."""

    cpu_left: int  # milli-cores: allocatable minus the requests of the pods on the node
    devices: tuple[tuple[DeviceView, DeviceFree], ...]  # the class's devices in pool order
    free: NodeFree  # canonical form for the fragmentation measure (memory ignored, as FGD)
    unit: int  # nanos of `capacity` in one whole device (0: the node has none)
    key: int  # equal for nodes in equal free states (`free` and `unit`)

    def left(self) -> list[int]:
        """Free capacity per device in pool order, in milli of a whole device."""
        unit = self.unit
        return [d.free * MILLI // unit for _, d in self.devices] if unit else []


class PodRequest(NamedTuple):
    """The pod as the policies see it (the simulator's PodResource)."""

    shape: Shape  # for the fragmentation measure; cpu is kube-scheduler's non-zero request
    milli: int  # capacity per device in milli of a whole device (1000: whole devices)
    number: int  # devices

    @property
    def sharing(self) -> bool:
        """One device, part of it: the only request whose device choice is free."""
        return self.number == 1 and self.milli < MILLI

    @property
    def total(self) -> int:
        return self.milli * self.number

    @property
    def tag(self) -> str:
        """GpuClustering's "affinity" of the pod; "" for a pod without devices."""
        if not self.number:
            return ""
        return "share-gpu" if self.sharing else f"{self.number}-gpu"


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class PlacementContext:
    """What a policy's plugins share: the pod in this cycle, node states and pod kinds."""

    def __init__(
        self, resource: DeviceResource, workload: Workload | None = None, seed: int = 0
    ) -> None:
        self.resource = resource
        self.workload = workload
        self.seed = seed
        self.rng = random.Random(seed)
        self.current: PodRequest | None = None
        self._state: ClusterState | None = None
        self._nodes: dict[str, tuple[tuple[int, int], NodeInfo]] = {}
        self._pool_devices: dict[int, tuple[Pool, tuple[tuple[DeviceView, str], ...]]] = {}
        self._requests: dict[
            tuple[int, tuple[int, ...]], tuple[tuple[ResourceClaimSpec, ...], PodRequest]
        ] = {}
        self._kinds: DeviceKinds | None = None
        self._selectors: list[Selector] | None = None
        self._class_known = False
        self._frag: FragmentationCache | None = None
        self._free_ids: dict[tuple[NodeFree, int], int] = {}
        self._next_id = 0
        self._fgd: dict[tuple[int, Shape], dict[tuple[DeviceFree, ...], tuple[int, float]]] = {}
        # GpuClustering: pod kinds per node, learnt from the pods this scheduler sees bound.
        self._tags: dict[str, Counter[str]] = {}
        self._pods_on: Counter[str] = Counter()
        self._placed: dict[ObjectKey, tuple[str, str]] = {}
        self._pending: list[tuple[ObjectKey, str]] = []

    # --- state -----------------------------------------------------------------------------

    def _bind_state(self, state: ClusterState) -> None:
        if state is self._state:
            return
        self._state = state
        self._nodes.clear()
        self._pool_devices.clear()
        self._requests.clear()
        self._kinds = None
        self._selectors = None
        self._tags.clear()
        self._pods_on.clear()
        self._placed.clear()
        self._pending.clear()
        self._rebuild_tags(state)

    def _class_devices(self, state: ClusterState, pool: Pool) -> tuple[tuple[DeviceView, str], ...]:
        """The pool's devices of the class with their kind (cached per pool object)."""
        hit = self._pool_devices.get(id(pool))
        if hit is not None and hit[0] is pool:
            return hit[1]
        if self._selectors is None:
            dc = state.device_classes.get(self.resource.device_class)
            self._selectors = (
                [compile_selector(s.cel.expression) for s in dc.spec.selectors if s.cel]
                if dc is not None
                else []
            )
            self._class_known = dc is not None
        out = []
        if self._class_known:
            attr = self.resource.kind_attribute
            for view in pool.devices:
                try:
                    if not all(sel.matches(view.cel) for sel in self._selectors):
                        continue
                except CelError:
                    continue
                value = view.attribute(f"{view.driver}/{attr}")
                out.append((view, "" if value is None else str(value[1])))
        devices = tuple(out)
        self._pool_devices[id(pool)] = (pool, devices)
        return devices

    def node(self, state: ClusterState, node: Node) -> NodeInfo:
        """The node's free CPU and devices, cached per node version."""
        self._bind_state(state)
        name = node.metadata.name
        version = state.version(name)
        hit = self._nodes.get(name)
        if hit is not None and hit[0] == version:
            return hit[1]
        cpu_left = node_allocatable(node).get("cpu", 0) - state.requested(name).get("cpu", 0)
        capacity = self.resource.capacity
        devices = []
        unit = 0
        for pool in state.pools_for_node(node):
            for view, kind in self._class_devices(state, pool):
                free, whole = device_free(state, view, capacity)
                devices.append((view, DeviceFree(kind, free, whole)))
                unit = max(unit, view.capacity.get(capacity) or NANO)
        free_state = node_free(cpu_left, 0, (d for _, d in devices))
        ident = self._free_ids.get((free_state, unit))
        if ident is None:
            if len(self._free_ids) >= MEMO_ENTRIES:
                self._free_ids.clear()
                self._fgd.clear()
            ident = self._free_ids[(free_state, unit)] = self._next_id
            self._next_id += 1
        info = NodeInfo(cpu_left, tuple(devices), free_state, unit, ident)
        self._nodes[name] = (version, info)
        return info

    def request(self, state: ClusterState, pod: Pod, claims: Sequence[ResourceClaim]) -> PodRequest:
        """The pod's request (None-like zero request if its claims are not one shape)."""
        self._bind_state(state)
        if self._kinds is None:
            dc = state.device_classes.get(self.resource.device_class)
            self._kinds = (
                DeviceKinds.of_state(state, dc, self.resource.kind_attribute)
                if dc is not None
                else DeviceKinds(())
            )
        cpu = nonzero_requests(pod, state.features)[NONZERO_CPU]
        shape = claims_shape(
            claims,
            cpu_milli=cpu,
            device_class=self.resource.device_class,
            capacity=self.resource.capacity,
            kinds=self._kinds,
        )
        if shape is None:  # several kinds of device request: measured as CPU only
            shape = Shape(cpu)
        unit = self._unit(state)
        milli = MILLI if not shape.share or not unit else shape.share * MILLI // unit
        return PodRequest(shape, milli if shape.device_count else 0, shape.device_count)

    def _unit(self, state: ClusterState) -> int:
        kinds = self._kinds
        if kinds is None or not kinds.examples:
            return 0
        return max(v.capacity.get(self.resource.capacity) or NANO for v in kinds.examples.values())

    def prepare(self, state: ClusterState, cycle: CycleState, pod: PodInfo) -> None:
        """PreFilter: the pod of this cycle (cached per pod shape), and pods bound since."""
        self._bind_state(state)
        self._sync_tags(state)
        dra = cycle.data.get(DYNAMIC_RESOURCES)
        claims = getattr(dra, "claims", None)
        if claims is None:
            try:
                claims = pod_claims(state, pod.pod)
            except ClaimNotFound:
                claims = []
        # Pods of one template share their claim specs (and the openb loader its objects).
        key = (pod.nonzero[NONZERO_CPU], tuple(id(c.spec) for c in claims))
        hit = self._requests.get(key)
        if hit is not None and all(a is b.spec for a, b in zip(hit[0], claims, strict=True)):
            req = hit[1]
        else:
            req = self.request(state, pod.pod, claims)
            self._requests[key] = (tuple(c.spec for c in claims), req)
        self.current = req
        self._pending.append((pod.key, req.tag))

    # --- fragmentation ---------------------------------------------------------------------

    def fragmentation(self, state: ClusterState) -> FragmentationCache:
        """F_n(M) against the typical pods (the workload given, else the pods in the state)."""
        if self._frag is None:
            workload = self.workload
            if workload is None:
                workload = Workload.typical(self._state_shapes(state))
            self._frag = FragmentationCache(workload)
        return self._frag

    def _state_shapes(self, state: ClusterState) -> list[Shape]:
        shapes = []
        for pod in state.pods.values():
            try:
                claims = pod_claims(state, pod)
            except ClaimNotFound:
                claims = []
            shapes.append(self.request(state, pod, claims).shape)
        return shapes

    def frag_scale(self, info: NodeInfo) -> float:
        """Converts the measure (capacity units) to milli of a whole device."""
        return MILLI * NANO / info.unit if info.unit else 1.0

    def fgd(
        self, state: ClusterState, info: NodeInfo, pod: PodRequest
    ) -> dict[tuple[DeviceFree, ...], tuple[int, float]]:
        """`fgd_choices`, cached per node free state and request."""
        key = (info.key, pod.shape)
        out = self._fgd.get(key)
        if out is None:
            out = fgd_choices(info, pod, self.fragmentation(state), self.frag_scale(info))
            if len(self._fgd) >= MEMO_ENTRIES:
                self._fgd.clear()
            self._fgd[key] = out
        return out

    # --- pods per node (GpuClustering) -----------------------------------------------------

    def _sync_tags(self, state: ClusterState) -> None:
        """Record where the pods of earlier cycles went (a failed pod is forgotten)."""
        for key, tag in self._pending:
            pod = state.pods.get(key)
            if pod is None or not pod.spec.node_name or key in self._placed:
                continue
            self._add_tag(key, pod.spec.node_name, tag)
        self._pending.clear()

    def _add_tag(self, key: ObjectKey, node: str, tag: str) -> None:
        self._placed[key] = (node, tag)
        self._pods_on[node] += 1
        if tag:
            self._tags.setdefault(node, Counter())[tag] += 1

    def _rebuild_tags(self, state: ClusterState) -> None:
        self._tags.clear()
        self._pods_on.clear()
        self._placed.clear()
        for key, pod in state.pods.items():
            if not pod.spec.node_name or pod.status.phase in ("Succeeded", "Failed"):
                continue
            try:
                claims = pod_claims(state, pod)
            except ClaimNotFound:
                claims = []
            self._add_tag(key, pod.spec.node_name, self.request(state, pod, claims).tag)

    def tags(self, state: ClusterState, node: str) -> Counter[str]:
        """Kinds of device pods on the node; rebuilt from the state if pods came or went
        other than through this scheduler (the node's pod count disagrees)."""
        self._bind_state(state)
        if self._pods_on[node] * 1000 != state.requested(node).get("pods", 0):
            self._rebuild_tags(state)
        return self._tags.get(node) or Counter()


# --- the simulator's scores, as pure functions ------------------------------------------------


def dot_product_score(info: NodeInfo, pod: PodRequest, res: DeviceResource) -> int:
    """02-DotProd (merge, max): 100·(1 − (node free · pod request)/2), both vectors
    normalised by the largest node; a smaller product (less alike) scores higher."""
    if info.cpu_left < pod.shape.cpu_milli:
        return 0
    max_gpu = float(res.max_devices * MILLI)
    node_vec = (info.cpu_left / float(res.max_cpu_milli), sum(info.left()) / max_gpu)
    pod_vec = (pod.shape.cpu_milli / float(res.max_cpu_milli), pod.total / max_gpu)
    dot = 0.0
    for a, b in zip(node_vec, pod_vec, strict=True):
        dot += a * b
    dot /= 2
    return int(float(MAX_SCORE) * (1 - dot))


def gpu_clustering_score(
    info: NodeInfo, pod: PodRequest, tags: Counter[str], res: DeviceResource
) -> int:
    """03-GpuClustering: bands by the kinds of pods already on the node, fuller nodes higher
    inside a band; 0 for a pod without devices."""
    tag = pod.tag
    if not tag:
        return 0
    max_gpu = res.max_devices * MILLI
    base = MAX_SCORE // 4 * (max_gpu - sum(info.left())) // max_gpu
    if tags.get(tag, 0) > 0:
        return base + (MAX_SCORE * 3 // 4 if len(tags) == 1 else MAX_SCORE * 2 // 4)
    return base + (MAX_SCORE // 4 if not tags else 0)


def gpu_packing_score(info: NodeInfo, pod: PodRequest) -> int:
    """04-GpuPacking: shared devices first (≥ 50), then untouched devices of a used node
    (33-50), then an untouched node (≤ 33); 0 for a pod without devices."""
    if pod.milli <= 0:
        return 0
    left = info.left()
    fully_free = sum(1 for x in left if x == MILLI)
    if fully_free == len(left):
        return max(MAX_SCORE // 3 - fully_free, fully_free)
    need = pod.number
    free_used = 0
    used: list[int] = []
    for i in sorted(range(len(left)), key=lambda i: left[i]):  # stable: index order on ties
        if need == 0:
            break
        if pod.milli <= left[i]:
            need -= 1
            used.append(i)
            if left[i] == MILLI:
                free_used += 1
    if need:
        return 0
    if free_used:
        return max(MAX_SCORE // 2 - free_used, MAX_SCORE // 3)
    ratio = sum(left[i] * 100 // MILLI for i in used)
    return max(MAX_SCORE - ratio // 10, MAX_SCORE // 2)


def best_fit_score(info: NodeInfo, pod: PodRequest, res: DeviceResource) -> int:
    """05-BestFit: 100·(1 − Σ ½·(free − request)/max) over CPU and device capacity; the
    simulator's min-max normalisation keeps order and ties, so it is left out."""
    free = (float(info.cpu_left), float(sum(info.left())))
    req = (float(pod.shape.cpu_milli), float(pod.total))
    spec = (float(res.max_cpu_milli), float(res.max_devices * MILLI))
    score = 0.0
    for f, r, m in zip(free, req, spec, strict=True):
        if f < r:
            return 0
        score += (f - r) / m * 0.5
    return int((1.0 - score) * float(MAX_SCORE))


def fgd_choices(
    info: NodeInfo, pod: PodRequest, frag: FragmentationCache, scale: float
) -> dict[tuple[DeviceFree, ...], tuple[int, float]]:
    """06-FGD: (score, Δ) of each distinct way the pod fits on the node, keyed by the states
    of the devices it takes (for a sharing pod, one per distinct device state: FGD tries every
    device). Δ is F_n(M) before minus after, in milli; the score int(sigmoid(Δ/1000)·100).
    Empty if the pod does not fit."""
    before = frag(info.free)
    out = {}
    for taken, after in frag.choices(info.free, pod.shape):
        delta = (before - after) * scale
        out[taken] = (int(sigmoid(delta / MILLI) * MAX_SCORE), delta)
    return out


# --- plugins ------------------------------------------------------------------------------


class PlacementPreFilter:
    """Tells the context which pod this cycle schedules (kube-scheduler's PreScore state)."""

    name = PLACEMENT

    def __init__(self, context: PlacementContext) -> None:
        self.context = context

    def pre_filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo) -> Status:
        self.context.prepare(state, cycle, pod)
        return SUCCESS


class _Score:
    name = ""

    def __init__(self, context: PlacementContext) -> None:
        self.context = context

    def _pod(self) -> PodRequest:
        pod = self.context.current
        if pod is None:
            raise RuntimeError(f"{self.name}: PreFilter did not run")
        return pod


class RandomScore(_Score):
    """01-Random: every feasible node scores the same; the profile breaks ties at random,
    which is the simulator's "one random feasible node gets 100"."""

    name = "RandomScore"

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        return 0.0


class DotProductScore(_Score):
    name = "DotProductScore"

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        info = self.context.node(state, node)
        return float(dot_product_score(info, self._pod(), self.context.resource))


class GpuClusteringScore(_Score):
    name = "GpuClusteringScore"

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        info = self.context.node(state, node)
        tags = self.context.tags(state, node.metadata.name)
        return float(gpu_clustering_score(info, self._pod(), tags, self.context.resource))

    def signature(self, state: ClusterState, node: Node) -> object:
        """The score reads the kinds of pods on the node, beyond its free resources."""
        return tuple(sorted(self.context.tags(state, node.metadata.name).items()))


class GpuPackingScore(_Score):
    name = "GpuPackingScore"

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        return float(gpu_packing_score(self.context.node(state, node), self._pod()))


class BestFitScore(_Score):
    name = "BestFitScore"

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        info = self.context.node(state, node)
        return float(best_fit_score(info, self._pod(), self.context.resource))


class FGDScore(_Score):
    name = "FGDScore"

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        ctx = self.context
        choices = ctx.fgd(state, ctx.node(state, node), self._pod())
        return float(max((s for s, _ in choices.values()), default=0))


# --- device choice inside the node ----------------------------------------------------------


class _Devices:
    def __init__(self, context: PlacementContext) -> None:
        self.context = context

    def order(
        self,
        state: ClusterState,
        node: Node,
        claim: ResourceClaim,
        request: str,
        views: Sequence[DeviceView],
    ) -> Sequence[DeviceView]:
        """Pool (index) order."""
        return views

    def _index(
        self, state: ClusterState, node: Node, views: Sequence[DeviceView]
    ) -> tuple[NodeInfo, list[int]]:
        info = self.context.node(state, node)
        where = {id(v): i for i, (v, _) in enumerate(info.devices)}
        return info, [where.get(id(v), len(where)) for v in views]


class _RankedDevices(_Devices):
    """For a pod that shares one device: the devices by `key` (lowest first), the lowest
    index on ties; whole devices in index order."""

    def order(
        self,
        state: ClusterState,
        node: Node,
        claim: ResourceClaim,
        request: str,
        views: Sequence[DeviceView],
    ) -> Sequence[DeviceView]:
        pod = self.context.current
        if pod is None or not pod.sharing:
            return views
        info, index = self._index(state, node, views)
        key = self.key(state, info, pod)
        n = len(info.devices)
        keys = [key(info.devices[i][1] if i < n else None) for i in index]
        order = sorted(range(len(views)), key=lambda k: (keys[k], index[k]))
        return [views[k] for k in order]

    def key(
        self, state: ClusterState, info: NodeInfo, pod: PodRequest
    ) -> Callable[[DeviceFree | None], float]:
        """How good a device is for `pod` (lower first); None: a device the node's free
        state does not list."""
        raise NotImplementedError


class BestFitDevices(_RankedDevices):
    """allocateGpuIdBasedOnBestFit: the device with the least free capacity that fits."""

    def key(
        self, state: ClusterState, info: NodeInfo, pod: PodRequest
    ) -> Callable[[DeviceFree | None], float]:
        return lambda device: device.free if device is not None else 0


class RandomDevices(_Devices):
    """allocateGpuIdBasedOnRandomFit: a random device among those that fit (drawn from a
    generator seeded with the claim, so the choice does not depend on how often the allocator
    ran)."""

    def order(
        self,
        state: ClusterState,
        node: Node,
        claim: ResourceClaim,
        request: str,
        views: Sequence[DeviceView],
    ) -> Sequence[DeviceView]:
        pod = self.context.current
        if pod is None or not pod.sharing:
            return views
        meta = claim.metadata
        out = list(views)
        random.Random(f"{self.context.seed}/{meta.namespace}/{meta.name}").shuffle(out)
        return out


class FGDDevices(_RankedDevices):
    """allocateGpuIdBasedOnFGDScore: the device with the best FGD score."""

    def key(
        self, state: ClusterState, info: NodeInfo, pod: PodRequest
    ) -> Callable[[DeviceFree | None], float]:
        choices = self.context.fgd(state, info, pod)
        return lambda device: -choices.get((device,), (-1, 0.0))[0] if device is not None else 1


# --- policies -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """A policy's plugins: PreFilter, the one score plugin (the simulator enables exactly
    one), the device preference, and how ties between nodes break."""

    name: str
    pre_filters: tuple[PlacementPreFilter, ...]
    score: _Score
    devices: _Devices
    ties: str  # "name" (the simulator's patched selectHost) or "random"


def policy(
    name: str,
    resource: DeviceResource,
    *,
    workload: Workload | None = None,
    seed: int = 0,
    ties: str | None = None,
) -> Policy:
    """The plugins of policy `name` (one of POLICIES)."""
    context = PlacementContext(resource, workload, seed)
    pre = (PlacementPreFilter(context),)
    score: _Score
    devices: _Devices
    if name == RANDOM:
        score, devices = RandomScore(context), RandomDevices(context)
    elif name == DOT_PRODUCT:
        score, devices = DotProductScore(context), BestFitDevices(context)
    elif name == GPU_CLUSTERING:
        score, devices = GpuClusteringScore(context), BestFitDevices(context)
    elif name == GPU_PACKING:
        score, devices = GpuPackingScore(context), BestFitDevices(context)
    elif name == BEST_FIT:
        score, devices = BestFitScore(context), BestFitDevices(context)
    elif name == FGD:
        score, devices = FGDScore(context), FGDDevices(context)
    elif name == DRAPLAN:
        from draplan.scheduler.plugins.draplanscore import DraplanDevices, DraplanScore

        score, devices = DraplanScore(context), DraplanDevices(context)
    else:
        raise ValueError(f"unknown placement policy {name!r}; one of {', '.join(POLICIES)}")
    default_ties = "random" if name == RANDOM else "name"
    return Policy(name, pre, score, devices, ties or default_ties)


__all__ = [
    "BEST_FIT",
    "DOT_PRODUCT",
    "DRAPLAN",
    "FGD",
    "GPU_CLUSTERING",
    "GPU_PACKING",
    "PAPER_POLICIES",
    "POLICIES",
    "RANDOM",
    "DeviceResource",
    "NodeInfo",
    "PlacementContext",
    "PodRequest",
    "Policy",
    "policy",
]
