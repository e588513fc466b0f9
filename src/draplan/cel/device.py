"""What a selector sees of a device, and its translation into CEL input data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from draplan.api.quantity import Quantity
from draplan.cel.messages import quantity_message, semver_message
from draplan.cel.semver import SemverValue

ScalarValue = int | bool | str | SemverValue
# A tuple is a list-typed attribute (KEP-5491, DRAListTypeAttributes): a CEL list.
AttrValue = ScalarValue | tuple[ScalarValue, ...]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class CelDevice:
    """One device as the `device` variable of a selector; `key` is its cache identity."""

    key: tuple[str, str, str]  # (driver, pool, device name)
    driver: str
    # Qualified names exactly as published: "model" or "dom.example.com/model".
    attributes: Mapping[str, AttrValue] = field(hash=False)
    capacity: Mapping[str, Quantity] = field(hash=False)
    allow_multiple_allocations: bool = False


def split_name(name: str, driver: str) -> tuple[str, str]:
    """(domain, id) of a qualified name; a name without "/" belongs to the driver's domain."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_data(device: CelDevice) -> dict[str, Any]:
    """The `device` map handed to CEL; raises ValueError for a value CEL cannot hold."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in device.attributes.items():
        domain, ident = split_name(name, device.driver)
        attributes.setdefault(domain, {})[ident] = _attribute_value(name, value)
    capacity: dict[str, dict[str, Any]] = {}
    for name, quantity in device.capacity.items():
        domain, ident = split_name(name, device.driver)
        capacity.setdefault(domain, {})[ident] = quantity_message(quantity)
    return {
        "driver": device.driver,
        "attributes": attributes,
        "capacity": capacity,
        "allowMultipleAllocations": device.allow_multiple_allocations,
    }


def _attribute_value(name: str, value: object) -> Any:
    if isinstance(value, tuple):
        return [_attribute_value(name, v) for v in value]
    # bool before int: bool is a subclass of int in Python.
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(f"attribute {name}: integer {value} does not fit in int64")
        return value
    if isinstance(value, SemverValue):
        return semver_message(value)
    raise ValueError(f"attribute {name}: unsupported attribute value {value!r}")
