"""One category per pending pod (or gang) from a ranked taxonomy, with evidence and a fix.

Where several categories fit, the first in CATEGORIES wins, so answers are predictable. Pods
are judged on the state the scheduler leaves once it has placed everything it can now: the
pods ahead in the queue take their share first, as they will. The input state is unchanged.

Pods the scheduler cannot tell apart (one template, same requests and selectors) share one
look at the nodes and one capacity verdict, so auditing many pods of few shapes costs about
as much as auditing one pod per shape.

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
import math
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from draplan.allocator import Reason, allocate
from draplan.allocator.diagnose import evidence_label, group_text
from draplan.allocator.types import CONSTRAINT_UNSATISFIABLE, TIMEOUT
from draplan.api.core_v1 import Node, Pod, Toleration
from draplan.api.resource_v1 import PODGROUP_CLAIM_ANNOTATION, ResourceClaim
from draplan.audit.contents import Contents
from draplan.audit.fixes import Fix, Verifier
from draplan.audit.gates import SCHEDULING_GATED, Gates
from draplan.audit.pools import NO_POOL, PoolAdvisor
from draplan.audit.reach import CONSTRAINT_PLUGINS, Host, Reach, Reacher, ReachMemo
from draplan.audit.supply import DeviceMatcher, MatchMemo, NodeSupply, node_supply
from draplan.autoscaler.moves import MAX_MOVED, Mover, label
from draplan.cluster.nodeselector import selector_matches
from draplan.cluster.podresources import PODS, Resources, is_terminal, node_allocatable
from draplan.cluster.podresources import pod_requests as requests_of
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import PodResult, Profile, Scheduler, build_profile
from draplan.scheduler.claims import ClaimNotFound, group_claims, pod_claims
from draplan.scheduler.framework import Code, CycleState, PodInfo, Status
from draplan.scheduler.gangs import Gang, find_gangs
from draplan.scheduler.plugins import names
from draplan.scheduler.plugins.noderesources import insufficient
from draplan.scheduler.queue import priority_table, sort_key
from draplan.scheduler.reasons import reason_code

CATEGORIES = (
    SCHEDULING_GATED,
    "NoMatchingDevice",
    "GangIncomplete",
    "Schedulable",
    "NodeConstraints",
    "WaitingForScaleUp",
    "PoolLimitReached",
    "NoPoolCanFit",
    "CapacityExhausted",
    "TopologyMismatch",
    "Fragmentation",
    "GangUnplaceable",
    "Timeout",
)
CONSTRAINT_FIX = {
    names.NODE_AFFINITY: "relax the pod's node selector or affinity",
    names.TAINT_TOLERATION: "add a toleration for the node taint",
    names.NODE_UNSCHEDULABLE: "uncordon the node",
    names.NODE_NAME: "drop the pod's fixed node name",
}
NEAREST = 3
MAX_LOOKS = 1 << 18  # per-node looks remembered by Placer (then forgotten at once)


Proposals = Callable[[Pod], Iterator[Fix]]


@dataclass
class Diagnosis:
    """One pod's category, message, evidence and fix. A fix that can be simulated is given as
    `proposals` (tried in order on the state after the pods ahead got theirs; the first that
    makes the pod schedulable is printed) with the message's `finding` and the remedy to
    name when none works (`otherwise`); advice that cannot be simulated (fix a claim, create
    gang members) is a `fix` marked verified false."""

    pod: ObjectKey
    category: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    fix: dict[str, Any] | None = None
    devices: int = 0  # devices the pod asks for: how costly it is to leave it pending
    proposals: Proposals | None = None
    otherwise: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": label(self.pod),
            "category": self.category,
            "message": self.message,
            "evidence": self.evidence,
            "fix": self.fix,
        }


@dataclass
class ShapeView:
    """What the nodes say about one pod shape."""

    prefilter: Status
    counts: dict[str, int]  # the scheduler's per-node reason counts
    excluded: dict[str, str]  # nodes with room that selectors/affinity/taints reject: reason
    plugins: dict[str, str]  # ... and the plugin that rejects each
    supplies: dict[str, NodeSupply]  # the nodes the pod may use, with what they have free
    fits: list[str] = field(default_factory=list)  # nodes where it fits now
    error: str = ""  # the claims are wrong on every node (the allocator's input errors)

    def evidence(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodes": self.counts}
        if not self.prefilter.ok and self.prefilter.reasons:
            out["prefilter"] = self.prefilter.reasons[0]
        return out


class Placer(Scheduler):
    """The scheduler, for one pass over the queue that only needs to know who gets placed.

    Within a pass, placing pods only takes capacity (there is no preemption), so a pod shape
    that fits no node fits none for the rest of the pass: later pods of that shape are not
    tried again (kube-scheduler parks them in its unschedulable queue likewise). That saves
    building the "0/N nodes are available" text over every node for each of them, which is
    most of a pass on a large cluster. Only pods outside gangs mark a shape: gang members are
    tried in forks that are rolled back."""

    def __init__(self, profile: Profile | None = None) -> None:
        super().__init__(profile)
        # Kept with the placer between audits of one state, like its evaluations.
        self.reaches = ReachMemo()
        self.matches = MatchMemo()
        # Auditor._look's findings per ((shape, claim names), node): (node version, status,
        # supply or room).
        self.looks: dict[
            tuple[tuple[bytes, tuple[str, ...]], str],
            tuple[tuple[int, int], Status, NodeSupply | bool],
        ] = {}
        self._hopeless: set[bytes] | None = None
        self._gangs: dict[ObjectKey, Gang] = {}
        self._prefiltered: tuple[Pod, tuple[PodInfo, CycleState, Status]] | None = None
        # Within the audit's fork, nodes changed get the versions they had with the same
        # content (in an earlier audit too): the evaluations and looks kept per version hold.
        self.contents = Contents(self.profile)

    def place(
        self, state: ClusterState, gangs: dict[ObjectKey, Gang] | None = None
    ) -> list[PodResult]:
        """`run` over the whole queue, skipping shapes already found to fit nowhere (`gangs`:
        find_gangs of the state, if the caller has it)."""
        self._hopeless, self._gangs = set(), find_gangs(state) if gangs is None else gangs
        try:
            return self.run(state, gangs=self._gangs)
        finally:
            self._hopeless, self._gangs = None, {}

    def evaluate(self, state: ClusterState, pod: Pod) -> tuple[Status, dict[str, Status]]:
        self.contents.settle(state)
        return super().evaluate(state, pod)

    def schedule_pod(
        self, state: ClusterState, pod: Pod, candidates: list[str] | None = None
    ) -> PodResult:
        self.contents.settle(state)
        if self._hopeless is None or candidates is not None:
            return super().schedule_pod(state, pod, candidates)
        found = super()._pre_filter(state, pod)
        shape = found[0].shape
        if shape in self._hopeless:
            return PodResult(key_of(pod), pod)
        self._prefiltered = (pod, found)  # the cycle starts with it: nothing changed since
        try:
            result = super().schedule_pod(state, pod)
        finally:
            self._prefiltered = None
        if result.node is None and key_of(pod) not in self._gangs:
            self._hopeless.add(shape)
        return result

    def _pre_filter(self, state: ClusterState, pod: Pod) -> tuple[PodInfo, CycleState, Status]:
        kept, self._prefiltered = self._prefiltered, None
        if kept is not None and kept[0] is pod:
            return kept[1]
        return super()._pre_filter(state, pod)


def _requested_devices(claims: list[ResourceClaim]) -> int:
    n = 0
    for claim in claims:
        for req in claim.spec.devices.requests:
            spec = req.exactly or (req.first_available[0] if req.first_available else None)
            n += (spec.count or 1) if spec is not None else 0
    return n


class Auditor:
    def __init__(
        self, state: ClusterState, profile: Profile | None = None, placer: Placer | None = None
    ) -> None:
        self.state = state
        self.profile = profile or build_profile()
        # A placer kept from an earlier audit of this state keeps its evaluations: the nodes
        # the change log names since are evaluated again, the others are not.
        self.scheduler = placer or Placer(self.profile)
        self.gangs = find_gangs(state)
        self.matcher = DeviceMatcher(state, self.scheduler.matches)
        self.mover = Mover(state, self.scheduler, self.gangs)
        self.gates = Gates(state)
        self.reacher = Reacher(state, self.profile, self.scheduler.reaches)
        self.pools: PoolAdvisor | None = None
        self.placed: dict[ObjectKey, str] = {}
        self._views: dict[bytes, ShapeView] = {}
        self._verdicts: dict[tuple[bytes, tuple[str, ...] | None], Diagnosis] = {}
        self.verifier: Verifier | None = None  # while fixes are chosen
        self._early: dict[tuple[bytes, tuple[str, ...] | None], Diagnosis | None] = {}
        self._unfixed: set[tuple[bytes, tuple[str, ...] | None]] = set()

    def audit(self, pods: list[Pod]) -> list[Diagnosis]:
        """Diagnose `pods` (pending, unchanged objects); the state is restored afterwards."""
        if self.state.node_pools:
            self.pools = PoolAdvisor(self.state, self.profile, len(pods), self.scheduler)
        first = {key_of(p): self._configuration(p) for p in pods}
        # Pods under audit are not running, even once the pass or a fix places them in the
        # fork: a fix never asks to move one.
        self.mover = Mover(self.state, self.scheduler, self.gangs, fixed=frozenset(first))
        # Group the nodes by kind before forking: that gathers every node's pools in the
        # state's own layer, kept (with the kinds and the evaluations made with them) for the
        # next audit, where a fork's would be dropped with it.
        self.reacher.kinds()
        with self.state.forked(), self._by_content():
            spared = [
                key
                for key, (_, _, found) in first.items()
                if found is not None and found.category == "NoMatchingDevice"
            ]
            for key in spared:
                del self.state.pods[key]  # never placeable: spare the scheduler the try
            # Without a gang member among them, the pods taken out leave the gangs as they
            # are (a pod in no gang adds no member, size or topology to one).
            kept = None if any(k in self.gangs for k in spared) else self.gangs
            results = self.scheduler.place(self.state, kept)
            self.placed = {r.key: r.node for r in results if r.node}
            out = []
            for pod in pods:
                claims, size, found = first[key_of(pod)]
                verdict = found or self.diagnose(pod, claims, size)
                out.append(self._with_group_claims(verdict, pod, claims))
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
            shape = (self.scheduler.shape_of(self.state, pod), gang.key if gang else None)
            if gang is not None and gang.key in done:
                chosen = done[gang.key]
            elif shape in self._unfixed:
                chosen = None
            else:
                group = self._members(gang) if gang is not None else [pod]
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

    # --- per pod: the categories that do not depend on capacity -------------------------

    def _configuration(self, pod: Pod) -> tuple[list[ResourceClaim], int, Diagnosis | None]:
        """The pod's claims and device count, and SchedulingGated, NoMatchingDevice or
        GangIncomplete (judged on the input state, before anything is placed)."""
        key = key_of(pod)
        gated = self.gates.verdict(pod)  # judged first: the scheduler never sees the pod
        try:
            claims = pod_claims(self.state, pod)
        except ClaimNotFound as err:
            if gated is not None:  # its claims may well be made once the gate is lifted
                return (
                    [],
                    0,
                    Diagnosis(key, SCHEDULING_GATED, gated.message, gated.evidence, gated.fix),
                )
            return (
                [],
                0,
                Diagnosis(
                    key,
                    "NoMatchingDevice",
                    f"It cannot get its claims ({err}); create the missing object or fix the "
                    "pod's spec.resourceClaims.",
                    {"claim": str(err)},
                    {"action": "create the claim or template, or fix spec.resourceClaims"},
                ),
            )
        size = _requested_devices(claims)
        if gated is not None:  # the devices it will ask for once admitted
            found = Diagnosis(key, SCHEDULING_GATED, gated.message, gated.evidence, gated.fix, size)
            return claims, size, found
        missing = self.matcher.unmatched(claims)
        if missing:
            return (
                claims,
                size,
                Diagnosis(
                    key,
                    "NoMatchingDevice",
                    f"No device in the cluster or any NodePool can serve {missing[0]}; fix the "
                    "claim's class or selectors.",
                    {"requests": missing},
                    {"action": "fix the claim's class or CEL selectors"},
                    size,
                ),
            )
        gang = self.gangs.get(key)
        return claims, size, self._incomplete(key, gang, size) if gang is not None else None

    def diagnose(self, pod: Pod, claims: list[ResourceClaim], size: int) -> Diagnosis:
        """Every category after GangIncomplete, on the state after the scheduling pass."""
        key = key_of(pod)
        gang = self.gangs.get(key)
        node = self.placed.get(key)
        if node is not None:
            return Diagnosis(
                key,
                "Schedulable",
                f"It fits now (on {node}); it only waits for the scheduler.",
                {"node": node},
                None,
                size,
            )
        shape = self.scheduler.shape_of(self.state, pod)
        view = self._view(shape, pod, claims)
        if gang is None and view.fits:
            return Diagnosis(
                key,
                "Schedulable",
                f"It fits now (on {view.fits[0]}); it only waits for the scheduler.",
                {**view.evidence(), "node": view.fits[0]},
                None,
                size,
            )
        reach = None
        if all(c.status.allocation is None for c in claims):
            reach = self.reacher.reach(shape, pod, claims)
        memo = (shape, gang.key if gang is not None else None)
        if memo not in self._early:
            self._early[memo] = self._constraints(pod, claims, view, reach, size)
        early = self._early[memo]
        if early is not None:
            return dataclasses.replace(early, pod=key)
        if self.pools is not None:
            verdict = self.pools.verdict(key, pod, shape)
            if verdict is not None:
                evidence = {**view.evidence(), **verdict.evidence}
                out = Diagnosis(key, verdict.category, verdict.message, evidence, verdict.fix, size)
                if verdict.fix is not None:
                    out.fix = {**verdict.fix, "verified": verdict.category != NO_POOL}
                if verdict.category == NO_POOL and reach is not None:
                    blocked = [h for h in reach.hosts if h.pool and h.blocks is not None]
                    if blocked and blocked[0].blocks is not None:
                        # A pool could hold it but for its node constraints: say which.
                        reason = blocked[0].blocks.reasons[0]
                        out.message = (
                            f"No NodePool's node admits it as it is (pool {blocked[0].pool}: "
                            f"{reason})"
                        )
                        out.proposals = _relaxations(blocked)
                        out.otherwise = "no toleration or relaxed selector draplan tried helps"
                        out.fix = None
                return out
        if memo not in self._verdicts:
            self._verdicts[memo] = self._capacity(pod, claims, gang, view, size, reach)
        return dataclasses.replace(self._verdicts[memo], pod=key)

    def _constraints(
        self,
        pod: Pod,
        claims: list[ResourceClaim],
        view: ShapeView,
        reach: Reach | None,
        size: int,
    ) -> Diagnosis | None:
        """NodeConstraints, or TopologyMismatch of a shape no node can ever hold: what
        comes before the pools and capacity (per pod shape)."""
        key = key_of(pod)
        if view.excluded:
            return self._constrained(key, view, reach, size)
        if reach is None:
            return None
        if not reach.hosts and reach.short_group() is not None:
            return self._impossible(key, view, reach, size)
        if reach.hosts and not reach.admitted:
            return self._unreachable(key, view, reach, size)
        return None

    def _constrained(
        self, key: ObjectKey, view: ShapeView, reach: Reach | None, size: int
    ) -> Diagnosis:
        """NodeConstraints: nodes with room now are excluded by the pod's node constraints."""
        nodes = list(view.excluded)[:NEAREST]
        first = nodes[0]
        count = f"{len(nodes)}" if len(view.excluded) <= NEAREST else f"More than {NEAREST}"
        hosts = [Host(n, "", self.reacher.blocks(self.state.pods[key], n)) for n in nodes]
        if reach is not None:
            hosts += [h for h in reach.hosts if h.blocks is not None]
        cordoned = all(p == names.NODE_UNSCHEDULABLE for p in view.plugins.values())
        why = (
            "they are cordoned"
            if cordoned
            else "the pod's selectors, affinity or tolerations exclude them"
        )
        return Diagnosis(
            key,
            "NodeConstraints",
            f"{count} node(s) have room but {why} (e.g. {first}: {view.excluded[first]})",
            {**view.evidence(), "excludedNodes": {n: view.excluded[n] for n in nodes}},
            None,
            size,
            _relaxations(hosts),
            CONSTRAINT_FIX.get(view.plugins[first], "relax the pod's node constraints")
            + " (no change draplan tried makes it schedulable now)",
        )

    def _unreachable(self, key: ObjectKey, view: ShapeView, reach: Reach, size: int) -> Diagnosis:
        """NodeConstraints: only nodes (or NodePool templates) its node constraints exclude
        could ever hold the pod; it is never a question of capacity."""
        blocked = [h for h in reach.hosts if h.blocks is not None]
        first = blocked[0]
        assert first.blocks is not None
        where = f"pool {first.pool}" if first.pool else first.node
        count = f"{len(blocked)} node(s)" if len(blocked) <= NEAREST else "Nodes"
        if any(h.pool for h in blocked):
            count = f"{count} or pools" if not all(h.pool for h in blocked) else "NodePools"
        taints = sorted(
            {f"{t.key}: {t.value}" for h in blocked if h.blocks for t in h.blocks.taints}
        )
        evidence = {
            **view.evidence(),
            "excludedNodes": {
                (f"pool {h.pool}" if h.pool else h.node): list(h.blocks.reasons)
                for h in blocked[:NEAREST]
                if h.blocks is not None
            },
        }
        if taints:
            evidence["taints"] = taints
        return Diagnosis(
            key,
            "NodeConstraints",
            _sentence(
                f"{count} could hold it but its node constraints exclude every one of them "
                f"(e.g. {where}: {first.blocks.reasons[0]})"
            ),
            evidence,
            None,
            size,
            _relaxations(blocked),
            "no relaxation draplan tried, even with a new node, makes it schedulable",
        )

    def _impossible(
        self,
        key: ObjectKey,
        view: ShapeView,
        reach: Reach,
        size: int,
    ) -> Diagnosis:
        """TopologyMismatch: no node or pool shape can ever meet a claim constraint."""
        group = reach.short_group()
        assert group is not None
        attribute = group.get("matchAttribute") or group.get("distinctAttribute") or ""
        where = "any node or pool" if self.state.node_pools else "any node"
        likes = [min(view.supplies.values(), key=_nearness).node] if view.supplies else []

        def proposals(pod: Pod) -> Iterator[Fix]:
            drop = f"drop its claim's constraint on {attribute}"
            yield Fix(drop, "relax the constraint", drop_constraints=(attribute,))
            for like in likes:
                yield Fix(
                    f"{drop} and add a node like {like}",
                    "relax the constraint and add a node",
                    drop_constraints=(attribute,),
                    add=1,
                    like=like,
                )

        return Diagnosis(
            key,
            "TopologyMismatch",
            _sentence(f"{group_text(group)} on {where}, so no node can ever hold it"),
            {**view.evidence(), "constraint": group, "shapes": reach.shapes},
            None,
            size,
            proposals,
            f"no node offers {group['needed']} such devices on one {attribute} and relaxing the "
            "constraint alone does not make it fit; relax the constraint and free or add room",
        )

    def _incomplete(self, key: ObjectKey, gang: Gang, size: int) -> Diagnosis | None:
        alive = [k for k in gang.members if k in self.state.pods]
        alive = [k for k in alive if not is_terminal(self.state.pods[k])]
        if not gang.missing and len(alive) >= gang.min_count:
            return None
        evidence = {"gang": gang.label, "members": len(alive), "minCount": gang.min_count}
        if gang.missing:
            return Diagnosis(
                key,
                "GangIncomplete",
                _sentence(
                    f"{gang.label} cannot start ({gang.missing}); create it or drop the "
                    "pods' reference to it."
                ),
                {**evidence, "missing": gang.missing},
                {"action": "create the group object"},
                size,
            )
        return Diagnosis(
            key,
            "GangIncomplete",
            _sentence(
                f"{gang.label} has {len(alive)} of its {gang.min_count} pods; create the "
                "missing members or lower minCount."
            ),
            evidence,
            {"action": "create the missing members", "missing": gang.min_count - len(alive)},
            size,
        )

    # --- per shape: what every node has for it ------------------------------------------

    def _view(self, shape: bytes, pod: Pod, claims: list[ResourceClaim]) -> ShapeView:
        view = self._views.get(shape)
        if view is None:
            view = self._look(shape, pod, claims)
            self._views[shape] = view
        return view

    def _look(self, shape: bytes, pod: Pod, claims: list[ResourceClaim]) -> ShapeView:
        """Every node's answer for the shape. A node's supply or room is kept (in the placer,
        between audits) per shape and node version: only nodes changed since are looked at
        again."""
        prefilter, statuses = self.scheduler.evaluate(self.state, pod)
        requests = requests_of(pod)
        view = ShapeView(
            prefilter,
            dict(sorted(Counter(map(reason_code, statuses.values())).items())),
            {},
            {},
            {},
        )
        looks = self.scheduler.looks
        if len(looks) > MAX_LOOKS:
            looks.clear()
        version = self.state.version
        # The claims' names too: a supply names them (generated ones by the pod's entry, so
        # the pods of one template share).
        look = (shape, tuple(evidence_label(c) for c in claims))
        for name, status in statuses.items():
            if status.plugin in CONSTRAINT_PLUGINS:
                # NEAREST examples make the point; looking further costs an allocation each.
                if len(view.excluded) > NEAREST:
                    continue
                room = self._looked(look, name, version(name), status)
                if not isinstance(room, bool):
                    node = self.state.nodes[name]
                    room = self._room_ignoring_constraints(node, requests, claims)
                    looks[look, name] = (version(name), status, room)
                if room:
                    view.excluded[name] = status.reasons[0] if status.reasons else status.plugin
                    view.plugins[name] = status.plugin
            elif status.code == Code.ERROR:
                view.error = view.error or (status.reasons[0] if status.reasons else "error")
            elif _usable(status):
                supply = self._looked(look, name, version(name), status)
                if not isinstance(supply, NodeSupply):
                    node = self.state.nodes[name]
                    supply = self._supply(node, requests, claims, status)
                    looks[look, name] = (version(name), status, supply)
                view.supplies[name] = supply
        view.fits = [n for n, s in view.supplies.items() if s.fits]
        if view.supplies or view.excluded:
            view.error = ""  # the error is particular to some nodes (e.g. a CEL runtime error)
        return view

    def _looked(
        self,
        look: tuple[bytes, tuple[str, ...]],
        name: str,
        version: tuple[int, int],
        status: Status,
    ) -> NodeSupply | bool | None:
        """What an earlier look at the node found for the shape, if the node is as it was
        then (same version) and the scheduler's answer the same."""
        hit = self.scheduler.looks.get((look, name))
        if hit is None or hit[0] != version or hit[1] is not status:
            return None
        return hit[2]

    def _supply(
        self, node: Node, requests: Resources, claims: list[ResourceClaim], status: Status
    ) -> NodeSupply:
        reason = status.detail if isinstance(status.detail, Reason) else None
        # A failed allocation carries the per-request counts; reuse them rather than count.
        rows = reason.evidence.get("requests") if reason is not None else None
        supply = node_supply(self.state, node, requests, claims, rows)
        supply.fits = status.ok
        if reason is not None:
            supply.code, supply.message = reason.code, reason.message
        return supply

    def _room_ignoring_constraints(
        self, node: Node, requests: Resources, claims: list[ResourceClaim]
    ) -> bool:
        alloc = node_allocatable(node)
        if insufficient(requests, self.state.requested(node.metadata.name), alloc):
            return False
        for claim in claims:
            sel = claim.status.allocation.node_selector if claim.status.allocation else None
            if sel is not None and not selector_matches(sel, node):
                return False
        pending = [c for c in claims if c.status.allocation is None]
        return not pending or allocate(self.state, node, pending, self.profile.options).ok

    # --- the capacity ladder: CapacityExhausted ... Timeout -----------------------------

    def _members(self, gang: Gang) -> list[Pod]:
        return [
            self.state.pods[k]
            for k in gang.members
            if k in self.state.pods
            and not self.state.pods[k].spec.node_name
            and not is_terminal(self.state.pods[k])
        ]

    def _scale(self, gang: Gang | None) -> int:
        """How many pods of this shape must fit: the pod, or the gang members still needed."""
        if gang is None:
            return 1
        bound = sum(
            1
            for k in gang.members
            if k in self.state.pods
            and self.state.pods[k].spec.node_name
            and not is_terminal(self.state.pods[k])
        )
        return max(1, min(len(self._members(gang)), gang.min_count - bound))

    def _capacity(
        self,
        pod: Pod,
        claims: list[ResourceClaim],
        gang: Gang | None,
        view: ShapeView,
        size: int,
        reach: Reach | None,
    ) -> Diagnosis:
        """The rungs from CapacityExhausted down, in CATEGORIES order: the first that fits."""
        hostable = {h.node for h in reach.admitted if not h.pool} if reach is not None else None
        case = Case(key_of(pod), pod, claims, gang, view, size, self._scale(gang), hostable)
        return (
            _invalid(case)
            or _blocked(case)
            or self._exhausted(case)
            or self._shaped(case)
            or self._domain(case)
            or self._fragmented(case)
            or self._gang_unplaceable(case)
            or _timed_out(case)
        )

    def _exhausted(self, case: Case) -> Diagnosis | None:
        """CapacityExhausted: only nodes that could hold the pod if they were empty count; free
        capacity elsewhere is of the wrong kind (too few matching devices, too small)."""
        who = "the gang" if case.gang is not None else "the pod"
        hosts = case.hosts
        if not hosts:
            best = _lacks_text(case.supplies[0]) if case.supplies else "no usable node"
            return case.diagnosis(
                "CapacityExhausted",
                f"No node could hold {who} even if it were empty (best: {best}); add nodes "
                "with enough matching devices and room.",
                fix={"action": "add nodes that can hold the pod"},
            )
        short = _shortfall(hosts, requests_of(case.pod), case.scale)
        if not short:
            return None
        what, (need, have) = next(iter(short.items()))
        unit = need // case.scale
        like = min(hosts, key=lambda s: (-_per_node(s, what, unit), s.node))
        per_node = _per_node(like, what, unit)
        add = math.ceil((need - have) / per_node) if per_node else 1
        extra = (("resource", what), ("missing", need - have))

        def proposals(pod: Pod) -> Iterator[Fix]:
            for n in (add, add + 1):
                yield Fix(
                    f"add {n} node(s) like {like.node}",
                    "add nodes",
                    add=n,
                    like=like.node,
                    extra=extra,
                )

        return case.diagnosis(
            "CapacityExhausted",
            f"The nodes that could hold {who} have {_amount(what, have)} free for {what} but "
            f"{who} needs {_amount(what, need)}",
            {"short": {k: {"needed": n, "free": f} for k, (n, f) in short.items()}},
            proposals=proposals,
            otherwise="wait for running work to finish (no node draplan tried to add helps)",
        )

    def _shaped(self, case: Case) -> Diagnosis | None:
        """TopologyMismatch: it fits no node, yet some have enough free matching devices and
        only the claim's constraints fail there."""
        hosts = {s.node for s in case.hosts}  # not nodes whose shape can never meet it
        shaped = [
            s for s in case.candidates if s.code == CONSTRAINT_UNSATISFIABLE and s.node in hosts
        ]
        if case.view.fits or not shaped:
            return None
        nodes = [s.node for s in shaped]
        attributes = _constraint_attributes(case.claims)

        def proposals(pod: Pod) -> Iterator[Fix]:
            yield from self._moves(pod, shaped)
            for attribute in attributes[:1]:
                yield Fix(
                    f"drop its claim's constraint on {attribute}",
                    "relax the constraint",
                    drop_constraints=(attribute,),
                )

        return case.diagnosis(
            "TopologyMismatch",
            f"{_nodes_text(nodes)} enough free matching devices but none in the required shape "
            f"({_constraint_text(case.claims)})",
            {"shapedNodes": nodes[:NEAREST]},
            proposals=proposals,
            otherwise="free a whole group there or relax the constraint",
        )

    def _domain(self, case: Case) -> Diagnosis | None:
        """TopologyMismatch of a gang: members fit alone, not inside one required domain."""
        gang = case.gang
        if gang is None or not case.view.fits or gang.topology is None:
            return None
        if not gang.topology.required:
            return None
        topo = gang.topology.key
        domain, fitted, count = self.mover.best_domain(self._members(gang), topo)
        where = f"the best ({domain}) fits {fitted}" if domain else "no node carries that label"
        return case.diagnosis(
            "TopologyMismatch",
            _sentence(
                f"{gang.label} needs {case.scale} pod(s) in one {topo} domain but of {count} "
                f"domain(s) {where}; free room in one domain or relax the topology requirement."
            ),
            {"domains": count, "bestDomain": domain or None, "fitsInBest": fitted},
            {"action": f"free room for {case.scale - fitted} more pod(s) in one {topo} domain"}
            | ({"domain": domain} if domain else {}),
        )

    def _fragmented(self, case: Case) -> Diagnosis | None:
        """Fragmentation, judged per pod: no single node fits it (and no node timed out)."""
        if case.view.fits or case.timeouts:
            return None
        where = "devices or partitions of one node" if case.candidates else "nodes"
        hosts = case.hosts  # never empty: CapacityExhausted takes a pod no node could hold
        best = hosts[0]

        # A gang needs room for all its pending members at once: no single node's moves
        # give it that; a node per member does (checked like every fix).
        add = case.scale if case.gang is not None else 1

        def proposals(pod: Pod) -> Iterator[Fix]:
            if add == 1:
                yield from self._moves(pod, hosts)
            what = "a node" if add == 1 else f"{add} nodes"
            action = "add a node" if add == 1 else "add nodes"
            yield Fix(f"add {what} like {best.node}", action, add=add, like=best.node)

        return case.diagnosis(
            "Fragmentation",
            f"Enough free capacity exists in total but it is split across {where}, so no single "
            f"node fits the pod (nearest: {_lacks_text(best)})",
            proposals=proposals,
            otherwise=f"moving up to {MAX_MOVED} pods frees no node for it and no node draplan "
            "tried to add helps",
        )

    def _moves(self, pod: Pod, supplies: list[NodeSupply]) -> Iterator[Fix]:
        """Moves that free one of the nearest nodes for the pod, planned on the state as the
        fixes of the pods ahead of it leave it. For a pod alone, the simulation that finds
        them is the check: they stay made. A gang's members are checked together."""
        alone = key_of(pod) not in self.gangs
        # Nodes earlier fixes placed pods on (or freed) have changed since `supplies` were
        # counted: the next ones are tried instead.
        used = self.verifier.used if self.verifier is not None else set()
        for s in islice((s for s in supplies if s.node not in used), NEAREST):
            deficit = sum(max(0, n - s.devices.get(k, 0)) for k, n in s.needed.items())
            moved = self.mover.defragment(pod, s.node, deficit, keep=alone)
            if moved is not None:
                yield Fix(
                    f"moving {_moves_text(moved)} makes room on {s.node}",
                    "move pods to defragment",
                    node=s.node,
                    move=tuple(moved.items()),
                    made=alone,
                )

    def _gang_unplaceable(self, case: Case) -> Diagnosis | None:
        """Every member fits somewhere alone and the total suffices, yet not all together."""
        gang = case.gang
        if gang is None or not case.view.fits:
            return None
        need = case.scale
        fitted = self.mover.together(self._members(gang))
        return case.diagnosis(
            "GangUnplaceable",
            f"Every member of {gang.label} fits somewhere alone but only {fitted} of the "
            f"{need} needed fit together; free room for {need - fitted} more or lower minCount.",
            {"gang": gang.label, "fitTogether": fitted, "needed": need},
            {"action": "free room for the whole gang or lower minCount", "more": need - fitted},
        )


