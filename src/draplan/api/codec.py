"""Kubernetes JSON form <-> typed objects, with (apiVersion, kind) registry and field paths."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec
import yaml

from draplan.api import (
    apps_v1,
    autoscaling,
    clusterapi,
    core_v1,
    draplan_v1alpha1,
    karpenter,
    kueue,
    policy_v1,
    resource_v1,
    resource_v1alpha3,
    scheduling,
)
from draplan.api.errors import BadInput
from draplan.api.meta import KubeStruct
from draplan.api.nodepool import slice_documents, substitute
from draplan.api.quantity import Quantity
from draplan.api.validation import validate

KubeObject = KubeStruct
T = TypeVar("T")

KINDS: dict[tuple[str, str], type[KubeStruct]] = {
    ("v1", "Node"): core_v1.Node,
    ("v1", "Pod"): core_v1.Pod,
    ("v1", "PodTemplate"): core_v1.PodTemplate,
    ("v1", "Namespace"): core_v1.Namespace,
    ("v1", "ConfigMap"): core_v1.ConfigMap,
    ("v1", "Binding"): core_v1.Binding,
    # Read for their selectors (PodTopologySpread's default constraints).
    ("v1", "Service"): core_v1.Service,
    ("v1", "ReplicationController"): core_v1.ReplicationController,
    ("apps/v1", "ReplicaSet"): apps_v1.ReplicaSet,
    ("apps/v1", "StatefulSet"): apps_v1.StatefulSet,
    ("resource.k8s.io/v1", "DeviceClass"): resource_v1.DeviceClass,
    ("resource.k8s.io/v1", "ResourceSlice"): resource_v1.ResourceSlice,
    ("resource.k8s.io/v1", "ResourceClaim"): resource_v1.ResourceClaim,
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): resource_v1.ResourceClaimTemplate,
    ("resource.k8s.io/v1", "DeviceTaintRule"): resource_v1.DeviceTaintRule,
    (
        "resource.k8s.io/v1alpha3",
        "ResourcePoolStatusRequest",
    ): resource_v1alpha3.ResourcePoolStatusRequest,
    ("scheduling.k8s.io/v1", "PriorityClass"): scheduling.PriorityClass,
    ("policy/v1", "PodDisruptionBudget"): policy_v1.PodDisruptionBudget,
    ("scheduling.k8s.io/v1alpha1", "Workload"): scheduling.WorkloadV1Alpha1,
    ("scheduling.k8s.io/v1alpha2", "Workload"): scheduling.WorkloadV1Alpha2,
    ("scheduling.k8s.io/v1alpha2", "PodGroup"): scheduling.PodGroupV1Alpha2,
    ("scheduling.k8s.io/v1alpha3", "Workload"): scheduling.WorkloadV1Alpha3,
    ("scheduling.k8s.io/v1alpha3", "PodGroup"): scheduling.PodGroupV1Alpha3,
    ("scheduling.k8s.io/v1beta1", "Workload"): scheduling.WorkloadV1Beta1,
    ("scheduling.k8s.io/v1beta1", "PodGroup"): scheduling.PodGroupV1Beta1,
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup"): scheduling.CoschedulingPodGroup,
    ("autoscaling.x-k8s.io/v1", "ProvisioningRequest"): autoscaling.ProvisioningRequest,
    ("kueue.x-k8s.io/v1beta1", "Workload"): kueue.KueueWorkloadV1Beta1,
    ("kueue.x-k8s.io/v1beta2", "Workload"): kueue.KueueWorkload,
    ("karpenter.sh/v1", "NodePool"): karpenter.KarpenterNodePool,
    ("karpenter.sh/v1", "NodeClaim"): karpenter.NodeClaim,
    # v1beta2 (CAPI 1.11+) keeps the fields read here where v1beta1 had them.
    ("cluster.x-k8s.io/v1beta2", "MachineDeployment"): clusterapi.MachineDeployment,
    ("cluster.x-k8s.io/v1beta1", "MachineDeployment"): clusterapi.MachineDeployment,
    ("cluster.x-k8s.io/v1beta2", "MachinePool"): clusterapi.MachinePool,
    ("cluster.x-k8s.io/v1beta1", "MachinePool"): clusterapi.MachinePool,
    ("draplan.io/v1alpha1", "NodePool"): draplan_v1alpha1.NodePool,
    ("draplan.io/v1alpha1", "SchedulerProfile"): draplan_v1alpha1.SchedulerProfile,
    ("draplan.io/v1alpha1", "Scenario"): draplan_v1alpha1.Scenario,
}

# Groups draplan reads in full: an unknown kind there is a mistake (or an API too new to
# judge), not another tool's object.
STRICT_GROUPS = frozenset({"draplan.io", "resource.k8s.io"})


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


_MODELLED = frozenset((group_of(v), k) for v, k in KINDS)


def is_modelled(api_version: object, kind: object) -> bool:
    """Whether draplan reads objects of this kind (in any version of its group). Objects
    without a usable apiVersion or kind count as modelled, so decoding reports them."""
    if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
        return True
    group = group_of(api_version)
    return group in STRICT_GROUPS or (group, kind) in _MODELLED


_PATH = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)


# Quantities by their text: a dump repeats a few amounts on every node, pod and device, and a
# Quantity is immutable, so one object serves them all. Bounded, then forgotten at once. It
# sits in front of Quantity.parse's own cache because the decoder's hook runs for every amount:
# a dict hit here, before the type checks and the call, saves 0.3-0.4 s on a 10,000-node dump.
_QUANTITIES: dict[str, Quantity] = {}
_QUANTITIES_KEPT = 1 << 14


def _dec_hook(tp: type, obj: Any) -> Any:
    if tp is Quantity:
        if type(obj) is str:
            known = _QUANTITIES.get(obj)
            if known is not None:
                return known
        if isinstance(obj, bool) or not isinstance(obj, str | int | float):
            raise ValueError(f"expected a quantity string, got {type(obj).__name__}")
        text = repr(obj) if isinstance(obj, float) else obj
        try:
            value = Quantity.parse(text)
        except ValueError as err:
            raise ValueError(f"invalid quantity {text!r}: {err}") from None
        if type(obj) is str:
            if len(_QUANTITIES) >= _QUANTITIES_KEPT:
                _QUANTITIES.clear()
            _QUANTITIES[obj] = value
        return value
    raise NotImplementedError(tp)


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, Quantity):
        return str(obj)
    raise NotImplementedError(type(obj))


def _split_error(err: msgspec.ValidationError) -> tuple[str, str]:
    """The message and msgspec's raw path (`.spec.devices[0].capacity[...].value`)."""
    m = _PATH.match(str(err))
    assert m is not None
    msg = m.group("msg").replace("`", "")
    return (msg[:1].lower() + msg[1:]), m.group("path") or ""


