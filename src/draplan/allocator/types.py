"""Values the allocator takes and returns (the contract shared by scheduler and autoscaler)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from draplan.api.errors import BadInput
from draplan.api.resource_v1 import ResourceClaim

if TYPE_CHECKING:
    from draplan.api.core_v1 import Node
    from draplan.cluster.devices import DeviceView
    from draplan.cluster.state import ClusterState

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


class DevicePreference(Protocol):
    """Which devices of a node to try first for one request: a placement policy's choice
    inside the node (e.g. the GPU that leaves the least fragmentation). The search stays
    complete; only the order in which it tries candidates changes."""

    def order(
        self,
        state: ClusterState,
        node: Node,
        claim: ResourceClaim,
        request: str,
        views: Sequence[DeviceView],
    ) -> Sequence[DeviceView]:
        """`views` (the request's candidates, in pool order) best first; the same devices."""
        ...


@dataclass(frozen=True)
class Options:
    """How to search: device order within a node, and the budget that ends any search."""

    device_order: DeviceOrder = "tight"
    # DynamicResourcesArgs.filterTimeout defaults to 10 s upstream (dra-semantics §3.14).
    timeout_seconds: float = 10.0
    step_budget: int = 5_000_000
    # Replaces `device_order` for requests it is given (None: device_order decides).
    prefer: DevicePreference | None = None


@dataclass(frozen=True)
class Reason:
    """Why the claims do not fit on this node: a code, one sentence, and evidence."""

    code: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.evidence}

    def on_node(self, name: str) -> Reason | None:
        """The same failure on another node whose devices, ledgers and counters read alike:
        `diagnose` names the node once in the message and as evidence `node`, and nothing
        else it says depends on which node it is. None for a reason not worded that way."""
        old = self.evidence.get("node")
        if not isinstance(old, str) or self.message.count(f"node {old}") != 1:
            return None
        message = self.message.replace(f"node {old}", f"node {name}")
        return Reason(self.code, message, {**self.evidence, "node": name})


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
