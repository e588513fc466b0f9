"""NoMatchingDevice: the claims are wrong on every node the pod could use (the allocator's
input errors), a configuration error like a request no device matches; judged after the
pools, since a pool's nodes may not share it."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.diagnosis import Diagnosis


class Invalid:
    name = "Invalid"
    categories = ("NoMatchingDevice",)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        error = case.view.error
        if not error:
            return None
        return Diagnosis(
            case.key,
            "NoMatchingDevice",
            f"Its claims cannot be allocated on any node ({error}); fix the claims.",
            {**case.view.evidence(), "error": error},
            {"action": "fix the claim's requests"},
            case.size,
        )
