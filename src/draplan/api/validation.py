"""The API-server validation rules that change allocation behaviour (dra-semantics §1.7, §1.8).

Each rule raises BadInput with the field path of the offending value; the caller adds the file
and the object.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Hashable, Iterable
from typing import TypeVar

from draplan.api import (
    apps_v1,
    autoscaling,
    clusterapi,
    core_v1,
    draplan_v1alpha1,
    karpenter,
    policy_v1,
    resource_v1,
    resource_v1alpha3,
    scheduling,
)
from draplan.api.errors import BadInput, quote
from draplan.api.meta import KubeStruct, LabelSelector, ObjectMeta
from draplan.api.quantity import Quantity

H = TypeVar("H", bound=Hashable)

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# apimachinery's IsQualifiedName (name part) and IsValidLabelValue.
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Semantic Versioning 2.0.0, strict (no "v" prefix), as resource.k8s.io validates `version`.
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)

# resource.k8s.io/v1 limits (Kubernetes 1.35 constants).
MAX_DEVICES_PER_SLICE = 128
MAX_DEVICES_PER_SLICE_WITH_TAINTS_OR_COUNTERS = 64
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_ATTRIBUTE_VALUE_LENGTH = 64
MAX_DOMAIN_LENGTH = 63
MAX_ID_LENGTH = 32
MAX_COUNTER_SETS = 8
MAX_COUNTERS_PER_SET = 32
MAX_COUNTER_CONSUMPTIONS_PER_DEVICE = 2
MAX_TAINTS = 16
MAX_COMPATIBILITY_GROUPS = 2  # DRADeviceCompatibilityGroups, 1.37
# KEP-5055: "None" (1.35+) records a taint without effect, e.g. to try a rule before NoExecute.
DEVICE_TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")
MAX_TOLERATIONS = 16
MAX_BINDING_CONDITIONS = 4
MAX_REQUESTS = 32  # DeviceRequestsMaxSize == AllocationResultsMaxSize
MAX_CONSTRAINTS = 32
MAX_CONFIGS = 32
MAX_SELECTORS = 32
MAX_SUBREQUESTS = 8
MAX_CEL_LENGTH = 10 * 1024
MAX_VALID_VALUES = 10
MAX_POOL_NAME_LENGTH = 253
MAX_RESERVED_FOR = 256
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_LABEL_VALUE_LENGTH = 63
# A ProvisioningRequest stands for count pods of each pod set, and draplan builds each one.
MAX_PROVISIONING_PODS = 100_000
TAINT_EFFECTS = ("None", "NoSchedule", "NoExecute")


def fail(path: str, message: str) -> BadInput:
    return BadInput(message, path=path)


def check_dns_label(value: str, path: str) -> None:
    if not value or len(value) > 63 or not DNS_LABEL.match(value):
        raise fail(path, f"invalid value {quote(value)}: must be a DNS label (RFC 1123)")


def check_dns_subdomain(value: str, path: str, limit: int = 253) -> None:
    if not value or len(value) > limit or not DNS_SUBDOMAIN.match(value):
        raise fail(
            path, f"invalid value {quote(value)}: must be a DNS subdomain of at most {limit}"
        )


def check_label_key(key: str, path: str) -> None:
    """A label or annotation key: apimachinery's IsQualifiedName, `[prefix/]name`."""
    prefix, sep, name = key.rpartition("/")
    ok = len(name) <= 63 and QUALIFIED_NAME.match(name) is not None and "/" not in prefix
    if ok and sep:
        ok = 0 < len(prefix) <= 253 and DNS_SUBDOMAIN.match(prefix) is not None
    if not ok:
        raise fail(
            path,
            f"invalid key {quote(key)}: must be an optional DNS subdomain and '/', then at most "
            "63 alphanumeric characters, '-', '_' or '.', starting and ending alphanumeric",
        )


def check_label_value(value: str, path: str) -> None:
    """apimachinery's IsValidLabelValue."""
    if value and (len(value) > MAX_LABEL_VALUE_LENGTH or not QUALIFIED_NAME.match(value)):
        raise fail(
            path,
            f"invalid value {quote(value)}: must be at most 63 alphanumeric characters, '-', "
            "'_' or '.', starting and ending alphanumeric",
        )


def check_labels(labels: dict[str, str], path: str) -> None:
    for pair in labels.items():
        # A cluster repeats a few label pairs on every node and pod: each is checked once.
        if pair in _LABELS:
            continue
        key, value = pair
        check_label_key(key, f"{path}[{key}]")
        check_label_value(value, f"{path}[{key}]")
        _remember(_LABELS, pair)


def check_metadata(meta: ObjectMeta, kind: str) -> None:
    """ObjectMeta as the API server validates it: the name a DNS subdomain (a Namespace's a
    DNS label), the namespace a DNS label, label and annotation keys qualified names."""
    if meta.name:
        if kind == "Namespace":
            check_dns_label(meta.name, "metadata.name")
        else:
            check_dns_subdomain(meta.name, "metadata.name")
    if meta.namespace and meta.namespace not in _NAMES:
        check_dns_label(meta.namespace, "metadata.namespace")
        _remember(_NAMES, meta.namespace)
    if meta.labels:
        check_labels(meta.labels, "metadata.labels")
    for key in meta.annotations:
        if key not in _KEYS:
            check_label_key(key, f"metadata.annotations[{key}]")
            _remember(_KEYS, key)


def _remember(memory: set[H], value: H) -> None:
    """Keep `value` as found valid; a memory holding _ATTRIBUTES_KEPT starts over."""
    if len(memory) >= _ATTRIBUTES_KEPT:
        memory.clear()
    memory.add(value)


def check_quantities(resources: dict[str, Quantity], path: str) -> None:
    """ValidateResourceQuantityValue: no resource amount is negative."""
    for name, value in resources.items():
        if value.sign() < 0:
            raise fail(f"{path}[{name}]", "must be greater than or equal to 0")


def _negative(resources: dict[str, Quantity]) -> bool:
    """Whether `check_quantities` has something to say (its path is built only then)."""
    return any(q.sign() < 0 for q in resources.values())


def check_qualified_name(name: str, path: str, *, domain_required: bool = False) -> None:
    """`id` (driver's domain implied) or `domain/id` (resource.k8s.io QualifiedName)."""
    if (name, domain_required) in _QUALIFIED_NAMES:
        return
    domain, _, ident = name.rpartition("/")
    if domain_required and not domain:
        raise fail(path, f"invalid value {name!r}: a fully qualified name (domain/id) is required")
    if domain:
        check_dns_subdomain(domain, path, MAX_DOMAIN_LENGTH)
    if not ident or len(ident) > MAX_ID_LENGTH or not C_IDENTIFIER.match(ident):
        raise fail(path, f"invalid value {name!r}: the id must be a C identifier of at most 32")
    _QUALIFIED_NAMES.add((name, domain_required))


