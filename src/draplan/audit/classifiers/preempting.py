"""Schedulable by preemption: kube-scheduler evicts pods of lower priority for it and
nominates it to their node, or (nominated in the input) their termination is under way; it
binds there once they are gone."""

from __future__ import annotations

from typing import Any

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.diagnosis import Diagnosis
from draplan.scheduler.preemption import terminating_by_preemption
from draplan.scheduler.queue import priority_of, priority_table


class Preempting:
    name = "Preempting"
    categories = ("Schedulable",)
    shared = False

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        found = audit.nominated.get(case.key)
        if found is None:
            return _terminating(audit, case)
        classes, default = priority_table(audit.state)
        mine = priority_of(case.pod, classes, default)
        victims = [(v, priority_of(v, classes, default)) for v in found.victims]
        evidence: dict[str, Any] = {"nominatedNode": found.nominated, "priority": mine}
        if not victims:  # a gang member: its group's victims are shown with another member
            return Diagnosis(
                case.key,
                "Schedulable",
                f"Its gang preempts lower-priority pods; it is nominated to {found.nominated} "
                "and binds there once they are gone.",
                evidence,
                None,
                case.size,
            )
        top = max(p for _, p in victims)
        names = ", ".join(f"{v.metadata.namespace}/{v.metadata.name}" for v, _ in victims)
        evidence["victims"] = [
            {
                "pod": f"{v.metadata.namespace}/{v.metadata.name}",
                "node": v.spec.node_name,
                "priority": p,
            }
            for v, p in victims
        ]
        return Diagnosis(
            case.key,
            "Schedulable",
            f"It would preempt {len(victims)} pod(s) on {found.nominated} (priority {top} < "
            f"{mine}): {names}; kube-scheduler nominates it there and it binds once they are "
            "gone.",
            evidence,
            None,
            case.size,
        )


def _terminating(audit: Audit, case: Case) -> Diagnosis | None:
    """A pod the input has nominated to a node where pods it preempted are still being
    deleted: kube-scheduler waits for them (no second preemption)."""
    node = case.pod.status.nominated_node_name
    if not node or node not in audit.state.nodes:
        return None
    going = [
        f"{p.metadata.namespace}/{p.metadata.name}"
        for k in audit.state.node_pods.get(node) or ()
        if terminating_by_preemption(p := audit.state.pods[k])
    ]
    if not going:
        return None
    return Diagnosis(
        case.key,
        "Schedulable",
        f"It is nominated to {node}, where {len(going)} pod(s) it preempted are still "
        f"terminating ({', '.join(going)}); it binds there once they are gone.",
        {"nominatedNode": node, "terminating": going},
        None,
        case.size,
    )
