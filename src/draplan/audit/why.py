"""One category per pending pod (or gang) from a ranked taxonomy, with evidence and a fix.

The categories are found by an ordered list of small classifiers (audit.classifiers, where
their contract is): the first that answers a pod wins, so answers are predictable. Pods are
judged on the state the scheduler leaves once it has placed everything it can now: the pods
ahead in the queue take their share first, as they will. The input state is unchanged.

Pods the scheduler cannot tell apart (one template, same requests and selectors) share one
look at the nodes and the answers of the classifiers that depend only on their shape, so
auditing many pods of few shapes costs about as much as auditing one pod per shape.

What could ever host a pod (audit.reach: empty copies of each kind of node and each NodePool's
template, with and without the pod's node constraints) comes first: a pod that only nodes its
taints, selectors or cordons exclude could hold is NodeConstraints, never a capacity question,
and a claim constraint no node shape meets is TopologyMismatch. Fixes are chosen last, in queue
order, each checked by the scheduler on the state the fixes before it leave (audit.fixes).

A `Placer` kept between audits of one changing state (as `draplan serve` keeps it) makes a
later audit incremental: it keeps the scheduler's evaluations and each node's supply or room per
shape, both per node version, the reach of every shape and the device matches while what they
read is unchanged, and (audit.contents) gives the nodes its forks change the versions they had
with the same content before. Only what changed since is looked at again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from draplan.api.core_v1 import Pod
from draplan.api.resource_v1 import PODGROUP_CLAIM_ANNOTATION, ResourceClaim
from draplan.audit.classifiers import CONFIGURATION, PLACEMENT
from draplan.audit.classifiers.base import Case, Pending, members
from draplan.audit.classifiers.tainted import DEVICE_TAINTS
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.fixes import Fix, Verifier
from draplan.audit.gates import SCHEDULING_GATED, Gates
from draplan.audit.placer import Placer
from draplan.audit.pools import LIMITED, NO_POOL, WAITING, PoolAdvisor
from draplan.audit.reach import Reacher
from draplan.audit.supply import DeviceMatcher
from draplan.audit.view import Looker, ShapeView
from draplan.autoscaler.moves import Mover, label
from draplan.cluster.podresources import extended_devices, is_terminal
from draplan.cluster.podsmemo import PodsIndex
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import PodResult, Profile, build_profile
from draplan.scheduler.claims import ClaimNotFound, group_claims, pod_claims
from draplan.scheduler.queue import priority_table, sort_key
from draplan.sources.files import gc_paused

__all__ = ["CATEGORIES", "Auditor", "Diagnosis", "Placer", "why"]

# Every category, in the order `why` lists them (the README's table).
CATEGORIES = (
    SCHEDULING_GATED,
    "NoMatchingDevice",
    "GangIncomplete",
    "Schedulable",
    WAITING,
    "NodeConstraints",
    DEVICE_TAINTS,
    "PodAffinity",
    "TopologySpread",
    "HostPortConflict",
    LIMITED,
    NO_POOL,
    "CapacityExhausted",
    "TopologyMismatch",
    "Fragmentation",
    "GangUnplaceable",
    "Timeout",
)
# A shared classifier's answer per (classifier, pod shape, gang).
Shared = tuple[str, bytes, tuple[str, ...] | None]


def _requested_devices(pod: Pod, claims: list[ResourceClaim], matcher: DeviceMatcher) -> int:
    """The devices the pod asks for: each request's count (`allocationMode: All`: as many as
    one pool has that it selects), and a device per unit of its extended resources, whether a
    device plugin serves them or a DeviceClass (KEP-5004), so a pod counts the same before and
    after it moves from one to the other (README, DEVICES)."""
    n = 0
    for claim in claims:
        for req in claim.spec.devices.requests:
            spec = req.exactly or (req.first_available[0] if req.first_available else None)
            if spec is None:
                continue
            n += matcher.most_on_one_pool(req) if spec.allocation_mode == "All" else spec.count or 1
    return n + extended_devices(pod)


class Auditor:
    """Runs the classifiers over the pending pods and chooses their fixes (base.Audit is what
    it offers them)."""

    def __init__(
        self, state: ClusterState, profile: Profile | None = None, placer: Placer | None = None
    ) -> None:
        self.state = state
        self.profile = profile or build_profile()
        # A placer kept from an earlier audit of this state keeps its evaluations: the nodes
        # the change log names since are evaluated again, the others are not.
        self.scheduler = placer or Placer(self.profile)
        self.gangs = self.scheduler.gangs_of(state)
        self.matcher = DeviceMatcher(state, self.scheduler.matches)
        self.mover = Mover(state, self.scheduler, self.gangs)
        self.gates = Gates(state)
        self.reacher = Reacher(state, self.profile, self.scheduler.reaches)
        self.looker = Looker(state, self.profile, self.scheduler)
        self.pools: PoolAdvisor | None = None
        self.placed: dict[ObjectKey, str] = {}
        self.nominated: dict[ObjectKey, PodResult] = {}  # pods the pass placed by preemption
        self.verifier: Verifier | None = None  # while fixes are chosen
        self._shared: dict[Shared, Diagnosis | None] = {}
        self._unfixed: set[tuple[bytes, tuple[str, ...] | None]] = set()

    def shape_of(self, pod: Pod) -> bytes:
        return self.scheduler.shape_of(self.state, pod)

    def view(self, shape: bytes, pod: Pod, claims: list[ResourceClaim]) -> ShapeView:
        return self.looker.view(shape, pod, claims)

    def audit(self, pods: list[Pod]) -> list[Diagnosis]:
        """Diagnose `pods` (pending, unchanged objects); the state is restored afterwards."""
        self.pools = None
        first = {key_of(p): self._configuration(p) for p in pods}
        # Pods under audit are not running, even once the pass or a fix places them in the
        # fork: a fix never asks to move one.
        self.mover = Mover(self.state, self.scheduler, self.gangs, fixed=frozenset(first))
        # Gather every node's pools before forking: in the state's own layer they are kept
        # (with the evaluations made with them) for the next audit, where a fork's would be
        # dropped with it.
        for node in self.state.nodes.values():
            self.state.pools_for_node(node)
        with self.state.forked(), self._by_content():
            spared = [
                key
                for key, (_, found) in first.items()
                if found is not None and found.category == "NoMatchingDevice"
            ]
            for key in spared:
                del self.state.pods[key]  # never placeable: spare the scheduler the try
            # Without a gang member among them, the pods taken out leave the gangs as they
            # are (a pod in no gang adds no member, size or topology to one).
            kept = None if any(k in self.gangs for k in spared) else self.gangs
            # The pass is kube-scheduler's, preemption included: a pod it places by evicting
            # lower-priority pods is nominated, and the pods after it see them gone.
            with self.scheduler.post_filtering():
                results = self.scheduler.place(self.state, kept)
            self.placed = {r.key: r.node for r in results if r.node}
            self.nominated = {r.key: r for r in results if r.nominated}
            left = [k for k, (_, found) in first.items() if found is None and k not in self.placed]
            if left:
                # Only the pods the pass leaves pending are asked about node kinds and the
                # autoscaler (the placed are Schedulable), and both are worked out on the state
                # as it is, before the pass.
                with self.state.set_aside(), self._content_paused():
                    self.reacher.kinds()
                    if self.state.node_pools:
                        self.pools = PoolAdvisor(
                            self.state, self.profile, len(pods), self.scheduler
                        )
            out = []
            for pod in pods:
                pending, found = first[key_of(pod)]
                verdict = found or self.diagnose(pending)
                out.append(self._with_group_claims(verdict, pod, pending.claims))
            with self.state.forked():
                self._verify(out, {key_of(p): p for p in pods})
            return out

    @contextmanager
    def _by_content(self) -> Iterator[None]:
        self.scheduler.contents.start(self.state)
        try:
            yield
        finally:
            self.scheduler.contents.stop()

    @contextmanager
    def _content_paused(self) -> Iterator[None]:
        self.scheduler.contents.stop()
        try:
            yield
        finally:
            self.scheduler.contents.start(self.state)

    def _configuration(self, pod: Pod) -> tuple[Pending, Diagnosis | None]:
        """The pod as it asks, and the first configuration classifier's verdict (judged on
        the input state, before anything is placed)."""
        key = key_of(pod)
        try:
            claims, missing = pod_claims(self.state, pod), None
        except ClaimNotFound as err:
            claims, missing = [], err
        pending = Pending(
            key,
            pod,
            claims,
            _requested_devices(pod, claims, self.matcher),
            self.gangs.get(key),
            missing,
        )
        for classifier in CONFIGURATION:
            found = classifier.classify(self, pending)
            if found is not None:
                return pending, found
        return pending, None

    def diagnose(self, pending: Pending) -> Diagnosis:
        """The first placement classifier's verdict, on the state after the scheduling pass;
        a shared classifier's is worked out once per pod shape and gang."""
        case = Case(self, pending)
        for classifier in PLACEMENT:
            if not classifier.shared:
                found = classifier.classify(self, case)
                if found is not None:
                    return found
                continue
            memo = (classifier.name, case.shape, case.gang.key if case.gang else None)
            if memo not in self._shared:
                self._shared[memo] = classifier.classify(self, case)
            shared = self._shared[memo]
            if shared is not None:
                return dataclasses.replace(shared, pod=case.key)
        raise AssertionError(f"no classifier answered {label(case.key)}")

    def _with_group_claims(
        self, verdict: Diagnosis, pod: Pod, claims: list[ResourceClaim]
    ) -> Diagnosis:
        """Name the PodGroup's claims among the pod's (KEP-5729): allocated once for the
        whole gang, so every member must land where that one allocation is reachable."""
        group, shared = group_claims(self.state, pod)
        mine = [c for c in claims if key_of(c) in shared]
        if group is None or not mine:
            return verdict
        entries = [
            {
                "name": c.metadata.annotations.get(PODGROUP_CLAIM_ANNOTATION) or c.metadata.name,
                "resourceClaim": label(key_of(c)),
                "allocated": c.status.allocation is not None,
            }
            for c in mine
        ]
        evidence = {
            **verdict.evidence,
            "groupClaims": {"podGroup": label(key_of(group)), "claims": entries},
        }
        return dataclasses.replace(verdict, evidence=evidence)

    def _verify(self, diagnoses: list[Diagnosis], pods: dict[ObjectKey, Pod]) -> None:
        """Choose every pod's fix in queue order, each checked on the state the fixes before it
        leave (kept applied): two pods are never promised the same room. A gang's members
        share their gang's fix. Pods of a shape for which nothing worked get nothing tried,
        since the state only gets fuller."""
        classes, default = priority_table(self.state)
        verifier = self.verifier = Verifier(self.state, self.scheduler)
        done: dict[tuple[str, ...], Fix | None] = {}
        order = sorted(diagnoses, key=lambda d: sort_key(pods[d.pod], classes, default))
        for d in order:
            if d.proposals is None:
                if d.fix is not None:
                    d.fix = {**d.fix, "verified": bool(d.fix.get("verified", False))}
                continue
            pod = pods[d.pod]
            gang = self.gangs.get(d.pod)
            shape = (self.shape_of(pod), gang.key if gang else None)
            if gang is not None and gang.key in done:
                chosen = done[gang.key]
            elif shape in self._unfixed:
                chosen = None
            else:
                group = members(self.state, gang) if gang is not None else [pod]
                chosen = verifier.first(group, d.proposals(pod))
                if gang is not None:
                    done[gang.key] = chosen
                if chosen is None:
                    self._unfixed.add(shape)
            d.proposals = None
            if chosen is not None:
                d.message = f"{d.message}; {chosen.text}."
                d.fix = chosen.to_dict()
            else:
                d.message = f"{d.message}; {d.otherwise}."
                d.fix = None


def why(
    state: ClusterState, profile: Profile | None = None, placer: Placer | None = None
) -> list[Diagnosis]:
    """A diagnosis for every pending pod, in name order (the state is left unchanged);
    `placer`, one kept between audits of the same state, makes a later audit incremental.
    The cyclic collector is off meanwhile, as while measuring: what an audit makes (node
    signatures, evaluations, looks) is kept to its end, and the collector's passes over a
    large state's heap free nothing (a seventh of the time at 10,000 nodes)."""
    with gc_paused(freeze=False):
        pending = [p for _, p in sorted(_UNBOUND(state).items(), key=lambda kp: kp[0])]
        return Auditor(state, profile, placer).audit(pending)


def _if_unbound(pod: Pod) -> Pod | None:
    return pod if not pod.spec.node_name and not is_terminal(pod) else None


# The pods not bound and not ended, looked at again only for the pods changed (`PodsIndex`).
_UNBOUND = PodsIndex(lambda state: _if_unbound)
