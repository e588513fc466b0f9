"""Kubernetes JSON form <-> typed objects, with (apiVersion, kind) registry and field paths."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from draplan.api import autoscaling, core_v1, draplan_v1alpha1, resource_v1, scheduling
from draplan.api.errors import BadInput
from draplan.api.meta import KubeStruct
from draplan.api.quantity import Quantity
from draplan.api.validation import validate

KubeObject = KubeStruct

KINDS: dict[tuple[str, str], type[KubeStruct]] = {
    ("v1", "Node"): core_v1.Node,
    ("v1", "Pod"): core_v1.Pod,
    ("v1", "PodTemplate"): core_v1.PodTemplate,
    ("v1", "Namespace"): core_v1.Namespace,
    ("resource.k8s.io/v1", "DeviceClass"): resource_v1.DeviceClass,
    ("resource.k8s.io/v1", "ResourceSlice"): resource_v1.ResourceSlice,
    ("resource.k8s.io/v1", "ResourceClaim"): resource_v1.ResourceClaim,
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): resource_v1.ResourceClaimTemplate,
    ("scheduling.k8s.io/v1", "PriorityClass"): scheduling.PriorityClass,
    ("scheduling.k8s.io/v1alpha1", "Workload"): scheduling.WorkloadV1Alpha1,
    ("scheduling.k8s.io/v1alpha2", "Workload"): scheduling.WorkloadV1Alpha2,
    ("scheduling.k8s.io/v1alpha2", "PodGroup"): scheduling.PodGroupV1Alpha2,
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup"): scheduling.CoschedulingPodGroup,
    ("autoscaling.x-k8s.io/v1", "ProvisioningRequest"): autoscaling.ProvisioningRequest,
    ("draplan.io/v1alpha1", "NodePool"): draplan_v1alpha1.NodePool,
}

_PATH = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)


def _dec_hook(tp: type, obj: Any) -> Any:
    if tp is Quantity:
        if isinstance(obj, bool) or not isinstance(obj, str | int | float):
            raise ValueError(f"expected a quantity string, got {type(obj).__name__}")
        text = repr(obj) if isinstance(obj, float) else obj
        return Quantity.parse(text)
    raise NotImplementedError(tp)


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, Quantity):
        return str(obj)
    raise NotImplementedError(type(obj))


def _split_error(err: msgspec.ValidationError) -> tuple[str, str]:
    m = _PATH.match(str(err))
    assert m is not None
    path = (m.group("path") or "").lstrip(".").replace("[...]", "[*]")
    msg = m.group("msg").replace("`", "")
    return (msg[:1].lower() + msg[1:]), path


def decode(obj: Any, *, source: str = "") -> KubeStruct:
    """Turn one Kubernetes object in JSON form into its typed value, validated."""
    if not isinstance(obj, dict):
        raise BadInput(f"expected an object, got {type(obj).__name__}", source=source)
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    meta = obj.get("metadata")
    name = str(meta.get("name", "")) if isinstance(meta, dict) else ""
    if not isinstance(kind, str) or not kind:
        raise BadInput("missing required field", source=source, name=name, path="kind")
    if not isinstance(api_version, str) or not api_version:
        raise BadInput(
            "missing required field", source=source, kind=kind, name=name, path="apiVersion"
        )
    cls = KINDS.get((api_version, kind))
    if cls is None:
        known = sorted(v for (v, k) in KINDS if k == kind)
        hint = f"; supported: {', '.join(known)}" if known else ""
        raise BadInput(
            f"unsupported apiVersion/kind {api_version}/{kind}{hint}",
            source=source,
            kind=kind,
            name=name,
            path="apiVersion",
        )
    try:
        value = msgspec.convert(obj, cls, dec_hook=_dec_hook)
    except msgspec.ValidationError as err:
        msg, path = _split_error(err)
        raise BadInput(msg, source=source, kind=kind, name=name, path=path) from None
    try:
        validate(value)
    except BadInput as err:
        raise err.located(source=source, kind=kind, name=name) from None
    return value


def encode(obj: KubeStruct) -> dict[str, Any]:
    """Kubernetes JSON form: apiVersion and kind first, empty fields omitted."""
    body = msgspec.to_builtins(obj, enc_hook=_enc_hook)
    assert isinstance(body, dict)
    head = {"apiVersion": getattr(obj, "api_version", ""), "kind": getattr(obj, "kind", "")}
    body.pop("apiVersion", None)
    body.pop("kind", None)
    return {**head, **body}


def to_builtins(value: Any) -> Any:
    """Any API value (or container of them) in JSON form."""
    return msgspec.to_builtins(value, enc_hook=_enc_hook)
