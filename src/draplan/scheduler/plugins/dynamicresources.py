"""DynamicResources: resolve the pod's claims, allocate them on each node with the shared
allocator, write the allocation to the ledgers in Reserve, roll back in Unreserve. Extended
resources a DeviceClass serves are allocated here too, on nodes no device plugin serves them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import msgspec

from draplan.allocator import AllocationError, Options, Outcome, allocate
from draplan.allocator.result import retarget
from draplan.api.core_v1 import Node
from draplan.api.resource_v1 import ResourceClaim, ResourceClaimConsumerReference
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler.claims import (
    ClaimNotFound,
    group_claims,
    group_consumer,
    pod_claims,
    unavailable_on,
)
from draplan.scheduler.extended import class_mapping, extended_claim, mapped_requests
from draplan.scheduler.framework import (
    SKIP,
    SUCCESS,
    CycleState,
    PodInfo,
    Status,
    error,
    unschedulable,
)
from draplan.scheduler.plugins.names import DYNAMIC_RESOURCES

MAX_RESERVED_FOR = 256  # ResourceClaimReservedForMaxSize
CANNOT_ALLOCATE = "cannot allocate all claims"
UNAVAILABLE = "resourceclaim not available on the node"
# PostFilter's answers (it runs before DefaultPreemption in the default profile).
NO_CLAIMS = "no new claims to deallocate"
DEALLOCATED = "deallocation of ResourceClaim completed"
STILL = "still not schedulable"


@dataclass
class DraState:
    """PreFilter's findings for one pod, plus what Reserve changed (for Unreserve)."""

    claims: list[ResourceClaim]
    pending: list[ResourceClaim]
    # Extended resources a DeviceClass serves (KEP-5004), and which class serves each.
    served: frozenset[str] = frozenset()
    mapping: dict[str, str] = field(default_factory=dict)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    reserved: list[ResourceClaim | None] = field(default_factory=list)
    written: list[ResourceClaim] = field(default_factory=list)
    extended: ResourceClaim | None = None
    """The claim Reserve made for the pod's extended resources on its node (KEP-5004)."""


def _missing_class(state: ClusterState, claim: ResourceClaim) -> str:
    """Upstream checks classes only for claims it still has to allocate."""
    for req in claim.spec.devices.requests:
        names = (
            [req.exactly.device_class_name]
            if req.exactly
            else [s.device_class_name for s in req.first_available]
        )
        for cname in names:
            if cname not in state.device_classes:
                return f"request {req.name}: device class {cname} does not exist"
    return ""


class DynamicResources:
    name = DYNAMIC_RESOURCES

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or Options()

    def _state(self, cycle: CycleState) -> DraState:
        value = cycle.data.get(self.name)
        if not isinstance(value, DraState):
            raise RuntimeError("DynamicResources: PreFilter did not run")
        return value

    def pre_filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo) -> Status:
        mapping = class_mapping(state) if "DRAExtendedResource" in state.features else {}
        served = frozenset(mapped_requests(pod.pod, mapping))
        if not pod.pod.spec.resource_claims:
            cycle.data[self.name] = DraState([], [], served, mapping)
            return SUCCESS if served else SKIP  # without either, Filter has nothing to do
        try:
            claims = pod_claims(state, pod.pod)
        except ClaimNotFound as err:
            return unschedulable(str(err), resolvable=False)
        pending = []
        for claim in claims:
            if claim.status.allocation is None:
                missing = _missing_class(state, claim)
                if missing:
                    return unschedulable(missing, resolvable=False)
                pending.append(claim)
                continue
            reserved = claim.status.reserved_for
            if len(reserved) >= MAX_RESERVED_FOR and not any(
                r.uid == pod.pod.metadata.uid and r.name == pod.key[1] for r in reserved
            ):
                return unschedulable("resourceclaim in use", resolvable=False)
        cycle.data[self.name] = DraState(claims, pending, served, mapping)
        return SUCCESS

    def _to_allocate(self, dra: DraState, pod: PodInfo, node: Node) -> list[ResourceClaim]:
        """The pod's pending claims, and on this node the claim of its extended resources."""
        if not dra.served:
            return dra.pending
        extended = extended_claim(pod.pod, node, dra.mapping, set(dra.served))
        return dra.pending if extended is None else [*dra.pending, extended]

    def filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        dra = self._state(cycle)
        if unavailable_on(node, dra.claims):
            return unschedulable(UNAVAILABLE, resolvable=False)
        pending = self._to_allocate(dra, pod, node)
        if not pending:
            return SUCCESS
        try:
            outcome = allocate(state, node, pending, self.options)
        except AllocationError as err:
            return error(str(err))
        if not outcome.ok:
            reason = outcome.reason
            if reason is not None and reason.code == "Timeout":
                return unschedulable("timed out trying to allocate devices", detail=reason)
            return unschedulable(CANNOT_ALLOCATE, detail=reason)
        return Status(detail=outcome)

    def post_filter(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        statuses: Mapping[str, Status],
    ) -> Status:
        """PostFilter (dynamicresources.go): without claims nothing to deallocate; an allocated
        claim some node could not reach and no other pod reserves is deallocated, so that the
        next attempt may allocate it elsewhere (draplan says so and leaves it allocated);
        else the pod stays unschedulable. Never a success: preemption runs next."""
        dra = cycle.data.get(self.name)
        if not isinstance(dra, DraState) or (not dra.claims and not dra.served):
            return unschedulable(NO_CLAIMS)
        uid = pod.pod.metadata.uid
        free = [
            c
            for c in dra.claims
            if c.status.allocation is not None and all(h.uid == uid for h in c.status.reserved_for)
        ]
        if free and any(UNAVAILABLE in s.reasons for s in statuses.values()):
            return unschedulable(DEALLOCATED)
        return unschedulable(STILL)

    def reserve(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        dra = self._state(cycle)
        outcome = cycle.data.get((self.name, node.metadata.name))
        own = ResourceClaimConsumerReference(
            resource="pods", name=pod.key[1], uid=pod.pod.metadata.uid
        )
        group, shared = group_claims(state, pod.pod)
        allocated: dict[tuple[str, str], ResourceClaim] = {}
        pending = self._to_allocate(dra, pod, node)
        if pending:
            if not isinstance(outcome, Outcome) or not outcome.ok:
                return error("DynamicResources: no allocation for the chosen node")
            for mine, theirs in zip(pending, outcome.claims, strict=True):
                allocated[key_of(mine)] = retarget(theirs, mine, node)
        extra = pending[len(dra.pending) :]  # the extended resources' claim, if any
        for claim in [*dra.claims, *extra]:
            new = allocated.get(key_of(claim), claim)
            consumer = group_consumer(group) if group and key_of(claim) in shared else own
            if not any(
                r.name == consumer.name and r.uid == consumer.uid for r in new.status.reserved_for
            ):
                status = msgspec.structs.replace(
                    new.status, reserved_for=(*new.status.reserved_for, consumer)
                )
                new = msgspec.structs.replace(new, status=status)
            dra.reserved.append(state.claims.get(key_of(claim)))
            dra.written.append(new)
            state.put_claim(new)
            if any(claim is e for e in extra):
                dra.extended = new
        return SUCCESS

    def unreserve(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> None:
        dra = self._state(cycle)
        for before, after in zip(reversed(dra.reserved), reversed(dra.written), strict=True):
            if before is None:
                state.remove_claim(key_of(after))
            else:
                state.put_claim(before)
        dra.reserved.clear()
        dra.written.clear()
        dra.extended = None
