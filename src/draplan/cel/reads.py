"""Which device values a selector reads, when its text shows every one of them.

A selector sees a device only through the `device` variable. When each use of it is
`device.driver`, `device.allowMultipleAllocations`, or a lookup of one attribute or capacity
by literal names (`device.attributes["dom"].id`, `device.attributes.dom["id"]`,
`device.capacity["dom"].id`), its result is a function of those values alone: two devices
that agree on them get the same answer, so a cluster of identical GPUs is evaluated once, not
once per device. Any other use (iteration, size(), `in`, a computed key, an optional lookup,
`device` rebound) reads more than the text shows: no read set, every device is evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Hashable

from draplan.cel.device import CelDevice, split_name
from draplan.cel.domains import _SHADOWED, _continues_name, _literal_end

# (map, domain, id): map is "attributes" or "capacity".
Read = tuple[str, str, str]

_WHOLE = re.compile(r"device\s*\.\s*(driver|allowMultipleAllocations)\b(?!\s*\()")
_MAP = re.compile(r"device\s*\.\s*(attributes|capacity)\s*")
_KEY = re.compile(r"""\[\s*(?:'([\w./-]*)'|"([\w./-]*)")\s*\]\s*""")
_FIELD = re.compile(r"\.\s*([A-Za-z_]\w*)\b\s*")
_MISSING = ("missing",)


def reads(expression: str) -> frozenset[Read] | None:
    """The attribute and capacity lookups of `expression`, or None when it may read more."""
    if _SHADOWED.search(expression) or "`" in expression:
        return None
    found: set[Read] = set()
    i = 0
    while i < len(expression):
        skip = _literal_end(expression, i)
        if skip is not None:
            if skip < 0:
                return None
            i = skip
            continue
        if expression.startswith("device", i) and not _continues_name(expression, i):
            after = i + len("device")
            if after < len(expression) and (
                expression[after].isalnum() or expression[after] == "_"
            ):
                i = after  # a longer name (`devices`)
                continue
            whole = _WHOLE.match(expression, i)
            if whole is not None:
                i = whole.end()
                continue
            lookup = _lookup(expression, i)
            if lookup is None:
                return None
            read, i = lookup
            found.add(read)
            continue
        i += 1
    return frozenset(found)


def _lookup(text: str, i: int) -> tuple[Read, int] | None:
    """`device.<map>` then the domain and the id, each a literal key or a field name."""
    head = _MAP.match(text, i)
    if head is None:
        return None
    parts: list[str] = []
    j = head.end()
    for _ in range(2):
        key = _KEY.match(text, j)
        field = None if key is not None else _FIELD.match(text, j)
        if key is not None:
            parts.append(key.group(1) if key.group(1) is not None else key.group(2))
            j = key.end()
        elif field is not None and not text.startswith("(", field.end()):
            parts.append(field.group(1))
            j = field.end()
        else:
            return None  # the map or a domain used whole, a method on it, or `[?...]` / `.?`
    return (head.group(1), parts[0], parts[1]), j


def content_key(device: CelDevice, read_set: frozenset[Read]) -> Hashable:
    """What the selector can see of `device`: equal keys, equal results."""
    values: list[object] = [device.driver, device.allow_multiple_allocations]
    for kind, domain, ident in sorted(read_set):
        source = device.attributes if kind == "attributes" else device.capacity
        value: object = _MISSING
        for name, v in source.items():  # the last entry wins, as in device_data
            if split_name(name, device.driver) == (domain, ident):
                value = v
        # The type too: True == 1 in Python, not in CEL.
        values.append(value if value is _MISSING else (type(value).__name__, value))
    return tuple(values)
