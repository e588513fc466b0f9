"""WaitingForScaleUp: with NodePools, the autoscaler's own plan (audit.pools) adds nodes for
the pod, so that is what happens to it, whatever nodes outside its node constraints could do:
judged right after Schedulable. The nodes named are its share (its gang's), not the plan's."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.pools import WAITING


class ScaleUp:
    name = "ScaleUp"
    categories = (WAITING,)
    shared = False

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        if audit.pools is None:
            return None
        group = set(case.gang.members) if case.gang is not None else {case.key}
        verdict = audit.pools.waiting(case.key, group)
        if verdict is None:
            return None
        evidence = {**case.view.evidence(), **verdict.evidence}
        fix = None if verdict.fix is None else {**verdict.fix, "verified": True}
        return Diagnosis(case.key, verdict.category, verdict.message, evidence, fix, case.size)