# Names found valid: a dump repeats the same few attribute names on every device.
_QUALIFIED_NAMES: set[tuple[str, bool]] = set()
# Versions found valid (semver's regular expression is the slowest check on a device).
_VERSIONS: set[str] = set()
# Attributes found valid: every device of a model repeats most of its attributes. Bounded, as
# a long-running process sees unique values (UUIDs) come and go.
_ATTRIBUTES: set[tuple[str, resource_v1.DeviceAttribute]] = set()
_ATTRIBUTES_KEPT = 1 << 16
_LABELS: set[tuple[str, str]] = set()  # label pairs found valid (bounded like _ATTRIBUTES)
_DEVICE_NAMES: set[str] = set()  # device names found valid (bounded like _ATTRIBUTES)
_NAMES: set[str] = set()  # namespaces found valid DNS labels (bounded like _ATTRIBUTES)
_KEYS: set[str] = set()  # annotation keys found valid (bounded like _ATTRIBUTES)


def check_max(items: Collection[object], limit: int, path: str) -> None:
    n = len(items)
    if n > limit:
        raise fail(path, f"too many: {n}, must have at most {limit} items")


def check_unique(names: Iterable[str], path: str) -> None:
    """No name twice (hot callers test for two items first: most of their lists hold one)."""
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise fail(f"{path}[{i}]", f"duplicate value {name!r}")
        seen.add(name)


def check_node_selector(sel: core_v1.NodeSelector, path: str, *, one_term: bool) -> None:
    terms = sel.node_selector_terms
    if one_term and len(terms) != 1:
        raise fail(f"{path}.nodeSelectorTerms", f"must have exactly one term, got {len(terms)}")
    for i, term in enumerate(terms):
        for field, reqs in (
            ("matchExpressions", term.match_expressions),
            ("matchFields", term.match_fields),
        ):
            for j, req in enumerate(reqs):
                check_node_selector_requirement(req, f"{path}.nodeSelectorTerms[{i}].{field}[{j}]")


NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def check_node_selector_requirement(req: core_v1.NodeSelectorRequirement, path: str) -> None:
    if req.operator not in NODE_SELECTOR_OPERATORS:
        raise fail(f"{path}.operator", f"unsupported value {req.operator!r}")
    if req.operator in ("In", "NotIn") and not req.values:
        raise fail(f"{path}.values", "must be specified when operator is In or NotIn")
    if req.operator in ("Exists", "DoesNotExist") and req.values:
        raise fail(f"{path}.values", "may not be specified when operator is Exists or DoesNotExist")
    if req.operator in ("Gt", "Lt"):
        if len(req.values) != 1:
            raise fail(f"{path}.values", "must have exactly one value when operator is Gt or Lt")
        try:
            int(req.values[0])
        except ValueError:
            raise fail(f"{path}.values[0]", "must be an integer for Gt or Lt") from None


def check_cel(sel: resource_v1.DeviceSelector, path: str) -> None:
    if sel.cel is None:
        raise fail(path, "exactly one of cel is required")
    expr = sel.cel.expression
    if not expr.strip():
        raise fail(f"{path}.cel.expression", "required value")
    if len(expr) > MAX_CEL_LENGTH:
        raise fail(f"{path}.cel.expression", f"may not be longer than {MAX_CEL_LENGTH}")


# --- ResourceSlice -------------------------------------------------------------------------


def validate_resource_slice(rs: resource_v1.ResourceSlice) -> None:
    spec = rs.spec
    check_dns_subdomain(spec.driver, "spec.driver", MAX_DOMAIN_LENGTH)
    pool = spec.pool
    if not pool.name or len(pool.name) > MAX_POOL_NAME_LENGTH:
        raise fail("spec.pool.name", "required, at most 253 characters")
    for part in pool.name.split("/"):
        check_dns_subdomain(part, "spec.pool.name")
    if pool.generation < 0:
        raise fail("spec.pool.generation", "must be greater than or equal to 0")
    if pool.resource_slice_count <= 0:
        raise fail("spec.pool.resourceSliceCount", "must be greater than zero")
    chosen = [
        name
        for name, on in (
            ("nodeName", bool(spec.node_name)),
            ("nodeSelector", spec.node_selector is not None),
            ("allNodes", spec.all_nodes is not None),
            ("perDeviceNodeSelection", spec.per_device_node_selection is not None),
        )
        if on
    ]
    if len(chosen) != 1:
        what = ", ".join(chosen) if chosen else "none"
        raise fail(
            "spec",
            "exactly one of nodeName, nodeSelector, allNodes, "
            f"perDeviceNodeSelection is required (got {what})",
        )
    if spec.all_nodes is False:
        raise fail("spec.allNodes", "may only be true")
    if spec.per_device_node_selection is False:
        raise fail("spec.perDeviceNodeSelection", "may only be true")
    if spec.node_name:
        check_dns_subdomain(spec.node_name, "spec.nodeName")
    if spec.node_selector is not None:
        check_node_selector(spec.node_selector, "spec.nodeSelector", one_term=True)
    if spec.devices and spec.shared_counters:
        raise fail("spec", "devices and sharedCounters are mutually exclusive (resource.k8s.io/v1)")
    check_max(spec.shared_counters, MAX_COUNTER_SETS, "spec.sharedCounters")
    if len(spec.shared_counters) > 1:
        check_unique((c.name for c in spec.shared_counters), "spec.sharedCounters")
    for i, cs in enumerate(spec.shared_counters):
        path = f"spec.sharedCounters[{i}]"
        check_dns_label(cs.name, f"{path}.name")
        if not cs.counters:
            raise fail(f"{path}.counters", "required value")
        check_max(cs.counters, MAX_COUNTERS_PER_SET, f"{path}.counters")
        for cname in cs.counters:
            check_dns_label(cname, f"{path}.counters[{cname}]")
    heavy = any(d.taints or d.consumes_counters for d in spec.devices)
    limit = MAX_DEVICES_PER_SLICE_WITH_TAINTS_OR_COUNTERS if heavy else MAX_DEVICES_PER_SLICE
    check_max(spec.devices, limit, "spec.devices")
    check_unique((d.name for d in spec.devices), "spec.devices")
    per_device = spec.per_device_node_selection is True
    for i, dev in enumerate(spec.devices):
        if per_device or not _plain_device(dev):
            validate_device(dev, f"spec.devices[{i}]", per_device)


