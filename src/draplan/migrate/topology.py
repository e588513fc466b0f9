"""`--topology auto`: the matchAttribute a performance engineer would add, from the slices.

For a pod asking for more than one aligned device, the most specific topology attribute (PCIe
root, then NUMA node, then socket) whose groups can hold the whole request on at least one of
the cluster's nodes is chosen; nothing is added when none can. Devices are counted by the
nodes' shape, not by what is allocated now: the decision is about where the pod could ever run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from draplan.api.codec import decode
from draplan.api.core_v1 import Node, Pod
from draplan.api.errors import BadInput
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.api.resource_v1 import DeviceClass, ResourceSlice
from draplan.cel import CelError, Selector, compile_selector
from draplan.cluster.devices import DeviceView, topology_rank
from draplan.cluster.nodeselector import selector_matches
from draplan.cluster.state import ClusterState
from draplan.migrate.mapping import GPU_CLASS, MIG_CLASS
from draplan.migrate.shapes import RequestShape

# NVIDIA's helm chart classes (dra-semantics §4.1), used when the input has no such class.
_CHART_CLASSES = {
    name: (f"device.driver == '{GPU_CLASS}' && device.attributes['{GPU_CLASS}'].type == '{t}'",)
    for name, t in ((GPU_CLASS, "gpu"), (MIG_CLASS, "mig"))
}

NodeFilter = Callable[[Node], bool]


@dataclass(frozen=True)
class Decision:
    """The constraint chosen for a claim (None: no constraint) and why, in one sentence."""

    attribute: str | None
    reason: str


class Topology:
    """The cluster's devices per node, from the ResourceSlices, Nodes and DeviceClasses."""

    def __init__(self, objects: Sequence[tuple[KubeStruct, str]]) -> None:
        slices = [o for o, _ in objects if isinstance(o, ResourceSlice)]
        nodes = [o for o, _ in objects if isinstance(o, Node)]
        classes = [o for o, _ in objects if isinstance(o, DeviceClass)]
        named = {n.metadata.name for n in nodes}
        # Slices name their node even when no Node object was given.
        for name in sorted({s.spec.node_name for s in slices if s.spec.node_name} - named):
            nodes.append(Node(metadata=ObjectMeta(name=name)))
        self.has_slices = bool(slices)
        self.has_node_objects = len(named) > 0
        # Classes go in too: the snapshot checks that their selectors compile, with the file.
        kinds = ResourceSlice | Node | DeviceClass
        known = [(o, src) for o, src in objects if isinstance(o, kinds)]
        extra = [n for n in nodes if n.metadata.name not in named]
        state = ClusterState.from_objects([*known, *extra])
        # Invalid pools are never allocated from (dra-semantics §3.1); incomplete ones still
        # tell the node's shape.
        self.devices: dict[str, tuple[DeviceView, ...]] = {
            node.metadata.name: tuple(
                d for p in state.pools_for_node(node) if not p.invalid for d in p.devices
            )
            for node in nodes
        }
        self.nodes = {n.metadata.name: n for n in nodes}
        self.classes: dict[str, tuple[str, ...]] = dict(_CHART_CLASSES)
        for dc in classes:
            self.classes[dc.metadata.name] = tuple(
                s.cel.expression for s in dc.spec.selectors if s.cel is not None
            )
        self._compiled: dict[str, Selector] = {}
        self._eligible: dict[tuple[str, tuple[str, ...], tuple[str, str, str]], bool] = {}

    def decide(
        self,
        requests: Sequence[RequestShape],
        node_filter: NodeFilter | None = None,
        where: str = "",
    ) -> Decision:
        """The constraint for the aligned requests of one claim; `where` names the filter."""
        aligned = [r for r in requests if r.topology]
        total = sum(r.count for r in aligned)
        if not aligned:
            return Decision(None, "no request asks for alignment (MIG, or topology: false)")
        if total <= 1:
            return Decision(None, "one device: nothing to align")
        what = f"{total} devices"
        if not self.has_slices:
            msg = f"no ResourceSlices in the input: cannot tell which groups hold {what}"
            return Decision(None, msg)
        missing = sorted({r.device_class for r in aligned} - set(self.classes))
        if missing:
            names = ", ".join(missing)
            return Decision(None, f"DeviceClass {names} not in the input: its devices are unknown")
        nodes = [n for n in self.nodes.values() if node_filter is None or node_filter(n)]
        fit = [n.metadata.name for n in nodes if self._fits(self.devices[n.metadata.name], aligned)]
        scope = f"{len(nodes)} nodes{where}"
        if not fit:
            return Decision(None, f"no node has {what} of the requested classes ({scope})")
        largest: dict[str, int] = {}
        for attribute in self._candidates(fit, aligned):
            hosts = [n for n in fit if self._fits_group(n, attribute, aligned, largest)]
            if hosts:
                return Decision(attribute, _chosen(what, attribute, hosts, fit, largest, where))
        if not largest:
            return Decision(None, "the matching devices publish no PCIe-root or NUMA attribute")
        sizes = ", ".join(f"{a} holds at most {n}" for a, n in largest.items())
        return Decision(None, f"{what} fit no single group: {sizes}; no constraint")

    # --- devices and groups ----------------------------------------------------------------

    def _candidates(self, nodes: Sequence[str], requests: Sequence[RequestShape]) -> list[str]:
        found: set[str] = set()
        for name in nodes:
            for view in self.devices[name]:
                if not any(self._matches(view, r) for r in requests):
                    continue
                for key in view.device.attributes:
                    qualified = key if "/" in key else f"{view.driver}/{key}"
                    if topology_rank(qualified) is not None:
                        found.add(qualified)
        return sorted(found, key=lambda a: (topology_rank(a), a))

    def _fits_group(
        self, node: str, attribute: str, requests: Sequence[RequestShape], largest: dict[str, int]
    ) -> bool:
        groups: dict[tuple[str, object], list[DeviceView]] = {}
        for view in self.devices[node]:
            value = view.attribute(attribute)
            if value is not None and any(self._matches(view, r) for r in requests):
                groups.setdefault(value, []).append(view)
        biggest = max((len(g) for g in groups.values()), default=0)
        largest[attribute] = max(largest.get(attribute, 0), biggest)
        return any(self._fits(g, requests) for g in groups.values())

    def _fits(self, devices: Sequence[DeviceView], requests: Sequence[RequestShape]) -> bool:
        """Whether distinct devices can serve every request (bipartite matching)."""
        slots = [r for r in requests for _ in range(r.count)]
        if len(slots) > len(devices):
            return False
        owner: dict[int, int] = {}  # device index -> slot

        def place(slot: int, seen: set[int]) -> bool:
            for d, view in enumerate(devices):
                if d in seen or not self._matches(view, slots[slot]):
                    continue
                seen.add(d)
                if d not in owner or place(owner[d], seen):
                    owner[d] = slot
                    return True
            return False

        return all(place(s, set()) for s in range(len(slots)))

    def _matches(self, view: DeviceView, request: RequestShape) -> bool:
        key = (request.device_class, request.selectors, view.id)
        hit = self._eligible.get(key)
        if hit is None:
            exprs = (*self.classes.get(request.device_class, ()), *request.selectors)
            hit = all(self._evaluate(e, view) for e in exprs)
            self._eligible[key] = hit
        return hit

    def _evaluate(self, expression: str, view: DeviceView) -> bool:
        selector = self._compiled.get(expression)
        if selector is None:
            selector = self._compiled[expression] = compile_selector(expression)
        try:
            # Uncached: the shared result cache is keyed by device id, and the input here
            # may reuse ids of another snapshot seen in the same process.
            return selector.evaluate(view.cel)
        except CelError:
            return False  # a runtime error never selects the device


