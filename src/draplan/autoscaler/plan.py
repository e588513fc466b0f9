"""The autoscaler's loop once: ProvisioningRequests, scale-up (DRA-aware, or legacy counts
judged by the real scheduler), scale-down, and why each pod still pends."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from draplan.api.autoscaling import BEST_EFFORT_ATOMIC, CHECK_CAPACITY, ProvisioningRequest
from draplan.api.codec import to_builtins
from draplan.api.core_v1 import Pod
from draplan.api.meta import Condition
from draplan.autoscaler.alternatives import MoveOption, make, move_options
from draplan.autoscaler.ca import CAOption, ca_options, ca_scheduler
from draplan.autoscaler.existing import ExistingFit
from draplan.autoscaler.expanders import choose
from draplan.autoscaler.karpenter_disruption import plan_karpenter_disruption
from draplan.autoscaler.legacy import lossy_state
from draplan.autoscaler.options import DEFAULT_EXPANDERS, Limits, Option
from draplan.autoscaler.owners import karpenter_nodes
from draplan.autoscaler.provreq import (
    EXPIRY,
    booking_state,
    condition,
    existing,
    keep_transitions,
    parse_time,
    provreq_pods,
    supported,
)
from draplan.autoscaler.scaledown import (
    Kept,
    Needs,
    Removal,
    ScaleDownMemo,
    ScaleDownOptions,
    plan_scale_down,
)
from draplan.autoscaler.scaleup import (
    Capacity,
    ScaleUpPlanner,
    expendable,
    pending_pods,
    pool_limit,
    scaled_for,
)
from draplan.autoscaler.templates import NodeNamer, add_new_node, make_node, pool_size
from draplan.cluster.nodepools import pool_sizes
from draplan.cluster.podsmemo import PodsIndex, PodsMemo
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import FitReason, PodResult, Profile, Scheduler, build_profile
from draplan.scheduler.claims import release_claims
from draplan.scheduler.core import unbound
from draplan.scheduler.gangs import Gang

# Picks one of Cluster Autoscaler's options (or none): its least-waste, or an outside expander.
CAChooser = Callable[[ClusterState, list[CAOption]], CAOption | None]


@dataclass
class Wasted:
    pool: str
    node: str
    reason: str


@dataclass
class Plan:
    scale_up: list[Option] = field(default_factory=list)
    scale_down: list[Removal] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)  # nodes scale-down keeps, each with why
    # Instead of some new nodes, in the order found; the one-pod ones `made` by the plan.
    moves: list[MoveOption] = field(default_factory=list)
    wasted: list[Wasted] = field(default_factory=list)
    provisioning: list[tuple[ProvisioningRequest, list[Condition]]] = field(default_factory=list)
    pending: list[tuple[ObjectKey, FitReason | None, str]] = field(default_factory=list)
    # Pending pods the pass places on a new node, and that node.
    placed_on_new: dict[ObjectKey, str] = field(default_factory=dict)
    # Pending pods the pass places on nodes that exist (CA's filter_out_schedulable packs them
    # there before it plans): no node is added for them.
    placed_on_existing: set[ObjectKey] = field(default_factory=set)
    # Pending pods Cluster Autoscaler never scales for (nominated, expendable): no
    # NotTriggerScaleUp either.
    unscaled: set[ObjectKey] = field(default_factory=set)
    # Pods the legacy count view planned on a new node that still pend: the real mismatch.
    mismatches: dict[ObjectKey, str] = field(default_factory=dict)
    # The groups the modelled scheduler places as one (`Scheduler.gangs_of`), by pod key: what
    # the plan scaled whole, and what one ProvisioningRequest stands for.
    gangs: dict[ObjectKey, Gang] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        wasted_nodes = {w.node for w in self.wasted}
        return {
            "scaleUp": [
                {
                    "pool": o.pool.metadata.name,
                    "add": len(o.nodes),
                    "nodes": [n.node.metadata.name for n in o.nodes],
                    "pods": [f"{k[0]}/{k[1]}" for k in o.pods],
                    "costPerHour": round(o.cost_per_hour, 4),
                }
                for o in self.scale_up
            ],
            "fitExisting": [f"{k[0]}/{k[1]}" for k in sorted(self.placed_on_existing)],
            "moves": [m.to_dict() for m in self.moves],
            "scaleDown": [r.to_dict() for r in self.scale_down],
            "scaleDownKept": [k.to_dict() for k in self.kept],
            "wasted": [{"pool": w.pool, "node": w.node, "reason": w.reason} for w in self.wasted],
            "provisioningRequests": [
                {
                    "namespace": pr.metadata.namespace,
                    "name": pr.metadata.name,
                    "conditions": [to_builtins(c) for c in conds],
                }
                for pr, conds in self.provisioning
            ],
            "pending": [
                {
                    "pod": f"{k[0]}/{k[1]}",
                    "reason": {
                        **(r.to_dict() if r else {}),
                        **({"autoscaler": why} if why else {}),
                    },
                }
                for k, r, why in self.pending
            ],
            "summary": {
                "nodesAdded": sum(len(o.nodes) for o in self.scale_up),
                "costPerHour": round(sum(o.cost_per_hour for o in self.scale_up), 4),
                "podsPlaced": len(self.placed_on_new),
                "podsFitExisting": len(self.placed_on_existing),
                "podsStillPending": len(self.pending),
                "wastedNodes": len(wasted_nodes),
            },
        }


def default_now(state: ClusterState) -> datetime:
    """The newest timestamp in the input, so the same input gives the same plan."""
    return _NOW(state)


def _created(pod: Pod) -> datetime | None:
    return parse_time(pod.metadata.creation_timestamp)


# Each pod's creation time, parsed again only for the pods changed (`PodsIndex`).
_CREATED = PodsIndex(lambda state: _created)


def _newest(state: ClusterState) -> datetime:
    stamps = []
    for obj in state.others:
        meta = getattr(obj, "metadata", None)
        stamps.append(getattr(meta, "creation_timestamp", None))
        for c in getattr(getattr(obj, "status", None), "conditions", ()):
            stamps.append(c.last_transition_time)
    times = [t for t in (parse_time(s) for s in stamps) if t is not None]
    times.extend(_CREATED(state).values())
    return max(times) if times else datetime(1970, 1, 1, tzinfo=UTC)


_NOW = PodsMemo(_newest)


class Autoscaler:
    """One autoscaler pass over a cluster state (which it mutates into the planned state)."""

    def __init__(
        self,
        profile: Profile | None = None,
        limits: Limits | None = None,
        expanders: tuple[str, ...] = DEFAULT_EXPANDERS,
        legacy: bool = False,
        gangs: bool = True,
        ca_choose: CAChooser | None = None,
        scheduler: Scheduler | None = None,
        scale_down: ScaleDownOptions | None = None,
        unplanned: Sequence[Pod] = (),
    ) -> None:
        """`scheduler`: one of `profile` to plan with, kept by the caller (its evaluations);
        `scale_down`: Cluster Autoscaler's scale-down flags; `unplanned`: pending pods left
        out of the state (`scale -l`) that scale-down still keeps room for, as CA packs every
        pending pod before it looks for unneeded nodes."""
        self.profile = profile or build_profile()
        # gangs=False: scale pod by pod, as autoscalers without gang support do.
        self.scheduler = scheduler or Scheduler(self.profile, gangs=gangs)
        self.quiet = Scheduler(self.profile, gangs=gangs, explain=False)
        self.capacities: dict[tuple[str, bytes], Capacity] = {}
        # Kept while one state is planned again and again: scale-down's per-node answers, and
        # where the pending pods went on existing nodes.
        self.scale_down_memo = ScaleDownMemo()
        self.scale_down_options = scale_down or ScaleDownOptions()
        self.unplanned = tuple(unplanned)
        self.existing_fit = ExistingFit()
        self.limits = limits or Limits()
        self.expanders = expanders
        self.legacy = legacy
        # Cluster Autoscaler's loop instead of draplan's planner: its options, this choice.
        self.ca_choose = ca_choose
        self.ca_scheduler = ca_scheduler()  # CA's view of the same state, kept likewise

    def planner(self, state: ClusterState) -> ScaleUpPlanner:
        planner = ScaleUpPlanner(
            self.scheduler,
            list(state.node_pools.values()),
            self.limits,
            self.expanders,
            self.quiet,
        )
        planner.capacities = self.capacities  # kept by pool content: valid from plan to plan
        planner.existing = self.existing_fit
        return planner

    # --- ProvisioningRequests -------------------------------------------------------------

    def _provisioning(self, state: ClusterState, plan: Plan, now: datetime) -> None:
        requests = sorted(
            (o for o in state.others if isinstance(o, ProvisioningRequest)),
            key=lambda pr: (pr.metadata.creation_timestamp or "", key_of(pr)),
        )
        for pr in requests:
            if not supported(pr):
                continue
            conds = [
                condition(
                    "Accepted", True, "Accepted", "ProvisioningRequest is accepted by draplan", now
                )
            ]
            failed = existing(pr, "Failed")
            if failed is not None and failed.status == "True":
                plan.provisioning.append((pr, [*keep_transitions(pr, conds), failed]))
                continue
            expired = booking_state(state, pr, now)
            provisioned = existing(pr, "Provisioned")
            if expired is not None and provisioned is not None:
                plan.provisioning.append((pr, [*keep_transitions(pr, conds), provisioned, expired]))
                continue
            conds.extend(self._provision(state, pr, plan, now))
            plan.provisioning.append((pr, keep_transitions(pr, conds)))

    def _provision(
        self, state: ClusterState, pr: ProvisioningRequest, plan: Plan, now: datetime
    ) -> list[Condition]:
        pods = provreq_pods(state, pr)
        created = parse_time(pr.metadata.creation_timestamp)
        no_retry = pr.spec.parameters.get("noRetry") == "true"
        # Other pending pods must not take the capacity the request is checked against.
        others = {k: p for k, p in state.pods.items() if not p.spec.node_name}
        for k in others:
            del state.pods[k]
        try:
            with state.forked():
                for pod in pods:
                    state.pods[key_of(pod)] = pod
                placed = [self.scheduler.schedule_pod(state, p) for p in pods]
                fits_now = all(r.node for r in placed)
                option = None
                if not fits_now and pr.spec.provisioning_class_name == BEST_EFFORT_ATOMIC:
                    option = self._atomic_option(state, pods)
                    if option is not None:
                        for new in option.nodes:
                            add_new_node(state, new)
                        fits_now = all(
                            self.scheduler.schedule_pod(state, state.pods[key_of(p)]).node
                            for p in pods
                            if not state.pods[key_of(p)].spec.node_name
                        )
                if fits_now:
                    state.commit()  # booked: its pods hold the capacity in the plan
                    state.fork()
                    if option is not None:
                        plan.scale_up.append(option)
                        return [
                            condition(
                                "Provisioned",
                                True,
                                "CapacityIsProvisioned",
                                "capacity is being provisioned",
                                now,
                            )
                        ]
                    return [
                        condition(
                            "Provisioned",
                            True,
                            "CapacityIsFound",
                            "capacity is found in the cluster",
                            now,
                        )
                    ]
        finally:
            for k, p in others.items():
                state.pods[k] = p
        out = [
            condition(
                "Provisioned",
                False,
                "CapacityIsNotFound",
                "not all pods fit; will try again later",
                now,
            )
        ]
        if pr.spec.provisioning_class_name == CHECK_CAPACITY and no_retry:
            out.append(
                condition(
                    "Failed",
                    True,
                    "CapacityIsNotFound",
                    "capacity is not found and noRetry is set",
                    now,
                )
            )
        elif created is not None and now - created > EXPIRY:
            out.append(condition("Failed", True, "Expired", "not provisioned within 7 days", now))
        return out

    def _atomic_option(self, state: ClusterState, pods: list[Any]) -> Option | None:
        """One pool must fit every remaining pod of the request (allOrNothing)."""
        planner = self.planner(state)
        waiting = [state.pods[key_of(p)] for p in pods if not state.pods[key_of(p)].spec.node_name]
        wanted = {key_of(p) for p in waiting}
        full = []
        for pool in planner.pools:
            option = planner.simulate(state, pool, waiting)
            if option is not None and wanted <= set(option.pods):
                full.append(option)
        return choose(full, self.expanders) if full else None

    # --- scale-up -------------------------------------------------------------------------

    def _ca_scale_up(
        self, state: ClusterState, plan: Plan, ca_choose: CAChooser, now: datetime
    ) -> None:
        """Cluster Autoscaler's loop: its node groups' options (pod by pod on its templates),
        one of them chosen by `ca_choose` and added whole; the real scheduler then places what
        it can (a wrong-shaped group's nodes stay empty)."""
        options = ca_options(state, now, self.limits, scheduler=self.ca_scheduler)
        best = ca_choose(state, options) if options else None
        if best is None:
            return
        namer = NodeNamer(state, best.pool)
        nodes = []
        for _ in range(best.node_count):
            name, labels = namer.next()
            new = make_node(state, best.pool, name, labels)
            add_new_node(state, new)
            nodes.append(new)
        self.scheduler.run(state, placements_only=True)
        names = {n.node.metadata.name for n in nodes}
        placed = sorted(k for k, p in state.pods.items() if p.spec.node_name in names)
        intended = {name: list(best.pods) for name in sorted(names)}
        plan.scale_up.append(Option(best.pool, nodes, placed, intended=intended))
        for name in sorted(names - {state.pods[k].spec.node_name for k in placed}):
            plan.wasted.append(
                Wasted(best.pool.metadata.name, name, "Cluster Autoscaler's option: no pod fits")
            )

    def _legacy_scale_up(self, state: ClusterState, plan: Plan) -> None:
        """Plan on the lossy count view, then let the real scheduler judge every new node."""
        lossy = lossy_state(state)
        legacy_plan = ScaleUpPlanner(
            Scheduler(self.profile), list(lossy.node_pools.values()), self.limits, self.expanders
        ).plan(lossy)
        intended: dict[str, list[ObjectKey]] = {}
        for key, node in legacy_plan.placed.items():
            intended.setdefault(node, []).append(key)
        real_options = []
        for option in legacy_plan.options:
            pool = state.node_pools[option.pool.metadata.name]
            real_nodes = []
            for new in option.nodes:
                labels = {
                    t.key: new.node.metadata.labels[t.key]
                    for t in pool.spec.topology
                    if t.key in new.node.metadata.labels
                }
                real = make_node(state, pool, new.node.metadata.name, labels)
                add_new_node(state, real)
                real_nodes.append(real)
            real_options.append(
                Option(
                    pool,
                    real_nodes,
                    option.pods,
                    intended={
                        n.node.metadata.name: intended.get(n.node.metadata.name, [])
                        for n in real_nodes
                    },
                )
            )
        results = {r.key: r for r in self.scheduler.run(state)}
        hosting = {p.spec.node_name for p in state.pods.values() if p.spec.node_name}
        for option in real_options:
            for new in option.nodes:
                name = new.node.metadata.name
                keys = option.intended.get(name, [])
                # The node may host other pods of the plan: the count view's mistake is what
                # each stranded pod meets on it, not the room those pods took.
                why = {
                    k: self._mismatch(state, k, name, results)
                    for k in keys
                    if k in state.pods and not state.pods[k].spec.node_name
                }
                for key, text in why.items():
                    plan.mismatches[key] = f"the count view planned it on {name}: {text}"
                if name in hosting:
                    continue
                placed = [
                    f"{k[0]}/{k[1]} was placed on {state.pods[k].spec.node_name} instead"
                    for k in keys
                    if k in state.pods and state.pods[k].spec.node_name
                ]
                stranded = [f"{k[0]}/{k[1]}: {text}" for k, text in why.items()]
                text = "; ".join(stranded + placed) or "the count view planned no pod on it"
                plan.wasted.append(Wasted(option.pool.metadata.name, name, text))
            plan.scale_up.append(option)

    def _mismatch(
        self, state: ClusterState, key: ObjectKey, node: str, results: dict[ObjectKey, PodResult]
    ) -> str:
        """Why the real scheduler will not put pending pod `key` on new node `node`, judged on
        the node emptied of the plan's other pods."""
        done = results.get(key)
        if done is not None and done.gang and done.reason is not None:
            return done.reason.message  # a gang member is judged with its gang
        on_node = {k for k, p in state.pods.items() if p.spec.node_name == node}
        with state.forked():
            release_claims(state, on_node)  # pods placed this pass: no claim reaches beyond
            for k in sorted(on_node):
                state.unbind_pod(state.pods[k])
            result = self.scheduler.schedule_pod(state, unbound(state.pods[key]), [node])
        if result.reason is None:
            return (
                "it fits on the node alone, not beside the pods placed there (a device count "
                "does not show how their devices, partitions or counters overlap)"
            )
        detail = result.reason.evidence.get("allocator", {}).get(node)
        extra = f" ({detail['code']}: {detail['message']})" if detail else ""
        return f"{result.reason.message}{extra}"

    def plan(
        self,
        state: ClusterState,
        now: datetime | None = None,
        explain: bool = True,
        scale_down: bool = True,
        moves: bool = False,
    ) -> Plan:
        """`explain=False` skips the per-pod reasons and `scale_down=False` the removals (a
        simulation that only needs the scale-up); `moves=True` looks for moves that spare new
        nodes (DRA-aware plans only)."""
        plan = Plan(gangs=self.scheduler.gangs_of(state))
        now = now or default_now(state)
        existing_nodes = set(state.nodes.keys())
        originals = {key_of(p): p for p in pending_pods(state)}
        self._provisioning(state, plan, now)
        refused: dict[ObjectKey, str] = {}
        if self.legacy:
            self._legacy_scale_up(state, plan)
        elif self.ca_choose is not None:
            self._ca_scale_up(state, plan, self.ca_choose, now)
        else:
            scale_up = self.planner(state).plan(state)
            plan.scale_up.extend(scale_up.options)
            refused = scale_up.reasons
        new_nodes = set(state.nodes.keys()) - existing_nodes
        used: set[str] = set()  # existing nodes this pass's pending pods were placed on
        for key in originals:
            pod = state.pods.get(key)
            if pod is not None and not pod.spec.node_name and pod.status.nominated_node_name:
                # It waits there for its victims (kube-scheduler's nomination) and binds once
                # they are gone: draplan counts the node used for both scale-downs (its own
                # UsedByPendingPods rule; Karpenter would also see the victims' deletion as a
                # pod event, restarting consolidateAfter: nodeclaim/disruption/consolidation.go).
                used.add(pod.status.nominated_node_name)
            if pod is None or not pod.spec.node_name:
                continue
            if pod.spec.node_name in new_nodes:
                plan.placed_on_new[key] = pod.spec.node_name
            else:
                plan.placed_on_existing.add(key)
                used.add(pod.spec.node_name)
        if moves and not self.legacy and plan.scale_up:
            plan.moves = move_options(state, self.scheduler, plan.scale_up, originals)
            self._make_moves(state, plan, originals)
            new_nodes = set(state.nodes.keys()) - existing_nodes
        for option in plan.moves:
            used.update(option.place.values())
            used.update(option.move.values())
        if explain:
            # Judged before scale-down: why a pod still pends does not depend on nodes it
            # cannot use going away, and a pool's template may copy a node scale-down removes.
            plan.pending.extend(self._explain(state, refused, plan, new_nodes))
        else:
            plan.pending.extend((key_of(pod), None, "") for pod in pending_pods(state))
        if scale_down:
            cutoff = self.limits.expendable_priority_cutoff
            unplanned = [p for p in self.unplanned if not expendable(state, p, cutoff)]
            pending = [*scaled_for(state, cutoff), *unplanned]
            needs = Needs(frozenset(new_nodes), frozenset(used), pending, cutoff)
            # Karpenter's nodes: its consolidation, on what Cluster Autoscaler's removals
            # leave (which are never Karpenter's, so the set holds for both passes).
            owned = karpenter_nodes(state)
            memo, options = self.scale_down_memo, self.scale_down_options
            down = plan_scale_down(state, self.scheduler, now, needs, memo, options, owned)
            karpenter = plan_karpenter_disruption(state, self.scheduler, now, needs, memo, owned)
            plan.scale_down = down.removals + karpenter.removals
            plan.kept = down.kept + karpenter.kept
        return plan

    def _make_moves(self, state: ClusterState, plan: Plan, originals: dict[ObjectKey, Pod]) -> None:
        """Where moving one running pod spares a new node, move it instead of buying the node
        (`why` gives the same move as the pod's fix): the node leaves the plan, its pods fit
        existing nodes."""
        for i, option in enumerate(plan.moves):
            if not option.one_pod or not make(
                state, self.scheduler, option, plan.placed_on_new, originals
            ):
                continue
            plan.moves[i] = dataclasses.replace(option, made=True)
            node = option.instead_of
            for key in [k for k, n in plan.placed_on_new.items() if n == node]:
                del plan.placed_on_new[key]
                plan.placed_on_existing.add(key)
            for up in plan.scale_up:
                up.nodes = [n for n in up.nodes if n.node.metadata.name != node]
                up.intended.pop(node, None)
                up.pods = [k for k in up.pods if k not in plan.placed_on_existing]
            plan.scale_up = [up for up in plan.scale_up if up.nodes]

    def _explain(
        self,
        state: ClusterState,
        refused: dict[ObjectKey, str],
        plan: Plan,
        new_nodes: set[str],
    ) -> list[tuple[ObjectKey, FitReason | None, str]]:
        """Each pod that still pends: the scheduler's reason, what the pools can do, and the
        plan's `mismatches` (the legacy view's); those CA never scales for in `plan.unscaled`."""
        notes = plan.mismatches
        pending = pending_pods(state)
        judged = self._judged(state, pending, new_nodes)
        planner = self.planner(state)  # for what the pools could do, one for every pod
        sizes = pool_sizes(state)
        out = []
        for pod in pending:
            key = key_of(pod)
            result = judged.get(key)
            reason = result.reason if result is not None else None
            why = _unscaled(state, pod, self.limits)
            if why:
                plan.unscaled.add(key)
            else:
                why = _pool_reason(state, planner, pod, refused.get(key), sizes)
            note = notes.get(key)
            out.append((key, reason, f"{why}; {note}" if why and note else why or note or ""))
        return out

    def _judged(
        self, state: ClusterState, pending: list[Pod], new_nodes: set[str]
    ) -> dict[ObjectKey, PodResult]:
        """The scheduler's answer to each pod on the nodes that exist, as kube-scheduler
        gives it now ("0/N nodes are available" counts them, not the plan's new nodes)."""
        gangs = self.scheduler.gangs_of(state)
        judged: dict[ObjectKey, PodResult] = {}
        # Every pod is judged on the same state (each in a fork reverted), so pods of one
        # shape get one answer.
        by_shape: dict[tuple[bytes, bool], PodResult] = {}
        # PostFilter too (preemption's words end the message, as kube-scheduler's do).
        with state.forked(), self.scheduler.post_filtering():
            for name in sorted(new_nodes):
                state.remove_node(name)
            for pod in pending:
                key = key_of(pod)
                gang = gangs.get(key)
                if key in judged:
                    continue
                if gang is None:
                    shape = self.scheduler.admits(state, pod)
                    if shape not in by_shape:
                        with state.forked():
                            by_shape[shape] = self.scheduler.schedule_pod(state, pod)
                    judged[key] = by_shape[shape]
                else:  # explained with its gang, as judged
                    with state.forked():
                        only = {k for k in gang.members if k in state.pods}
                        judged.update((r.key, r) for r in self.scheduler.run(state, only=only))
        return judged


def _unscaled(state: ClusterState, pod: Pod, limits: Limits) -> str:
    """Why Cluster Autoscaler leaves a pending pod alone, if it does."""
    node = pod.status.nominated_node_name
    if node in state.nodes:
        return f"nominated to {node}, where it waits for its victims: not scaled for"
    cutoff = limits.expendable_priority_cutoff
    if expendable(state, pod, cutoff):
        return f"priority below the expendable-pods cutoff {cutoff}: not scaled for"
    return ""


def _pool_reason(
    state: ClusterState,
    planner: ScaleUpPlanner,
    pod: Any,
    why: str | None,
    sizes: Mapping[str, int],
) -> str:
    """What the node pools can or cannot do for a pod that still pends (`why`: what the
    planner found for its gang; `sizes`: the pools' existing nodes, the state as it is)."""
    if not state.node_pools:
        return ""
    helping = [p.metadata.name for p in planner.pools if planner.helpable(state, p, [pod])]
    if not helping:
        return "no NodePool can fit this pod on a new node"
    if not why:
        # A pool the plan itself filled up (its new nodes count): that limit is the reason.
        why = "; ".join(
            f"pool {p.metadata.name}: {pool_limit(p)}"
            for p in planner.pools
            if p.metadata.name in helping and pool_size(state, p, sizes) >= p.spec.max_nodes
        )
    return (
        f"pools that could host it alone: {', '.join(helping)}; not added (limits, "
        f"gang or topology constraints){': ' + why if why else ''}"
    )