def _plain_device(dev: resource_v1.Device) -> bool:
    """Whether the device is valid by what earlier devices showed valid: a name, attribute
    names and versions already checked, attributes holding one scalar each, capacities without
    a request policy, nothing else set. False sends it to `validate_device` (which words the
    error, if there is one); a GPU node's devices differ only in values checked here."""
    if (
        dev.name not in _DEVICE_NAMES
        or dev.consumes_counters
        or dev.taints
        or dev.node_name
        or dev.node_selector is not None
        or dev.all_nodes is not None
        or dev.binding_conditions
        or dev.binding_failure_conditions
        or len(dev.attributes) + len(dev.capacity) > MAX_ATTRIBUTES_AND_CAPACITIES
    ):
        return False
    names = _QUALIFIED_NAMES
    for name, attr in dev.attributes.items():
        if (name, False) not in names or attr.ints is not None or attr.bools is not None:
            return False
        if attr.strings is not None or attr.versions is not None:
            return False
        text, number, flag, version = attr.string, attr.int_, attr.bool_, attr.version
        if text is not None:
            if number is not None or flag is not None or version is not None:
                return False
            if len(text) > MAX_ATTRIBUTE_VALUE_LENGTH:
                return False
        elif number is not None:
            if flag is not None or version is not None or not INT64_MIN <= number <= INT64_MAX:
                return False
        elif flag is not None:
            if version is not None:
                return False
        elif version is None or version not in _VERSIONS:
            return False
    for name, cap in dev.capacity.items():
        if cap.request_policy is not None or (name, False) not in names:
            return False
    return True


def validate_device(dev: resource_v1.Device, path: str, per_device: bool) -> None:
    check_dns_label(dev.name, f"{path}.name")
    if len(dev.attributes) + len(dev.capacity) > MAX_ATTRIBUTES_AND_CAPACITIES:
        raise fail(path, "attributes and capacity together may have at most 32 entries")
    for name, attr in dev.attributes.items():
        if (name, attr) in _ATTRIBUTES:
            continue
        apath = f"{path}.attributes[{name}]"
        check_qualified_name(name, apath)
        values = (attr.int_, attr.bool_, attr.string, attr.version)
        lists = (attr.ints, attr.bools, attr.strings, attr.versions)
        set_count = sum(v is not None for v in (*values, *lists))
        if set_count != 1:
            raise fail(apath, f"exactly one value must be specified, got {set_count}")
        if attr.int_ is not None and not INT64_MIN <= attr.int_ <= INT64_MAX:
            raise fail(f"{apath}.int", f"value {attr.int_} does not fit in int64")
        for text in (attr.string, attr.version):
            if text is not None and len(text) > MAX_ATTRIBUTE_VALUE_LENGTH:
                raise fail(apath, "value may not be longer than 64")
        if attr.version is not None and attr.version not in _VERSIONS:
            if not SEMVER.match(attr.version):
                raise fail(
                    f"{apath}.version", f"invalid value {attr.version!r}: must be semver 2.0.0"
                )
            _VERSIONS.add(attr.version)
        validate_list_attribute(attr, apath)
        _remember(_ATTRIBUTES, (name, attr))
    multi = dev.allow_multiple_allocations is True
    for name, cap in dev.capacity.items():
        cpath = f"{path}.capacity[{name}]"
        check_qualified_name(name, cpath)
        if cap.request_policy is not None:
            if not multi:
                raise fail(
                    f"{cpath}.requestPolicy", "forbidden unless allowMultipleAllocations is true"
                )
            validate_request_policy(cap, f"{cpath}.requestPolicy")
    check_max(
        dev.consumes_counters, MAX_COUNTER_CONSUMPTIONS_PER_DEVICE, f"{path}.consumesCounters"
    )
    check_unique((c.counter_set for c in dev.consumes_counters), f"{path}.consumesCounters")
    for j, cc in enumerate(dev.consumes_counters):
        if not cc.counters:
            raise fail(f"{path}.consumesCounters[{j}].counters", "required value")
        check_max(cc.counters, MAX_COUNTERS_PER_SET, f"{path}.consumesCounters[{j}].counters")
        gpath = f"{path}.consumesCounters[{j}].compatibilityGroups"
        check_max(cc.compatibility_groups, MAX_COMPATIBILITY_GROUPS, gpath)
        check_unique(cc.compatibility_groups, gpath)
    selection = [
        n
        for n, on in (
            ("nodeName", bool(dev.node_name)),
            ("nodeSelector", dev.node_selector is not None),
            ("allNodes", dev.all_nodes is not None),
        )
        if on
    ]
    if per_device and len(selection) != 1:
        raise fail(
            path,
            "exactly one of nodeName, nodeSelector, allNodes is required when "
            "perDeviceNodeSelection is set",
        )
    if not per_device and selection:
        raise fail(
            f"{path}.{selection[0]}", "may only be set when the slice has perDeviceNodeSelection"
        )
    if dev.node_selector is not None:
        check_node_selector(dev.node_selector, f"{path}.nodeSelector", one_term=True)
    check_max(dev.taints, MAX_TAINTS, f"{path}.taints")
    for j, taint in enumerate(dev.taints):
        validate_device_taint(taint, f"{path}.taints[{j}]")
    check_max(dev.binding_conditions, MAX_BINDING_CONDITIONS, f"{path}.bindingConditions")
    check_max(
        dev.binding_failure_conditions, MAX_BINDING_CONDITIONS, f"{path}.bindingFailureConditions"
    )
    _remember(_DEVICE_NAMES, dev.name)


def validate_list_attribute(attr: resource_v1.DeviceAttribute, path: str) -> None:
    """KEP-5491's list values: non-empty, each element valid as its scalar would be."""
    name = attr.list_field()
    items = attr.list_value()
    if items is None:
        return
    if not items:
        raise fail(f"{path}.{name}", "must not be empty")
    for k, item in enumerate(items):
        ipath = f"{path}.{name}[{k}]"
        if isinstance(item, int) and not isinstance(item, bool):
            if not INT64_MIN <= item <= INT64_MAX:
                raise fail(ipath, f"value {item} does not fit in int64")
        elif isinstance(item, str):
            if len(item) > MAX_ATTRIBUTE_VALUE_LENGTH:
                raise fail(ipath, "value may not be longer than 64")
            if name == "versions" and not SEMVER.match(item):
                raise fail(ipath, f"invalid value {item!r}: must be semver 2.0.0")


def validate_device_taint(taint: resource_v1.DeviceTaint, path: str) -> None:
    if not taint.key:
        raise fail(f"{path}.key", "required value")
    if taint.effect not in DEVICE_TAINT_EFFECTS:
        allowed = ", ".join(f'"{e}"' for e in DEVICE_TAINT_EFFECTS)
        raise fail(
            f"{path}.effect", f'Unsupported value: "{taint.effect}": supported values: {allowed}'
        )


