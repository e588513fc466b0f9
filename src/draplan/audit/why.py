"""One category per pending pod (or gang) from a ranked taxonomy, with evidence and a fix.

Where several categories fit, the first in CATEGORIES wins, so answers are predictable.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from draplan.allocator import allocate
from draplan.api.core_v1 import Pod
from draplan.api.resource_v1 import ResourceClaim
from draplan.audit.supply import NodeSupply, all_devices, node_supply, unmatched_requests
from draplan.autoscaler import Autoscaler
from draplan.cluster.podresources import is_terminal, pod_requests
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import Profile, Scheduler, build_profile
from draplan.scheduler.claims import ClaimNotFound, pod_claims
from draplan.scheduler.gangs import Gang, find_gangs
from draplan.scheduler.plugins import names
from draplan.scheduler.reasons import reason_code

CATEGORIES = (
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
NODE_CONSTRAINT_PLUGINS = (
    names.NODE_AFFINITY,
    names.TAINT_TOLERATION,
    names.NODE_UNSCHEDULABLE,
    names.NODE_NAME,
)
NEAREST = 3


@dataclass
class Diagnosis:
    pod: ObjectKey
    category: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    fix: dict[str, Any] | None = None
    devices: int = 0  # devices the pod asks for: how costly it is to leave it pending

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": f"{self.pod[0]}/{self.pod[1]}",
            "category": self.category,
            "message": self.message,
            "evidence": self.evidence,
            "fix": self.fix,
        }


def _requested_devices(claims: list[ResourceClaim]) -> int:
    n = 0
    for claim in claims:
        for req in claim.spec.devices.requests:
            spec = req.exactly or (req.first_available[0] if req.first_available else None)
            n += (spec.count or 1) if spec is not None else 0
    return n


class Auditor:
    def __init__(self, state: ClusterState, profile: Profile | None = None) -> None:
        self.state = state
        self.profile = profile or build_profile()
        self.scheduler = Scheduler(self.profile)
        self.gangs = find_gangs(state)
        self.views = all_devices(state)
        self.schedulable = self._schedulable_now()
        self.scale = self._scale_outcome() if state.node_pools else {}

    def _schedulable_now(self) -> set[ObjectKey]:
        with self.state.forked():
            return {r.key for r in self.scheduler.run(self.state) if r.node}

    def _scale_outcome(self) -> dict[ObjectKey, tuple[str, dict[str, Any]]]:
        out: dict[ObjectKey, tuple[str, dict[str, Any]]] = {}
        with self.state.forked():
            plan = Autoscaler(self.profile).plan(self.state)
            for option in plan.scale_up:
                for key in option.pods:
                    out[key] = (
                        "WaitingForScaleUp",
                        {"pool": option.pool.metadata.name, "add": len(option.nodes)},
                    )
            for key, _, why in plan.pending:
                if why.startswith("no NodePool"):
                    out[key] = ("NoPoolCanFit", {"autoscaler": why})
                elif why:
                    out[key] = ("PoolLimitReached", {"autoscaler": why})
        return out

    # --- per pod -------------------------------------------------------------------------

    def diagnose(self, pod: Pod) -> Diagnosis:
        key = key_of(pod)
        try:
            claims = pod_claims(self.state, pod)
        except ClaimNotFound as err:
            return Diagnosis(
                key,
                "NoMatchingDevice",
                f"{err}; create it or fix the pod's spec.resourceClaims",
                {"claim": str(err)},
            )
        size = _requested_devices(claims)
        missing = unmatched_requests(self.state, claims, self.views)
        if missing:
            return Diagnosis(
                key,
                "NoMatchingDevice",
                f"No device in the cluster or any NodePool matches {missing[0]}; "
                "fix its DeviceClass or selectors.",
                {"requests": missing},
                {"action": "fix the claim's class or CEL selectors"},
                size,
            )
        gang = self.gangs.get(key)
        if gang is not None and (gang.missing or len(gang.members) < gang.min_count):
            why = gang.missing or f"{len(gang.members)} of {gang.min_count} pods exist"
            return Diagnosis(
                key,
                "GangIncomplete",
                f"{gang.label} is incomplete: {why}; create the missing members or lower minCount.",
                {"gang": gang.label, "members": len(gang.members), "minCount": gang.min_count},
                None,
                size,
            )
        if key in self.schedulable:
            return Diagnosis(
                key, "Schedulable", "It fits now; it only waits for the scheduler.", {}, None, size
            )
        prefilter, statuses = self.scheduler.evaluate(self.state, pod)
        counts = Counter(reason_code(s) for s in statuses.values())
        evidence: dict[str, Any] = {"nodes": dict(sorted(counts.items()))}
        if not prefilter.ok:
            evidence["prefilter"] = prefilter.reasons[0] if prefilter.reasons else ""
        supplies = {
            n: node_supply(self.state, self.state.nodes[n], pod, claims)
            for n in sorted(self.state.nodes.keys())
        }
        excluded = [n for n, s in statuses.items() if s.plugin in NODE_CONSTRAINT_PLUGINS]
        usable = [n for n in excluded if self._fits_ignoring_constraints(pod, claims, n)]
        if usable:
            evidence["excludedNodes"] = {n: statuses[n].reasons[0] for n in usable[:NEAREST]}
            return Diagnosis(
                key,
                "NodeConstraints",
                f"{len(usable)} node(s) have room but the pod's selectors, affinity "
                f"or tolerations exclude them (e.g. {usable[0]}: "
                f"{statuses[usable[0]].reasons[0]}).",
                evidence,
                {
                    "action": "relax the node selector/affinity or add a toleration",
                    "nodes": usable[:NEAREST],
                },
                size,
            )
        if key in self.scale:
            category, detail = self.scale[key]
            return Diagnosis(
                key,
                category,
                _pool_message(category, detail),
                {**evidence, **detail},
                detail if category == "WaitingForScaleUp" else None,
                size,
            )
        return self._capacity(key, pod, claims, gang, supplies, statuses, evidence, size)

    def _fits_ignoring_constraints(self, pod: Pod, claims: list[ResourceClaim], node: str) -> bool:
        supply = node_supply(self.state, self.state.nodes[node], pod, claims)
        if not supply.fits_resources:
            return False
        pending = [c for c in claims if c.status.allocation is None]
        return not pending or allocate(self.state, self.state.nodes[node], pending).ok

    def _capacity(
        self,
        key: ObjectKey,
        pod: Pod,
        claims: list[ResourceClaim],
        gang: Gang | None,
        supplies: dict[str, NodeSupply],
        statuses: dict[str, Any],
        evidence: dict[str, Any],
        size: int,
    ) -> Diagnosis:
        members = self._gang_members(gang) if gang is not None else [pod]
        scale = len(members)
        # Demand of the whole gang, assuming its members ask alike.
        need_dev: Counter[str] = Counter()
        free_dev: Counter[str] = Counter()
        for s in supplies.values():
            for k, n in s.devices.items():
                free_dev[k] += n
            for k, n in s.needed.items():
                need_dev[k] = n * scale
        req = pod_requests(pod)
        free_res = {
            r: sum(max(0, s.free.get(r, 0)) for s in supplies.values()) for r in ("cpu", "memory")
        }
        short = {k: (need_dev[k], free_dev[k]) for k in need_dev if free_dev[k] < need_dev[k]}
        short.update(
            {
                r: (req.get(r, 0) * scale, free_res[r])
                for r in free_res
                if free_res[r] < req.get(r, 0) * scale
            }
        )
        nearest = sorted(
            supplies.values(),
            key=lambda s: (-sum(min(s.devices.get(k, 0), n) for k, n in s.needed.items()), s.node),
        )[:NEAREST]
        evidence["nearestMiss"] = {s.node: _lacks(s) for s in nearest}
        if short:
            what, (need, have) = sorted(short.items())[0]
            return Diagnosis(
                key,
                "CapacityExhausted",
                f"The cluster has {_amount(what, have)} free for {what} but "
                f"{'the gang' if gang else 'the pod'} needs {_amount(what, need)}; "
                "add nodes or wait for running work to finish.",
                {**evidence, "short": {k: {"needed": n, "free": f} for k, (n, f) in short.items()}},
                {"action": "add capacity", "resource": what, "missing": need - have},
                size,
            )
        shaped = [
            s.node
            for s in supplies.values()
            if s.devices_suffice() and s.fits_resources and s.needed
        ]
        timeouts = [n for n, st in statuses.items() if reason_code(st) == "Timeout"]
        if shaped and not timeouts:
            node = shaped[0]
            constraint = _constraint_text(claims)
            return Diagnosis(
                key,
                "TopologyMismatch",
                f"Node {node} (and {len(shaped) - 1} more) has enough free matching "
                f"devices, but none in the required shape ({constraint}).",
                {**evidence, "shapedNodes": shaped[:NEAREST]},
                {"action": "relax the constraint or free a whole group", "nodes": shaped[:NEAREST]},
                size,
            )
        if gang is not None and gang.topology is not None and self._fits_alone(pod):
            return Diagnosis(
                key,
                "TopologyMismatch",
                f"{gang.label} fits in the cluster but not inside one {gang.topology.key} domain.",
                evidence,
                {"action": f"free room in one {gang.topology.key} domain"},
                size,
            )
        if not self._fits_alone(pod):
            best = nearest[0] if nearest else None
            movers = self._pods_on(best.node) if best is not None else []
            return Diagnosis(
                key,
                "Fragmentation",
                "Enough free capacity exists in total, but it is split so that no "
                f"single node fits the pod (best: {best.node if best else '-'}, "
                f"{_lacks(best) if best else ''}).",
                evidence,
                {
                    "action": "move pods to defragment",
                    "node": best.node if best else None,
                    "move": movers,
                },
                size,
            )
        if gang is not None:
            return Diagnosis(
                key,
                "GangUnplaceable",
                f"Every member of {gang.label} fits somewhere alone, but the gang "
                f"cannot be placed together ({gang.min_count} at once).",
                evidence,
                {"action": "free room for the whole gang or lower minCount"},
                size,
            )
        return Diagnosis(
            key,
            "Timeout",
            "The allocator's search budget ran out on every candidate node.",
            {**evidence, "nodes": timeouts},
            None,
            size,
        )

    def _gang_members(self, gang: Gang) -> list[Pod]:
        return [
            self.state.pods[k]
            for k in gang.members
            if k in self.state.pods and not self.state.pods[k].spec.node_name
        ]

    def _fits_alone(self, pod: Pod) -> bool:
        with self.state.forked():
            return self.scheduler.schedule_pod(self.state, pod).node is not None

    def _pods_on(self, node: str) -> list[str]:
        return [
            f"{k[0]}/{k[1]}"
            for k, p in sorted(self.state.pods.items())
            if p.spec.node_name == node and not is_terminal(p)
        ][:NEAREST]


def _lacks(s: NodeSupply) -> str:
    parts = [
        f"{k}: {s.devices.get(k, 0)} of {n} devices"
        for k, n in sorted(s.needed.items())
        if s.devices.get(k, 0) < n
    ]
    if not s.fits_resources:
        parts.append("not enough cpu/memory")
    return "; ".join(parts) or "shape (constraints) only"


def _amount(what: str, value: int) -> str:
    if what == "cpu":
        return f"{value / 1000:g} cpu"
    if what == "memory":
        return f"{value / 1000 / 2**30:.1f}Gi memory"
    return f"{value} device(s)"


def _constraint_text(claims: list[ResourceClaim]) -> str:
    for claim in claims:
        for con in claim.spec.devices.constraints:
            if con.match_attribute:
                return f"all on one {con.match_attribute}"
            if con.distinct_attribute:
                return f"each on a distinct {con.distinct_attribute}"
    return "counters or shared capacity"


def _pool_message(category: str, detail: dict[str, Any]) -> str:
    if category == "WaitingForScaleUp":
        return (
            f"The autoscaler will add {detail['add']} node(s) of pool {detail['pool']} for "
            "it; it waits for them."
        )
    if category == "PoolLimitReached":
        return f"A NodePool could host it, but limits stop the autoscaler: {detail['autoscaler']}."
    return "No NodePool's nodes could ever host it; add a pool with the right devices."


def why(state: ClusterState, profile: Profile | None = None) -> list[Diagnosis]:
    """A diagnosis for every pending pod, in name order (the state is left unchanged)."""
    auditor = Auditor(state, profile)
    pending = [
        p for _, p in sorted(state.pods.items()) if not p.spec.node_name and not is_terminal(p)
    ]
    return [auditor.diagnose(p) for p in pending]
