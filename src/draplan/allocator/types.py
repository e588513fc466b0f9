"""Values the allocator takes and returns (the contract shared by scheduler and autoscaler)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from draplan.api.errors import BadInput
from draplan.api.resource_v1 import ResourceClaim

DeviceOrder = Literal["tight", "first-fit"]

# Failure codes, most specific first in the auditor's eyes.
NO_MATCHING_DEVICE = "NoMatchingDevice"
INSUFFICIENT_DEVICES = "InsufficientDevices"
CONSTRAINT_UNSATISFIABLE = "ConstraintUnsatisfiable"
COUNTERS_EXHAUSTED = "CountersExhausted"
CAPACITY_EXHAUSTED = "CapacityExhausted"
TAINTED = "Tainted"
INCOMPLETE_POOL = "IncompletePool"
INVALID_POOL = "InvalidPool"
TIMEOUT = "Timeout"
CLAIM_LIMIT = "ClaimLimitExceeded"


@dataclass(frozen=True)
class Options:
    """How to search: device order within a node, and the budget that ends any search."""

    device_order: DeviceOrder = "tight"
    # DynamicResourcesArgs.filterTimeout defaults to 10 s upstream (dra-semantics §3.14).
    timeout_seconds: float = 10.0
    step_budget: int = 5_000_000


@dataclass(frozen=True)
class Reason:
    """Why the claims do not fit on this node: a code, one sentence, and evidence."""

    code: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.evidence}


@dataclass(frozen=True)
class Outcome:
    """Either every claim allocated (`claims` carry status.allocation) or a Reason."""

    claims: tuple[ResourceClaim, ...] = ()
    reason: Reason | None = None
    steps: int = 0

    @property
    def ok(self) -> bool:
        return self.reason is None


class AllocationError(BadInput):
    """Fatal: the claims or classes are wrong for every node (upstream returns an error)."""
