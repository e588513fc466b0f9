"""NodeConstraints: only nodes (or NodePool templates) the pod's node constraints exclude
could ever hold it; never a question of capacity."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.classifiers.relax import relaxations
from draplan.audit.classifiers.text import sentence
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.view import NEAREST


class Unreachable:
    name = "Unreachable"
    categories = ("NodeConstraints",)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        reach = case.reach
        if reach is None or not reach.hosts or reach.admitted:
            return None
        blocked = [h for h in reach.hosts if h.blocks is not None]
        first = blocked[0]
        assert first.blocks is not None
        where = f"pool {first.pool}" if first.pool else first.node
        count = f"{len(blocked)} node(s)" if len(blocked) <= NEAREST else "Nodes"
        if any(h.pool for h in blocked):
            count = f"{count} or pools" if not all(h.pool for h in blocked) else "NodePools"
        taints = sorted(
            {f"{t.key}: {t.value}" for h in blocked if h.blocks for t in h.blocks.taints}
        )
        evidence = {
            **case.view.evidence(),
            "excludedNodes": {
                (f"pool {h.pool}" if h.pool else h.node): list(h.blocks.reasons)
                for h in blocked[:NEAREST]
                if h.blocks is not None
            },
        }
        if taints:
            evidence["taints"] = taints
        return Diagnosis(
            case.key,
            "NodeConstraints",
            sentence(
                f"{count} could hold it but its node constraints exclude every one of them "
                f"(e.g. {where}: {first.blocks.reasons[0]})"
            ),
            evidence,
            None,
            case.size,
            relaxations(blocked),
            "no relaxation draplan tried, even with a new node, makes it schedulable",
        )
