"""What a pod needs and what the cluster has free, in device and cpu/memory terms."""

from __future__ import annotations

from dataclasses import dataclass, field

from draplan.allocator import AllocationError, count_candidates
from draplan.api.core_v1 import Node, Pod
from draplan.api.resource_v1 import DeviceClass, DeviceRequest, ResourceClaim
from draplan.autoscaler.templates import make_node
from draplan.cel import CelError, compile_selector
from draplan.cluster.devices import DeviceView, device_views
from draplan.cluster.podresources import node_allocatable, pod_requests
from draplan.cluster.state import ClusterState

RESOURCES = ("cpu", "memory")


@dataclass
class NodeSupply:
    """One node's free resources for one pod: per request (claim/request) the devices that
    survive every stage, and whether cpu/memory fit."""

    node: str
    devices: dict[str, int] = field(default_factory=dict)
    needed: dict[str, int] = field(default_factory=dict)
    free: dict[str, int] = field(default_factory=dict)
    fits_resources: bool = True

    def devices_suffice(self) -> bool:
        return all(self.devices.get(k, 0) >= n for k, n in self.needed.items())


def node_supply(
    state: ClusterState, node: Node, pod: Pod, claims: list[ResourceClaim]
) -> NodeSupply:
    name = node.metadata.name
    alloc = node_allocatable(node)
    used = state.requested(name)
    req = pod_requests(pod)
    free = {r: alloc.get(r, 0) - used.get(r, 0) for r in RESOURCES}
    out = NodeSupply(
        name, free=free, fits_resources=all(req.get(r, 0) <= free[r] for r in RESOURCES)
    )
    pending = [c for c in claims if c.status.allocation is None]
    if pending:
        try:
            rows = count_candidates(state, node, pending)
        except AllocationError:
            rows = []
        for row in rows:
            key = f"{row['claim']} {row['request'].split('/')[0]}"
            out.devices[key] = max(out.devices.get(key, 0), row["countersFit"])
            need = row["needed"]
            out.needed[key] = min(out.needed.get(key, need), need)
    return out


def _selects(dc: DeviceClass, exprs: list[str], view: DeviceView) -> bool:
    try:
        return all(
            compile_selector(e).matches(view.cel)
            for e in [s.cel.expression for s in dc.spec.selectors if s.cel] + exprs
        )
    except CelError:
        return False


def all_devices(state: ClusterState) -> list[DeviceView]:
    """Every published device, and every device the NodePools' templates would publish."""
    views = [v for name in sorted(state.slices.keys()) for v in state.slice_devices(name)]
    for pool in state.node_pools.values():
        sample = make_node(state, pool, f"{pool.metadata.name}-template", {})
        views.extend(v for rs in sample.slices for v in device_views(rs))
    return views


def unmatched_requests(
    state: ClusterState, claims: list[ResourceClaim], views: list[DeviceView]
) -> list[str]:
    """Requests that no device anywhere (or in any template) could ever satisfy."""
    out = []
    for claim in claims:
        if claim.status.allocation is not None:
            continue
        for req in claim.spec.devices.requests:
            if not any(_request_matches(state, req, v) for v in views):
                out.append(f"{claim.metadata.namespace}/{claim.metadata.name} request {req.name}")
    return out


def _request_matches(state: ClusterState, req: DeviceRequest, view: DeviceView) -> bool:
    alternatives = [req.exactly] if req.exactly is not None else list(req.first_available)
    for alt in alternatives:
        if alt is None:
            continue
        dc = state.device_classes.get(alt.device_class_name)
        if dc is None:
            continue
        if _selects(dc, [s.cel.expression for s in alt.selectors if s.cel], view):
            return True
    return False
