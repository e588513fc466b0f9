"""What a pod needs and what the cluster has free, in device and node-resource terms."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from draplan.allocator import AllocationError, count_candidates
from draplan.allocator.diagnose import evidence_label
from draplan.api.core_v1 import Node
from draplan.api.resource_v1 import DeviceClass, DeviceRequest, ResourceClaim
from draplan.autoscaler.templates import make_node
from draplan.cel import CelError, compile_selector
from draplan.cluster.devices import DeviceView, device_views
from draplan.cluster.podresources import PODS, Resources, node_allocatable
from draplan.cluster.state import ClusterState
from draplan.scheduler.extended import class_mapping, node_resource_requests
from draplan.scheduler.plugins.noderesources import insufficient


@dataclass
class NodeSupply:
    """One node's free resources for one pod shape. Per request ("claim request"): the free
    devices that survive every stage (`devices`), the devices that match at all, free or not
    (`matching`), and how many the request needs; per node resource: what is free, and which
    requested resources do not fit now (`lacking`) or ever (`roomy` False)."""

    node: str
    devices: dict[str, int] = field(default_factory=dict)
    matching: dict[str, int] = field(default_factory=dict)
    needed: dict[str, int] = field(default_factory=dict)
    requests: Resources = field(default_factory=dict)  # what the pod asks of the node
    free: Resources = field(default_factory=dict)
    capacity: Resources = field(default_factory=dict)  # allocatable, for the same resources
    lacking: tuple[str, ...] = ()
    roomy: bool = True
    fits: bool = False  # the scheduler places the pod here now
    code: str = ""  # the allocator's failure code here ("" if it fits or was not asked)
    message: str = ""  # the allocator's sentence for that failure

    @property
    def fits_resources(self) -> bool:
        return not self.lacking

    def devices_suffice(self) -> bool:
        return all(self.devices.get(k, 0) >= n for k, n in self.needed.items())

    def could_host(self) -> bool:
        """Would the pod fit if the node were empty (enough matching devices and room)?"""
        return self.roomy and all(self.matching.get(k, 0) >= n for k, n in self.needed.items())

    def found(self) -> int:
        """How many of the needed devices the node has free (for ranking near misses)."""
        return sum(min(self.devices.get(k, 0), n) for k, n in self.needed.items())


def request_key(row: dict[str, Any]) -> str:
    # A firstAvailable sub-request "req/sub" counts toward its request.
    return f"{row['claim']} {row['request'].split('/')[0]}"


def node_supply(
    state: ClusterState,
    node: Node,
    requests: Resources,
    claims: Sequence[ResourceClaim],
    rows: Iterable[dict[str, Any]] | None = None,
) -> NodeSupply:
    """`rows` are the allocator's per-request counts (from a failed allocation's evidence);
    when absent they are counted here."""
    name = node.metadata.name
    alloc = node_allocatable(node)
    used = state.requested(name)
    # Extended resources a DeviceClass serves are devices where no device plugin serves them
    # (KEP-5004), not node resources: NodeResourcesFit's rule.
    served = class_mapping(state) if "DRAExtendedResource" in state.features else {}
    wanted = {
        r: v
        for r, v in node_resource_requests(requests, served, node).items()
        if v > 0 or r == PODS
    }
    out = NodeSupply(
        name,
        requests=wanted,
        free={r: alloc.get(r, 0) - used.get(r, 0) for r in wanted},
        capacity={r: alloc.get(r, 0) for r in wanted},
        lacking=tuple(i.resource for i in insufficient(wanted, used, alloc)),
        roomy=not insufficient(wanted, {}, alloc),
    )
    if rows is None:
        rows = _count(state, node, claims)
    for row in rows:
        key = request_key(row)
        # A prioritized list is as good as its best alternative.
        out.devices[key] = max(out.devices.get(key, 0), row["countersFit"])
        out.matching[key] = max(out.matching.get(key, 0), row["matching"])
        out.needed[key] = min(out.needed.get(key, row["needed"]), row["needed"])
    return out


def _count(
    state: ClusterState, node: Node, claims: Sequence[ResourceClaim]
) -> list[dict[str, Any]]:
    pending = [c for c in claims if c.status.allocation is None]
    if not pending:
        return []
    try:
        return count_candidates(state, node, pending)
    except AllocationError:
        return []


def _selects(dc: DeviceClass, exprs: Sequence[str], view: DeviceView) -> bool | str:
    """Whether the class and the request's selectors select the device; the error (it names
    the device) when they cannot be evaluated on it."""
    try:
        return all(
            compile_selector(e).matches(view.cel)
            for e in [*(s.cel.expression for s in dc.spec.selectors if s.cel), *exprs]
        )
    except CelError as err:
        return str(err)


def all_devices(state: ClusterState) -> list[DeviceView]:
    """Every published device, and every device the NodePools' templates would publish."""
    views = [v for name in sorted(state.slices.keys()) for v in state.slice_devices(name)]
    for pool in state.node_pools.values():
        sample = make_node(state, pool, f"{pool.metadata.name}-template", {})
        views.extend(v for rs in sample.slices for v in device_views(rs))
    return views


