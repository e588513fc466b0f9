"""Claim shapes: the DRA requests that replace one pod's device-plugin counts.

A pod gets one claim with one request per (container, resource), so each container keeps
devices of its own as with the device plugin, and a topology constraint can span all of them.
Equal shapes in a namespace share one ResourceClaimTemplate.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from draplan.migrate.mapping import request_base
from draplan.migrate.needs import Need

# AllocationResultsMaxSize: a claim is never allocated more devices than this.
MAX_DEVICES_PER_CLAIM = 32
_MAX_NAME = 63


@dataclass(frozen=True)
class RequestShape:
    """One request of the claim: exactly `count` devices of a class."""

    name: str
    base: str  # the name before disambiguation, used in template names
    device_class: str
    selectors: tuple[str, ...]
    count: int
    topology: bool

    def to_dict(self) -> dict[str, Any]:
        exactly: dict[str, Any] = {"deviceClassName": self.device_class}
        if self.selectors:
            exactly["selectors"] = [{"cel": {"expression": e}} for e in self.selectors]
        exactly["count"] = self.count
        return {"name": self.name, "exactly": exactly}


@dataclass(frozen=True)
class ClaimShape:
    """All requests of a pod's claim and the topology constraint, if one was chosen."""

    requests: tuple[RequestShape, ...]
    match_attribute: str | None = None

    @property
    def topology_requests(self) -> tuple[RequestShape, ...]:
        return tuple(r for r in self.requests if r.topology)

    def claim_spec(self) -> dict[str, Any]:
        devices: dict[str, Any] = {"requests": [r.to_dict() for r in self.requests]}
        if self.match_attribute:
            constraint: dict[str, Any] = {}
            aligned = self.topology_requests
            if len(aligned) != len(self.requests):
                constraint["requests"] = [r.name for r in aligned]
            constraint["matchAttribute"] = self.match_attribute
            devices["constraints"] = [constraint]
        return {"devices": devices}

    def default_name(self) -> str:
        """`gpu-2`, `gpu-1-gpu-1-pcieroot`, `mig-1g-5gb-1`: readable and deterministic."""
        parts = [f"{r.base}-{r.count}" for r in self.requests]
        if self.match_attribute:
            parts.append(request_base(self.match_attribute))
        name = "-".join(parts)
        if len(name) > _MAX_NAME:
            digest = hashlib.sha256(name.encode()).hexdigest()[:8]
            name = f"{name[: _MAX_NAME - 9].rstrip('-')}-{digest}"
        return name


def request_shapes(needs: Sequence[Need]) -> tuple[RequestShape, ...]:
    """One request per need with a count; names unique within the claim."""
    counted = [n for n in needs if n.count > 0]
    bases = [n.rule.request_name or request_base(n.resource) for n in counted]
    out = []
    for i, (need, base) in enumerate(zip(counted, bases, strict=True)):
        # Repeated bases get an ordinal, `gpu-0`, `gpu-1`, so a request never looks like a count.
        name = f"{base}-{bases[:i].count(base)}" if bases.count(base) > 1 else base
        rule = need.rule
        shape = RequestShape(
            name, base, rule.device_class, rule.selectors, need.count, rule.topology
        )
        out.append(shape)
    return tuple(out)


def template_object(name: str, namespace: str, shape: ClaimShape) -> dict[str, Any]:
    """The ResourceClaimTemplate in Kubernetes JSON form."""
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": metadata,
        "spec": {"spec": shape.claim_spec()},
    }