def validate_device_taint_rule(rule: resource_v1.DeviceTaintRule) -> None:
    validate_device_taint(rule.spec.taint, "spec.taint")


def validate_request_policy(cap: resource_v1.DeviceCapacity, path: str) -> None:
    pol = cap.request_policy
    assert pol is not None
    value = cap.value
    if pol.valid_values and pol.valid_range is not None:
        raise fail(path, "validValues and validRange are mutually exclusive")
    if (pol.valid_values or pol.valid_range is not None) and pol.default is None:
        raise fail(f"{path}.default", "required when validValues or validRange is set")
    if pol.default is not None and pol.default > value:
        raise fail(f"{path}.default", "may not exceed the capacity value")
    if pol.valid_values:
        check_max(pol.valid_values, MAX_VALID_VALUES, f"{path}.validValues")
        for k, v in enumerate(pol.valid_values):
            if v > value:
                raise fail(f"{path}.validValues[{k}]", "may not exceed the capacity value")
            if k and v <= pol.valid_values[k - 1]:
                raise fail(f"{path}.validValues[{k}]", "must be sorted ascending and unique")
        if pol.default not in pol.valid_values:
            raise fail(f"{path}.validValues", "must contain the default")
    rng = pol.valid_range
    if rng is not None:
        assert pol.default is not None
        if rng.min is None:
            raise fail(f"{path}.validRange.min", "required value")
        if rng.min > value:
            raise fail(f"{path}.validRange.min", "may not exceed the capacity value")
        if pol.default < rng.min:
            raise fail(f"{path}.default", "must be at least validRange.min")
        if rng.max is not None:
            if rng.max > value:
                raise fail(f"{path}.validRange.max", "may not exceed the capacity value")
            if pol.default > rng.max:
                raise fail(f"{path}.default", "may not exceed validRange.max")
            if rng.max < rng.min:
                raise fail(f"{path}.validRange.max", "must be at least validRange.min")
        if rng.step is not None:
            if rng.step.sign() <= 0:
                raise fail(f"{path}.validRange.step", "must be greater than zero")
            if rng.min + rng.step > value:
                raise fail(f"{path}.validRange.step", "min + step may not exceed the value")
            step = rng.step.as_fraction()
            if (pol.default.as_fraction() - rng.min.as_fraction()) % step:
                raise fail(f"{path}.default", "must be min plus a multiple of step")
            if rng.max is not None and (rng.max.as_fraction() - rng.min.as_fraction()) % step:
                raise fail(f"{path}.validRange.max", "must be min plus a multiple of step")


# --- DeviceClass and ResourceClaim ---------------------------------------------------------


def validate_device_class(dc: resource_v1.DeviceClass) -> None:
    check_dns_subdomain(dc.metadata.name, "metadata.name")
    check_max(dc.spec.selectors, MAX_SELECTORS, "spec.selectors")
    for i, sel in enumerate(dc.spec.selectors):
        check_cel(sel, f"spec.selectors[{i}]")
    check_max(dc.spec.config, MAX_CONFIGS, "spec.config")


def _validate_tolerations(tols: tuple[resource_v1.DeviceToleration, ...], path: str) -> None:
    check_max(tols, MAX_TOLERATIONS, path)
    for i, tol in enumerate(tols):
        if tol.operator not in ("Exists", "Equal"):
            raise fail(f"{path}[{i}].operator", f"unsupported value {tol.operator!r}")
        if not tol.key and tol.operator != "Exists":
            raise fail(f"{path}[{i}].operator", "must be Exists when key is empty")
        if tol.operator == "Exists" and tol.value:
            raise fail(f"{path}[{i}].value", "must be empty when operator is Exists")
        if tol.effect not in ("", "NoSchedule", "NoExecute"):
            raise fail(f"{path}[{i}].effect", f"unsupported value {tol.effect!r}")


def _validate_exact(
    req: resource_v1.ExactDeviceRequest | resource_v1.DeviceSubRequest, path: str
) -> None:
    if not req.device_class_name:
        raise fail(f"{path}.deviceClassName", "required value")
    check_dns_subdomain(req.device_class_name, f"{path}.deviceClassName")
    check_max(req.selectors, MAX_SELECTORS, f"{path}.selectors")
    for i, sel in enumerate(req.selectors):
        check_cel(sel, f"{path}.selectors[{i}]")
    mode = req.allocation_mode or "ExactCount"
    if mode == "All":
        if req.count != 0:
            raise fail(f"{path}.count", "must not be set when allocationMode is All")
    elif mode == "ExactCount":
        if req.count < 0:
            raise fail(f"{path}.count", "must be greater than zero")
    else:
        raise fail(f"{path}.allocationMode", f"unsupported value {mode!r}: ExactCount or All")
    _validate_tolerations(req.tolerations, f"{path}.tolerations")
    if req.capacity is not None:
        for name in req.capacity.requests:
            check_qualified_name(name, f"{path}.capacity.requests[{name}]")


def validate_claim_spec(spec: resource_v1.ResourceClaimSpec, path: str) -> None:
    devices = spec.devices
    rpath = f"{path}.devices.requests"
    check_max(devices.requests, MAX_REQUESTS, rpath)
    if len(devices.requests) > 1:
        check_unique((r.name for r in devices.requests), rpath)
    refs: set[str] = set()
    for i, req in enumerate(devices.requests):
        p = f"{rpath}[{i}]"
        check_dns_label(req.name, f"{p}.name")
        refs.add(req.name)
        if (req.exactly is None) == (not req.first_available):
            raise fail(p, "exactly one of exactly or firstAvailable is required")
        if req.exactly is not None:
            _validate_exact(req.exactly, f"{p}.exactly")
            continue
        check_max(req.first_available, MAX_SUBREQUESTS, f"{p}.firstAvailable")
        check_unique((s.name for s in req.first_available), f"{p}.firstAvailable")
        for j, sub in enumerate(req.first_available):
            check_dns_label(sub.name, f"{p}.firstAvailable[{j}].name")
            _validate_exact(sub, f"{p}.firstAvailable[{j}]")
            refs.add(f"{req.name}/{sub.name}")
    cpath = f"{path}.devices.constraints"
    check_max(devices.constraints, MAX_CONSTRAINTS, cpath)
    for i, con in enumerate(devices.constraints):
        p = f"{cpath}[{i}]"
        if (con.match_attribute is None) == (con.distinct_attribute is None):
            raise fail(p, "exactly one of matchAttribute or distinctAttribute is required")
        attr = con.match_attribute or con.distinct_attribute or ""
        field = "matchAttribute" if con.match_attribute is not None else "distinctAttribute"
        check_qualified_name(attr, f"{p}.{field}", domain_required=True)
        for j, name in enumerate(con.requests):
            if name not in refs:
                raise fail(f"{p}.requests[{j}]", f"request {name!r} does not exist in this claim")
    gpath = f"{path}.devices.config"
    check_max(devices.config, MAX_CONFIGS, gpath)
    for i, cfg in enumerate(devices.config):
        for j, name in enumerate(cfg.requests):
            if name not in refs:
                raise fail(
                    f"{gpath}[{i}].requests[{j}]", f"request {name!r} does not exist in this claim"
                )


