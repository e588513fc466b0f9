"""DRADeviceCompatibilityGroups (alpha, 1.37): devices that draw on one counter set may be
allocated together only if the `compatibilityGroups` of all of them share a group; a device
that declares none goes only with others that declare none (upstream's
compatibilityGroupIntersection). Devices already allocated count with the ones being chosen."""

from __future__ import annotations

from collections.abc import Iterable


def compatible(members: Iterable[frozenset[str]]) -> bool:
    """Can devices with these groups (one entry per device) share a counter set?"""
    common: frozenset[str] | None = None
    seen = empty = False
    for groups in members:
        if seen and (not groups) != empty:
            return False  # a device without groups never joins one with groups, nor back
        if not seen:
            seen, empty = True, not groups
        if groups:
            common = groups if common is None else common & groups
            if not common:
                return False
    return True
