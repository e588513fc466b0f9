"""A NodePool's ResourceSlices as documents, `$NODE_NAME` still in place: what the autoscaler
stamps out per new node and what validation checks exactly as it checks real slices."""

from __future__ import annotations

from collections import Counter
from typing import Any

from draplan.api.draplan_v1alpha1 import NODE_NAME_PLACEHOLDER


def substitute(value: Any, name: str) -> Any:
    """`value` (JSON form) with every `$NODE_NAME` in keys and strings replaced by `name`."""
    if isinstance(value, str):
        return value.replace(NODE_NAME_PLACEHOLDER, name)
    if isinstance(value, list):
        return [substitute(v, name) for v in value]
    if isinstance(value, dict):
        return {substitute(k, name): substitute(v, name) for k, v in value.items()}
    return value


def slice_documents(slice_specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Whole ResourceSlice documents of a template's slice specs (JSON form, edited in place)."""
    # Every slice of a pool must state how many slices the pool has, or the allocator treats
    # the pool as incomplete and nothing ever scales from zero (autoscaler#10199).
    per_pool = Counter((s.get("driver"), s.get("pool", {}).get("name")) for s in slice_specs)
    docs = []
    for i, spec in enumerate(slice_specs):
        pool_ref = spec.setdefault("pool", {})
        if not pool_ref.get("resourceSliceCount"):
            pool_ref["resourceSliceCount"] = per_pool[(spec.get("driver"), pool_ref.get("name"))]
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{NODE_NAME_PLACEHOLDER}-{spec.get('driver', 'driver')}-{i}"},
                "spec": spec,
            }
        )
    return docs
