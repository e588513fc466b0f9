"""The device-plugin requests of a pod spec: which container asks for how many of what."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from draplan.api.errors import BadInput
from draplan.api.quantity import Quantity
from draplan.cluster.podresources import is_extended
from draplan.migrate.mapping import Mapping, Rule

CONTAINER_FIELDS = ("initContainers", "containers")
SECTIONS = ("limits", "requests")


@dataclass(frozen=True)
class Need:
    """One container's request for one device resource (count 0: only removed)."""

    field: str  # containers or initContainers
    index: int
    container: str
    resource: str
    count: int
    rule: Rule


def pod_needs(spec: dict[str, Any], mapping: Mapping, where: str) -> list[Need]:
    """Needs in container order; `where` is the pod spec's field path, for messages."""
    out = []
    for field in CONTAINER_FIELDS:
        containers = spec.get(field)
        if not isinstance(containers, list):
            continue
        for i, container in enumerate(containers):
            if isinstance(container, dict):
                cpath = f"{where}.{field}[{i}]"
                out.extend(_container_needs(container, field, i, mapping, cpath))
    return out


def _sections(container: dict[str, Any], cpath: str) -> dict[str, dict[str, Any]]:
    resources = container.get("resources")
    if resources is None:
        return {}
    if not isinstance(resources, dict):
        raise BadInput(f"must be a mapping, got {type(resources).__name__}", path=cpath)
    out = {}
    for section in SECTIONS:
        values = resources.get(section)
        if values is None:
            continue
        if not isinstance(values, dict):
            msg = f"must be a mapping, got {type(values).__name__}"
            raise BadInput(msg, path=f"{cpath}.resources.{section}")
        out[section] = values
    return out


def _container_needs(
    container: dict[str, Any], field: str, index: int, mapping: Mapping, cpath: str
) -> list[Need]:
    sections = _sections(container, cpath)
    names: dict[str, None] = {}  # ordered union: limits first, as kubectl shows them
    for values in sections.values():
        names.update((str(k), None) for k in values if is_extended(str(k)))
    out = []
    for name in names:
        at = {s: f"{cpath}.resources.{s}[{name}]" for s in sections if name in sections[s]}
        rule = mapping.resolve(name)
        if rule is None:
            raise BadInput(
                f"unknown device resource {name!r}: map it to a DeviceClass in --mapping "
                "(or mark it keep: true)",
                path=next(iter(at.values())),
            )
        if rule.keep:
            continue
        counts = {s: _count(sections[s][name], at[s]) for s in at}
        if len(set(counts.values())) > 1:
            raise BadInput(
                f"requests ({counts['requests']}) and limits ({counts['limits']}) differ; "
                "a device resource cannot be overcommitted",
                path=at["requests"],
            )
        count = next(iter(counts.values()))
        out.append(Need(field, index, str(container.get("name", "")), name, count, rule))
    return out


def _count(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise BadInput(f"expected a quantity, got {type(value).__name__}", path=path)
    text = repr(value) if isinstance(value, float) else value
    try:
        q = Quantity.parse(text)
    except ValueError as err:
        raise BadInput(f"invalid quantity {text!r}: {err}", path=path) from None
    if not q.is_integer() or q.sign() < 0:
        raise BadInput(f"a device count must be a whole number, got {text!r}", path=path)
    return q.value()
