"""CapacityExhausted: PreFilter rejects the pod before any node is looked at (e.g. a claim
with no room for another consumer): the capacity of the claim itself is exhausted."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.diagnosis import Diagnosis


class Prefiltered:
    name = "Prefiltered"
    categories = ("CapacityExhausted",)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        prefilter = case.view.prefilter
        if prefilter.ok:
            return None
        why = prefilter.reasons[0] if prefilter.reasons else "PreFilter failed"
        return case.diagnosis(
            "CapacityExhausted",
            f"No node is considered because {why}; wait for a user of its claim to finish.",
        )
