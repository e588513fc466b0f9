"""SchedulingGated: kube-scheduler does not try a pod with spec.schedulingGates, so this is
judged before anything else, its claims' absence included (they may be made once the gate is
lifted)."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Pending
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.gates import SCHEDULING_GATED


class Gated:
    name = "Gated"
    categories = (SCHEDULING_GATED,)

    def classify(self, audit: Audit, pod: Pending) -> Diagnosis | None:
        gated = audit.gates.verdict(pod.pod)
        if gated is None:
            return None
        return Diagnosis(
            pod.key, SCHEDULING_GATED, gated.message, gated.evidence, gated.fix, pod.size
        )