class Case:
    """One pod shape (of one gang, or none) on the capacity ladder: what the rungs share."""

    def __init__(
        self,
        key: ObjectKey,
        pod: Pod,
        claims: list[ResourceClaim],
        gang: Gang | None,
        view: ShapeView,
        size: int,
        scale: int,
        hostable: set[str] | None = None,
    ) -> None:
        self.key, self.pod, self.claims, self.gang = key, pod, claims, gang
        self.view, self.size, self.scale = view, size, scale
        self.supplies = sorted(view.supplies.values(), key=_nearness)
        # Nodes an empty copy of which holds the pod (its reach), else by device counts.
        self.hosts = [
            s
            for s in self.supplies
            if (s.node in hostable if hostable is not None else s.could_host())
        ]
        # Nodes where the devices and resources suffice: only the allocator's search says no.
        self.candidates = [s for s in self.supplies if s.devices_suffice() and s.fits_resources]
        self.timeouts = [s.node for s in self.candidates if s.code == TIMEOUT]
        self.evidence = view.evidence()
        self.evidence["nearestMiss"] = {s.node: _lacks(s) for s in self.supplies[:NEAREST]}

    def diagnosis(
        self,
        category: str,
        message: str,
        evidence: dict[str, Any] | None = None,
        fix: dict[str, Any] | None = None,
        proposals: Proposals | None = None,
        otherwise: str = "",
    ) -> Diagnosis:
        return Diagnosis(
            self.key,
            category,
            message,
            {**self.evidence, **(evidence or {})},
            fix,
            self.size,
            proposals,
            otherwise,
        )


