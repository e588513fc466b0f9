"""The autoscaler's loop once: ProvisioningRequests, scale-up (DRA-aware, or legacy counts
judged by the real scheduler), scale-down, and why each pod still pends."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from draplan.api.autoscaling import BEST_EFFORT_ATOMIC, CHECK_CAPACITY, ProvisioningRequest
from draplan.api.codec import to_builtins
from draplan.api.meta import Condition
from draplan.autoscaler.legacy import lossy_state
from draplan.autoscaler.options import DEFAULT_EXPANDERS, Limits, Option, choose
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
from draplan.autoscaler.scaledown import Removal, plan_scale_down
from draplan.autoscaler.scaleup import Capacity, ScaleUpPlanner, pending_pods
from draplan.autoscaler.templates import add_new_node, make_node
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import FitReason, PodResult, Profile, Scheduler, build_profile
from draplan.scheduler.core import unbound
from draplan.scheduler.gangs import find_gangs


@dataclass
class Wasted:
    pool: str
    node: str
    reason: str


@dataclass
class Plan:
    scale_up: list[Option] = field(default_factory=list)
    scale_down: list[Removal] = field(default_factory=list)
    wasted: list[Wasted] = field(default_factory=list)
    provisioning: list[tuple[ProvisioningRequest, list[Condition]]] = field(default_factory=list)
    pending: list[tuple[ObjectKey, FitReason | None, str]] = field(default_factory=list)
    placed_on_new: set[ObjectKey] = field(default_factory=set)

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
            "scaleDown": [{"node": r.node, "reason": r.reason} for r in self.scale_down],
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
                "podsStillPending": len(self.pending),
                "wastedNodes": len(wasted_nodes),
            },
        }


def default_now(state: ClusterState) -> datetime:
    """The newest timestamp in the input, so the same input gives the same plan."""
    stamps = [p.metadata.creation_timestamp for p in state.pods.values()]
    for obj in state.others:
        meta = getattr(obj, "metadata", None)
        stamps.append(getattr(meta, "creation_timestamp", None))
        for c in getattr(getattr(obj, "status", None), "conditions", ()):
            stamps.append(c.last_transition_time)
    times = [t for t in (parse_time(s) for s in stamps) if t is not None]
    return max(times) if times else datetime(1970, 1, 1, tzinfo=UTC)


class Autoscaler:
    """One autoscaler pass over a cluster state (which it mutates into the planned state)."""

    def __init__(
        self,
        profile: Profile | None = None,
        limits: Limits | None = None,
        expanders: tuple[str, ...] = DEFAULT_EXPANDERS,
        legacy: bool = False,
        gangs: bool = True,
    ) -> None:
        self.profile = profile or build_profile()
        # gangs=False: scale pod by pod, as autoscalers without gang support do.
        self.scheduler = Scheduler(self.profile, gangs=gangs)
        self.quiet = Scheduler(self.profile, gangs=gangs, explain=False)
        self.capacities: dict[tuple[str, bytes], Capacity] = {}
        self.limits = limits or Limits()
        self.expanders = expanders
        self.legacy = legacy

    def planner(self, state: ClusterState) -> ScaleUpPlanner:
        planner = ScaleUpPlanner(
            self.scheduler,
            list(state.node_pools.values()),
            self.limits,
            self.expanders,
            self.quiet,
        )
        planner.capacities = self.capacities  # pools are fixed for this autoscaler's life
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

    def _legacy_scale_up(self, state: ClusterState, plan: Plan) -> None:
        """Plan on the lossy count view, then let the real scheduler judge every new node."""
        lossy = lossy_state(state)
        profile = build_profile()
        legacy_plan = ScaleUpPlanner(
            Scheduler(profile), list(lossy.node_pools.values()), self.limits, self.expanders
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
        for option in real_options:
            for new in option.nodes:
                name = new.node.metadata.name
                hosted = [
                    k for k in intended.get(name, ()) if k in results and results[k].node == name
                ]
                if hosted:
                    continue
                plan.wasted.append(
                    Wasted(
                        option.pool.metadata.name,
                        name,
                        self._why_not(state, intended.get(name, []), name, results),
                    )
                )
            plan.scale_up.append(option)

    def _why_not(
        self,
        state: ClusterState,
        keys: list[ObjectKey],
        node: str,
        results: dict[ObjectKey, PodResult],
    ) -> str:
        for key in keys:
            pod = state.pods.get(key)
            if pod is None or pod.spec.node_name == node:
                continue
            if pod.spec.node_name:
                return f"{key[0]}/{key[1]} was placed on {pod.spec.node_name} instead"
            done = results.get(key)
            if done is not None and done.gang and done.reason is not None:
                # A gang member is judged with its gang: alone it might fit.
                return f"{key[0]}/{key[1]}: {done.reason.message}"
            with state.forked():
                result = self.scheduler.schedule_pod(state, unbound(pod), [node])
            if result.reason is not None:
                detail = result.reason.evidence.get("allocator", {}).get(node)
                extra = f" ({detail['code']}: {detail['message']})" if detail else ""
                return f"{key[0]}/{key[1]}: {result.reason.message}{extra}"
            return f"{key[0]}/{key[1]} fits there alone but the scheduler placed it nowhere"
        return "no pod it was added for landed on it"

    def plan(
        self,
        state: ClusterState,
        now: datetime | None = None,
        explain: bool = True,
        scale_down: bool = True,
    ) -> Plan:
        """`explain=False` skips the per-pod reasons and `scale_down=False` the removals (a
        simulation that only needs the scale-up)."""
        plan = Plan()
        now = now or default_now(state)
        existing_nodes = set(state.nodes.keys())
        before_pending = {key_of(p) for p in pending_pods(state)}
        self._provisioning(state, plan, now)
        refused: dict[ObjectKey, str] = {}
        if self.legacy:
            self._legacy_scale_up(state, plan)
        else:
            scale_up = self.planner(state).plan(state)
            plan.scale_up.extend(scale_up.options)
            refused = scale_up.reasons
        new_nodes = set(state.nodes.keys()) - existing_nodes
        for key in before_pending:
            pod = state.pods.get(key)
            if pod is not None and pod.spec.node_name in new_nodes:
                plan.placed_on_new.add(key)
        protected = new_nodes
        if scale_down:
            plan.scale_down = plan_scale_down(state, self.scheduler, state.node_pools, protected)
        still = pending_pods(state)
        if not explain:
            plan.pending.extend((key_of(pod), None, "") for pod in still)
            return plan
        gangs = find_gangs(state) if self.scheduler.gangs else {}
        judged: dict[ObjectKey, PodResult] = {}
        planner = self.planner(state)  # for what the pools could do, one for every pod
        for pod in still:
            key = key_of(pod)
            gang = gangs.get(key)
            if key not in judged:
                with state.forked():
                    if gang is None:
                        judged[key] = self.scheduler.schedule_pod(state, pod)
                    else:  # explained with its gang, the way the scheduler judges it
                        only = {k for k in gang.members if k in state.pods}
                        judged.update((r.key, r) for r in self.scheduler.run(state, only=only))
            result = judged.get(key)
            reason = result.reason if result is not None else None
            why = refused.get(key)
            plan.pending.append((key, reason, _pool_reason(state, planner, pod, why)))
        return plan


def _pool_reason(state: ClusterState, planner: ScaleUpPlanner, pod: Any, why: str | None) -> str:
    """What the node pools can or cannot do for a pod that still pends (`why`: what the
    planner found for its gang)."""
    if not state.node_pools:
        return ""
    helping = [p.metadata.name for p in planner.pools if planner.helpable(state, p, [pod])]
    if not helping:
        return "no NodePool can fit this pod on a new node"
    return (
        f"pools that could host it alone: {', '.join(helping)}; not added (limits, "
        f"gang or topology constraints){': ' + why if why else ''}"
    )
