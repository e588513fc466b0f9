"""Which DeviceClass replaces a device-plugin resource.

Precedence: the `--mapping` file, then the input's DeviceClasses that name the resource in
`spec.extendedResourceName`, then NVIDIA's DRA driver defaults (dra-semantics §4.1).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Mapping as MappingOf
from dataclasses import dataclass
from typing import Any

import msgspec

from draplan.api.errors import BadInput
from draplan.api.resource_v1 import DeviceClass
from draplan.api.validation import check_dns_label, check_dns_subdomain
from draplan.cel import CelError, compile_selector
from draplan.cluster.podresources import is_extended
from draplan.migrate.inputs import load_yaml_text

GPU_RESOURCE = "nvidia.com/gpu"
GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
_MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-(?P<profile>\d+g\.\d+gb)$")
_NOT_LABEL = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True)
class Rule:
    """How one device-plugin resource becomes a DRA request."""

    resource: str
    device_class: str = ""
    selectors: tuple[str, ...] = ()
    request_name: str = ""
    topology: bool = True
    keep: bool = False
    origin: str = "built-in"


class _Entry(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    device_class_name: str = ""
    selectors: tuple[str, ...] = ()
    request_name: str = ""
    topology: bool | None = None
    keep: bool = False


def request_base(resource: str) -> str:
    """A DNS label for a request: `nvidia.com/mig-1g.5gb` -> `mig-1g-5gb`."""
    name = _NOT_LABEL.sub("-", resource.rpartition("/")[2].lower()).strip("-")
    return name[:56].rstrip("-") or "device"


class Mapping:
    """Resolves resource names to rules; unknown device resources are bad input."""

    def __init__(self, rules: MappingOf[str, Rule] | None = None) -> None:
        self.rules: dict[str, Rule] = dict(rules or {})

    def with_classes(self, classes: Iterable[DeviceClass]) -> Mapping:
        """Add the cluster's DRAExtendedResource classes below the mapping file's rules."""
        rules = dict(self.rules)
        for dc in classes:
            name = dc.spec.extended_resource_name
            builtin = self.resolve(name) if name else None
            if builtin is not None and builtin.device_class == dc.metadata.name:
                continue  # the chart's own class: the built-in rule (with its selector) holds
            if name and name not in rules:
                origin = f"DeviceClass {dc.metadata.name} (extendedResourceName)"
                topology = not name.startswith("nvidia.com/mig-")
                rules[name] = Rule(name, dc.metadata.name, topology=topology, origin=origin)
        return Mapping(rules)

    def resolve(self, resource: str) -> Rule | None:
        """The rule for `resource`; None when it is not a device resource or not known."""
        rule = self.rules.get(resource)
        if rule is not None:
            return rule
        if resource == GPU_RESOURCE:
            return Rule(resource, GPU_CLASS)
        mig = _MIG_RESOURCE.match(resource)
        if mig is not None:
            profile = mig.group("profile")
            expr = f"device.attributes['{GPU_CLASS}'].profile == '{profile}'"
            # MIG slices of one GPU share its PCIe root anyway; no topology intent to add.
            return Rule(resource, MIG_CLASS, (expr,), topology=False)
        return None


def load_mapping(path: str | None) -> Mapping:
    """The `--mapping` file: `resources: {NAME: CLASS | {deviceClassName, selectors, ...}}`."""
    if path is None:
        return Mapping()
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as err:
        raise BadInput(err.strerror or "cannot read", source=path, path="--mapping") from None
    except UnicodeDecodeError:
        raise BadInput("not UTF-8 text", source=path) from None
    data = load_yaml_text(text, path)
    if data is None:
        data = {}
    if not isinstance(data, dict) or set(data) - {"resources"}:
        raise BadInput("expected a mapping with one key, resources", source=path)
    entries = data.get("resources") or {}
    if not isinstance(entries, dict):
        raise BadInput(f"must be a mapping, got {type(entries).__name__}", source=path)
    rules = {str(k): _rule(str(k), v, path) for k, v in entries.items()}
    return Mapping(rules)


def _rule(resource: str, raw: Any, source: str) -> Rule:
    where = f"resources[{resource}]"
    if not is_extended(resource):
        raise BadInput("not an extended resource name (domain/name)", source=source, path=where)
    if isinstance(raw, str):
        raw = {"deviceClassName": raw}
    try:
        entry = msgspec.convert(raw, _Entry)
    except msgspec.ValidationError as err:
        msg, _, at = str(err).partition(" - at `$")
        path = f"{where}{at.rstrip('`')}" if at.startswith((".", "[")) else where
        msg = msg.replace("`", "")
        raise BadInput(msg[:1].lower() + msg[1:], source=source, path=path) from None
    if entry.keep:
        return Rule(resource, keep=True, origin="mapping file")
    try:
        check_dns_subdomain(entry.device_class_name, f"{where}.deviceClassName")
        if entry.request_name:
            check_dns_label(entry.request_name, f"{where}.requestName")
        for i, expr in enumerate(entry.selectors):
            _compile(expr, f"{where}.selectors[{i}]")
    except BadInput as err:
        raise err.located(source=source) from None
    topology = entry.topology if entry.topology is not None else True
    return Rule(
        resource,
        entry.device_class_name,
        entry.selectors,
        entry.request_name,
        topology,
        origin="mapping file",
    )


def _compile(expr: str, path: str) -> None:
    try:
        compile_selector(expr)
    except CelError as err:
        raise BadInput(str(err), path=path) from None