def _invalid(case: Case) -> Diagnosis | None:
    """The claims are wrong on every node the pod could use: a configuration error, like a
    request no device matches (judged after the pools: a pool's nodes may not share it)."""
    error = case.view.error
    if not error:
        return None
    return Diagnosis(
        case.key,
        "NoMatchingDevice",
        f"Its claims cannot be allocated on any node ({error}); fix the claims.",
        {**case.view.evidence(), "error": error},
        {"action": "fix the claim's requests"},
        case.size,
    )


def _blocked(case: Case) -> Diagnosis | None:
    """PreFilter rejects the pod before any node is looked at (e.g. a claim with no room for
    another consumer): capacity of the claim itself is exhausted."""
    prefilter = case.view.prefilter
    if prefilter.ok:
        return None
    why = prefilter.reasons[0] if prefilter.reasons else "PreFilter failed"
    return case.diagnosis(
        "CapacityExhausted",
        f"No node is considered because {why}; wait for a user of its claim to finish.",
    )


def _timed_out(case: Case) -> Diagnosis:
    return case.diagnosis(
        "Timeout",
        f"The allocator's search budget ran out on every node with enough free devices "
        f"({len(case.timeouts)}); raise filterTimeoutSeconds or simplify the claim's constraints.",
        {"timedOut": case.timeouts[:NEAREST]},
        {"action": "raise filterTimeoutSeconds or simplify the constraints"},
    )


