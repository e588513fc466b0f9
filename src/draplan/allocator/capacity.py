"""Consumable capacity (KEP-5075, dra-semantics §3.10): what a request consumes of a device.

A validRange with a step rounds the request up to `min + k·step` in whole units, as upstream
does with `Quantity.Value()` (each of request, min and step rounded up to an integer first);
with DRAFractionalCapacityRange (beta, on in 1.37) and a fractional min, max or step, in milli
units instead (`MilliValue()`). Either way the result is the least such value at or above the
request when min and step are whole in that unit; they differ from exact arithmetic only
where they are not (a fractional range in 1.36, or one finer than 1m).
"""

from __future__ import annotations

from draplan.api.quantity import BINARY_SI, Quantity
from draplan.api.resource_v1 import CapacityRequestPolicy, DeviceCapacity
from draplan.cluster.devices import NANO, DeviceView, from_nanos, nanos

MILLI = NANO // 1000


def _ceil_to(amount: int, unit: int) -> int:
    return -(-amount // unit) * unit


def range_unit(policy: CapacityRequestPolicy, fractional: bool) -> int:
    """The unit (in nanos) of a validRange's step arithmetic: milli when the gate is on and
    min, max or step is not a whole number, else one."""
    rng = policy.valid_range
    bounds = (rng.min, rng.max, rng.step) if rng is not None else ()
    whole = all(q is None or nanos(q) % NANO == 0 for q in bounds)
    return MILLI if fractional and not whole else NANO


def consumed_amount(
    requested: int | None,
    value: int,
    policy: CapacityRequestPolicy | None,
    fractional: bool = True,
) -> int | None:
    """What one capacity of a device gives a request, rounded by the policy; None if the
    policy forbids it."""
    if requested is None:
        if policy is not None and policy.default is not None:
            return nanos(policy.default)
        return value
    if policy is None:
        return requested
    default = nanos(policy.default) if policy.default is not None else None
    if policy.valid_values:
        allowed = [nanos(v) for v in policy.valid_values]
        for v in allowed:
            if v >= requested:
                return v
        return None
    rng = policy.valid_range
    if rng is not None and rng.min is not None:
        low = nanos(rng.min)
        if requested < low:
            amount = low
        elif rng.step is not None:
            unit = range_unit(policy, fractional)
            base, step = _ceil_to(low, unit), _ceil_to(nanos(rng.step), unit)
            amount = base + -(-(_ceil_to(requested, unit) - base) // step) * step
        else:
            amount = requested
        if amount != default and rng.max is not None and amount > nanos(rng.max):
            return None
        return amount
    return requested


def consumed_quantity(
    amount: int, requested: Quantity | None, capacity: DeviceCapacity
) -> Quantity:
    """`amount` (nanos, from consumed_amount) in the form upstream writes it: a copy of the
    quantity it came from (default, full value, request, minimum or valid value); a value
    rounded up to a step in whole units is written as BinarySI, one in milli units as such."""
    policy = capacity.request_policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return capacity.value
    if policy is None:
        return requested
    for valid in policy.valid_values:
        if nanos(valid) == amount:
            return valid
    rng = policy.valid_range
    if rng is not None and rng.min is not None:
        if nanos(requested) < nanos(rng.min):
            return rng.min
        if rng.step is not None and amount % NANO == 0:
            return Quantity.from_int(amount // NANO, BINARY_SI)
    return requested if nanos(requested) == amount else from_nanos(amount)


def consumption(
    view: DeviceView, requests: dict[str, int], fractional: bool = True
) -> dict[str, int] | None:
    """Every capacity of the device as consumed by a request, or None if it is not eligible
    (asks for a capacity the device lacks, or the policy rejects the amount); `fractional`:
    DRAFractionalCapacityRange is on."""
    caps = view.device.capacity
    for name in requests:
        if name not in caps and _bare(name, view.driver) not in caps:
            return None
    out: dict[str, int] = {}
    for name, cap in caps.items():
        requested = requests.get(name)
        if requested is None:
            requested = requests.get(f"{view.driver}/{name}")
        amount = consumed_amount(requested, view.capacity[name], cap.request_policy, fractional)
        if amount is None:
            return None
        out[name] = amount
    return out


def _bare(name: str, driver: str) -> str:
    domain, _, ident = name.rpartition("/")
    return ident if domain == driver else name
