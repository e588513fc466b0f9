"""The edits that move one pod spec from device-plugin counts to its DRA claim."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from draplan.migrate.edits import AddKey, Edit, InsertItems, Path, RemoveKey
from draplan.migrate.needs import SECTIONS, Need
from draplan.migrate.shapes import RequestShape


def claim_name(spec: dict[str, Any], requests: Sequence[RequestShape]) -> str:
    """`gpu` (or the one resource's request name), `devices` for a mix; never a taken name."""
    bases = {r.base for r in requests}
    base = bases.pop() if len(bases) == 1 else "devices"
    taken = {c.get("name") for c in spec.get("resourceClaims") or [] if isinstance(c, dict)}
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name


def pod_edits(
    spec_path: Path,
    spec: dict[str, Any],
    needs: Sequence[Need],
    requests: Sequence[RequestShape],
    claim: str,
    template: str,
) -> list[Edit]:
    """Remove the counts, point containers at their requests, add the pod's claim."""
    counted = [n for n in needs if n.count > 0]
    request_of = {(n.field, n.index, n.resource): r for n, r in zip(counted, requests, strict=True)}
    edits: list[Edit] = []
    for field, index in dict.fromkeys((n.field, n.index) for n in needs):
        mine = [n for n in needs if (n.field, n.index) == (field, index)]
        path = (*spec_path, field, index, "resources")
        resources = spec[field][index]["resources"]
        edits.extend(_remove_counts(path, resources, {n.resource for n in mine}))
        refs = []
        for need in mine:
            request = request_of.get((field, index, need.resource))
            if request is not None:
                ref = {"name": claim}
                if len(requests) > 1:
                    ref["request"] = request.name
                refs.append(ref)
        if refs:
            edits.extend(_append(path, resources, "claims", refs))
    if requests:
        entry = {"name": claim, "resourceClaimTemplateName": template}
        edits.extend(_append(spec_path, spec, "resourceClaims", [entry]))
    return edits


def _remove_counts(path: Path, resources: dict[str, Any], names: set[str]) -> list[Edit]:
    edits: list[Edit] = []
    for section in SECTIONS:
        values = resources.get(section)
        if not isinstance(values, dict):
            continue
        gone = [k for k in values if k in names]
        if gone and len(gone) == len(values):
            edits.append(RemoveKey(path, section))  # an empty `limits: {}` says nothing
        else:
            edits.extend(RemoveKey((*path, section), k) for k in gone)
    return edits


def _append(path: Path, mapping: dict[str, Any], key: str, items: list[Any]) -> list[Edit]:
    current = mapping.get(key)
    if isinstance(current, list):
        return [InsertItems((*path, key), len(current), tuple(items))]
    if key in mapping:  # present but null: replace it
        return [RemoveKey(path, key), AddKey(path, key, items)]
    return [AddKey(path, key, items)]
