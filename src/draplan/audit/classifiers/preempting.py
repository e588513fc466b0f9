"""Schedulable by preemption: kube-scheduler evicts pods of lower priority for it and
nominates it to their node; it binds there once they are gone."""

from __future__ import annotations

from typing import Any

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.diagnosis import Diagnosis
from draplan.scheduler.queue import priority_of, priority_table


class Preempting:
    name = "Preempting"
    categories = ("Schedulable",)
    shared = False

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        found = audit.nominated.get(case.key)
        if found is None:
            return None
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
