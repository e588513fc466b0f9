"""WaitingForScaleUp, PoolLimitReached, NoPoolCanFit: with NodePools, what the autoscaler's
own plan does for the pod (audit.pools): the pool and node count it waits for, the limit that
stops it, or why no pool's node could ever hold it. Judged per pod: the plan serves pods one
by one."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.classifiers.relax import relaxations
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.pools import LIMITED, NO_POOL, WAITING


class ScaleUp:
    name = "ScaleUp"
    categories = (WAITING, LIMITED, NO_POOL)
    shared = False

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        if audit.pools is None:
            return None
        verdict = audit.pools.verdict(case.key, case.pod, case.shape)
        if verdict is None:
            return None
        evidence = {**case.view.evidence(), **verdict.evidence}
        out = Diagnosis(
            case.key, verdict.category, verdict.message, evidence, verdict.fix, case.size
        )
        if verdict.fix is not None:
            out.fix = {**verdict.fix, "verified": verdict.category != NO_POOL}
        reach = case.reach
        if verdict.category == NO_POOL and reach is not None:
            blocked = [h for h in reach.hosts if h.pool and h.blocks is not None]
            if blocked and blocked[0].blocks is not None:
                # A pool could hold it but for its node constraints: say which.
                reason = blocked[0].blocks.reasons[0]
                out.message = (
                    f"No NodePool's node admits it as it is (pool {blocked[0].pool}: {reason})"
                )
                out.proposals = relaxations(blocked)
                out.otherwise = "no toleration or relaxed selector draplan tried helps"
                out.fix = None
        return out