_SEGMENT = re.compile(r"\.(?P<field>[^.\[]+)|\[(?P<index>\d+)\]|\[\.\.\.\]")
_MISSING = object()


def _get(obj: Any, trail: list[Any]) -> Any:
    for step in trail:
        if isinstance(obj, list):
            found = isinstance(step, int) and 0 <= step < len(obj)
        else:
            found = isinstance(obj, dict) and step in obj
        if not found:
            return _MISSING
        obj = obj[step]
    return obj


def _replace(obj: Any, trail: list[Any], value: Any) -> Any:
    """A copy of `obj` with the value at `trail` replaced (only the containers on the way)."""
    if not trail:
        return value
    head, rest = trail[0], trail[1:]
    if isinstance(obj, list) and isinstance(head, int):
        return [*obj[:head], _replace(obj[head], rest, value), *obj[head + 1 :]]
    return {**obj, head: _replace(obj[head], rest, value)}


def _field_path(obj: Any, cls: type[KubeStruct], raw_path: str, error: str) -> str:
    """The field path with map keys named: msgspec writes `[...]` for every key, so each key
    is found by converting again with only that entry left (on the error path only)."""
    out: list[str] = []
    trail: list[Any] = []  # keys and indexes from the root
    lost = False
    for m in _SEGMENT.finditer(raw_path):
        if m.group("field") is not None:
            out.append(f".{m.group('field')}")
            trail.append(m.group("field"))
            continue
        if m.group("index") is not None:
            out.append(f"[{m.group('index')}]")
            trail.append(int(m.group("index")))
            continue
        mapping = _MISSING if lost else _get(obj, trail)
        key: Any = _MISSING
        if isinstance(mapping, dict):
            for k, v in mapping.items():
                candidate = _replace(obj, trail, {k: v})
                try:
                    msgspec.convert(candidate, cls, dec_hook=_dec_hook)
                except msgspec.ValidationError as err:
                    if str(err) == error:
                        key, obj = k, candidate
                        break
        if key is _MISSING:
            lost = True
            out.append("[*]")
        else:
            out.append(f"[{key}]")
            trail.append(key)
    return "".join(out).lstrip(".")


