"""GangUnplaceable: every member of the gang fits somewhere alone and the total suffices,
yet not all of them together."""

from __future__ import annotations

from draplan.audit.classifiers.base import Audit, Case, members
from draplan.audit.diagnosis import Diagnosis


class Unplaceable:
    name = "Unplaceable"
    categories = ("GangUnplaceable",)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        gang = case.gang
        if gang is None or not case.view.fits:
            return None
        need = case.scale
        fitted = audit.mover.together(members(audit.state, gang))
        return case.diagnosis(
            "GangUnplaceable",
            f"Every member of {gang.label} fits somewhere alone but only {fitted} of the "
            f"{need} needed fit together; free room for {need - fitted} more or lower minCount.",
            {"gang": gang.label, "fitTogether": fitted, "needed": need},
            {"action": "free room for the whole gang or lower minCount", "more": need - fitted},
        )