def validate_resource_claim(claim: resource_v1.ResourceClaim) -> None:
    validate_claim_spec(claim.spec, "spec")
    alloc = claim.status.allocation
    if alloc is not None:
        check_max(alloc.devices.results, MAX_REQUESTS, "status.allocation.devices.results")
        if alloc.node_selector is not None:
            check_node_selector(
                alloc.node_selector, "status.allocation.nodeSelector", one_term=False
            )
    check_max(claim.status.reserved_for, MAX_RESERVED_FOR, "status.reservedFor")


def validate_pod(pod: core_v1.Pod) -> None:
    for field, containers in (
        ("containers", pod.spec.containers),
        ("initContainers", pod.spec.init_containers),
    ):
        for c, container in enumerate(containers):
            res = container.resources
            if _negative(res.requests) or _negative(res.limits):
                path = f"spec.{field}[{c}].resources"
                check_quantities(res.requests, f"{path}.requests")
                check_quantities(res.limits, f"{path}.limits")
    for c, container in enumerate(pod.spec.init_containers):
        if container.restart_policy not in ("", "Always"):
            raise fail(
                f"spec.initContainers[{c}].restartPolicy",
                f'Unsupported value: {quote(container.restart_policy)}: supported values: "Always"',
            )
    if pod.spec.resources is not None:
        check_quantities(pod.spec.resources.requests, "spec.resources.requests")
        check_quantities(pod.spec.resources.limits, "spec.resources.limits")
    check_quantities(pod.spec.overhead, "spec.overhead")
    for i, rc in enumerate(pod.spec.resource_claims):
        if (rc.resource_claim_name is None) == (rc.resource_claim_template_name is None):
            raise fail(
                f"spec.resourceClaims[{i}]",
                "exactly one of resourceClaimName or resourceClaimTemplateName is required",
            )
    if len(pod.spec.resource_claims) > 1:
        check_unique((rc.name for rc in pod.spec.resource_claims), "spec.resourceClaims")
    if len(pod.spec.scheduling_gates) > 1:
        check_unique((g.name for g in pod.spec.scheduling_gates), "spec.schedulingGates")
    check_preemption_policy(pod.spec.preemption_policy, "spec.preemptionPolicy")
    names = {rc.name for rc in pod.spec.resource_claims}
    for c, container in enumerate(pod.spec.containers):
        for k, ref in enumerate(container.resources.claims):
            if ref.name not in names:
                raise fail(
                    f"spec.containers[{c}].resources.claims[{k}].name",
                    f"{ref.name!r} is not in spec.resourceClaims",
                )
    aff = pod.spec.affinity
    if (
        aff
        and aff.node_affinity
        and aff.node_affinity.required_during_scheduling_ignored_during_execution
    ):
        check_node_selector(
            aff.node_affinity.required_during_scheduling_ignored_during_execution,
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            one_term=False,
        )
    if aff is not None:
        for field, rules in (
            ("podAffinity", aff.pod_affinity),
            ("podAntiAffinity", aff.pod_anti_affinity),
        ):
            if rules is not None:
                _check_pod_affinity(rules, f"spec.affinity.{field}")
    _check_spread(pod.spec.topology_spread_constraints, "spec.topologySpreadConstraints")
    _check_ports(pod.spec)


def _check_pod_affinity(rules: core_v1.PodAffinity, path: str) -> None:
    required = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(rules.required_during_scheduling_ignored_during_execution):
        _check_affinity_term(term, f"{required}[{i}]")
    preferred = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, weighted in enumerate(rules.preferred_during_scheduling_ignored_during_execution):
        if not 1 <= weighted.weight <= 100:
            raise fail(f"{preferred}[{i}].weight", "must be in the range 1-100")
        _check_affinity_term(weighted.pod_affinity_term, f"{preferred}[{i}].podAffinityTerm")


def _check_affinity_term(term: core_v1.PodAffinityTerm, path: str) -> None:
    """core validation's validatePodAffinityTerm and ValidateMatchLabelKeysAndMismatchLabelKeys."""
    if term.label_selector is not None:
        check_label_selector(term.label_selector, f"{path}.labelSelector")
    if term.namespace_selector is not None:
        check_label_selector(term.namespace_selector, f"{path}.namespaceSelector")
    for i, ns in enumerate(term.namespaces):
        check_dns_label(ns, f"{path}.namespaces[{i}]")
    if not term.topology_key:
        raise fail(f"{path}.topologyKey", "can not be empty")
    check_label_key(term.topology_key, f"{path}.topologyKey")
    _check_label_keys(term.match_label_keys, term.label_selector, f"{path}.matchLabelKeys")
    _check_label_keys(term.mismatch_label_keys, term.label_selector, f"{path}.mismatchLabelKeys")
    both = set(term.match_label_keys) & set(term.mismatch_label_keys)
    if both:
        raise fail(
            f"{path}.matchLabelKeys",
            f"{quote(min(both))} exists in both matchLabelKeys and mismatchLabelKeys",
        )


def _check_label_keys(keys: tuple[str, ...], selector: LabelSelector | None, path: str) -> None:
    if keys and selector is None:
        raise fail(path, "must not be specified when labelSelector is not set")
    for i, key in enumerate(keys):
        check_label_key(key, f"{path}[{i}]")
    check_unique(keys, path)


SPREAD_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
INCLUSION_POLICIES = ("Honor", "Ignore")