Alternative = tuple[str, tuple[str, ...]]  # (device class, CEL selectors of the request)


@dataclass
class MatchMemo:
    """DeviceMatcher's answers, kept between audits of one state while what they were read
    from (the device classes, the slices, the NodePools and the nodes they copy) is the same
    objects."""

    inputs: list[object] = field(default_factory=list)
    answers: dict[tuple[Alternative, ...], bool] = field(default_factory=dict)
    # The first device a request's selectors cannot be evaluated on, for those matching none.
    errors: dict[tuple[Alternative, ...], str] = field(default_factory=dict)


def _match_inputs(state: ClusterState) -> list[object]:
    """Everything `all_devices` and the device classes give the matcher, by identity."""
    pools = state.node_pools.values()
    return [
        *state.device_classes.values(),
        *state.slices.values(),
        *pools,
        *(state.nodes.get(p.spec.from_node) for p in pools if p.spec.from_node),
    ]


class DeviceMatcher:
    """Which requests no device anywhere (in the cluster or any NodePool template) could ever
    satisfy. Pods of one template ask the same, so the answer is kept per request spec: the
    scan over every device runs once per distinct request, not once per pod (and, with a
    `memo` kept between audits, once while the devices stay)."""

    def __init__(self, state: ClusterState, memo: MatchMemo | None = None) -> None:
        self.state = state
        self._views: list[DeviceView] | None = None
        memo = memo if memo is not None else MatchMemo()
        inputs = _match_inputs(state)
        if len(inputs) != len(memo.inputs) or any(
            a is not b for a, b in zip(inputs, memo.inputs, strict=True)
        ):
            memo.inputs = inputs
            memo.answers.clear()
            memo.errors.clear()
        self._memo = memo.answers
        self._errors = memo.errors
        self._counts: dict[tuple[object, ...], int] = {}

    @property
    def views(self) -> list[DeviceView]:
        if self._views is None:
            self._views = all_devices(self.state)
        return self._views

    def unmatched(self, claims: Sequence[ResourceClaim]) -> list[str]:
        """One line per request that nothing could ever satisfy, and why."""
        out = []
        for claim in claims:
            if claim.status.allocation is not None:
                continue
            for req in claim.spec.devices.requests:
                if not self.matches(req):
                    out.append(f"{evidence_label(claim)} request {req.name} ({self._why(req)})")
        return out

    def _why(self, req: DeviceRequest) -> str:
        subs = [req.exactly] if req.exactly is not None else list(req.first_available)
        names = [s.device_class_name for s in subs if s is not None]
        absent = [n for n in names if n not in self.state.device_classes]
        if absent:
            return f"device class {absent[0]} does not exist"
        found = f"class {' / '.join(names)} with its selectors matches no device"
        error = self._errors.get(_alternatives(req))
        return f"{found}; they cannot be evaluated ({error})" if error else found

    def most_on_one_pool(self, req: DeviceRequest) -> int:
        """The most devices one resource pool (a node's, or a NodePool template's) has that
        the request's class and selectors select: what `allocationMode: All` takes there."""
        key = ("all", *_alternatives(req))
        found = self._counts.get(key)
        if found is None:
            per_pool: dict[object, int] = {}
            for class_name, exprs in _alternatives(req):
                dc = self.state.device_classes.get(class_name)
                if dc is None:
                    continue
                for view in self.views:
                    if _selects(dc, exprs, view) is True:
                        per_pool[view.pool_id] = per_pool.get(view.pool_id, 0) + 1
            found = self._counts[key] = max(per_pool.values(), default=0)
        return found

    def matches(self, req: DeviceRequest) -> bool:
        key = _alternatives(req)
        found = self._memo.get(key)
        if found is None:
            errors: list[str] = []
            found = any(self._any_device(name, exprs, errors) for name, exprs in key)
            self._memo[key] = found
            if not found and errors:
                self._errors[key] = errors[0]
        return found

    def _any_device(self, class_name: str, exprs: tuple[str, ...], errors: list[str]) -> bool:
        dc = self.state.device_classes.get(class_name)
        if dc is None:
            return False
        for view in self.views:
            selected = _selects(dc, exprs, view)
            if selected is True:
                return True
            if isinstance(selected, str) and not errors:
                errors.append(selected)
        return False


def _alternatives(req: DeviceRequest) -> tuple[Alternative, ...]:
    subs = [req.exactly] if req.exactly is not None else list(req.first_available)
    return tuple(
        (s.device_class_name, tuple(x.cel.expression for x in s.selectors if x.cel))
        for s in subs
        if s is not None
    )
