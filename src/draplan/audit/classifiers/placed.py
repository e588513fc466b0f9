"""Schedulable: the pass placed the pod, or (outside a gang, not nominated by preemption) a
node fits it now; it only waits for the scheduler."""

from __future__ import annotations

from typing import Any

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.diagnosis import Diagnosis


class Placed:
    name = "Placed"
    categories = ("Schedulable",)
    shared = False

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        node = audit.placed.get(case.key)
        evidence: dict[str, Any] = {}
        if node is None:
            # A pod the pass nominated fits only because its victims are gone: Preempting's.
            if case.gang is not None or case.key in audit.nominated or not case.view.fits:
                return None
            node, evidence = case.view.fits[0], case.view.evidence()
        return Diagnosis(
            case.key,
            "Schedulable",
            f"It fits now (on {node}); it only waits for the scheduler.",
            {**evidence, "node": node},
            None,
            case.size,
        )
