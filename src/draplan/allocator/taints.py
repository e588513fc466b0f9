"""Device taints and request tolerations (KEP-5055, dra-semantics §3.11)."""

from __future__ import annotations

from draplan.api.resource_v1 import DeviceToleration
from draplan.cluster.devices import DeviceView

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(tol: DeviceToleration, key: str, value: str, effect: str) -> bool:
    if tol.effect and tol.effect != effect:
        return False
    if tol.key and tol.key != key:
        return False
    if tol.operator == "Exists":
        return True
    if tol.operator in ("", "Equal"):
        return tol.value == value
    return False


def taint_blocks(view: DeviceView, tolerations: tuple[DeviceToleration, ...]) -> bool:
    """A NoSchedule/NoExecute taint that no toleration covers; other effects are ignored."""
    for taint in view.device.taints:
        if taint.effect not in BLOCKING_EFFECTS:
            continue
        if not any(tolerates(t, taint.key, taint.value, taint.effect) for t in tolerations):
            return True
    return False
