"""TopologyMismatch: no node or pool shape, even empty, can meet a claim constraint
(matchAttribute / distinctAttribute); the largest group is named."""

from __future__ import annotations

from collections.abc import Iterator

from draplan.allocator.diagnose import group_text
from draplan.api.core_v1 import Pod
from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.classifiers.text import nearness, sentence
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.fixes import Fix


class Impossible:
    name = "Impossible"
    categories = ("TopologyMismatch",)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        reach, view = case.reach, case.view
        if reach is None or reach.hosts:
            return None
        group = reach.short_group()
        if group is None:
            return None
        attribute = group.get("matchAttribute") or group.get("distinctAttribute") or ""
        where = "any node or pool" if audit.state.node_pools else "any node"
        likes = [min(view.supplies.values(), key=nearness).node] if view.supplies else []

        def proposals(pod: Pod) -> Iterator[Fix]:
            drop = f"drop its claim's constraint on {attribute}"
            yield Fix(drop, "relax the constraint", drop_constraints=(attribute,))
            for like in likes:
                yield Fix(
                    f"{drop} and add a node like {like}",
                    "relax the constraint and add a node",
                    drop_constraints=(attribute,),
                    add=1,
                    like=like,
                )

        return Diagnosis(
            case.key,
            "TopologyMismatch",
            sentence(f"{group_text(group)} on {where}, so no node can ever hold it"),
            {**view.evidence(), "constraint": group, "shapes": reach.shapes},
            None,
            case.size,
            proposals,
            f"no node offers {group['needed']} such devices on one {attribute} and relaxing the "
            "constraint alone does not make it fit; relax the constraint and free or add room",
        )