# --- helpers -------------------------------------------------------------------------------


def _usable(status: Status) -> bool:
    """False when DynamicResources rejects the node without allocator evidence: a claim
    already allocated elsewhere keeps the pod off this node for good."""
    return (
        status.ok or status.plugin != names.DYNAMIC_RESOURCES or isinstance(status.detail, Reason)
    )


def _nearness(s: NodeSupply) -> tuple[int, int, int, str]:
    """Nodes that fit first, then those lacking the fewest devices and resources."""
    return (0 if s.fits else 1, -s.found(), len(s.lacking), s.node)


def _lacks(s: NodeSupply) -> list[str]:
    parts = [
        f"{k}: {s.devices.get(k, 0)} of {n} devices free"
        for k, n in sorted(s.needed.items())
        if s.devices.get(k, 0) < n
    ]
    parts += [
        f"{r}: {_amount(r, max(0, s.free.get(r, 0)))} free of {_amount(r, s.requests[r])} needed"
        for r in s.lacking
    ]
    if not parts and s.code:
        parts.append(f"{s.code}: {s.message}")
    return parts or ["nothing (it fits)"]


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _moves_text(moves: dict[str, str]) -> str:
    by_target: dict[str, list[str]] = {}
    for pod, target in moves.items():
        by_target.setdefault(target, []).append(pod)
    return ", ".join(f"{' and '.join(pods)} to {target}" for target, pods in by_target.items())


