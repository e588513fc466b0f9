"""What classifiers are given and must provide (the contract is in the package docstring)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from itertools import islice
from typing import Any, Protocol

from draplan.allocator.types import TIMEOUT
from draplan.api.core_v1 import Pod
from draplan.api.resource_v1 import ResourceClaim
from draplan.audit.classifiers.text import lacks, moves_text, nearness
from draplan.audit.diagnosis import Diagnosis, Proposals
from draplan.audit.fixes import Fix, Verifier
from draplan.audit.gates import Gates
from draplan.audit.placer import Placer
from draplan.audit.pools import PoolAdvisor
from draplan.audit.reach import Reach, Reacher
from draplan.audit.supply import DeviceMatcher, NodeSupply
from draplan.audit.view import NEAREST, ShapeView
from draplan.autoscaler.moves import Mover
from draplan.cluster.nodepools import price_per_hour
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import PodResult
from draplan.scheduler.claims import ClaimNotFound
from draplan.scheduler.gangs import Gang
from draplan.scheduler.profile import Profile


class Audit(Protocol):
    """What an audit offers its classifiers: the state after the scheduling pass (the input
    state, for configuration classifiers) and the tools that read it."""

    state: ClusterState
    scheduler: Placer  # places pods in what-if forks (the pass's, with its evaluations)
    profile: Profile  # the scheduler's (what a classifier asks its plugins)
    gangs: dict[ObjectKey, Gang]
    gates: Gates
    matcher: DeviceMatcher
    reacher: Reacher
    mover: Mover
    pools: PoolAdvisor | None  # with NodePools: the autoscaler's plan for the pending pods
    placed: dict[ObjectKey, str]  # pods the pass placed, and where
    nominated: dict[ObjectKey, PodResult]  # pods it placed by preemption: node and victims
    verifier: Verifier | None  # while fixes are chosen

    def shape_of(self, pod: Pod) -> bytes: ...

    def view(self, shape: bytes, pod: Pod, claims: list[ResourceClaim]) -> ShapeView: ...


class Pending:
    """A pending pod as the input has it: its claims (none when they cannot be got, `missing`
    says why), the devices they ask for, its gang."""

    def __init__(
        self,
        key: ObjectKey,
        pod: Pod,
        claims: list[ResourceClaim],
        size: int,
        gang: Gang | None,
        missing: ClaimNotFound | None = None,
    ) -> None:
        self.key, self.pod, self.claims, self.size = key, pod, claims, size
        self.gang, self.missing = gang, missing


class Case(Pending):
    """A pending pod after the scheduling pass. What the nodes say about its shape (`view`),
    which node shapes could ever host it (`reach`) and the capacity figures are worked out
    when a classifier first asks: a shared classifier's answer, computed on the first pod of a
    shape, spares the others of that shape the work."""

    def __init__(self, audit: Audit, pending: Pending) -> None:
        super().__init__(
            pending.key, pending.pod, pending.claims, pending.size, pending.gang, pending.missing
        )
        self.audit = audit

    @cached_property
    def shape(self) -> bytes:
        return self.audit.shape_of(self.pod)

    @cached_property
    def view(self) -> ShapeView:
        return self.audit.view(self.shape, self.pod, self.claims)

    @cached_property
    def reach(self) -> Reach | None:
        """None for a pod with an allocated claim: its devices are where they are."""
        if any(c.status.allocation is not None for c in self.claims):
            return None
        return self.audit.reacher.reach(self.shape, self.pod, self.claims)

    @cached_property
    def scale(self) -> int:
        """How many pods of this shape must fit: the pod, or the gang members still needed."""
        gang, pods = self.gang, self.audit.state.pods
        if gang is None:
            return 1
        bound = sum(
            1
            for k in gang.members
            if k in pods and pods[k].spec.node_name and not is_terminal(pods[k])
        )
        return max(1, min(len(members(self.audit.state, gang)), gang.min_count - bound))

    @cached_property
    def supplies(self) -> list[NodeSupply]:
        """The nodes the pod may use, nearest to fitting first."""
        return sorted(self.view.supplies.values(), key=nearness)

    @cached_property
    def hosts(self) -> list[NodeSupply]:
        """Nodes an empty copy of which holds the pod (its reach), else by device counts."""
        reach = self.reach
        if reach is None:
            return [s for s in self.supplies if s.could_host()]
        hostable = {h.node for h in reach.admitted if not h.pool}
        return [s for s in self.supplies if s.node in hostable]

    @cached_property
    def candidates(self) -> list[NodeSupply]:
        """Nodes where the devices and resources suffice: only the allocator's search says no."""
        return [s for s in self.supplies if s.devices_suffice() and s.fits_resources]

    @cached_property
    def timeouts(self) -> list[str]:
        return [s.node for s in self.candidates if s.code == TIMEOUT]

    @cached_property
    def evidence(self) -> dict[str, Any]:
        """The view's evidence and the nearest misses: what every capacity verdict shows. A
        pod that asks for devices misses only on nodes that have some it could use (a
        CPU-only node is no near miss for a GPU pod)."""
        out = self.view.evidence()
        near = [
            s for s in self.supplies if not s.needed or any(s.matching.get(k, 0) for k in s.needed)
        ]
        out["nearestMiss"] = {s.node: lacks(s) for s in near[:NEAREST]}
        return out

    def diagnosis(
        self,
        category: str,
        message: str,
        evidence: dict[str, Any] | None = None,
        fix: dict[str, Any] | None = None,
        proposals: Proposals | None = None,
        otherwise: str = "",
    ) -> Diagnosis:
        """A verdict with the capacity evidence (`evidence`) and `evidence` added."""
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


