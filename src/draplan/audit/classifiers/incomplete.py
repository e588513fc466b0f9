"""GangIncomplete: the pod's gang has fewer live members than its minimum, or its group
object is missing; no capacity makes it start."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Pending
from draplan.audit.classifiers.text import sentence
from draplan.audit.diagnosis import Diagnosis
from draplan.cluster.podresources import is_terminal


class Incomplete:
    name = "Incomplete"
    categories = ("GangIncomplete",)

    def classify(self, audit: Audit, pod: Pending) -> Diagnosis | None:
        gang, pods = pod.gang, audit.state.pods
        if gang is None:
            return None
        alive = [k for k in gang.members if k in pods and not is_terminal(pods[k])]
        if not gang.missing and len(alive) >= gang.min_count:
            return None
        evidence = {"gang": gang.label, "members": len(alive), "minCount": gang.min_count}
        if gang.missing:
            return Diagnosis(
                pod.key,
                "GangIncomplete",
                sentence(
                    f"{gang.label} cannot start ({gang.missing}); create it or drop the "
                    "pods' reference to it."
                ),
                {**evidence, "missing": gang.missing},
                {"action": "create the group object"},
                pod.size,
            )
        return Diagnosis(
            pod.key,
            "GangIncomplete",
            sentence(
                f"{gang.label} has {len(alive)} of its {gang.min_count} pods; create the "
                "missing members or lower minCount."
            ),
            evidence,
            {"action": "create the missing members", "missing": gang.min_count - len(alive)},
            pod.size,
        )
