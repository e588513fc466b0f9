"""DRA structured allocation of a pod's claims on one node (resource.k8s.io/v1 semantics)."""

from draplan.allocator.search import allocate, count_candidates, shape_groups
from draplan.allocator.types import AllocationError, Options, Outcome, Reason

__all__ = [
    "AllocationError",
    "Options",
    "Outcome",
    "Reason",
    "allocate",
    "count_candidates",
    "shape_groups",
]
