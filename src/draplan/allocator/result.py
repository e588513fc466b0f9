"""Write a search result as `status.allocation` exactly as Kubernetes does (dra-semantics §3.12)."""

from __future__ import annotations

import uuid
from functools import lru_cache
from typing import NamedTuple

import msgspec

from draplan.allocator.capacity import consumed_quantity
from draplan.allocator.requests import RequestSpec, claim_label
from draplan.api.core_v1 import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from draplan.api.resource_v1 import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaim,
)
from draplan.cluster.devices import DeviceView

# shareIDs are UUIDs upstream; draplan derives them from the allocation so output is
# byte-identical for the same input.
_SHARE_NAMESPACE = uuid.UUID("6f1d3f0e-4a57-4c1b-9a55-0d7a1c2b3e4f")


def _share_id(claim: ResourceClaim, request: str, device: tuple[str, str, str], n: int) -> str:
    seed = f"{claim_label(claim)}/{claim.metadata.uid}/{request}/{device}/{n}"
    return str(uuid.uuid5(_SHARE_NAMESPACE, seed))


class Pick(NamedTuple):
    """One device chosen for one (sub)request; `consumed` is set for shared devices. A tuple:
    the search makes and drops one per device it tries."""

    spec: RequestSpec
    view: DeviceView
    consumed: dict[str, int] | None


# An exclusive device's result names only the device and what of its request the result
# shows: kept per pair (the entry keeps the device so its id is never reused).
_Result = DeviceRequestAllocationResult
_EXCLUSIVE: dict[tuple[object, ...], tuple[DeviceView, _Result]] = {}
_EXCLUSIVE_SIZE = 1 << 16


def _result(claim: ResourceClaim, pick: Pick, ordinal: int) -> DeviceRequestAllocationResult:
    if pick.consumed is not None:
        return _make_result(claim, pick, ordinal)
    spec, view = pick.spec, pick.view
    key = (id(view), spec.name, spec.admin_access, spec.tolerations)
    hit = _EXCLUSIVE.get(key)
    if hit is not None and hit[0] is view:
        return hit[1]
    result = _make_result(claim, pick, ordinal)
    if len(_EXCLUSIVE) >= _EXCLUSIVE_SIZE:
        _EXCLUSIVE.clear()
    _EXCLUSIVE[key] = (view, result)
    return result


def _make_result(claim: ResourceClaim, pick: Pick, ordinal: int) -> DeviceRequestAllocationResult:
    view = pick.view
    share_id = None
    consumed = {}
    if pick.consumed is not None:
        share_id = _share_id(claim, pick.spec.name, view.id, ordinal)
        wanted = pick.spec.capacity_quantities
        caps = view.device.capacity
        consumed = {
            name: consumed_quantity(
                amount, wanted.get(name, wanted.get(f"{view.driver}/{name}")), caps[name]
            )
            for name, amount in pick.consumed.items()
        }
    return DeviceRequestAllocationResult(
        request=pick.spec.name,
        driver=view.driver,
        pool=view.id[1],
        device=view.name,
        admin_access=True if pick.spec.admin_access else None,
        tolerations=pick.spec.tolerations,
        binding_conditions=view.device.binding_conditions,
        binding_failure_conditions=view.device.binding_failure_conditions,
        share_id=share_id,
        consumed_capacity=consumed,
    )


@lru_cache(maxsize=4096)
def _pinned(node_name: str) -> NodeSelector:
    req = NodeSelectorRequirement(key="metadata.name", operator="In", values=(node_name,))
    return NodeSelector(node_selector_terms=(NodeSelectorTerm(match_fields=(req,)),))


def node_selector(picks: list[Pick], node: Node) -> NodeSelector | None:
    """Pinned to the node if any device is node-local; else the AND of the devices' terms."""
    if any(p.view.node_name is not None or p.view.device.binds_to_node for p in picks):
        return _pinned(node.metadata.name)
    exprs: list[NodeSelectorRequirement] = []
    fields: list[NodeSelectorRequirement] = []
    for p in picks:
        term = p.view.node_term
        if term is None:
            continue
        for req in term.match_expressions:
            if req not in exprs:
                exprs.append(req)
        for req in term.match_fields:
            if req not in fields:
                fields.append(req)
    if not exprs and not fields:
        return None
    term = NodeSelectorTerm(match_expressions=tuple(exprs), match_fields=tuple(fields))
    return NodeSelector(node_selector_terms=(term,))


