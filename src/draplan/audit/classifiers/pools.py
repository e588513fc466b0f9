"""PoolLimitReached, NoPoolCanFit: with NodePools, why the autoscaler's own plan adds no node
for the pod (audit.pools): the limit that stops a pool that could host it, or why no pool's
node could ever hold it, with a pool its node constraints admit as the example. Judged per
pod: the plan serves pods one by one."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.classifiers.relax import fixable, relaxations
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.pools import LIMITED, NO_POOL


class Pools:
    name = "Pools"
    categories = (LIMITED, NO_POOL)
    shared = False

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        if audit.pools is None:
            return None
        group = set(case.gang.members) if case.gang is not None else {case.key}
        verdict = audit.pools.verdict(case.key, case.pod, case.shape, group)
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
            blocked = fixable([h for h in reach.hosts if h.pool])
            if blocked:
                # A pool could hold it but for a taint or cordon: say which.
                first = blocked[0]
                assert first.blocks is not None
                out.message = (
                    f"No NodePool's node admits it as it is (pool {first.pool}: "
                    f"{first.blocks.reasons[0]})"
                )
                out.proposals = relaxations(blocked)
                out.otherwise = "no toleration draplan tried helps"
                out.fix = None
        return out
