"""NodeConstraints: only nodes (or NodePool templates) the pod's node constraints exclude
could ever hold it; never a question of capacity. Where only its node selector or affinity
excludes them and admits a NodePool whose nodes its claims cannot be evaluated on (a CEL
runtime error), that pool is the answer (audit.classifiers.pools, as `scale` says it)."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.classifiers.relax import fixable, relaxations
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
        opened = fixable(blocked)
        if not opened and reach.unevaluable:
            return None
        first = (opened or blocked)[0]
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
        found = (
            f"{count} could hold it but its node constraints exclude every one of them "
            f"(e.g. {where}: {first.blocks.reasons[0]})"
        )
        if not opened:
            return Diagnosis(
                case.key,
                "NodeConstraints",
                sentence(f"{found}; add nodes that its node selector and affinity admit."),
                evidence,
                {"action": "add nodes that the pod's node selector and affinity admit"},
                case.size,
            )
        return Diagnosis(
            case.key,
            "NodeConstraints",
            sentence(found),
            evidence,
            None,
            case.size,
            relaxations(blocked),
            "no toleration or uncordon draplan tried, even with a new node, makes it schedulable",
        )
