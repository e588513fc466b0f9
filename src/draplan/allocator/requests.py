"""Turn claims into the flat list of (sub)requests the search walks (dra-semantics §3.2)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from draplan.allocator.types import AllocationError
from draplan.api.errors import quote
from draplan.api.quantity import Quantity
from draplan.api.resource_v1 import (
    DeviceClass,
    DeviceSubRequest,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
)
from draplan.cel import CelError, Selector, compile_selector
from draplan.cluster.devices import nanos

MAX_DEVICES_PER_CLAIM = 32  # AllocationResultsMaxSize


@dataclass(frozen=True, eq=False)
class RequestSpec:
    """One ExactDeviceRequest or DeviceSubRequest, resolved against its DeviceClass."""

    claim_index: int
    parent: str
    name: str  # "req" or "req/sub" as written into results
    device_class: DeviceClass
    class_selectors: tuple[Selector, ...]
    selectors: tuple[Selector, ...]
    all_mode: bool
    count: int
    admin_access: bool
    tolerations: tuple[DeviceToleration, ...]
    capacity: dict[str, int]
    # As written, for the form of consumedCapacity in results.
    capacity_quantities: dict[str, Quantity]
    path: str  # of the request in its claim, e.g. spec.devices.requests[0].exactly
    # What decides which devices it can have, and nothing else (no claim, no name), as a
    # number: requests of one shape, as the pods of one template make, share what is known
    # of the devices.
    shape: int

    def error(self, claim: ResourceClaim, message: str, path: str = "") -> AllocationError:
        """A fatal error of this request, located in its claim."""
        return claim_error(claim, message, f"{self.path}.{path}" if path else self.path)


@dataclass(frozen=True, eq=False)
class RequestSlot:
    """A request position in the search: its alternatives in priority order."""

    claim_index: int
    name: str
    alternatives: tuple[RequestSpec, ...]
    first_available: bool


def claim_label(claim: ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


def claim_error(claim: ResourceClaim, message: str, path: str) -> AllocationError:
    """A fatal error in `claim` at `path`; `allocate` adds the file it came from."""
    return AllocationError(message, kind="ResourceClaim", name=claim_label(claim), path=path)


def class_error(dc: DeviceClass, message: str, path: str) -> AllocationError:
    return AllocationError(message, kind="DeviceClass", name=dc.metadata.name, path=path)


def _compile(
    expressions: list[str], fail: Callable[[str, str], AllocationError]
) -> tuple[Selector, ...]:
    out = []
    for i, expr in enumerate(expressions):
        try:
            out.append(compile_selector(expr))
        except CelError as err:
            raise fail(str(err), f"selectors[{i}].cel.expression") from None
    return tuple(out)


def _spec(
    claim_index: int,
    claim: ResourceClaim,
    parent: str,
    name: str,
    req: ExactDeviceRequest | DeviceSubRequest,
    classes: dict[str, DeviceClass],
    path: str,
) -> RequestSpec:
    def fail(message: str, field: str) -> AllocationError:
        return claim_error(claim, message, f"{path}.{field}")

    if not req.device_class_name:
        raise fail("missing device class name", "deviceClassName")
    dc = classes.get(req.device_class_name)
    if dc is None:
        raise fail(f"device class {quote(req.device_class_name)} does not exist", "deviceClassName")
    class_sel = _compile(
        [s.cel.expression for s in dc.spec.selectors if s.cel is not None],
        lambda message, field: class_error(dc, message, f"spec.{field}"),
    )
    if any(s.cel is None for s in (*dc.spec.selectors, *req.selectors)):
        raise fail("CEL expression empty (unsupported selector type?)", "selectors")
    req_sel = _compile([s.cel.expression for s in req.selectors if s.cel is not None], fail)
    mode = req.allocation_mode or "ExactCount"
    if mode not in ("ExactCount", "All"):
        raise fail(f"unsupported count mode {quote(mode)}", "allocationMode")
    count = req.count or 1  # API defaulting: ExactCount with count 0 means 1
    quantities = dict(req.capacity.requests) if req.capacity else {}
    capacity = {k: nanos(q) for k, q in quantities.items()}
    admin = bool(getattr(req, "admin_access", None))
    return RequestSpec(
        claim_index=claim_index,
        parent=parent,
        name=name,
        device_class=dc,
        class_selectors=class_sel,
        selectors=req_sel,
        all_mode=mode == "All",
        count=0 if mode == "All" else count,
        admin_access=admin,
        tolerations=req.tolerations,
        capacity=capacity,
        capacity_quantities=quantities,
        path=path,
        shape=_shape(
            (
                tuple(s.expression for s in class_sel),
                tuple(s.expression for s in req_sel),
                req.tolerations,
                tuple(sorted(capacity.items())),
                admin,
            )
        ),
    )


# A number per request shape, never reused: when the table is dropped, a shape seen again gets
# a new one (what was kept under the old one is then not found, never mistaken).
_SHAPES: dict[tuple[object, ...], int] = {}
_SHAPE_NUMBERS = itertools.count()


def _shape(key: tuple[object, ...]) -> int:
    number = _SHAPES.get(key)
    if number is None:
        if len(_SHAPES) >= _SLOTS_CACHE_SIZE:
            _SHAPES.clear()
        number = _SHAPES[key] = next(_SHAPE_NUMBERS)
    return number


class Slots(NamedTuple):
    """The request slots of some claims, and the positions where each claim's slots begin."""

    slots: list[RequestSlot]
    claim_starts: frozenset[int]


