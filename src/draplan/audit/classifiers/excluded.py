"""NodeConstraints: nodes with room now that the pod's node selector and affinity admit are
kept from it by their taints or a cordon."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.classifiers.relax import relaxations
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.reach import Host
from draplan.audit.view import NEAREST
from draplan.scheduler.plugins import names

CONSTRAINT_FIX = {
    names.TAINT_TOLERATION: "add a toleration for the node taint",
    names.NODE_UNSCHEDULABLE: "uncordon the node",
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
        plugins = set(view.plugins.values())
        if plugins == {names.NODE_UNSCHEDULABLE}:
            why = "they are cordoned"
        elif plugins == {names.TAINT_TOLERATION}:
            why = "the pod does not tolerate their taints"
        else:
            why = "their taints or cordons keep the pod off"
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
