"""The scheduler: a queue, then per pod PreFilter → Filter → Score → Reserve → Permit → Bind,
and gangs placed all or nothing in one cycle, inside their topology domain when they have one.

It never assumes nodes are real: the autoscaler runs it on a forked state with template nodes.
With `post_filter`, a pod no node fits runs the profile's PostFilter plugins, DefaultPreemption
among them: lower-priority pods may be evicted for it and a node nominated, where it binds in
a later attempt; its requests count there meanwhile for pods of equal or lower priority.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import msgspec

from draplan.api.core_v1 import Pod, PodResourceClaimStatus
from draplan.api.resource_v1 import POD_CLAIM_ANNOTATION, ResourceClaim
from draplan.cluster.podresources import is_terminal, node_allocatable, pod_requests
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler.claims import unreserve
from draplan.scheduler.evaluations import Evaluator, NodeStatuses, Selection, ShapeEvaluations
from draplan.scheduler.extended import claim_status
from draplan.scheduler.framework import (
    Code,
    CycleState,
    PodInfo,
    PostFilterResult,
    Status,
    encode_shape,
    is_cluster,
    unschedulable,
)
from draplan.scheduler.gangs import Gang, gangs_under, pinned_domains
from draplan.scheduler.nominated import nominees
from draplan.scheduler.plugins.dynamicresources import DraState
from draplan.scheduler.plugins.names import DYNAMIC_RESOURCES
from draplan.scheduler.preemption import DefaultPreemption, evict, workload_group
from draplan.scheduler.preemption_groups import preempt_group
from draplan.scheduler.profile import DEFAULT_SCHEDULER, Profile, build_profile
from draplan.scheduler.queue import (
    in_queue_order,
    priority_of,
    priority_table,
    waiting_in_queue_order,
)
from draplan.scheduler.reasons import (
    NO_NODES_AVAILABLE,
    FitReason,
    fit_error,
    pod_level,
    with_post_filter,
)

GANG_INCOMPLETE = "GangIncomplete"
GANG_UNPLACEABLE = "GangUnplaceable"
TOPOLOGY_UNSATISFIABLE = "TopologyUnsatisfiable"


@dataclass
class PodResult:
    """Where a pod went (node and allocated claims), or why it did not."""

    key: ObjectKey
    pod: Pod
    node: str | None = None
    claims: list[ResourceClaim] = field(default_factory=list)
    reason: FitReason | None = None
    gang: str = ""
    # False when a cluster filter (one that reads other nodes) took part in a failure: placing
    # other pods may then make the pod fit, unlike a failure on what nodes hold.
    monotone: bool = True
    nominated: str = ""  # the node a PostFilter plugin (preemption) nominated it to
    victims: tuple[Pod, ...] = ()  # the pods evicted for it there, most important first


def _shape(
    pod: Pod,
    requests: dict[str, int],
    nonzero: dict[str, int],
    claims: list[ResourceClaim],
    extra: list[object],
) -> bytes:
    claim_shapes: list[object] = []
    for claim in claims:
        if claim.status.allocation is not None:
            claim_shapes.append(("allocated", key_of(claim), claim.status.allocation.node_selector))
        else:
            # Claims generated from one template are interchangeable; named claims are not.
            generated = POD_CLAIM_ANNOTATION in claim.metadata.annotations
            claim_shapes.append(("pending", None if generated else key_of(claim), claim.spec))
    return encode_shape(pod, requests, nonzero, claim_shapes, extra)


class Scheduler:
    """Places pending pods on a ClusterState (mutating it: pods bound, claims allocated)."""

    def __init__(
        self,
        profile: Profile | None = None,
        gangs: bool = True,
        explain: bool = True,
        post_filter: bool = False,
    ) -> None:
        self.profile = profile or build_profile()
        # post_filter=True: kube-scheduler's own run, preemption included; callers that only
        # ask what fits now (the autoscaler's simulations, as Cluster Autoscaler's filtering
        # does) run the other PostFilter plugins, which only add their words to the message.
        self.post_filters = self.profile.post_filters
        if not post_filter:
            self.post_filters = _without_preemption(self.post_filters)
        # explain=False: a pod that fits nowhere gets only "0/N nodes are available." (no
        # per-reason counts or allocator evidence), for callers that only need placements.
        self.evaluator = Evaluator(self.profile, explain=explain)
        # gangs=False places gang members one by one, as schedulers without gang support do.
        self.gangs = gangs
        # The plugins that read more of a pod than its shape (framework: `pod_shape`), the
        # node-local ones first.
        plugins = {id(p): p for p in (*self.profile.filters, *(p for p, _ in self.profile.scores))}
        shapers = [p for p in plugins.values() if callable(getattr(p, "pod_shape", None))]
        self._shapers = sorted(shapers, key=is_cluster)
        self._local_shapers = sum(1 for p in shapers if not is_cluster(p))
        # The other profiles of the configuration, by schedulerName: each pod is scheduled
        # by the profile it names, over the one state and queue.
        self.lanes: dict[str, Scheduler] = {self.profile.name: self}
        for other in self.profile.siblings:
            self.lanes[other.name] = Scheduler(other, gangs, explain, post_filter)
        # During a `run(placements_only=True)`: the shapes found to fit nowhere, and the gangs.
        self._hopeless: set[bytes] | None = None
        self._gang_members: Mapping[ObjectKey, Gang] = {}

    def gangs_of(self, state: ClusterState) -> dict[ObjectKey, Gang]:
        """The gangs this scheduler places all or nothing, by pod key: under a kube-scheduler
        profile those kube-scheduler itself gangs at the state's version and gates
        (`kube_gangs`: Kueue pod groups and coscheduling PodGroups go pod by pod); under
        draplan's profile every group draplan recognises, its named policy."""
        if not self.gangs:
            return {}
        return gangs_under(state, self.profile.kube)

    def lane(self, pod: Pod) -> Scheduler | None:
        """The scheduler (profile) of the pod's spec.schedulerName; None when no profile
        answers to it: kube-scheduler leaves such a pod to another scheduler."""
        return self.lanes.get(pod.spec.scheduler_name or DEFAULT_SCHEDULER)

    @contextmanager
    def post_filtering(self) -> Iterator[None]:
        """The profile's PostFilter plugins on for the body: what kube-scheduler does on the
        nodes there are, preemption included (the autoscaler's look at existing nodes)."""
        kept, self.post_filters = self.post_filters, self.profile.post_filters
        try:
            yield
        finally:
            self.post_filters = kept

    # --- one pod -------------------------------------------------------------------------

    def _pre_filter(self, state: ClusterState, pod: Pod) -> tuple[PodInfo, CycleState, Status]:
        """DynamicResources' PreFilter first (its claims make the pod's shape), then the
        others in profile order; a plugin saying SKIP is not asked to Filter. The status is
        kube-scheduler's: the first UnschedulableAndUnresolvable stops, else the last
        Unschedulable."""
        cycle = CycleState()
        features = state.features
        requests = pod_requests(pod, features)
        bare = PodInfo(pod, key_of(pod), requests, b"", features)
        status = self.profile.dra.pre_filter(state, cycle, bare)
        dra = cycle.data.get(DYNAMIC_RESOURCES)
        claims = dra.claims if isinstance(dra, DraState) else []
        extra = [p.pod_shape(state, pod) for p in self._shapers]
        shape = _shape(pod, requests, bare.nonzero, claims, extra)
        local = extra[: self._local_shapers]
        # The node-local plugins' answers are shared by pods that differ only for the others.
        local_shape = (
            shape if local == extra else _shape(pod, requests, bare.nonzero, claims, local)
        )
        info = PodInfo(pod, key_of(pod), requests, shape, features, local_shape, tuple(local))
        status = status.with_plugin(DYNAMIC_RESOURCES)
        if status.code == Code.SKIP:
            cycle.skip_filter.add(DYNAMIC_RESOURCES)
        if status.ok or status.code == Code.UNSCHEDULABLE:
            for plugin in self.profile.pre_filters:
                more = plugin.pre_filter(state, cycle, info)
                if more.code == Code.SKIP:
                    cycle.skip_filter.add(plugin.name)
                elif not more.ok:
                    status = more.with_plugin(plugin.name)
                    if more.code != Code.UNSCHEDULABLE:
                        break
        if status.ok and cycle.nodes is not None and not cycle.nodes:
            plugins = sorted(cycle.narrowed_by)
            message = (
                f"node(s) didn't satisfy plugin {plugins[0]}"
                if len(plugins) == 1
                else f"node(s) didn't satisfy plugin(s) [{' '.join(plugins)}] simultaneously"
            )
            status = unschedulable(message, resolvable=False)
        return info, cycle, status

    def shape_of(self, state: ClusterState, pod: Pod) -> bytes:
        """What makes pods interchangeable for scheduling (requests, selectors, claim specs)."""
        return self._pre_filter(state, pod)[0].shape

    def admits(self, state: ClusterState, pod: Pod) -> tuple[bytes, bool]:
        """`shape_of`, and whether PreFilter lets the pod through (else no node is asked)."""
        info, _, status = self._pre_filter(state, pod)
        return info.shape, status.ok

    def evaluate(self, state: ClusterState, pod: Pod) -> tuple[Status, dict[str, Status]]:
        """PreFilter's status and every node's Filter status for `pod`, without binding it:
        what an auditor needs to explain a pending pod."""
        info, cycle, status = self._pre_filter(state, pod)
        if not status.ok:
            return status, {}
        ev = self.evaluator.refresh(state, cycle, info)
        self.evaluator.explain(state, cycle, info, ev)
        statuses = NodeStatuses(self.evaluator, state, cycle, info, ev, sorted(ev.evals), {})
        return status, dict(statuses.items())

    def schedule_pod(
        self, state: ClusterState, pod: Pod, candidates: list[str] | None = None
    ) -> PodResult:
        """One scheduling cycle for one pod; binds it on success. `candidates`: only those
        nodes (draplan's own trials), tried in that order; the scheduler's place in its node
        order is then left as it was. A pod naming another profile is scheduled by it.

        Pods nominated to a node count there only for pods of equal or lower priority, never
        for themselves (the nominator's addGENominatedPods): the others are set aside for the
        cycle."""
        lane = self.lane(pod)
        if lane is not self and lane is not None:
            return lane.schedule_pod(state, pod, candidates)
        own = key_of(pod)
        aside = []
        if nominees(state):
            classes, default = priority_table(state)
            mine = priority_of(pod, classes, default)
            aside = [
                k
                for k, _ in state.held.items()
                if k == own or priority_of(state.pods[k], classes, default) < mine
            ]
        if not aside:
            return self._cycle(state, pod, candidates)
        for k in aside:
            state.release(k)
        try:
            return self._cycle(state, pod, candidates)
        finally:
            for k in aside:
                state.rehold(k)

    def _cycle(self, state: ClusterState, pod: Pod, candidates: list[str] | None) -> PodResult:
        if candidates is None and not state.nodes:
            # schedulePod (schedule_one.go): ErrNoNodesAvailable before any plugin runs,
            # UnschedulableAndUnresolvable, no PostFilter.
            return PodResult(key_of(pod), pod, reason=FitReason(NO_NODES_AVAILABLE))
        info, cycle, status = self._pre_filter(state, pod)
        hopeless = self._hopeless
        if hopeless is None or candidates is not None or pod.status.nominated_node_name:
            # A pod nominated to a node may fit there on room held for it alone.
            return self._attempt(state, pod, candidates, info, cycle, status)
        if info.shape in hopeless:
            return PodResult(info.key, pod)
        result = self._attempt(state, pod, None, info, cycle, status)
        if result.victims:
            hopeless.clear()  # evictions free room the shapes given up on may take
        elif result.monotone and not (
            result.node or result.nominated or info.key in self._gang_members
        ):
            hopeless.add(info.shape)
        return result

    def _attempt(
        self,
        state: ClusterState,
        pod: Pod,
        candidates: list[str] | None,
        info: PodInfo,
        cycle: CycleState,
        status: Status,
    ) -> PodResult:
        if not status.ok:
            count = len(candidates) if candidates is not None else len(state.nodes)
            code = "Error" if status.code == Code.ERROR else "PreFilter"
            reason, found = self._post_filter(
                state, cycle, info, pod_level(status.reasons[0], code, count), candidates
            )
            return self._nominate(state, info, reason, found)
        evaluator = self.evaluator
        trial: list[str] | None = candidates
        total: int | None = None
        if cycle.nodes is not None:
            # A PreFilter named the only nodes worth trying (upstream's PreFilterResult).
            narrowed = cycle.nodes
            if candidates is None:
                trial, total = sorted(n for n in narrowed if n in state.nodes), len(state.nodes)
            else:
                trial, total = [n for n in candidates if n in narrowed], len(candidates)
        nominated = pod.status.nominated_node_name
        if candidates is None and nominated and nominated in state.nodes:
            # evaluateNominatedNode: a pod nominated to a node goes there if it fits now.
            ev = evaluator.refresh_only(state, cycle, info, [nominated])
            if ev.evals[nominated].status.ok:
                evaluator.confirm(state, cycle, info, ev, nominated)
                if ev.evals[nominated].status.ok:
                    return self._bind(state, cycle, info, nominated, ev.evals[nominated].details)
        if trial is None:
            ev = evaluator.refresh(state, cycle, info)
        else:
            ev = evaluator.refresh_only(state, cycle, info, trial)
        chosen = evaluator.select(state, cycle, info, ev, trial)
        while chosen.node is not None and ev.evals[chosen.node].origin:
            # An answer shared with an identical node: evaluate the chosen node itself.
            shared = ev.evals[chosen.node]
            evaluator.confirm(state, cycle, info, ev, chosen.node)
            own = ev.evals[chosen.node]
            if own.status.ok and own.score == shared.score and own.raw == shared.raw:
                break
            chosen = evaluator.select(state, cycle, info, ev, trial)
        if candidates is None:
            # kube-scheduler's nextStartNodeIndex moves past the nodes this cycle went through.
            count = total if total is not None else len(ev.evals)
            if count and chosen.processed % count:
                name = self.profile.name
                here = state.search_start.get(name) or 0
                state.search_start[name] = (here + chosen.processed) % count
        if chosen.error is not None:
            reason = pod_level(chosen.error.reasons[0], "Error", total or len(ev.evals))
            return PodResult(info.key, pod, reason=reason)
        if chosen.node is None:
            offered = candidates is not None
            return self._unschedulable(state, cycle, info, ev, chosen, trial, total, offered)
        return self._bind(state, cycle, info, chosen.node, ev.evals[chosen.node].details)

    def _unschedulable(
        self,
        state: ClusterState,
        cycle: CycleState,
        info: PodInfo,
        ev: ShapeEvaluations,
        chosen: Selection,
        candidates: list[str] | None,
        total: int | None,
        offered: bool,
    ) -> PodResult:
        """`candidates`: the nodes tried, a caller's (`offered`) or those a PreFilter left."""
        evaluator = self.evaluator
        absent = None
        if candidates is None:
            # Every node has an entry after refresh (len(state.nodes) would walk them).
            reason = evaluator.fit_error(state, cycle, info, ev, len(ev.evals), chosen.failed)
        else:
            if cycle.narrowed_by:
                plugins = " ".join(sorted(cycle.narrowed_by))
                absent = unschedulable(
                    f"node(s) didn't satisfy plugin(s) [{plugins}]", resolvable=False
                )
            reason = evaluator.fit_error_among(
                state, cycle, info, ev, candidates, chosen.failed, total, absent
            )
        found = None
        if self.post_filters:
            statuses: Mapping[str, Status]
            statuses = NodeStatuses(evaluator, state, cycle, info, ev, candidates, chosen.failed)
            if absent is not None and not offered and candidates is not None:
                # findNodesThatFitPod: the nodes a PreFilterResult leaves out are in the
                # diagnosis as UnschedulableAndUnresolvable, so preemption counts them too.
                statuses = _Narrowed(statuses, set(candidates), state, absent)
            reason, found = self._post_filter(
                state, cycle, info, reason, candidates if offered else None, statuses
            )
        result = self._nominate(state, info, reason, found)
        result.monotone = not evaluator.cluster_active(cycle)
        return result

    def _nominate(
        self, state: ClusterState, info: PodInfo, reason: FitReason, found: PostFilterResult | None
    ) -> PodResult:
        """The pod unschedulable this cycle: with a PostFilterResult, nominated to its node."""
        if found is None or not found.nominated_node:
            return PodResult(info.key, state.pods.get(info.key) or info.pod, reason=reason)
        pod = state.nominate(info.pod, found.nominated_node)
        return PodResult(
            info.key, pod, reason=reason, nominated=found.nominated_node, victims=found.victims
        )

    def _post_filter(
        self,
        state: ClusterState,
        cycle: CycleState,
        info: PodInfo,
        reason: FitReason,
        candidates: list[str] | None,
        statuses: Mapping[str, Status] | None = None,
    ) -> tuple[FitReason, PostFilterResult | None]:
        """RunPostFilterPlugins: in order until one succeeds (its PostFilterResult is the
        nomination, and nothing joins the message) or fails other than Unschedulable (its
        reasons alone join it); else the reasons of all, joined, end the FailedScheduling
        message. draplan's own trials on a few `candidates` never preempt."""
        reasons: list[str] = []
        plugins = self.post_filters
        if candidates is not None:
            plugins = _without_preemption(plugins)
        for plugin in plugins:
            status = plugin.post_filter(state, cycle, info, statuses or {})
            if status.ok:
                found = status.detail if isinstance(status.detail, PostFilterResult) else None
                return reason, found
            if status.code != Code.UNSCHEDULABLE:
                reasons = list(status.reasons)
                break
            reasons.extend(status.reasons)
        return with_post_filter(reason, reasons), None

    def _bind(
        self,
        state: ClusterState,
        cycle: CycleState,
        info: PodInfo,
        node_name: str,
        details: dict[str, object],
    ) -> PodResult:
        node = state.nodes[node_name]
        ev = self.evaluator.of(cycle, info)
        if node_name in ev.evals and ev.evals[node_name].origin:
            # Callers that pick the node themselves may hold an identical node's answer.
            self.evaluator.confirm(state, cycle, info, ev, node_name)
            own = ev.evals[node_name]
            if not own.status.ok:
                return PodResult(
                    info.key,
                    info.pod,
                    reason=fit_error(len(state.nodes), {node_name: own.status}),
                )
            details = own.details
        for plugin_name, detail in details.items():
            cycle.data[(plugin_name, node_name)] = detail
        status = self.profile.dra.reserve(state, cycle, info, node)
        if not status.ok:
            self.profile.dra.unreserve(state, cycle, info, node)
            return PodResult(
                info.key, info.pod, reason=pod_level(status.reasons[0], "Error", len(state.nodes))
            )
        dra = cycle.data.get(DYNAMIC_RESOURCES)
        claims = [state.claims[key_of(c)] for c in dra.claims] if isinstance(dra, DraState) else []
        pod = _with_claim_statuses(info.pod, claims)
        if isinstance(dra, DraState) and dra.extended is not None:
            # The special claim of extended resources backed by DRA, named in the pod's status.
            claims.append(dra.extended)
            pod_status = msgspec.structs.replace(
                pod.status, extended_resource_claim_status=claim_status(pod, dra.extended)
            )
            pod = msgspec.structs.replace(pod, status=pod_status)
        bound = state.bind_pod(pod, node_name)
        return PodResult(info.key, bound, node_name, claims)

    # --- gangs ---------------------------------------------------------------------------

    def _place_all(
        self, state: ClusterState, pods: list[Pod], candidates: list[str] | None
    ) -> list[PodResult]:
        return [self.schedule_pod(state, pod, candidates) for pod in pods]

    def _free_devices(self, state: ClusterState, nodes: list[str]) -> tuple[int, int]:
        devices = 0
        cpu = 0
        for name in nodes:
            node = state.nodes[name]
            for pool in state.pools_for_node(node):
                for view in pool.devices:
                    if not state.in_use(view.id) and state.shared_use(view.id) is None:
                        devices += 1
            alloc = node_allocatable(node)
            if "cpu" in alloc:
                cpu += alloc["cpu"] - state.requested(name).get("cpu", 0)
        return devices, cpu

    def schedule_gang(
        self, state: ClusterState, gang: Gang, pending: list[Pod], bound: int
    ) -> list[PodResult]:
        """All or nothing: commit only if at least minCount members end up placed."""
        total = len(state.nodes)
        if gang.missing or bound + len(pending) < gang.min_count:
            why = gang.missing or (
                f"{gang.label} has {bound + len(pending)} of "
                f"{gang.min_count} pods required to schedule together"
            )
            return [
                PodResult(
                    key_of(p), p, reason=pod_level(why, GANG_INCOMPLETE, total), gang=gang.label
                )
                for p in pending
            ]
        if gang.topology is not None:
            results = self._gang_in_domain(state, gang, pending, bound)
        else:
            with state.forked() as _:
                trial = self._place_all(state, pending, None)
                # A member nominated by its own preemption counts: the gang preempts as a
                # unit (all it needs placed or nominated) or not at all (the fork reverts).
                placed = sum(1 for r in trial if r.node or r.nominated)
                ok = bound + placed >= gang.min_count
                if ok:
                    state.commit()
                    state.fork()  # balance the context manager's revert
            results = self._gang_outcome(gang, trial, ok, total)
            if not ok:  # nominations made in the trial are gone with it
                results = [_as_before(state, r) for r in results]
            elif bound + sum(1 for r in trial if r.node) < gang.min_count:
                results = self._at_permit(state, gang, results)
        if any(r.node or r.nominated for r in results):
            return results
        return self._group_post_filter(state, gang, pending, bound, results) or results

    def _at_permit(
        self, state: ClusterState, gang: Gang, results: list[PodResult]
    ) -> list[PodResult]:
        """The gang reaches minCount only with members its preemption nominated: those placed
        wait at the gang's Permit until minCount are (gangscheduling: Permit returns Wait; the
        coscheduling plugin's alike), so none is bound in this cycle. Each stays nominated to
        its node, its claims not allocated, as a nominated pod's are not."""
        why = f"{gang.label}: waiting for {gang.min_count} pods of the gang to be scheduled"
        out = []
        for r in results:
            if not r.node:
                out.append(r)
                continue
            unreserve(state, r.key)
            state.unbind_pod(state.pods[r.key])
            pod = state.nominate(state.pods[r.key], r.node)
            reason = FitReason(why)
            out.append(PodResult(r.key, pod, reason=reason, gang=gang.label, nominated=r.node))
        return out

    def _group_post_filter(
        self,
        state: ClusterState,
        gang: Gang,
        pending: list[Pod],
        bound: int,
        results: list[PodResult],
    ) -> list[PodResult] | None:
        """PodGroupPostFilter, for a gang of a PodGroup under workload-aware preemption: the
        group's pending pods preempt together, or the reason ends their messages."""
        plugin = next((p for p in self.post_filters if isinstance(p, DefaultPreemption)), None)
        group = workload_group(state, pending[0]) if plugin is not None else None
        if plugin is None or group is None:
            return None
        kept = self.post_filters

        def place(st: ClusterState, pods: list[Pod]) -> list[tuple[Pod, str]]:
            self.post_filters = _without_preemption(kept)
            try:
                return [(r.pod, r.node or "") for r in self._place_all(st, pods, None)]
            finally:
                self.post_filters = kept

        def fits(st: ClusterState, pod: Pod, node: str) -> bool:
            return self.schedule_pod(st, pod, [node]).node == node  # no PostFilter there

        shortfall = f"{gang.label}: its pods do not fit together even without lower-priority pods"
        outcome = preempt_group(
            state, plugin, group, pending, gang.min_count - bound, place, fits, shortfall
        )
        if outcome.message:
            return [
                PodResult(r.key, r.pod, reason=_post(r.reason, outcome.message), gang=r.gang)
                for r in results
            ]
        victims = outcome.victims
        for node in sorted(set(outcome.nominations.values())):
            evict(state, pending[0], node, victims)  # the victims go once, with the first
            victims = ()
        out = []
        for r in results:
            node = outcome.nominations.get(r.key, "")
            if not node:
                out.append(r)
                continue
            pod = state.nominate(state.pods.get(r.key) or r.pod, node)
            shown = outcome.victims if not any(o.victims for o in out) else ()
            out.append(
                PodResult(r.key, pod, reason=r.reason, gang=r.gang, nominated=node, victims=shown)
            )
        return out

    def _gang_outcome(
        self, gang: Gang, results: list[PodResult], ok: bool, total: int, why: str = ""
    ) -> list[PodResult]:
        for r in results:
            r.gang = gang.label
        if ok:
            return results
        placed = sum(1 for r in results if r.node or r.nominated)
        message = why or (
            f"{gang.label}: only {placed} of {len(results)} pending pods fit "
            f"together, {gang.min_count} required"
        )
        out = []
        for r in results:
            reason = (
                r.reason
                if r.reason is not None and not why
                else pod_level(
                    message, GANG_UNPLACEABLE if not why else TOPOLOGY_UNSATISFIABLE, total
                )
            )
            if r.node or r.nominated:
                reason = pod_level(
                    message, GANG_UNPLACEABLE if not why else TOPOLOGY_UNSATISFIABLE, total
                )
            out.append(PodResult(r.key, unbound(r.pod), reason=reason, gang=gang.label))
        return out

    def _gang_in_domain(
        self, state: ClusterState, gang: Gang, pending: list[Pod], bound: int
    ) -> list[PodResult]:
        assert gang.topology is not None
        key = gang.topology.key
        domains: dict[str, list[str]] = {}
        for name, node in sorted(state.nodes.items()):
            value = node.metadata.labels.get(key)
            if value is not None:
                domains.setdefault(value, []).append(name)
        pinned = pinned_domains(state, gang)
        if pinned is not None:  # members already running pin the domain
            keep = set(pinned)
            domains = {d: ns for d, ns in domains.items() if d in keep}
        total = len(state.nodes)
        fits: list[tuple[int, tuple[int, int], str]] = []
        for value, nodes in domains.items():
            with state.forked():
                results = self._place_all(state, pending, nodes)
                placed = sum(1 for r in results if r.node)
                if bound + placed >= gang.min_count:
                    free = (0, 0) if self.profile.kube else self._free_devices(state, nodes)
                    fits.append((placed, free, value))
        if fits:
            chosen = domains[self._best_domain(gang, fits)]
            results = self._place_all(state, pending, chosen)
            return self._gang_outcome(gang, results, True, total)
        if gang.topology.required:
            why = (
                f"{gang.label}: no single {key} domain of {len(domains)} fits "
                f"{gang.min_count} pods together"
            )
            empty = [PodResult(key_of(p), p) for p in pending]
            return self._gang_outcome(gang, empty, False, total, why)
        # Preferred: spread over as few domains as possible, largest free capacity first.
        ranked = sorted(
            domains, key=lambda d: (tuple(-x for x in self._free_devices(state, domains[d])), d)
        )
        with state.forked():
            results = []
            for pod in pending:
                result = PodResult(key_of(pod), pod)
                for value in ranked:
                    result = self.schedule_pod(state, pod, domains[value])
                    if result.node:
                        break
                results.append(result)
            ok = bound + sum(1 for r in results if r.node) >= gang.min_count
            if ok:
                state.commit()
                state.fork()
        everywhere = [n for value in ranked for n in domains[value]]
        for i, r in enumerate(results):
            if not r.node:  # explain over every domain, not only the last one tried
                with state.forked():
                    reason = self.schedule_pod(state, r.pod, everywhere).reason
                results[i] = PodResult(r.key, r.pod, reason=reason)
        return self._gang_outcome(gang, results, ok, total)

    def _best_domain(self, gang: Gang, fits: list[tuple[int, tuple[int, int], str]]) -> str:
        """The domain a gang goes to, of those where it fits: (pods placed, free capacity
        left, domain) each. kube-scheduler's is the placement its PlacementScore plugins rate
        highest: PodGroupPodsCount, the only one its default profile enables with
        TopologyAwareWorkloadScheduling, counts the group's pods placed
        (plugins/podgrouppodscount: ScorePlacement), and ties go at random
        (schedule_one_podgroup.go: findBestPlacement), drawn here from the profile's seed and
        the gang. draplan's profile takes the best fit: the domain left with the least free
        capacity."""
        if not self.profile.kube:
            return min(fits, key=lambda f: (f[1], f[2]))[2]
        most = max(placed for placed, _, _ in fits)
        tied = sorted(value for placed, _, value in fits if placed == most)
        if self.profile.ties == "random":
            draw = random.Random(f"{self.profile.seed}/{'/'.join(gang.key)}")
            return tied[draw.randrange(len(tied))]
        return tied[0]

    # --- the queue -----------------------------------------------------------------------

    def run(
        self,
        state: ClusterState,
        only: set[ObjectKey] | None = None,
        gangs: dict[ObjectKey, Gang] | None = None,
        placements_only: bool = False,
    ) -> list[PodResult]:
        """Schedule every pending pod (or those in `only`) in queue order; gangs as units
        (`gangs`: `gangs_of` the state, if the caller has it). Gated pods never enter the
        queue: they get no result.

        `placements_only`, for callers that only need to know who gets placed: within a run,
        placing pods only takes capacity (a preemption's evictions aside, after which every
        shape is tried again), so a pod shape that fit no node (its failure read no other
        node's pods) fits none for the rest of the run, and later pods of that shape, of no
        higher priority in the queue's order, get an empty result without a cycle (as
        kube-scheduler parks them in its unschedulable queue). That spares building the "0/N
        nodes are available" text over every node for each of them. Gang members never mark
        a shape (they are tried in forks that are rolled back), and a pod nominated to a node
        is always tried (room is held there for it)."""
        if not self.gangs:
            gangs = {}
        elif gangs is None:
            gangs = self.gangs_of(state)
        if placements_only:
            self._hopeless, self._gang_members = set(), gangs
            try:
                return self._run(state, only, gangs)
            finally:
                self._hopeless, self._gang_members = None, {}
        return self._run(state, only, gangs)

    def _run(
        self, state: ClusterState, only: set[ObjectKey] | None, gangs: dict[ObjectKey, Gang]
    ) -> list[PodResult]:
        # The queue order is total (priority, creation, namespace, name): the waiting pods of
        # `only` are in it as the queue holds them.
        pending = waiting_in_queue_order(state)
        if only is not None:
            pending = [p for p in pending if key_of(p) in only]
        results: list[PodResult] = []
        done: set[tuple[str, ...]] = set()
        for pod in pending:
            lane = self.lane(pod)
            if lane is None:
                continue  # another scheduler's pod
            gang = gangs.get(key_of(pod))
            if gang is None:
                results.append(lane.schedule_pod(state, pod))
                continue
            if gang.key in done:
                continue
            done.add(gang.key)
            results.extend(lane.schedule_waiting_members(state, gang))
        return results

    def schedule_waiting_members(self, state: ClusterState, gang: Gang) -> list[PodResult]:
        """The gang's members that wait, in queue order, scheduled as one unit beside those
        already bound."""
        members = [state.pods[k] for k in gang.members if k in state.pods]
        bound = sum(1 for p in members if p.spec.node_name and not is_terminal(p))
        return self.schedule_gang(state, gang, in_queue_order(state, members), bound)


