"""NoMatchingDevice: no device in the cluster or any NodePool can serve one of the pod's
requests: a configuration error, whatever the capacity."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Pending
from draplan.audit.diagnosis import Diagnosis


class Unmatched:
    name = "Unmatched"
    categories = ("NoMatchingDevice",)

    def classify(self, audit: Audit, pod: Pending) -> Diagnosis | None:
        missing = audit.matcher.unmatched(pod.claims)
        if not missing:
            return None
        return Diagnosis(
            pod.key,
            "NoMatchingDevice",
            f"No device in the cluster or any NodePool can serve {missing[0]}; fix the "
            "claim's class or selectors.",
            {"requests": missing},
            {"action": "fix the claim's class or CEL selectors"},
            pod.size,
        )