def _not_a_name(value: Any) -> str:
    if value is None or value == "":
        return "missing required field"
    return f"expected a non-empty string, got {type(value).__name__}"


def header(obj: Any, source: str = "") -> tuple[str, str, str]:
    """apiVersion, kind and name of an object in JSON form, the first two non-empty strings
    (every reader checks this before it looks an object up by kind)."""
    if not isinstance(obj, dict):
        raise BadInput(f"expected an object, got {type(obj).__name__}", source=source)
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    meta = obj.get("metadata")
    name = meta.get("name", "") if isinstance(meta, dict) else ""
    name = name if isinstance(name, str) else ""  # not a name: decoding reports it
    if not isinstance(kind, str) or not kind:
        raise BadInput(_not_a_name(kind), source=source, name=name, path="kind")
    if not isinstance(api_version, str) or not api_version:
        raise BadInput(
            _not_a_name(api_version), source=source, kind=kind, name=name, path="apiVersion"
        )
    return api_version, kind, name


def decode(obj: Any, *, source: str = "") -> KubeStruct:
    """Turn one Kubernetes object in JSON form into its typed value, validated."""
    api_version, kind, name = header(obj, source)
    cls = KINDS.get((api_version, kind))
    if cls is None:
        known = sorted(v for (v, k) in KINDS if k == kind)
        same_group = [v for v in known if group_of(v) == group_of(api_version)]
        known = same_group or known
        if not known:
            raise BadInput(
                f"unsupported kind {kind!r} (apiVersion {api_version})",
                source=source,
                kind=kind,
                name=name,
                path="kind",
            )
        raise BadInput(
            f"unsupported apiVersion {api_version!r} for {kind}; supported: {', '.join(known)}",
            source=source,
            kind=kind,
            name=name,
            path="apiVersion",
        )
    try:
        value = msgspec.convert(obj, cls, dec_hook=_dec_hook)
    except msgspec.ValidationError as err:
        msg, raw_path = _split_error(err)
        path = _field_path(obj, cls, raw_path, str(err))
        raise BadInput(msg, source=source, kind=kind, name=name, path=path) from None
    return _validated(value, source, kind, name)


def _validated(value: KubeStruct, source: str, kind: str, name: str) -> KubeStruct:
    try:
        validate(value)
        if isinstance(value, draplan_v1alpha1.NodePool):
            _check_template_slices(value)
    except BadInput as err:
        raise err.located(source=source, kind=kind, name=name) from None
    return value


def json_decoder(tp: Any) -> msgspec.json.Decoder[Any]:
    """A decoder from JSON bytes straight to `tp` (quantities as `decode` reads them), for hot
    paths that then `validate` themselves; its errors carry no field path, so a caller falls
    back to `decode` for the message."""
    return msgspec.json.Decoder(tp, dec_hook=_dec_hook)


class _Head(msgspec.Struct, rename="camel"):
    api_version: Any = None
    kind: Any = None


