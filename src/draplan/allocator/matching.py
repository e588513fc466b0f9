"""Which of a pool's devices a request's selectors pass (dra-semantics §3.4), kept per pool and
request shape: the scheduler asks again for every pod of a shape, and a pool stays the same
object while its slices do."""

from __future__ import annotations

from typing import NamedTuple

from draplan.allocator.capacity import consumption
from draplan.allocator.requests import RequestSpec, class_error
from draplan.allocator.taints import taint_blocks
from draplan.allocator.types import AllocationError
from draplan.api.resource_v1 import ResourceClaim
from draplan.cel import CelError
from draplan.cluster.devices import DeviceView, Pool

# How a device the selectors pass can still be refused before the search, known from the
# device and the request alone: for good, only while it is taken (the common case), or
# after a look at the ledgers (counters, shared capacity).
REFUSED, FREE_ONLY, LEDGERS = 0, 1, 2
# A device of a perDeviceNodeSelection slice the node sees whose own node selection excludes
# the node: never a candidate, but upstream's allocateOne evaluates its selectors before
# checking its node (isSelectable), so a selector failing on it is reached all the same.
HIDDEN = 3


class Mine(NamedTuple):
    """A selector that fails at run time on a device: which one, and the error's text."""

    in_class: bool
    selector: int  # its position in the class's or the request's list
    message: str  # names the device


# (device, the selector failing on it or None, the kind above), in publish order.
Matched = tuple[tuple[DeviceView, Mine | None, int], ...]

# Per (pool, request shape, gates): the pool (kept so its id is never reused while the entry
# is there) and what its devices are to requests of that shape.
_MATCHED: dict[tuple[int, int, int], tuple[Pool, Matched]] = {}
_MATCHED_SIZE = 1 << 16


def mine_error(spec: RequestSpec, claim: ResourceClaim, mine: Mine) -> AllocationError:
    """The fatal error of a failing selector, located in its class or in `claim`."""
    field = f"selectors[{mine.selector}].cel.expression"
    if mine.in_class:
        return class_error(spec.device_class, mine.message, f"spec.{field}")
    return spec.error(claim, mine.message, field)


def _verdict(spec: RequestSpec, view: DeviceView) -> bool | Mine:
    """Class selectors, then request selectors; a selector failing at run time is a Mine."""
    for in_class, sels in ((True, spec.class_selectors), (False, spec.selectors)):
        for i, sel in enumerate(sels):
            try:
                if not sel.matches(view.cel):
                    return False
            except CelError as err:
                return Mine(in_class, i, str(err))
    return True


def matched(
    pool: Pool,
    spec: RequestSpec,
    reached: tuple[DeviceView, ...],
    partitionable: bool,
    taints: bool,
    fractional: bool,
) -> Matched:
    """The devices upstream reaches in `pool` (`reached`, in order) that `spec`'s selectors
    pass or fail on; of those the node does not see, only failures."""
    key = (id(pool), spec.shape, partitionable | taints << 1 | fractional << 2)
    hit = _MATCHED.get(key)
    if hit is not None and hit[0] is pool:
        return hit[1]
    seen = {id(v) for v in pool.devices} if reached is not pool.devices else None
    out: list[tuple[DeviceView, Mine | None, int]] = []
    for view in reached:
        verdict = _verdict(spec, view)
        if verdict is False:
            continue
        mine = verdict if isinstance(verdict, Mine) else None
        if seen is not None and id(view) not in seen:
            if mine is not None:
                out.append((view, mine, HIDDEN))
            continue
        out.append((view, mine, _kind(spec, view, partitionable, taints, fractional)))
    if len(_MATCHED) >= _MATCHED_SIZE:
        _MATCHED.clear()
    result = tuple(out)
    _MATCHED[key] = (pool, result)
    return result


def _kind(
    spec: RequestSpec, view: DeviceView, partitionable: bool, taints: bool, fractional: bool
) -> int:
    if view.consumes and not partitionable:
        return REFUSED
    if taints and taint_blocks(view, spec.tolerations):
        return REFUSED
    consumed = consumption(view, spec.capacity, fractional)
    if consumed is None:
        return REFUSED
    if view.multi or view.consumes:
        return LEDGERS
    if any(amount > view.capacity[name] for name, amount in consumed.items()):
        return REFUSED
    return FREE_ONLY
