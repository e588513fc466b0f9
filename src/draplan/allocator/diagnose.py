"""Why a search failed: per-request counts that name the stage where devices ran out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from draplan.allocator.capacity import consumption
from draplan.allocator.requests import RequestSpec, claim_label
from draplan.allocator.taints import taint_blocks
from draplan.allocator.types import (
    CAPACITY_EXHAUSTED,
    CONSTRAINT_UNSATISFIABLE,
    COUNTERS_EXHAUSTED,
    INCOMPLETE_POOL,
    INSUFFICIENT_DEVICES,
    INVALID_POOL,
    NO_MATCHING_DEVICE,
    TAINTED,
    Reason,
)
from draplan.api.resource_v1 import POD_CLAIM_ANNOTATION, ResourceClaim

if TYPE_CHECKING:
    from draplan.allocator.search import Search

# Stages a device passes, in order; the first stage with too few devices names the failure.
STAGES = (
    ("matching", NO_MATCHING_DEVICE),
    ("free", INSUFFICIENT_DEVICES),
    ("tolerated", TAINTED),
    ("capacityFits", CAPACITY_EXHAUSTED),
    ("countersFit", COUNTERS_EXHAUSTED),
)


def request_counts(search: Search, spec: RequestSpec) -> dict[str, Any]:
    """How many devices of this node survive each stage for one (sub)request."""
    state = search.state
    counts = {"matching": 0, "free": 0, "tolerated": 0, "capacityFits": 0, "countersFit": 0}
    incomplete = invalid = 0
    for pool in search.pools:
        for view in pool.devices:
            if not search.matches(spec, view):
                continue
            if pool.incomplete:
                incomplete += 1
                continue
            if pool.invalid:
                invalid += 1
                continue
            counts["matching"] += 1
            if not spec.admin_access and state.in_use(view.id):
                continue
            counts["free"] += 1
            if search.taints and taint_blocks(view, spec.tolerations):
                continue
            counts["tolerated"] += 1
            if search._static_fit(spec, view) is False:
                if consumption(view, spec.capacity) is None or view.multi:
                    continue
                counts["capacityFits"] += 1
                continue
            counts["capacityFits"] += 1
            counts["countersFit"] += 1
    claim = search.claims[spec.claim_index]
    return {
        "claim": evidence_label(claim),
        "request": spec.name,
        "needed": search._needed(spec) if spec.all_mode else spec.count,
        **counts,
        "incompletePools": incomplete,
        "invalidPools": invalid,
    }


def evidence_label(claim: ResourceClaim) -> str:
    """A generated claim is named after the pod's claim entry, not its random name: the
    scheduler reuses one node's answer for every pod of the same shape."""
    pod_claim = claim.metadata.annotations.get(POD_CLAIM_ANNOTATION)
    if pod_claim:
        return f"pod claim {pod_claim!r}"
    return claim_label(claim)


def _stage_code(row: dict[str, Any]) -> tuple[int, str] | None:
    for index, (stage, code) in enumerate(STAGES):
        if row[stage] < max(row["needed"], 1):
            if stage == "matching" and row["incompletePools"]:
                return index, INCOMPLETE_POOL
            if stage == "matching" and row["invalidPools"]:
                return index, INVALID_POOL
            if stage == "matching" and row["matching"]:
                return index, INSUFFICIENT_DEVICES  # some match, just not enough of them
            return index, code
    return None


def diagnose(search: Search) -> Reason:
    """The most telling reason the claims do not fit on the search's node."""
    node = search.node.metadata.name
    rows = []
    worst: tuple[int, str, dict[str, Any]] | None = None
    for slot in search.slots:
        alt_rows = [request_counts(search, spec) for spec in slot.alternatives]
        rows.extend(alt_rows)
        # A prioritized list fails only if every alternative fails; blame the best one.
        staged = [(_stage_code(r), r) for r in alt_rows]
        if any(s is None for s, _ in staged):
            continue
        best = max(staged, key=lambda sr: sr[0][0] if sr[0] else -1)
        assert best[0] is not None
        index, code = best[0]
        if worst is None or index < worst[0]:
            worst = (index, code, best[1])
    evidence: dict[str, Any] = {"node": node, "requests": rows}
    if worst is not None:
        _, code, row = worst
        message = (
            f"{row['claim']} request {row['request']} needs {row['needed']} device(s); "
            f"{_explain(code, row)} on node {node}"
        )
        return Reason(code, message, evidence)
    has_constraints = any(c.spec.devices.constraints for c in search.claims)
    uses_counters = any(v.consumes for p in search.pools for v in p.devices)
    # Each request alone finds a device with room: together they ask more of the shared
    # devices' capacity than is left (multi-allocatable devices are never used up by count).
    shared_capacity = any(
        search.matches(spec, v) and v.multi and v.capacity
        for slot in search.slots
        for spec in slot.alternatives
        for p in search.pools
        for v in p.devices
    )
    if has_constraints:
        code = CONSTRAINT_UNSATISFIABLE
        message = (
            f"enough devices match each request on node {node}, but no combination "
            "satisfies the claims' matchAttribute/distinctAttribute constraints"
        )
    elif shared_capacity:
        code = CAPACITY_EXHAUSTED
        message = (
            f"each request fits a shared device on node {node}, but together they need more "
            "of the devices' remaining capacity than is left"
        )
    elif uses_counters:
        code = COUNTERS_EXHAUSTED
        message = (
            f"the requests compete for shared counters of partitionable devices on node "
            f"{node}; no combination fits them all"
        )
    else:
        code = INSUFFICIENT_DEVICES
        message = f"the requests together need more free devices than node {node} has"
    return Reason(code, message, evidence)


def _explain(code: str, row: dict[str, Any]) -> str:
    if code == NO_MATCHING_DEVICE:
        return "no device matches its class and selectors"
    if code == INCOMPLETE_POOL:
        return f"matching devices are only in {row['incompletePools']} pool slot(s) being updated"
    if code == INVALID_POOL:
        return "matching devices are only in invalid pools"
    if code == INSUFFICIENT_DEVICES:
        return f"{row['matching']} match but only {row['free']} are free"
    if code == TAINTED:
        return f"{row['free']} are free but only {row['tolerated']} have tolerated taints"
    if code == CAPACITY_EXHAUSTED:
        return f"only {row['capacityFits']} have enough remaining capacity"
    return f"only {row['countersFit']} fit in the remaining shared counters"