# Per claim spec (the pods of one template share it) and the (sub)requests its picks served
# with their classes, in order: the configs are the same for every node the scheduler tries.
# The entry keeps the spec and the classes so their ids are never reused.
Configs = tuple[DeviceAllocationConfiguration, ...]
_CONFIGS: dict[tuple[object, ...], tuple[object, tuple[object, ...], Configs]] = {}
_CONFIGS_SIZE = 4096


def _config(claim: ResourceClaim, picks: list[Pick]) -> Configs:
    specs = list({id(p.spec): p.spec for p in picks}.values())
    classes = tuple(s.device_class for s in specs)
    key = (id(claim.spec), *(s.name for s in specs), *(id(c) for c in classes))
    hit = _CONFIGS.get(key)
    if hit is not None and hit[0] is claim.spec and hit[1] == classes:
        return hit[2]
    out = _configs(claim, picks)
    if len(_CONFIGS) >= _CONFIGS_SIZE:
        _CONFIGS.clear()
    _CONFIGS[key] = (claim.spec, classes, out)
    return out


def _configs(claim: ResourceClaim, picks: list[Pick]) -> Configs:
    out: list[DeviceAllocationConfiguration] = []
    used_names: list[str] = []
    by_class: dict[str, list[str]] = {}
    classes = {}
    for p in picks:
        if p.spec.name not in used_names:
            used_names.append(p.spec.name)
            dc = p.spec.device_class
            classes[dc.metadata.name] = dc
            by_class.setdefault(dc.metadata.name, []).append(p.spec.name)
    for cname, names in by_class.items():
        for cfg in classes[cname].spec.config:
            out.append(
                DeviceAllocationConfiguration(
                    source="FromClass", requests=tuple(names), opaque=cfg.opaque
                )
            )
    parents = {n.split("/")[0] for n in used_names}
    for ccfg in claim.spec.devices.config:
        # Upstream 1.35/1.36 appends a config once per named request (duplicates); master
        # appends it once. draplan appends once.
        if not ccfg.requests or any(r in used_names or r in parents for r in ccfg.requests):
            out.append(
                DeviceAllocationConfiguration(
                    source="FromClaim", requests=ccfg.requests, opaque=ccfg.opaque
                )
            )
    # A config that covers every request of the claim is written with no requests ("empty
    # means all"), as upstream does. Covering means naming each top-level request or the
    # subrequest chosen for it; upstream once compared list lengths and so widened a config
    # scoped to several subrequests of one request to the whole claim (kubernetes#139803).
    chosen = {p.spec.parent: p.spec.name for p in picks}
    top = [r.name for r in claim.spec.devices.requests]
    return tuple(
        msgspec.structs.replace(cfg, requests=())
        if cfg.requests and all(r in cfg.requests or chosen.get(r) in cfg.requests for r in top)
        else cfg
        for cfg in out
    )


def allocated_claim(claim: ResourceClaim, picks: list[Pick], node: Node) -> ResourceClaim:
    """A copy of `claim` whose status.allocation holds `picks`."""
    results = tuple(_result(claim, p, i) for i, p in enumerate(picks))
    allocation = AllocationResult(
        devices=DeviceAllocationResult(results=results, config=_config(claim, picks)),
        node_selector=node_selector(picks, node),
    )
    status = msgspec.structs.replace(claim.status, allocation=allocation)
    return msgspec.structs.replace(claim, status=status)


def retarget(allocated: ResourceClaim, claim: ResourceClaim, node: Node) -> ResourceClaim:
    """`allocated`'s device choice applied to `claim`, an identical claim of another pod (the
    scheduler reuses a node's answer for pods it cannot tell apart); shareIDs are re-derived."""
    alloc = allocated.status.allocation
    assert alloc is not None
    results = []
    for i, res in enumerate(alloc.devices.results):
        if res.share_id is not None:
            share_id = _share_id(claim, res.request, (res.driver, res.pool, res.device), i)
            res = msgspec.structs.replace(res, share_id=share_id)
        results.append(res)
    devices = msgspec.structs.replace(alloc.devices, results=tuple(results))
    status = msgspec.structs.replace(
        claim.status, allocation=msgspec.structs.replace(alloc, devices=devices)
    )
    return msgspec.structs.replace(claim, status=status)