def _nodes_text(nodes: list[str]) -> str:
    if len(nodes) == 1:
        return f"Node {nodes[0]} has"
    return f"Nodes {nodes[0]} and {len(nodes) - 1} more have"


def _lacks_text(s: NodeSupply) -> str:
    return f"{s.node} has {'; '.join(_lacks(s))}" if s.needed or s.lacking else s.node


def _shortfall(
    hosts: list[NodeSupply], requests: Resources, scale: int
) -> dict[str, tuple[int, int]]:
    """What the demand (`scale` pods) exceeds in total over `hosts`: {what: (needed, free)}."""
    short: dict[str, tuple[int, int]] = {}
    for k, n in sorted(hosts[0].needed.items()):
        free = sum(s.devices.get(k, 0) for s in hosts)
        if free < n * scale:
            short[k] = (n * scale, free)
    for r, amount in sorted(requests.items()):
        if amount <= 0:
            continue
        free = sum(max(0, s.free.get(r, 0)) for s in hosts)
        if free < amount * scale:
            short[r] = (amount * scale, free)
    return short


def _per_node(s: NodeSupply, what: str, unit: int) -> int:
    """How much of `what` one more node like `s` offers, in whole pods of `unit` each."""
    total = s.matching.get(what, 0) if what in s.needed else s.capacity.get(what, 0)
    return (total // unit) * unit if unit > 0 else total


def _amount(what: str, value: int) -> str:
    if what == "cpu":
        return f"{value / 1000:g} cpu"
    if what == "memory":
        return f"{value / 1000 / 2**30:.1f}Gi memory"
    if what == PODS:
        return f"{value // 1000} pod slot(s)"
    if " " not in what:
        return f"{value / 1000:g} {what}"
    return f"{value} device(s)"


def _constraint_attributes(claims: list[ResourceClaim]) -> list[str]:
    return [
        c.match_attribute or c.distinct_attribute or ""
        for claim in claims
        for c in claim.spec.devices.constraints
    ]


def _relaxation(host: Host) -> Fix | None:
    """What lifts the host's node constraints for the pod: tolerations for its taints, a
    relaxed selector, an uncordon."""
    b = host.blocks
    if b is None:
        return None
    texts, actions = [], []
    tolerations = tuple(Toleration(key=t.key, operator="Exists", effect=t.effect) for t in b.taints)
    if tolerations:
        keys = sorted({t.key for t in tolerations})
        texts.append(f"add a toleration for {' and '.join(keys)}")
        actions.append("add a toleration")
    if b.selector:
        texts.append("relax its node selector or affinity")
        actions.append("relax the node selector")
    uncordon = (host.node,) if b.cordoned and not host.pool else ()
    if uncordon:
        texts.append(f"uncordon {host.node}")
        actions.append("uncordon the node")
    if not texts or (b.cordoned and host.pool):
        return None
    return Fix(
        " and ".join(texts),
        " and ".join(actions),
        tolerations=tolerations,
        relax=b.selector,
        uncordon=uncordon,
    )


def _relaxations(hosts: list[Host]) -> Proposals:
    """The relaxations of the hosts' constraints alone, then each with a new node of the
    host's kind (or of its pool), in the hosts' order."""

    def proposals(pod: Pod) -> Iterator[Fix]:
        alone: list[Fix] = []
        with_node: list[Fix] = []
        for host in hosts:
            if len(with_node) >= NEAREST:
                break  # the hosts are in order: the first few are the ones to offer
            fix = _relaxation(host)
            if fix is None:
                continue
            if fix not in alone and len(alone) < NEAREST:
                alone.append(fix)
            if host.blocks is not None and host.blocks.cordoned:
                continue  # a cordoned node is uncordoned (above), not copied
            if host.pool:
                more = dataclasses.replace(
                    fix,
                    text=f"{fix.text} so that pool {host.pool} adds a node for it",
                    action=f"{fix.action} and add a node of the pool",
                    add=1,
                    pool=host.pool,
                )
            else:
                more = dataclasses.replace(
                    fix,
                    text=f"{fix.text} and add a node like {host.node}",
                    action=f"{fix.action} and add a node",
                    add=1,
                    like=host.node,
                )
            if more not in with_node and len(with_node) < NEAREST:
                with_node.append(more)
        yield from alone
        yield from with_node

    return proposals


def _constraint_text(claims: list[ResourceClaim]) -> str:
    for claim in claims:
        for con in claim.spec.devices.constraints:
            if con.match_attribute:
                return f"all on one {con.match_attribute}"
            if con.distinct_attribute:
                return f"each on a distinct {con.distinct_attribute}"
    return "shared counters or capacity"


def why(
    state: ClusterState, profile: Profile | None = None, placer: Placer | None = None
) -> list[Diagnosis]:
    """A diagnosis for every pending pod, in name order (the state is left unchanged);
    `placer`, one kept between audits of the same state, makes a later audit incremental."""
    pending = [
        p for _, p in sorted(state.pods.items()) if not p.spec.node_name and not is_terminal(p)
    ]
    return Auditor(state, profile, placer).audit(pending)