def pod_node_filter(spec: dict[str, Any], where: str) -> tuple[NodeFilter | None, str]:
    """The nodes a pod spec may run on (nodeName, nodeSelector, required node affinity), and
    how to say so; (None, "") when it does not restrict them."""
    keys = ("nodeName", "nodeSelector", "affinity")
    picked = {k: spec[k] for k in keys if spec.get(k)}
    if not picked:
        return None, ""
    try:
        pod = decode({"apiVersion": "v1", "kind": "Pod", "spec": picked})
    except BadInput as err:
        # The path is the pod spec's; the kind and name are added by the caller.
        path = f"{where}{err.path.removeprefix('spec')}"
        raise BadInput(err.message, path=path) from None
    assert isinstance(pod, Pod)
    pspec = pod.spec
    affinity = pspec.affinity.node_affinity if pspec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None

    def allowed(node: Node) -> bool:
        if pspec.node_name and node.metadata.name != pspec.node_name:
            return False
        labels = node.metadata.labels
        if any(labels.get(k) != v for k, v in pspec.node_selector.items()):
            return False
        return required is None or selector_matches(required, node)

    return allowed, " matching the pod's node selection"


def _chosen(
    what: str,
    attribute: str,
    hosts: Sequence[str],
    fit: Sequence[str],
    largest: dict[str, int],
    where: str,
) -> str:
    tighter = [f"{a} holds at most {n}" for a, n in largest.items() if a != attribute]
    shown = ", ".join(hosts[:3]) + (", …" if len(hosts) > 3 else "")
    reason = (
        f"{what} fit one {attribute} group on {len(hosts)} of the {len(fit)} nodes{where} "
        f"that have {what} ({shown})"
    )
    return f"{reason}; {'; '.join(tighter)}" if tighter else reason