class ConfigClassifier(Protocol):
    """Judges a pod on the input state, before the scheduling pass."""

    name: str

    @property
    def categories(self) -> tuple[str, ...]: ...

    def classify(self, audit: Audit, pod: Pending) -> Diagnosis | None: ...


class Classifier(Protocol):
    """Judges a pod after the scheduling pass; with `shared`, its answer depends only on the
    pod's shape and gang and is given once for them."""

    name: str
    shared: bool

    @property
    def categories(self) -> tuple[str, ...]: ...

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None: ...


def members(state: ClusterState, gang: Gang) -> list[Pod]:
    """The gang's members still pending."""
    return [
        state.pods[k]
        for k in gang.members
        if k in state.pods and not state.pods[k].spec.node_name and not is_terminal(state.pods[k])
    ]


def moves(audit: Audit, pod: Pod, supplies: list[NodeSupply]) -> Iterator[Fix]:
    """Moves that free one of the nearest nodes for the pod, planned on the state as the
    fixes of the pods ahead of it leave it. For a pod alone, the simulation that finds
    them is the check: they stay made. A gang's members are checked together. The saving
    is the node the move spares: the one the autoscaler's plan would have bought (it makes
    a one-pod move instead), else one like the node freed, at its price."""
    key = key_of(pod)
    alone = key not in audit.gangs
    spared = audit.pools.spared.get(key) if audit.pools is not None else None
    # Nodes earlier fixes placed pods on (or freed) have changed since `supplies` were
    # counted: the next ones are tried instead.
    used = audit.verifier.used if audit.verifier is not None else set()
    for s in islice((s for s in supplies if s.node not in used), NEAREST):
        deficit = sum(max(0, n - s.devices.get(k, 0)) for k, n in s.needed.items())
        moved = audit.mover.defragment(pod, s.node, deficit, keep=alone)
        if moved is None:
            continue
        node = audit.state.nodes[s.node]
        saving = spared if spared is not None else price_per_hour(audit.state, node)
        saves = f" instead of a new node (saves ${saving:g}/h)" if saving else ""
        yield Fix(
            f"moving {moves_text(moved)} makes room on {s.node}{saves}",
            "move pods to defragment",
            node=s.node,
            move=tuple(moved.items()),
            extra=(("savingPerHour", round(saving, 4)),) if saving is not None else (),
            made=alone,
        )
