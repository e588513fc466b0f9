"""Pending pods placed on the nodes that exist before a plan adds any (Cluster Autoscaler's
filter_out_schedulable): the scheduler's queue run once, and again on each later plan of the
same state, checking only what changed since.

The run is a chain: each pod goes to the best node of the state the pods before it left. A
later run of the same queue (the same pods, claims and gangs, in the same order) over nodes
that changed since (by version) repeats the earlier one except where a changed node takes
part: with `changed` the nodes whose content may differ from the earlier run's at this point
of the chain, a pod the earlier run placed on node t, t unchanged, goes to the best of
`changed` and t (t beat every unchanged node, which still holds what it held then); a pod the
earlier run left pending (every unchanged node refused it) goes to the best of `changed`, or
nowhere; a pod whose earlier node changed is scheduled over every node. Wherever the outcome
differs, both nodes join `changed`; gangs are scheduled in full and their nodes join it. Each
outcome is the real scheduler's, only over fewer nodes: the state after the run is the state
a full run gives. That holds only when the best node follows from each node's own answer
(`Profile.local_choice`): with random tie-breaks, scores normalized over the nodes scored,
only some feasible nodes scored (percentageOfNodesToScore) or plugins that read other nodes,
the queue is run in full.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from draplan.api.core_v1 import Pod
from draplan.api.resource_v1 import ResourceClaim
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import Scheduler
from draplan.scheduler.claims import ClaimNotFound, pod_claims
from draplan.scheduler.gangs import Gang
from draplan.scheduler.queue import waiting_in_queue_order

MAX_CHANGED = 64  # changed nodes beyond which checking them costs about a full run


@dataclass(frozen=True)
class _Queued:
    """A pod of the queue, with what its scheduling depends on besides the nodes."""

    key: ObjectKey
    pod: Pod
    claims: tuple[ResourceClaim, ...] | None  # None: a claim is missing
    gang: Gang | None


@dataclass
class _Run:
    queue: list[_Queued]
    versions: dict[str, tuple[int, int]]  # every node's version when the run began
    placed: dict[ObjectKey, str] = field(default_factory=dict)  # where the run put each pod


def _claims(state: ClusterState, pod: Pod) -> tuple[ResourceClaim, ...] | None:
    try:
        return tuple(pod_claims(state, pod))
    except ClaimNotFound:
        return None


def _queue(
    state: ClusterState, scheduler: Scheduler
) -> tuple[list[_Queued], dict[ObjectKey, Gang]]:
    """The pending pods in `Scheduler.run`'s order, with their gangs; and the gangs."""
    gangs = scheduler.gangs_of(state)
    pending = waiting_in_queue_order(state)
    queue = [_Queued(key_of(p), p, _claims(state, p), gangs.get(key_of(p))) for p in pending]
    return queue, gangs


class ExistingFit:
    """Runs the scheduler's queue on a state; kept by an autoscaler between plans of one
    state, it repeats the previous run where nothing it depends on changed."""

    def __init__(self) -> None:
        self._state: ClusterState | None = None
        self._last: _Run | None = None

    def run(self, state: ClusterState, scheduler: Scheduler) -> None:
        """Place what the scheduler places of the pending pods (mutates `state`)."""
        queue, gangs = _queue(state, scheduler)
        everywhere, own = state.version("*")[0], state.node_version
        versions = {name: (everywhere, own.get(name) or 0) for name in state.nodes}
        changed = self._changed(state, scheduler, queue, versions)
        this = _Run(queue, versions)
        if changed is None:
            # Only the placements count here (Cluster Autoscaler's filter_out_schedulable).
            scheduler.run(state, gangs=gangs, placements_only=True)  # gangs found just now
        else:
            self._replay(state, scheduler, changed)
        for q in queue:
            node = state.pods[q.key].spec.node_name
            if node:
                this.placed[q.key] = node
        self._state, self._last = state, this

    def _changed(
        self,
        state: ClusterState,
        scheduler: Scheduler,
        queue: list[_Queued],
        versions: dict[str, tuple[int, int]],
    ) -> set[str] | None:
        """The nodes changed since the last run, or None when it cannot be repeated (another
        state or queue, or too much changed)."""
        last = self._last
        if state is not self._state or last is None or len(queue) != len(last.queue):
            return None
        if not scheduler.profile.local_choice:
            return None  # the best node depends on more than each node's own answer
        for now, then in zip(queue, last.queue, strict=True):
            if (
                now.pod is not then.pod
                or now.claims is None
                or now.claims != then.claims
                or now.gang != then.gang
            ):
                return None
        before = last.versions
        changed = {name for name, v in versions.items() if before.get(name) != v}
        changed.update(name for name in before if name not in versions)
        return changed if len(changed) <= MAX_CHANGED else None

    def _replay(self, state: ClusterState, scheduler: Scheduler, changed: set[str]) -> None:
        """`Scheduler.run` over the last run's queue, each pod judged against `changed` only
        where the module's note allows."""
        assert self._last is not None
        last = self._last
        done: set[tuple[str, ...]] = set()
        for q in last.queue:
            before = last.placed.get(q.key)
            if q.gang is None:
                node = self._place(state, scheduler, state.pods[q.key], before, changed)
                if node != before:
                    changed.update(n for n in (node, before) if n)
                continue
            gang = q.gang
            if gang.key in done:
                continue
            done.add(gang.key)
            for r in scheduler.schedule_waiting_members(state, gang):
                changed.update(n for n in (r.node, last.placed.get(r.key)) if n)

    @staticmethod
    def _place(
        state: ClusterState, scheduler: Scheduler, pod: Pod, before: str | None, changed: set[str]
    ) -> str | None:
        nodes = state.nodes
        if before is not None and before in changed:
            return scheduler.schedule_pod(state, pod).node
        candidates = sorted(n for n in changed if n in nodes)
        if before is not None:
            candidates = sorted({*candidates, before})
        if not candidates:
            return None
        node = scheduler.schedule_pod(state, pod, candidates).node
        if node is None and before is not None:
            # Not what an unchanged node allows: judge the pod over every node after all.
            node = scheduler.schedule_pod(state, pod).node
        return node
