"""What `draplan metrics` keeps between measures of one changing state (`draplan serve`'s):
per node and resource pool what it adds to the scopes, kept by node version, and the sums,
taken in fixed chunks so that a kept measure equals a fresh one to the last bit."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from draplan.api.core_v1 import Node, Pod
from draplan.api.resource_v1 import DeviceClass
from draplan.audit.plugin_gpus import Asks, PluginUnits
from draplan.audit.poolstatus import PoolStatusMemo
from draplan.audit.stranded import (
    NodeStranded,
    RequestShape,
    StrandedMeter,
    alike,
    pod_shape,
    read_set,
    remember,
    signature,
)
from draplan.audit.tally import Tally, merged
from draplan.cel import CelError, Selector, compile_selector
from draplan.cel.reads import Read
from draplan.cluster.accelerators import Accelerator, pool_accelerators
from draplan.cluster.devices import DeviceView, Pool
from draplan.cluster.objectlog import CLAIM, POD, TEMPLATE, ObjectLog
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState, ObjectKey
from draplan.scheduler.claims import ClaimNotFound, pod_claims

CHUNK = 64  # tallies summed together, kept while none of them changes
K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, eq=False)
class NodePart:
    """A node's node pool and price, and what it adds to its scopes (its price); the
    accelerators its device plugins advertise (`plugin_gpus.plugin_units`)."""

    node: Node
    pools_key: object
    pool: str
    price: float | None
    tally: Tally
    plugin_units: PluginUnits


@dataclass(frozen=True, eq=False)
class PluginPart:
    """What a node's device-plugin accelerators add to its scopes and to their resources'
    (`extendedResources`), measured on `source` under `key` (its version, price, the shapes)."""

    source: Node
    key: object
    node: Tally
    resources: tuple[tuple[tuple[str, str], Tally], ...]


@dataclass(frozen=True, eq=False)
class PoolPart:
    """What one resource pool adds: per node its devices and GPUs bound there (None: bound to
    none, the cluster's alone), all of them to the pool itself, and each class's share."""

    where: tuple[str, ...]  # the nodes its devices are bound to
    key: object  # their versions when measured
    nodes: tuple[tuple[str | None, Tally], ...]
    pool: Tally
    classes: tuple[tuple[str, Tally], ...]
    accelerator_classes: frozenset[str]  # the classes that select one of its GPUs


# A node's GPUs, free GPUs per resource pool, all free GPUs, and per class asked its free GPUs
# in all and per pool (by the pool's index): what its stranded part is made of besides its
# measure and price.
Layout = tuple[
    int, tuple[float, ...], float, tuple[tuple[str, float, tuple[tuple[int, float], ...]], ...]
]


@dataclass(frozen=True, eq=False)
class StrandedPart:
    """What one node's stranded GPUs add to its scopes, its classes and its resource pools
    (`labels`, in order)."""

    measured: NodeStranded
    price: float | None
    asked: frozenset[str]
    labels: tuple[str, ...]
    layout: Layout
    node: Tally
    classes: tuple[tuple[str, Tally], ...]
    pools: tuple[Tally, ...]


class MetricsMemo:
    """What measuring may keep between measures of one changing state (`draplan serve`'s):
    the classes that select each device (values of the device alone while the device classes
    stay the same), each pool's accelerators, the stranded meter while the classes and shapes
    it measures against stay the same; and what each node and resource pool adds to the
    scopes while the node's version stays the same, with every scope's sum and document
    while what is added to it stays the same. The sums are taken CHUNK parts at a time in
    the scopes' order, so a kept memo's measure equals a fresh one to the last bit."""

    def __init__(self) -> None:
        self._forget(None)

    def _forget(self, state: ClusterState | None) -> None:
        self._state = state
        self._classes_key: object = None
        self.classes: dict[str, list[Selector]] = {}
        self._read: frozenset[Read] | None = frozenset()
        self.device_classes: dict[DeviceView, list[str]] = {}
        self._by_signature: dict[Hashable, list[str]] = {}
        self.grouped: dict[Pool, tuple[Accelerator, ...]] = {}  # a pool's accelerators
        self._meter_key: tuple[object, object, object] = (None, None, None)
        self._meter: StrandedMeter | None = None
        self._shape_classes: Collection[str] = ()
        self._shapes: dict[ObjectKey, tuple[Pod, tuple[object, ...] | None, RequestShape | None]]
        self._shapes = {}
        # The pods' shapes counted (all, and the pending pods'), the pods naming each claim,
        # those whose PodGroup may share claims, and where the object log was read up to.
        self._counts: Counter[RequestShape] = Counter()
        self._pending: Counter[RequestShape] = Counter()
        self._claim_pods: dict[ObjectKey, set[ObjectKey]] = {}
        self._grouped_pods: set[ObjectKey] = set()
        self._log: ObjectLog | None = None
        self._cursor: int | None = None
        # What each node, resource pool and node's stranded GPUs added at the last measure.
        self.node_parts: dict[str, NodePart] = {}
        self.pool_parts: dict[Pool, PoolPart] = {}
        self.stranded_parts: dict[str, StrandedPart] = {}
        self.plugin_asks: Asks = {}  # each pod's device-plugin shape
        self.plugin_parts: dict[str, PluginPart] = {}  # each node's device-plugin part
        self._interned: Recent[tuple[object, ...], Tally] = Recent()
        self._sums: Recent[tuple[Tally, ...], tuple[Tally, dict[str, Any]]] = Recent()
        self._chunks: Recent[tuple[Tally, ...], Tally] = Recent()
        # Stranded parts by what they are made of, for nodes measured alike.
        self.stranded_values: Recent[
            object, tuple[Tally, tuple[tuple[str, Tally], ...], tuple[Tally, ...]]
        ] = Recent()
        self.pool_status = PoolStatusMemo()  # for the document's KEP-5677 part

    def refresh(self, state: ClusterState) -> None:
        """Forget what another state, or the state's device classes, no longer answer the
        same."""
        if state is not self._state:  # node versions are one state's
            self._forget(state)
        key = tuple(sorted(state.device_classes.items()))
        if key == self._classes_key:
            return
        self._classes_key = key
        self.classes = {
            name: [compile_selector(s.cel.expression) for s in dc.spec.selectors if s.cel]
            for name, dc in key
        }
        self._read = read_set(s.expression for sels in self.classes.values() for s in sels)
        self.device_classes = {}
        self._by_signature = {}
        self._meter_key, self._meter = (None, None, None), None
        self.pool_parts, self.stranded_parts = {}, {}

    def classes_of(self, view: DeviceView) -> list[str]:
        return alike(
            self.device_classes,
            self._by_signature,
            view,
            lambda: signature(view, self._read),
            lambda: self._select(view),
        )

    def _select(self, view: DeviceView) -> list[str]:
        out = []
        for name, selectors in self.classes.items():
            try:
                if all(s.matches(view.cel) for s in selectors):
                    out.append(name)
            except CelError:
                continue  # a selector that fails on a device does not select it
        return out

    def accelerators(self, pool: Pool) -> tuple[Accelerator, ...]:
        got = self.grouped.get(pool)
        if got is None:
            got = remember(self.grouped, pool, pool_accelerators(pool))
        return got

    def meter(
        self,
        classes: dict[str, DeviceClass],
        shapes: list[tuple[RequestShape, float]],
        taints: bool = True,
    ) -> StrandedMeter:
        key = (tuple(sorted(classes)), tuple(shapes), taints)
        if self._meter is None or key != self._meter_key:
            meter = StrandedMeter(classes, shapes, self.classes_of, self.accelerators, taints)
            if self._meter is not None and key[0] == self._meter_key[0]:
                meter.keep_from(self._meter)  # a pod came or went: the shapes' weights changed
            self._meter_key, self._meter = key, meter
        return self._meter

    def shapes(
        self, state: ClusterState, classes: Collection[str]
    ) -> tuple[Counter[RequestShape], Collection[RequestShape]]:
        """How many running and pending pods have each shape over `classes`, and the pending
        ones' shapes (`workload_shapes`). A pod's shape is kept while it and its claims stay the
        same; on a state whose object log names what changed, only the pods changed, or whose
        claims changed, since the last call are looked at again."""
        changed = self._changed(state, classes)
        if changed is None:
            self._count_all(state, classes)
        else:
            for key in changed:
                self._recount(state, key, classes)
        log = state.object_log
        # A fork's pods are not in the log: after a pass there, the next one counts all.
        self._log = log
        self._cursor = log.end if log is not None and state.pods.depth == 1 else None
        return self._counts, self._pending.keys()

    def _changed(self, state: ClusterState, classes: Collection[str]) -> set[ObjectKey] | None:
        """The pods whose shape may have changed since the last call; None: any may have."""
        log = state.object_log
        if (
            log is None
            or log is not self._log
            or self._cursor is None
            or classes != self._shape_classes
            or state.pods.depth != 1
        ):
            return None
        entries = log.since(self._cursor)
        if entries is None or any(kind == TEMPLATE for kind, _ in entries):
            return None
        out = set(self._grouped_pods)
        for kind, key in entries:
            if kind == POD:
                out.add(key)
            elif kind == CLAIM:
                out.update(self._claim_pods.get(key, ()))
        return out

    def _count_all(self, state: ClusterState, classes: Collection[str]) -> None:
        kept = self._shapes if classes == self._shape_classes else {}
        self._shape_classes = classes
        self._shapes, self._claim_pods, self._grouped_pods = {}, {}, set()
        self._counts, self._pending = Counter(), Counter()
        for key, pod in state.pods.items():
            self._add_pod(state, key, pod, classes, kept.get(key))

    def _recount(self, state: ClusterState, key: ObjectKey, classes: Collection[str]) -> None:
        seen = self._shapes.pop(key, None)
        if seen is not None:
            old, _, shape = seen
            for name in _claim_names(old):
                pods = self._claim_pods.get(name)
                if pods is not None:
                    pods.discard(key)
                    if not pods:
                        del self._claim_pods[name]
            self._grouped_pods.discard(key)
            if shape is not None:
                _take(self._counts, shape)
                if not old.spec.node_name:
                    _take(self._pending, shape)
        pod = state.pods.get(key)
        if pod is not None:
            self._add_pod(state, key, pod, classes, seen)

    def _add_pod(
        self,
        state: ClusterState,
        key: ObjectKey,
        pod: Pod,
        classes: Collection[str],
        seen: tuple[Pod, tuple[object, ...] | None, RequestShape | None] | None,
    ) -> None:
        if not counted(pod):
            return
        sources = claim_sources(state, pod)
        if seen is not None and seen[0] is pod and sources is not None and seen[1] == sources:
            shape = seen[2]
        else:
            shape = shape_of(state, pod, classes)
        self._shapes[key] = (pod, sources, shape)
        for name in _claim_names(pod):
            self._claim_pods.setdefault(name, set()).add(key)
        if sources is None:
            self._grouped_pods.add(key)  # its PodGroup's claims: looked at every time
        if shape is not None:
            self._counts[shape] += 1
            if not pod.spec.node_name:
                self._pending[shape] += 1

    def sum(self, parts: list[Tally]) -> tuple[Tally, dict[str, Any]]:
        """A scope's tally and its document, kept while its parts are the same objects (and
        shared by the scopes whose parts are: nodes alike have their parts interned)."""
        key = tuple(parts)
        got = self._sums.get(key)
        if got is None:
            if len(parts) <= CHUNK:
                total = merged(parts)
            else:
                total = merged(self._chunk(key[i : i + CHUNK]) for i in range(0, len(key), CHUNK))
            got = self._sums.put(key, (total, total.to_dict()))
        return got

    def _chunk(self, parts: tuple[Tally, ...]) -> Tally:
        got = self._chunks.get(parts)
        return got if got is not None else self._chunks.put(parts, merged(parts))

    def forget_unused(self) -> None:
        """Drop what the measure just done did not use."""
        for recent in (self._interned, self._sums, self._chunks, self.stranded_values):
            recent.turn()

    def intern(self, tally: Tally) -> Tally:
        """An equal tally seen before, if any, else this one (never changed afterwards)."""
        key = tally.value()
        got = self._interned.get(key)
        return got if got is not None else self._interned.put(key, tally)


class Recent(Generic[K, V]):
    """A memo of what the last measure and this one used."""

    def __init__(self) -> None:
        self.now: dict[K, V] = {}
        self.last: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        got = self.now.get(key)
        if got is None:
            got = self.last.get(key)
            if got is not None:
                self.now[key] = got
        return got

    def put(self, key: K, value: V) -> V:
        self.now[key] = value
        return value

    def turn(self) -> None:
        """A measure is done: what it did not use goes at the end of the next one."""
        self.last, self.now = self.now, {}


def counted(pod: Pod) -> bool:
    """Whether the pod's shape counts among the workload's (`shapes`): it asks for devices and
    has not ended."""
    return not is_terminal(pod) and bool(pod.spec.resource_claims)


def shape_of(state: ClusterState, pod: Pod, classes: Collection[str]) -> RequestShape | None:
    """A counted pod's shape over `classes` (`stranded.pod_shape`); None: it has none, or one
    of its claims is missing."""
    try:
        return pod_shape(pod, pod_claims(state, pod), classes, state.features)
    except ClaimNotFound:
        return None


def _take(counts: Counter[RequestShape], shape: RequestShape) -> None:
    counts[shape] -= 1
    if not counts[shape]:
        del counts[shape]


def _claim_names(pod: Pod) -> list[ObjectKey]:
    """The claims `claim_sources` may read for the pod: those it names or that were made
    for it."""
    ns = pod.metadata.namespace
    names = [r.resource_claim_name for r in pod.spec.resource_claims]
    names += [s.resource_claim_name for s in pod.status.resource_claim_statuses]
    return [(ns, name) for name in names if name]


def claim_sources(state: ClusterState, pod: Pod) -> tuple[object, ...] | None:
    """What `pod_claims` makes the pod's claims of: per entry the claim it names or the
    controller made, else its template (a template's claim is built anew each time); None for
    a pod whose PodGroup may share them."""
    if pod.spec.scheduling_group is not None:
        return None
    ns = pod.metadata.namespace
    statuses = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    out: list[object] = []
    for ref in pod.spec.resource_claims:
        name = ref.resource_claim_name or statuses.get(ref.name)
        claim = state.claims.get((ns, name)) if name else None
        if claim is None and ref.resource_claim_name is None:
            out.append(state.claim_templates.get((ns, ref.resource_claim_template_name or "")))
        out.append(claim)
    return tuple(out)
