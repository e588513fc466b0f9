"""Why a search failed: per-request counts that name the stage where devices ran out."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from draplan.allocator.capacity import consumption
from draplan.allocator.constraints import AttrValue, ClaimConstraint
from draplan.allocator.matching import FREE_ONLY, HIDDEN, mine_error
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
from draplan.api.resource_v1 import POD_CLAIM_ANNOTATION, PODGROUP_CLAIM_ANNOTATION, ResourceClaim

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
        for view, mine, kind in search.matched(pool, spec):
            if mine is not None:
                continue  # a mine counts as not matching: evidence is never fatal
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
            if kind != FREE_ONLY and search._static_fit(spec, view) is False:
                if consumption(view, spec.capacity, search.fractional) is None or view.multi:
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
    scheduler reuses one node's answer for every pod of the same shape. A PodGroup's claim
    (KEP-5729) is named after the group's entry: one claim the whole gang shares."""
    pod_claim = claim.metadata.annotations.get(POD_CLAIM_ANNOTATION)
    if pod_claim:
        return f"pod claim {pod_claim!r}"
    group_claim = claim.metadata.annotations.get(PODGROUP_CLAIM_ANNOTATION)
    if group_claim:
        owner = next((o.name for o in claim.metadata.owner_references if o.kind == "PodGroup"), "")
        return f"PodGroup {owner!r} claim {group_claim!r}"
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
    groups = constraint_groups(search) if any(search.constraints) else []
    if groups:
        evidence["constraints"] = groups
    short = next((g for g in groups if g["largestGroup"] < g["needed"]), None)
    if worst is not None and short is not None and worst[0] > 0:
        # Enough devices match, but the node's shape can never meet the constraint: freeing
        # devices would not help, so that is the reason, not the shortage of free ones.
        message = (
            f"enough devices match each request on node {node}, but {group_text(short)} "
            "even if every device were free"
        )
        return Reason(CONSTRAINT_UNSATISFIABLE, message, evidence)
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
        mine is None and v.multi and v.capacity
        for slot in search.slots
        for spec in slot.alternatives
        for p in search.pools
        for v, mine, _ in search.matched(p, spec)
    )
    if has_constraints:
        code = CONSTRAINT_UNSATISFIABLE
        if short is not None:
            detail = f": {group_text(short)} even if every device were free"
        else:
            detail = "; enough devices meet them, but not enough of those are free"
        message = (
            f"enough devices match each request on node {node}, but no combination "
            f"satisfies the claims' matchAttribute/distinctAttribute constraints{detail}"
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


def constraint_groups(search: Search) -> list[dict[str, Any]]:
    """Per claim constraint, the largest group of the node's matching devices that can meet it,
    counted over every device the node has (allocated or not: the node's shape) and over the
    free ones the request tolerates the taints of: for matchAttribute, the most needed devices
    one value supplies; for distinctAttribute, how many distinct values there are."""
    out = []
    for ci, constraints in enumerate(search.constraints):
        specs = [
            max(slot.alternatives, key=lambda s: s.count)
            for slot in search.slots
            if slot.claim_index == ci
        ]
        for con in constraints:
            scoped = [s for s in specs if con.applies(s.parent, s.name) and not s.all_mode]
            if not scoped:
                continue
            out.append(_groups(search, con, scoped))
    return out


def _groups(search: Search, con: ClaimConstraint, specs: list[RequestSpec]) -> dict[str, Any]:
    needed = sum(s.count for s in specs)
    every: list[Counter[object]] = []
    free: list[Counter[object]] = []
    for spec in specs:
        counts: Counter[object] = Counter()
        unused: Counter[object] = Counter()
        for pool in search.pools:
            if pool.incomplete or pool.invalid:
                continue
            for view, mine, how in search.matched(pool, spec):
                value = con.value(view)
                if value is None or how == HIDDEN:
                    continue
                if mine is not None:
                    raise mine_error(spec, search.claims[spec.claim_index], mine)
                counts[value] += 1
                if not spec.admin_access and search.state.in_use(view.id):
                    continue
                # A device the request does not tolerate a taint of is not free to it.
                if not (search.taints and taint_blocks(view, spec.tolerations)):
                    unused[value] += 1
        every.append(counts)
        free.append(unused)
    kind = "matchAttribute" if con.match else "distinctAttribute"
    row: dict[str, Any] = {
        "claim": evidence_label(search.claims[specs[0].claim_index]),
        kind: con.attribute,
        "needed": needed,
    }
    if con.match:
        best, value = _largest(every, specs)
        row.update(largestGroup=best, largestFreeGroup=_largest(free, specs)[0])
        if value is not None:
            row["value"] = str(value[1])
    else:
        row.update(
            largestGroup=min(needed, len(set().union(*every))),
            largestFreeGroup=min(needed, len(set().union(*free))),
        )
    return row


def _largest(
    counts: list[Counter[object]], specs: list[RequestSpec]
) -> tuple[int, AttrValue | None]:
    """The value that supplies most of the needed devices, and how many it supplies."""
    values = sorted(set().union(*counts), key=str)
    best: tuple[int, AttrValue | None] = (0, None)
    for value in values:
        supplied = sum(min(c[value], s.count) for c, s in zip(counts, specs, strict=True))
        if supplied > best[0]:
            best = (supplied, value)  # type: ignore[assignment]
    return best


def group_text(row: dict[str, Any]) -> str:
    """ "at most 2 of the 4 devices it needs share one X" (or are on distinct Xs)."""
    if "matchAttribute" in row:
        return (
            f"at most {row['largestGroup']} of the {row['needed']} devices it needs share one "
            f"{row['matchAttribute']}"
        )
    return (
        f"only {row['largestGroup']} of the {row['needed']} devices it needs can have "
        f"distinct {row['distinctAttribute']} values"
    )


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
