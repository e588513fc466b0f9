"""Older resource.k8s.io versions in the v1 shape, on the JSON form, before decoding.

v1beta2 has the v1 shape. v1beta1 nests a device's fields under `basic` and puts a request's
fields directly on the request where v1 has them under `exactly`; everything else (classes,
counters, allocation results, status) has the same shape in all three versions.
"""

from __future__ import annotations

from typing import Any

GROUP = "resource.k8s.io"
VERSIONS = ("v1", "v1beta2", "v1beta1")  # preferred first

# v1beta1 DeviceRequest fields that v1 moves under `exactly`.
_EXACT_FIELDS = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
)


def _device(device: Any) -> Any:
    if not isinstance(device, dict) or not isinstance(device.get("basic"), dict):
        return device
    flat = {k: v for k, v in device.items() if k != "basic"}
    flat.update(device["basic"])
    return flat


def _request(request: Any) -> Any:
    if not isinstance(request, dict) or "exactly" in request:
        return request
    rest = {k: v for k, v in request.items() if k not in _EXACT_FIELDS}
    if request.get("firstAvailable"):
        return rest  # a prioritized list: the sub-requests already have the v1 shape
    rest["exactly"] = {k: request[k] for k in _EXACT_FIELDS if k in request}
    return rest


def _claim_spec(spec: Any) -> Any:
    if not isinstance(spec, dict) or not isinstance(spec.get("devices"), dict):
        return spec
    devices = spec["devices"]
    requests = devices.get("requests")
    if not isinstance(requests, list):
        return spec
    return {**spec, "devices": {**devices, "requests": [_request(r) for r in requests]}}


def to_v1(obj: dict[str, Any], version: str) -> dict[str, Any]:
    """`obj` (a resource.k8s.io object served as `version`) in the resource.k8s.io/v1 shape."""
    if version == "v1":
        return obj
    out = {**obj, "apiVersion": f"{GROUP}/v1"}
    if version != "v1beta1":
        return out
    kind = obj.get("kind")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return out
    if kind == "ResourceSlice" and isinstance(spec.get("devices"), list):
        out["spec"] = {**spec, "devices": [_device(d) for d in spec["devices"]]}
    elif kind == "ResourceClaim":
        out["spec"] = _claim_spec(spec)
    elif kind == "ResourceClaimTemplate" and isinstance(spec.get("spec"), dict):
        out["spec"] = {**spec, "spec": _claim_spec(spec["spec"])}
    return out