def _check_spread(constraints: tuple[core_v1.TopologySpreadConstraint, ...], path: str) -> None:
    """core validation's validateTopologySpreadConstraints."""
    pairs: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        at = f"{path}[{i}]"
        if c.max_skew <= 0:
            raise fail(f"{at}.maxSkew", "must be greater than zero")
        if not c.topology_key:
            raise fail(f"{at}.topologyKey", "can not be empty")
        check_label_key(c.topology_key, f"{at}.topologyKey")
        if c.when_unsatisfiable not in SPREAD_ACTIONS:
            raise fail(f"{at}.whenUnsatisfiable", f"unsupported value {c.when_unsatisfiable!r}")
        if c.min_domains is not None:
            if c.min_domains <= 0:
                raise fail(f"{at}.minDomains", "must be greater than 0")
            if c.when_unsatisfiable != "DoNotSchedule":
                raise fail(
                    f"{at}.minDomains",
                    "can only use minDomains if whenUnsatisfiable=DoNotSchedule, "
                    f"not {c.when_unsatisfiable}",
                )
        pair = (c.topology_key, c.when_unsatisfiable)
        if pair in pairs:
            raise fail(at, f"duplicate value {{{c.topology_key}, {c.when_unsatisfiable}}}")
        pairs.add(pair)
        for field, policy in (
            ("nodeAffinityPolicy", c.node_affinity_policy),
            ("nodeTaintsPolicy", c.node_taints_policy),
        ):
            if policy is not None and policy not in INCLUSION_POLICIES:
                raise fail(f"{at}.{field}", f"unsupported value {policy!r}")
        if c.label_selector is not None:
            check_label_selector(c.label_selector, f"{at}.labelSelector")
        _check_label_keys(c.match_label_keys, c.label_selector, f"{at}.matchLabelKeys")


PROTOCOLS = ("TCP", "UDP", "SCTP")


def _check_ports(spec: core_v1.PodSpec) -> None:
    """validateContainerPorts, and no host port taken twice in the pod (checkHostPortConflicts)."""
    if not any(c.ports for c in spec.containers) and not any(c.ports for c in spec.init_containers):
        return
    taken: set[tuple[int, str]] = set()
    for field, containers in (
        ("initContainers", spec.init_containers),
        ("containers", spec.containers),
    ):
        for c, container in enumerate(containers):
            at = f"spec.{field}[{c}]"
            for p, port in enumerate(container.ports):
                path = f"{at}.ports[{p}]"
                if not 1 <= port.container_port <= 65535:
                    raise fail(f"{path}.containerPort", "must be between 1 and 65535, inclusive")
                if not 0 <= port.host_port <= 65535:
                    raise fail(f"{path}.hostPort", "must be between 1 and 65535, inclusive")
                protocol = port.protocol or "TCP"
                if protocol not in PROTOCOLS:
                    raise fail(f"{path}.protocol", f"unsupported value {port.protocol!r}")
                if port.host_port and field == "containers":
                    if (port.host_port, protocol) in taken:
                        raise fail(
                            f"{path}.hostPort", f"duplicate value {port.host_port}/{protocol}"
                        )
                    taken.add((port.host_port, protocol))


def validate_service(service: core_v1.Service) -> None:
    check_labels(service.spec.selector, "spec.selector")


def validate_replication_controller(rc: core_v1.ReplicationController) -> None:
    check_labels(rc.spec.selector, "spec.selector")


def validate_workload_selector(obj: apps_v1.ReplicaSet | apps_v1.StatefulSet) -> None:
    """apps validation: a selector is required, valid and not empty."""
    sel = obj.spec.selector
    if sel is None:
        raise fail("spec.selector", "required value")
    check_label_selector(sel, "spec.selector")
    if not sel.match_labels and not sel.match_expressions:
        raise fail("spec.selector", "empty selector is invalid")


def check_price(text: str, path: str) -> None:
    """A price per hour: a finite, non-negative decimal (NaN would poison every cost sum)."""
    try:
        price = float(text)
    except ValueError:
        raise fail(path, f"invalid number {text!r}") from None
    if not math.isfinite(price):
        raise fail(path, f"invalid number {text!r}")
    if price < 0:
        raise fail(path, "must not be negative")


def validate_node(node: core_v1.Node) -> None:
    text = node.metadata.labels.get(draplan_v1alpha1.PRICE_LABEL)
    if text is not None:
        check_price(text, f"metadata.labels[{draplan_v1alpha1.PRICE_LABEL}]")
    check_quantities(node.status.capacity, "status.capacity")
    check_quantities(node.status.allocatable, "status.allocatable")


def validate_node_pool(pool: draplan_v1alpha1.NodePool) -> None:
    spec = pool.spec
    if spec.min_nodes < 0:
        raise fail("spec.minNodes", "must be greater than or equal to 0")
    if spec.max_nodes < spec.min_nodes:
        raise fail("spec.maxNodes", "must be greater than or equal to minNodes")
    check_price(spec.price_per_hour, "spec.pricePerHour")
    if bool(spec.from_node) == (spec.template is not None):
        raise fail("spec", "exactly one of template or fromNode is required")
    for i, topo in enumerate(spec.topology):
        check_label_key(topo.key, f"spec.topology[{i}].key")
    if spec.template is not None:
        check_labels(spec.template.metadata.labels, "spec.template.metadata.labels")
        for key in spec.template.metadata.annotations:
            check_label_key(key, f"spec.template.metadata.annotations[{key}]")
        check_quantities(spec.template.status.capacity, "spec.template.status.capacity")
        check_quantities(spec.template.status.allocatable, "spec.template.status.allocatable")


def validate_scenario(scenario: draplan_v1alpha1.Scenario) -> None:
    """What `simulate` needs of a Scenario before it runs (the numbers' ranges are the types')."""
    spec = scenario.spec
    for i, policy in enumerate(spec.policies):
        if policy not in draplan_v1alpha1.SCENARIO_POLICIES:
            allowed = ", ".join(draplan_v1alpha1.SCENARIO_POLICIES)
            raise fail(f"spec.policies[{i}]", f"unknown policy {quote(policy)}; one of {allowed}")
    synthetic = spec.workload.synthetic
    weights = (synthetic.training, synthetic.finetune, synthetic.inference) if synthetic else ()
    if synthetic is not None and synthetic.jobs and sum(weights) <= 0:
        raise fail("spec.workload.synthetic", "training, finetune and inference weigh nothing")
    if synthetic is not None:
        check_dns_label(synthetic.namespace, "spec.workload.synthetic.namespace")
    replay = spec.workload.openb
    if replay is not None:
        path = "spec.workload.openb"
        if replay.end_seconds is not None and replay.end_seconds <= replay.start_seconds:
            raise fail(f"{path}.endSeconds", "must be after startSeconds")
        if replay.max_nodes is not None and replay.max_nodes < replay.min_nodes:
            raise fail(f"{path}.maxNodes", "must be greater than or equal to minNodes")
        if replay.cluster not in ("pools", "static"):
            raise fail(
                f"{path}.cluster", f"unsupported value {quote(replay.cluster)}: pools or static"
            )
        check_dns_label(replay.namespace, f"{path}.namespace")


def validate_scheduler_profile(profile: draplan_v1alpha1.SchedulerProfile) -> None:
    order = profile.spec.device_order
    if order not in ("tight", "first-fit"):
        raise fail("spec.deviceOrder", f"unsupported value {quote(order)}: tight or first-fit")


