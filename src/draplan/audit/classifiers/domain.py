"""TopologyMismatch of a gang: its members fit alone, not inside the one topology domain
the gang requires."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Case, members
from draplan.audit.classifiers.text import sentence
from draplan.audit.diagnosis import Diagnosis


class Domain:
    name = "Domain"
    categories = ("TopologyMismatch",)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        gang = case.gang
        if gang is None or not case.view.fits or gang.topology is None:
            return None
        if not gang.topology.required:
            return None
        topo = gang.topology.key
        domain, fitted, count = audit.mover.best_domain(members(audit.state, gang), topo)
        where = f"the best ({domain}) fits {fitted}" if domain else "no node carries that label"
        return case.diagnosis(
            "TopologyMismatch",
            sentence(
                f"{gang.label} needs {case.scale} pod(s) in one {topo} domain but of {count} "
                f"domain(s) {where}; free room in one domain or relax the topology requirement."
            ),
            {"domains": count, "bestDomain": domain or None, "fitsInBest": fitted},
            {"action": f"free room for {case.scale - fitted} more pod(s) in one {topo} domain"}
            | ({"domain": domain} if domain else {}),
        )