def _with_claim_statuses(pod: Pod, claims: list[ResourceClaim]) -> Pod:
    """Record generated claim names in status.resourceClaimStatuses, as the resourceclaim
    controller does."""
    generated = {c.metadata.annotations.get(POD_CLAIM_ANNOTATION): c.metadata.name for c in claims}
    statuses = [
        PodResourceClaimStatus(name=ref.name, resource_claim_name=generated[ref.name])
        for ref in pod.spec.resource_claims
        if ref.resource_claim_template_name and ref.name in generated
    ]
    if not statuses or pod.status.resource_claim_statuses:
        return pod
    status = msgspec.structs.replace(pod.status, resource_claim_statuses=tuple(statuses))
    return msgspec.structs.replace(pod, status=status)


def _as_before(state: ClusterState, r: PodResult) -> PodResult:
    """A failed trial's result once its fork is reverted: the pod as the state has it again
    (a nomination made in the trial is gone)."""
    return PodResult(r.key, state.pods.get(r.key) or r.pod, reason=r.reason, gang=r.gang)


def _post(reason: FitReason | None, message: str) -> FitReason | None:
    return with_post_filter(reason, [message]) if reason is not None else None


def unbound(pod: Pod) -> Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=""))


def _without_preemption(plugins: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(p for p in plugins if not isinstance(p, DefaultPreemption))


class _Narrowed(Mapping[str, Status]):
    """Every node's status when a PreFilter narrowed the nodes tried: `absent` for the rest."""

    def __init__(
        self, tried: Mapping[str, Status], names: set[str], state: ClusterState, absent: Status
    ) -> None:
        self._tried, self._names, self._state, self._absent = tried, names, state, absent

    def __getitem__(self, name: str) -> Status:
        if name in self._names:
            return self._tried[name]
        if name in self._state.nodes:
            return self._absent
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._state.nodes)

    def __len__(self) -> int:
        return len(self._state.nodes)