def validate_provisioning_request(pr: autoscaling.ProvisioningRequest) -> None:
    total = 0
    for i, pod_set in enumerate(pr.spec.pod_sets):
        if pod_set.count < 1:  # the CRD's minimum
            raise fail(f"spec.podSets[{i}].count", "must be greater than or equal to 1")
        total += pod_set.count
        if total > MAX_PROVISIONING_PODS:
            raise fail(
                f"spec.podSets[{i}].count",
                f"the request stands for more than {MAX_PROVISIONING_PODS} pods",
            )


def validate_karpenter_node_pool(pool: karpenter.KarpenterNodePool) -> None:
    """The karpenter.sh/v1 NodePool CRD's enums and CEL rules that change what it launches."""
    spec = pool.spec
    if spec.weight is not None and not 1 <= spec.weight <= 100:
        raise fail("spec.weight", "must be between 1 and 100")
    policy = spec.disruption.consolidation_policy
    if policy and policy not in karpenter.CONSOLIDATION_POLICIES:
        raise fail("spec.disruption.consolidationPolicy", f"unsupported value {policy!r}")
    _karpenter_disruption(spec.disruption)
    if spec.template.spec.expire_after and not _KARPENTER_AFTER.match(
        spec.template.spec.expire_after
    ):
        raise fail(
            "spec.template.spec.expireAfter",
            f"{spec.template.spec.expire_after!r} does not match {_KARPENTER_AFTER.pattern}",
        )
    template = spec.template.spec
    for i, req in enumerate(template.requirements):
        path = f"spec.template.spec.requirements[{i}]"
        if req.operator not in karpenter.OPERATORS:
            raise fail(f"{path}.operator", f"unsupported value {req.operator!r}")
        if req.operator == "In" and not req.values:
            raise fail(f"{path}.values", "requirements with operator 'In' must have a value")
        if req.operator in ("Gt", "Lt") and (
            len(req.values) != 1 or not req.values[0].lstrip("-").isdigit()
        ):
            raise fail(f"{path}.values", f"{req.operator} takes a single integer value")
        if req.min_values is not None and not 1 <= req.min_values <= 50:
            raise fail(f"{path}.minValues", "must be between 1 and 50")
    for field_name, taints in (
        ("taints", template.taints),
        ("startupTaints", template.startup_taints),
    ):
        for i, taint in enumerate(taints):
            if taint.effect not in karpenter.TAINT_EFFECTS:
                raise fail(
                    f"spec.template.spec.{field_name}[{i}].effect",
                    f"unsupported value {taint.effect!r}",
                )


# The CRD's patterns (pkg/apis/v1/nodepool.go): consolidateAfter and expireAfter, a budget's
# nodes and duration.
_KARPENTER_AFTER = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")
_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
_BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")
_BUDGET_SCHEDULE = re.compile(
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
)


def _karpenter_disruption(disruption: karpenter.Disruption) -> None:
    after = disruption.consolidate_after
    if after and not _KARPENTER_AFTER.match(after):
        raise fail(
            "spec.disruption.consolidateAfter",
            f"{after!r} does not match {_KARPENTER_AFTER.pattern}",
        )
    if len(disruption.budgets) > 50:
        raise fail("spec.disruption.budgets", "must have at most 50 items")
    for i, budget in enumerate(disruption.budgets):
        path = f"spec.disruption.budgets[{i}]"
        if not _BUDGET_NODES.match(budget.nodes):
            raise fail(f"{path}.nodes", f"{budget.nodes!r} does not match {_BUDGET_NODES.pattern}")
        if bool(budget.schedule) != bool(budget.duration):
            raise fail(path, "'schedule' must be set with 'duration'")
        if budget.schedule and not _BUDGET_SCHEDULE.match(budget.schedule):
            raise fail(f"{path}.schedule", f"{budget.schedule!r} is not a cron schedule")
        if budget.duration and not _BUDGET_DURATION.match(budget.duration):
            raise fail(
                f"{path}.duration",
                f"{budget.duration!r} does not match {_BUDGET_DURATION.pattern}",
            )
        for j, reason in enumerate(budget.reasons):
            if reason not in karpenter.DISRUPTION_REASONS:
                raise fail(f"{path}.reasons[{j}]", f"unsupported value {reason!r}")


def _annotation_int(notes: dict[str, str], key: str) -> int | None:
    text = notes.get(key)
    if text is None or text == "":
        return None
    if not text.strip().isdigit():
        raise fail(f"metadata.annotations[{key}]", f"{text!r} is not a non-negative integer")
    return int(text)


def validate_scalable_resource(resource: clusterapi.ScalableResource) -> None:
    """Cluster Autoscaler's clusterapi annotations: sizes, capacity quantities, taints."""
    notes = resource.metadata.annotations
    low = _annotation_int(notes, clusterapi.MIN_SIZE) or 0
    high = _annotation_int(notes, clusterapi.MAX_SIZE)
    if high is not None and high < low:
        raise fail(f"metadata.annotations[{clusterapi.MAX_SIZE}]", "must not be below min-size")
    for key in (clusterapi.CPU, clusterapi.MEMORY, clusterapi.EPHEMERAL_DISK):
        if notes.get(key):
            try:
                Quantity.parse(notes[key])
            except ValueError:
                raise fail(
                    f"metadata.annotations[{key}]", f"invalid quantity {notes[key]!r}"
                ) from None
    for key in (clusterapi.GPU_COUNT, clusterapi.MAX_PODS):
        _annotation_int(notes, key)


def validate_workload_v1alpha1(w: scheduling.WorkloadV1Alpha1) -> None:
    for i, group in enumerate(w.spec.pod_groups):
        if group.policy.gang is not None and group.policy.gang.min_count < 1:
            raise fail(f"spec.podGroups[{i}].policy.gang.minCount", "must be at least 1")


def validate_workload_templates(
    w: scheduling.WorkloadV1Alpha2 | scheduling.WorkloadV1Beta1,
) -> None:
    for i, group in enumerate(w.spec.pod_group_templates):
        gang = group.scheduling_policy.gang
        if gang is not None and gang.min_count < 1:
            raise fail(
                f"spec.podGroupTemplates[{i}].schedulingPolicy.gang.minCount", "must be at least 1"
            )


def validate_pod_group_v1beta1(pg: scheduling.PodGroupV1Beta1) -> None:
    gang = pg.spec.scheduling_policy.gang
    if gang is not None and gang.min_count < 1:
        raise fail("spec.schedulingPolicy.gang.minCount", "must be at least 1")


PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
# scheduling.HighestUserDefinablePriority; only the built-in system classes are above it.
HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
UNHEALTHY_POD_EVICTION_POLICIES = ("IfHealthyBudget", "AlwaysAllow")
PERCENT = re.compile(r"^[0-9]+%$")


def check_preemption_policy(policy: str, path: str) -> None:
    if policy and policy not in PREEMPTION_POLICIES:
        raise fail(path, f"unsupported value {quote(policy)}: {' or '.join(PREEMPTION_POLICIES)}")


def validate_priority_class(pc: scheduling.PriorityClass) -> None:
    """ValidatePriorityClass: the "system-" prefix is the built-in classes' alone, and other
    classes stay at or below the highest user-definable priority."""
    name = pc.metadata.name
    if name.startswith("system-"):
        if SYSTEM_PRIORITY_CLASSES.get(name) != pc.value:
            raise fail("metadata.name", "the 'system-' prefix is reserved for the built-in classes")
    elif pc.value > HIGHEST_USER_PRIORITY:
        raise fail("value", f"must be at most {HIGHEST_USER_PRIORITY} for a user-defined class")
    check_preemption_policy(pc.preemption_policy, "preemptionPolicy")


def check_label_selector(sel: LabelSelector, path: str) -> None:
    """metav1 ValidateLabelSelector: valid labels, known operators, values only (and always)
    for In and NotIn."""
    check_labels(sel.match_labels, f"{path}.matchLabels")
    for i, req in enumerate(sel.match_expressions):
        at = f"{path}.matchExpressions[{i}]"
        check_label_key(req.key, f"{at}.key")
        if req.operator not in SELECTOR_OPERATORS:
            raise fail(
                f"{at}.operator",
                f"unsupported value {quote(req.operator)}: {', '.join(SELECTOR_OPERATORS)}",
            )
        if (req.operator in ("In", "NotIn")) != bool(req.values):
            needs = "must be non-empty" if req.operator in ("In", "NotIn") else "must be empty"
            raise fail(f"{at}.values", f"{needs} for operator {req.operator}")
        for j, value in enumerate(req.values):
            check_label_value(value, f"{at}.values[{j}]")


def _check_int_or_percent(value: int | str, path: str) -> None:
    if isinstance(value, int):
        if value < 0:
            raise fail(path, "must be greater than or equal to 0")
        return
    if not PERCENT.match(value):
        raise fail(path, f"invalid value {quote(value)}: must be a whole number and '%' (e.g. 25%)")
    if int(value[:-1]) > 100:
        raise fail(path, f"invalid value {quote(value)}: must not be greater than 100%")


def validate_pod_disruption_budget(pdb: policy_v1.PodDisruptionBudget) -> None:
    spec = pdb.spec
    if spec.min_available is not None and spec.max_unavailable is not None:
        raise fail("spec", "minAvailable and maxUnavailable cannot both be set")
    if spec.min_available is not None:
        _check_int_or_percent(spec.min_available, "spec.minAvailable")
    if spec.max_unavailable is not None:
        _check_int_or_percent(spec.max_unavailable, "spec.maxUnavailable")
    if spec.selector is not None:
        check_label_selector(spec.selector, "spec.selector")
    policy = spec.unhealthy_pod_eviction_policy
    if policy and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        raise fail(
            "spec.unhealthyPodEvictionPolicy",
            f"unsupported value {quote(policy)}: {' or '.join(UNHEALTHY_POD_EVICTION_POLICIES)}",
        )
    status = pdb.status
    if status is not None:
        for field, value in (
            ("disruptionsAllowed", status.disruptions_allowed),
            ("currentHealthy", status.current_healthy),
            ("desiredHealthy", status.desired_healthy),
            ("expectedPods", status.expected_pods),
        ):
            if value < 0:
                raise fail(f"status.{field}", "must be greater than or equal to 0")


def validate_pool_status_request(req: resource_v1alpha3.ResourcePoolStatusRequest) -> None:
    check_dns_subdomain(req.spec.driver, "spec.driver", MAX_DOMAIN_LENGTH)
    if req.spec.pool_name is not None and not req.spec.pool_name:
        raise fail("spec.poolName", "must not be empty when set")
    limit = req.spec.limit
    if limit is not None and not 1 <= limit <= resource_v1alpha3.LIMIT_MAX:
        raise fail("spec.limit", f"must be between 1 and {resource_v1alpha3.LIMIT_MAX}")


_VALIDATORS: dict[type, object] = {
    resource_v1.ResourceSlice: validate_resource_slice,
    resource_v1.DeviceClass: validate_device_class,
    resource_v1.ResourceClaim: validate_resource_claim,
    core_v1.Pod: validate_pod,
    core_v1.Node: validate_node,
    core_v1.Service: validate_service,
    core_v1.ReplicationController: validate_replication_controller,
    apps_v1.ReplicaSet: validate_workload_selector,
    apps_v1.StatefulSet: validate_workload_selector,
    draplan_v1alpha1.NodePool: validate_node_pool,
    karpenter.KarpenterNodePool: validate_karpenter_node_pool,
    clusterapi.MachineDeployment: validate_scalable_resource,
    clusterapi.MachinePool: validate_scalable_resource,
    resource_v1.DeviceTaintRule: validate_device_taint_rule,
    resource_v1alpha3.ResourcePoolStatusRequest: validate_pool_status_request,
    scheduling.WorkloadV1Alpha1: validate_workload_v1alpha1,
    scheduling.WorkloadV1Alpha2: validate_workload_templates,
    scheduling.WorkloadV1Beta1: validate_workload_templates,
    scheduling.WorkloadV1Alpha3: validate_workload_templates,
    scheduling.PodGroupV1Beta1: validate_pod_group_v1beta1,
    scheduling.PodGroupV1Alpha3: validate_pod_group_v1beta1,
    scheduling.PriorityClass: validate_priority_class,
    policy_v1.PodDisruptionBudget: validate_pod_disruption_budget,
    draplan_v1alpha1.Scenario: validate_scenario,
    draplan_v1alpha1.SchedulerProfile: validate_scheduler_profile,
    autoscaling.ProvisioningRequest: validate_provisioning_request,
}


def validate(obj: KubeStruct) -> None:
    """Raise BadInput (with a field path) if `obj` breaks a rule that matters here."""
    meta = getattr(obj, "metadata", None)
    if isinstance(meta, ObjectMeta):
        check_metadata(meta, getattr(obj, "kind", ""))
    if isinstance(obj, resource_v1.ResourceClaimTemplate):
        validate_claim_spec(obj.spec.spec, "spec.spec")
        return
    check = _VALIDATORS.get(type(obj))
    if check is not None:
        check(obj)  # type: ignore[operator]
