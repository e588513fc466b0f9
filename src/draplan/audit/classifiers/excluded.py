"""NodeConstraints: nodes with room now are excluded by the pod's node constraints (taints,
node selector or affinity, a cordon, a fixed node name)."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.classifiers.relax import relaxations
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.reach import Host
from draplan.audit.view import NEAREST
from draplan.scheduler.plugins import names

CONSTRAINT_FIX = {
    names.NODE_AFFINITY: "relax the pod's node selector or affinity",
    names.TAINT_TOLERATION: "add a toleration for the node taint",
    names.NODE_UNSCHEDULABLE: "uncordon the node",
    names.NODE_NAME: "drop the pod's fixed node name",
}


class Excluded:
    name = "Excluded"
    categories = ("NodeConstraints",)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        view = case.view
        if not view.excluded:
            return None
        nodes = list(view.excluded)[:NEAREST]
        first = nodes[0]
        count = f"{len(nodes)}" if len(view.excluded) <= NEAREST else f"More than {NEAREST}"
        pod = audit.state.pods[case.key]
        hosts = [Host(n, "", audit.reacher.blocks(pod, n)) for n in nodes]
        if case.reach is not None:
            hosts += [h for h in case.reach.hosts if h.blocks is not None]
        cordoned = all(p == names.NODE_UNSCHEDULABLE for p in view.plugins.values())
        why = (
            "they are cordoned"
            if cordoned
            else "the pod's selectors, affinity or tolerations exclude them"
        )
        return Diagnosis(
            case.key,
            "NodeConstraints",
            f"{count} node(s) have room but {why} (e.g. {first}: {view.excluded[first]})",
            {**view.evidence(), "excludedNodes": {n: view.excluded[n] for n in nodes}},
            None,
            case.size,
            relaxations(hosts),
            CONSTRAINT_FIX.get(view.plugins[first], "relax the pod's node constraints")
            + " (no change draplan tried makes it schedulable now)",
        )
