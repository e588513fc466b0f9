"""SchedulingGated: a pod with spec.schedulingGates waits for whoever set the gates, not for
capacity (kube-scheduler keeps it out of its queue, KEP-3521; Cluster Autoscaler ignores it).

For Kueue's gate the pod's Kueue Workload says why: it is found as Kueue finds it (the
Workload owned by the pod's controller, e.g. its Job; the Workload named after the pod's
`kueue.x-k8s.io/pod-group-name`; or the one owned by the pod itself), and its QuotaReserved /
Admitted conditions and status.admission say whether it is admitted and, if not, why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from draplan.api.core_v1 import Pod
from draplan.api.kueue import KueueWorkload
from draplan.api.meta import Condition, OwnerReference
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler.gangs import KUEUE_GROUP_LABEL

SCHEDULING_GATED = "SchedulingGated"
KUEUE_GATE = "kueue.x-k8s.io/admission"
# Kueue's condition types, in the order a workload passes them.
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"


@dataclass(frozen=True)
class GateVerdict:
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    fix: dict[str, Any] | None = None


class Gates:
    """The Kueue Workloads of a state, indexed the ways Kueue links them to pods."""

    def __init__(self, state: ClusterState) -> None:
        # (namespace, owner kind, owner name) -> [(owner uid, workload)]
        self._by_owner: dict[tuple[str, str, str], list[tuple[str, KueueWorkload]]] = {}
        self._by_name: dict[tuple[str, str], KueueWorkload] = {}
        workloads = [o for o in state.others if isinstance(o, KueueWorkload)]
        for wl in sorted(workloads, key=key_of):
            ns = wl.metadata.namespace
            self._by_name[(ns, wl.metadata.name)] = wl
            for ref in wl.metadata.owner_references:
                self._by_owner.setdefault((ns, ref.kind, ref.name), []).append((ref.uid, wl))

    def workload_of(self, pod: Pod) -> KueueWorkload | None:
        ns = pod.metadata.namespace
        group = pod.metadata.labels.get(KUEUE_GROUP_LABEL)
        if group:
            return self._by_name.get((ns, group))
        # The pod itself last: Kueue's pod integration makes a Workload per pod even when a
        # controller it does not manage (a Deployment's ReplicaSet) owns the pod.
        owners = [r for r in pod.metadata.owner_references if r.controller]
        itself = OwnerReference(kind="Pod", name=pod.metadata.name, uid=pod.metadata.uid)
        for ref in [*owners, itself]:
            for uid, wl in self._by_owner.get((ns, ref.kind, ref.name), []):
                # A UID on both sides must agree (a Job recreated under the same name is
                # another owner); dumps written by hand often carry none.
                if not uid or not ref.uid or uid == ref.uid:
                    return wl
        return None

    def verdict(self, pod: Pod) -> GateVerdict | None:
        """SchedulingGated's message, evidence and fix for a gated pod; None otherwise."""
        gates = [g.name for g in pod.spec.scheduling_gates]
        if not gates:
            return None
        others = [g for g in gates if g != KUEUE_GATE]
        evidence: dict[str, Any] = {"gates": gates}
        other_text = (
            f"the scheduling gate(s) {', '.join(others)} (removed by the controller that set them)"
            if others
            else ""
        )
        if len(others) == len(gates):
            return GateVerdict(
                f"It is not scheduled while it carries {other_text}.",
                evidence,
                {"action": "remove the scheduling gates", "gates": others},
            )
        wl = self.workload_of(pod)
        also = f"; it also waits for {other_text}" if others else ""
        if wl is None:
            return GateVerdict(
                f"It is waiting for Kueue admission (no Kueue Workload for it in the input){also}.",
                evidence,
                {"action": "wait for Kueue to admit its workload"},
            )
        name = "/".join(key_of(wl))
        evidence.update(workload=name, queue=wl.spec.queue_name or None, admitted=_admitted(wl))
        if _admitted(wl):
            queue = wl.status.admission.cluster_queue if wl.status.admission else ""
            where = f" by ClusterQueue {queue}" if queue else ""
            return GateVerdict(
                f"Its Kueue Workload {name} is admitted{where}; Kueue lifts the "
                f"{KUEUE_GATE} gate next{also}.",
                evidence,
                None if not others else {"action": "remove the scheduling gates", "gates": others},
            )
        pending = _pending_condition(wl)
        fix: dict[str, Any] = {
            "action": "free or raise the ClusterQueue's quota, or wait for admission",
            "workload": name,
        }
        if wl.spec.active is False:
            why = "deactivated (spec.active: false)"
            fix["action"] = "reactivate the workload (spec.active: true)"
        elif pending is not None and pending.message:
            why = f"not admitted: {pending.message.rstrip('.')}"
            evidence["condition"] = {
                "type": pending.type,
                "reason": pending.reason,
                "message": pending.message,
            }
            if pending.type == ADMITTED:  # quota is reserved: admission checks are pending
                fix["action"] = "wait for the workload's admission checks"
        elif _reserved(wl):
            why = "not admitted yet: quota is reserved, its admission checks are not all ready"
            fix["action"] = "wait for the workload's admission checks"
        else:
            why = "not admitted yet"
        queue = f" in queue {wl.spec.queue_name}" if wl.spec.queue_name else ""
        return GateVerdict(
            f"It is waiting for Kueue admission: Workload {name}{queue} is {why}{also}.",
            evidence,
            fix,
        )


def _condition(wl: KueueWorkload, kind: str) -> Condition | None:
    return next((c for c in wl.status.conditions if c.type == kind), None)


def _reserved(wl: KueueWorkload) -> bool:
    reserved = _condition(wl, QUOTA_RESERVED)
    return reserved is not None and reserved.status == "True"


def _admitted(wl: KueueWorkload) -> bool:
    admitted = _condition(wl, ADMITTED)
    if admitted is not None:
        return admitted.status == "True"
    if _condition(wl, QUOTA_RESERVED) is not None:
        # Kueue adds Admitted only once quota and every admission check are ready
        # (workload.SyncAdmittedCondition): quota reserved without it is not admitted yet.
        return False
    # A workload without conditions (written by hand): status.admission says it.
    return wl.status.admission is not None


def _pending_condition(wl: KueueWorkload) -> Condition | None:
    """The condition that says why it is not admitted: quota first, then admission checks."""
    for kind in (QUOTA_RESERVED, ADMITTED):
        cond = _condition(wl, kind)
        if cond is not None and cond.status != "True":
            return cond
    return None
