"""The fixes `why` proposes, as values: applied to a fork of the state and checked by the real
scheduler before one is printed (a fix that does not make its pods schedulable is never shown).

A `Verifier` checks the fixes of several pods together, in queue order, on one fork: each
verified fix stays applied (its pods placed), so two pending pods are never promised the same
freed room. The nodes a verified fix adds, frees or uncordons are then cordoned, so a later
pod's fix never counts on what is left of them: each printed fix also works alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from draplan.api.codec import to_builtins
from draplan.api.core_v1 import Pod, PodResourceClaimStatus, Toleration, TopologySpreadConstraint
from draplan.api.draplan_v1alpha1 import NodePool, NodePoolSpec
from draplan.api.meta import ObjectMeta
from draplan.api.resource_v1 import POD_CLAIM_ANNOTATION, DeviceClaim, DeviceToleration
from draplan.autoscaler.moves import release, unlabel
from draplan.autoscaler.templates import NewNode, NodeNamer, add_new_node, make_node
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import Scheduler
from draplan.scheduler.claims import ClaimNotFound, pod_claim_entries


@dataclass(frozen=True)
class Fix:
    """What to change, and how the message says it. Pod changes (tolerations, dropped claim
    constraints, device tolerations on every request of its claims), node changes (uncordon,
    `add` new nodes like an existing one or of a NodePool) and moves (running pods to other
    nodes, freeing `node`)."""

    text: str
    action: str
    tolerations: tuple[Toleration, ...] = ()
    uncordon: tuple[str, ...] = ()
    drop_constraints: tuple[str, ...] = ()  # attributes whose claim constraints go
    device_tolerations: tuple[DeviceToleration, ...] = ()
    # Topology spread policies set to Honor on every constraint of the pod ("nodeTaintsPolicy",
    # "nodeAffinityPolicy"): the nodes the pod cannot go to stop counting as domains.
    honor: tuple[str, ...] = ()
    add: int = 0
    like: str = ""  # new nodes are empty copies of this node
    pool: str = ""  # ... or nodes of this NodePool
    node: str = ""  # the node the moves free
    move: tuple[tuple[str, str], ...] = ()  # (namespace/pod, target node)
    extra: tuple[tuple[str, Any], ...] = ()  # more for the JSON (cost, nodes)
    # Already made in the state by the simulation that found it (moves planned on the very
    # state the fix is checked on, with the real scheduler): nothing left to check.
    made: bool = False

    def to_dict(self, verified: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action}
        if self.tolerations:
            out["tolerations"] = [to_builtins(t) for t in self.tolerations]
        if self.uncordon:
            out["uncordon"] = list(self.uncordon)
        if self.drop_constraints:
            out["dropConstraints"] = list(self.drop_constraints)
        if self.device_tolerations:
            out["deviceTolerations"] = [to_builtins(t) for t in self.device_tolerations]
        if self.honor:
            out["topologySpreadConstraints"] = {policy: "Honor" for policy in self.honor}
        if self.pool:
            out["pool"] = self.pool
        if self.add:
            out["add"] = self.add
        if self.like:
            out["like"] = self.like
        if self.move:
            out["node"] = self.node
            out["move"] = dict(self.move)
        out.update(self.extra)
        out["verified"] = verified
        return out


def changed_pod(state: ClusterState, pod: Pod, fix: Fix) -> Pod:
    """`pod` as the fix changes it; claims without the dropped constraints are written to
    the state (a template's claim under the name the controller gives it)."""
    spec = pod.spec
    if fix.tolerations:
        spec = msgspec.structs.replace(spec, tolerations=(*spec.tolerations, *fix.tolerations))
    if fix.honor:
        spec = msgspec.structs.replace(
            spec, topology_spread_constraints=honored(spec.topology_spread_constraints, fix.honor)
        )
    pod = msgspec.structs.replace(pod, spec=spec)
    if fix.drop_constraints or fix.device_tolerations:
        pod = _with_changed_claims(state, pod, fix)
    return pod


def honored(
    constraints: tuple[TopologySpreadConstraint, ...], policies: tuple[str, ...]
) -> tuple[TopologySpreadConstraint, ...]:
    """The constraints with `policies` (their JSON names) set to Honor."""
    fields = {
        "nodeTaintsPolicy": "node_taints_policy",
        "nodeAffinityPolicy": "node_affinity_policy",
    }
    changes = {fields[p]: "Honor" for p in policies}
    return tuple(msgspec.structs.replace(c, **changes) for c in constraints)


def _changed_devices(devices: DeviceClaim, fix: Fix) -> DeviceClaim:
    """A claim's devices without the fix's dropped constraints, each request (and
    subrequest) with its device tolerations added."""
    kept = tuple(
        c
        for c in devices.constraints
        if (c.match_attribute or c.distinct_attribute) not in fix.drop_constraints
    )
    more = fix.device_tolerations
    requests = devices.requests
    if more:
        requests = tuple(
            msgspec.structs.replace(
                r,
                exactly=(
                    msgspec.structs.replace(r.exactly, tolerations=(*r.exactly.tolerations, *more))
                    if r.exactly is not None
                    else None
                ),
                first_available=tuple(
                    msgspec.structs.replace(sub, tolerations=(*sub.tolerations, *more))
                    for sub in r.first_available
                ),
            )
            for r in requests
        )
    return msgspec.structs.replace(devices, constraints=kept, requests=requests)


def _with_changed_claims(state: ClusterState, pod: Pod, fix: Fix) -> Pod:
    try:
        entries = pod_claim_entries(state, pod)
    except ClaimNotFound:
        return pod
    statuses = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    for ref, claim in entries:
        if claim.status.allocation is not None:
            continue
        devices = _changed_devices(claim.spec.devices, fix)
        if devices == claim.spec.devices:
            continue
        spec = msgspec.structs.replace(claim.spec, devices=devices)
        state.put_claim(msgspec.structs.replace(claim, spec=spec))
        if POD_CLAIM_ANNOTATION in claim.metadata.annotations:
            statuses[ref.name] = claim.metadata.name
    listed = tuple(
        PodResourceClaimStatus(name=name, resource_claim_name=claim_name)
        for name, claim_name in sorted(statuses.items())
    )
    status = msgspec.structs.replace(pod.status, resource_claim_statuses=listed)
    return msgspec.structs.replace(pod, status=status)


def twin_pool(node: str) -> NodePool:
    """A NodePool whose nodes are empty copies of `node` (as Cluster Autoscaler's templates)."""
    return NodePool(metadata=ObjectMeta(name=node), spec=NodePoolSpec(from_node=node))


def add_nodes(state: ClusterState, fix: Fix) -> list[str]:
    """Add the fix's new nodes; their names."""
    if not fix.add:
        return []
    pool = state.node_pools[fix.pool] if fix.pool else twin_pool(fix.like)
    namer = NodeNamer(state, pool)
    names = []
    for _ in range(fix.add):
        name, labels = namer.next()
        new = make_node(state, pool, name, labels)
        if new.node.spec.unschedulable:  # a copy of a cordoned node joins uncordoned
            spec = msgspec.structs.replace(new.node.spec, unschedulable=False)
            new = NewNode(msgspec.structs.replace(new.node, spec=spec), new.slices, new.pods)
        add_new_node(state, new)
        names.append(name)
    return names


def apply(state: ClusterState, pods: Sequence[Pod], fix: Fix) -> tuple[list[Pod], list[str]] | None:
    """Apply everything but the placement of `pods`: the pods as the fix changes them and the
    nodes it adds; None when the moves cannot be made (a moved pod's claim is shared with a
    pod that stays)."""
    for name in fix.uncordon:
        node = state.nodes[name]
        spec = msgspec.structs.replace(node.spec, unschedulable=False)
        state.add_node(msgspec.structs.replace(node, spec=spec))
    added = add_nodes(state, fix)
    moved = [unlabel(label) for label, _ in fix.move]
    if moved:
        if any(k not in state.pods or not state.pods[k].spec.node_name for k in moved):
            return None
        if release(state, set(moved)):
            return None
        for key in moved:
            state.unbind_pod(state.pods[key])
    out = []
    for pod in pods:
        new = changed_pod(state, pod, fix)
        state.pods[key_of(new)] = new
        out.append(new)
    return out, added


class Verifier:
    """Fixes checked one after another on one fork of the state (the caller's), each verified
    fix kept applied with its pods placed."""

    def __init__(self, state: ClusterState, scheduler: Scheduler) -> None:
        self.state = state
        self.scheduler = scheduler
        self.used: set[str] = set()  # nodes verified fixes placed pods on

    def first(self, pods: Sequence[Pod], fixes: Iterable[Fix]) -> Fix | None:
        """The first of `fixes` that makes every one of `pods` schedulable (kept applied)."""
        for fix in fixes:
            if fix.made:
                self.used.add(fix.node)
                return fix
            if self.check(pods, fix):
                return fix
        return None

    def check(self, pods: Sequence[Pod], fix: Fix) -> bool:
        return self.state.attempt(lambda: self._placed(pods, fix))

    def _placed(self, pods: Sequence[Pod], fix: Fix) -> bool:
        state = self.state
        applied = apply(state, pods, fix)
        if applied is None:
            return False
        changed, added = applied
        if len(changed) == 1:
            placed = [self.scheduler.schedule_pod(state, changed[0]).node]
        else:
            keys = {key_of(p) for p in changed}
            placed = [r.node for r in self.scheduler.run(state, only=keys)] or [None]
        if any(node is None for node in placed):
            return False
        for label, target in fix.move:
            moved = state.pods[unlabel(label)]
            if self.scheduler.schedule_pod(state, moved, [target]).node is None:
                return False
        self.used.update(n for n in placed if n is not None)
        for name in [*added, *fix.uncordon, *([fix.node] if fix.node else [])]:
            node = state.nodes[name]
            spec = msgspec.structs.replace(node.spec, unschedulable=True)
            state.add_node(msgspec.structs.replace(node, spec=spec))
        return True
