"""Timeout: the allocator's search budget ran out on every node with enough free devices.
The last classifier: it answers every pod no other one did."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.view import NEAREST


class TimedOut:
    name = "TimedOut"
    categories = ("Timeout",)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis:
        return case.diagnosis(
            "Timeout",
            "The allocator's search budget ran out on every node with enough free devices "
            f"({len(case.timeouts)}); raise filterTimeoutSeconds or simplify the claim's "
            "constraints.",
            {"timedOut": case.timeouts[:NEAREST]},
            {"action": "raise filterTimeoutSeconds or simplify the constraints"},
        )
