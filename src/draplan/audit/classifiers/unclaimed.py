"""NoMatchingDevice: the pod's claims cannot be got (a claim or template is missing)."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Pending
from draplan.audit.diagnosis import Diagnosis


class Unclaimed:
    name = "Unclaimed"
    categories = ("NoMatchingDevice",)

    def classify(self, audit: Audit, pod: Pending) -> Diagnosis | None:
        if pod.missing is None:
            return None
        return Diagnosis(
            pod.key,
            "NoMatchingDevice",
            f"It cannot get its claims ({pod.missing}); create the missing object or fix the "
            "pod's spec.resourceClaims.",
            {"claim": str(pod.missing)},
            {"action": "create the claim or template, or fix spec.resourceClaims"},
        )