_HEAD = msgspec.json.Decoder(_Head)
_TYPED: dict[type[KubeStruct], msgspec.json.Decoder[Any]] = {}


def decode_json(text: bytes | str | msgspec.Raw, *, source: str = "") -> KubeStruct | None:
    """One object's JSON text straight into its typed value, validated: `decode` without the
    intermediate dicts (a third of the time and memory on a big dump). None when the text is
    not an object of a known kind that decodes cleanly: `decode` then words the error."""
    try:
        head = _HEAD.decode(text)
    except (msgspec.DecodeError, RecursionError):  # not an object, or too deep for msgspec
        return None
    api_version, kind = head.api_version, head.kind
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    cls = KINDS.get((api_version, kind))
    if cls is None:
        return None
    decoder = _TYPED.get(cls)
    if decoder is None:
        decoder = _TYPED[cls] = msgspec.json.Decoder(cls, dec_hook=_dec_hook)
    try:
        value = decoder.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None
    meta = getattr(value, "metadata", None)
    return _validated(value, source, kind, getattr(meta, "name", ""))


# Any valid node name: the template's slices are checked as a new node's would be.
_SOME_NODE = "node-0"


def _check_template_slices(pool: draplan_v1alpha1.NodePool) -> None:
    """A NodePool's `spec.resourceSlices` are validated exactly as real ResourceSlices."""
    specs = [to_builtins(s) for s in pool.spec.resource_slices]
    for i, doc in enumerate(slice_documents(specs)):
        try:
            decode(substitute(doc, _SOME_NODE))
        except BadInput as err:
            inner = err.path.removeprefix("spec").lstrip(".")
            path = f"spec.resourceSlices[{i}]" + (f".{inner}" if inner else "")
            raise BadInput(err.message, path=path) from None


_JSON_ENCODER = msgspec.json.Encoder(enc_hook=_enc_hook)
_JSON_DECODER = msgspec.json.Decoder()


def convert(obj: Any, tp: type[T]) -> T:
    """A nested API value (not a whole object) from JSON form; errors as BadInput."""
    try:
        return msgspec.convert(obj, tp, dec_hook=_dec_hook)
    except msgspec.ValidationError as err:
        msg, path = _split_error(err)
        raise BadInput(msg, path=path) from None


def encode(obj: KubeStruct) -> dict[str, Any]:
    """Kubernetes JSON form: apiVersion and kind first, empty fields omitted."""
    body = to_builtins(obj)
    assert isinstance(body, dict)
    head = {"apiVersion": getattr(obj, "api_version", ""), "kind": getattr(obj, "kind", "")}
    body.pop("apiVersion", None)
    body.pop("kind", None)
    return {**head, **body}


def to_builtins(value: Any) -> Any:
    """Any API value (or container of them) in JSON form: dicts, lists, strings, numbers.

    Through JSON rather than `msgspec.to_builtins`, which keeps tuples as tuples: the result
    must equal what a JSON parser gives for the same object.
    """
    return _JSON_DECODER.decode(_JSON_ENCODER.encode(value))


class _NoAliasDumper(yaml.SafeDumper):
    """YAML without anchors and aliases: a value shared by two places is written twice, as
    kubectl writes it."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def json_text(doc: Any) -> str:
    """A document as `-o json` prints it (and `draplan serve` sends it): `json.dumps(indent=2)`.

    json.dumps indents in Python, a third as fast as compactly in C; msgspec re-indents the
    compact text, changing whitespace only. It refuses what is not strict JSON (NaN, a lone
    surrogate): that is left to json.dumps.
    """
    compact = json.dumps(doc)
    try:
        return msgspec.json.format(compact.encode(), indent=2).decode() + "\n"
    except msgspec.DecodeError:
        return json.dumps(doc, indent=2) + "\n"


def yaml_text(docs: Sequence[Any]) -> str:
    """Documents as YAML, keys in their order, never an anchor."""
    return yaml.dump_all(
        list(docs), Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=False
    )