_SLOTS_CACHE: dict[tuple[int, ...], tuple[tuple[object, ...], Slots]] = {}
_SLOTS_CACHE_SIZE = 4096


def build_slots(claims: tuple[ResourceClaim, ...], classes: dict[str, DeviceClass]) -> Slots:
    """Every request of every claim, in claim then request order. Cached by object identity:
    the scheduler asks for the same claims on every candidate node."""
    key = (id(classes), *(id(c) for c in claims))
    hit = _SLOTS_CACHE.get(key)
    # Identity, not equality: ids can be reused once an object is gone, so the cache keeps
    # the objects alive and checks them. DeviceClasses are fixed once a ClusterState is built.
    if hit is not None and all(a is b for a, b in zip(hit[0], (classes, *claims), strict=True)):
        return hit[1]
    flat = _build_slots(claims, classes)
    starts = frozenset(
        i for i, slot in enumerate(flat) if i == 0 or flat[i - 1].claim_index != slot.claim_index
    )
    slots = Slots(flat, starts)
    if len(_SLOTS_CACHE) >= _SLOTS_CACHE_SIZE:
        _SLOTS_CACHE.clear()
    _SLOTS_CACHE[key] = ((classes, *claims), slots)
    return slots


def _build_slots(
    claims: tuple[ResourceClaim, ...], classes: dict[str, DeviceClass]
) -> list[RequestSlot]:
    slots: list[RequestSlot] = []
    for ci, claim in enumerate(claims):
        for ri, req in enumerate(claim.spec.devices.requests):
            alts: tuple[RequestSpec, ...]
            path = f"spec.devices.requests[{ri}]"
            if req.exactly is not None:
                alts = (
                    _spec(ci, claim, req.name, req.name, req.exactly, classes, f"{path}.exactly"),
                )
                slots.append(RequestSlot(ci, req.name, alts, False))
            else:
                alts = tuple(
                    _spec(
                        ci,
                        claim,
                        req.name,
                        f"{req.name}/{sub.name}",
                        sub,
                        classes,
                        f"{path}.firstAvailable[{j}]",
                    )
                    for j, sub in enumerate(req.first_available)
                )
                slots.append(RequestSlot(ci, req.name, alts, True))
    return slots
