"""TopologyMismatch: the pod fits no node, yet some have enough free matching devices and only
the claim's constraints fail there (not nodes whose shape can never meet them)."""

from __future__ import annotations

from collections.abc import Iterator

from draplan.allocator.types import CONSTRAINT_UNSATISFIABLE
from draplan.api.core_v1 import Pod
from draplan.audit.classifiers.base import Audit, Case, moves
from draplan.audit.classifiers.text import constraint_attributes, constraint_text, nodes_text
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.fixes import Fix
from draplan.audit.view import NEAREST


class Shaped:
    name = "Shaped"
    categories = ("TopologyMismatch",)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        hosts = {s.node for s in case.hosts}
        shaped = [
            s for s in case.candidates if s.code == CONSTRAINT_UNSATISFIABLE and s.node in hosts
        ]
        if case.view.fits or not shaped:
            return None
        nodes = [s.node for s in shaped]
        attributes = constraint_attributes(case.claims)

        def proposals(pod: Pod) -> Iterator[Fix]:
            yield from moves(audit, pod, shaped)
            for attribute in attributes[:1]:
                yield Fix(
                    f"drop its claim's constraint on {attribute}",
                    "relax the constraint",
                    drop_constraints=(attribute,),
                )

        return case.diagnosis(
            "TopologyMismatch",
            f"{nodes_text(nodes)} enough free matching devices but none in the required shape "
            f"({constraint_text(case.claims)})",
            {"shapedNodes": nodes[:NEAREST]},
            proposals=proposals,
            otherwise="free a whole group there or relax the constraint",
        )
