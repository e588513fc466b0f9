"""Fragmentation: enough is free in total but split across nodes, or across the devices and
partitions of one node, so no single node fits the pod (and no node timed out); moving a few
pods, or a new node, fixes it."""

from __future__ import annotations

from collections.abc import Iterator

from draplan.api.core_v1 import Pod
from draplan.audit.classifiers.base import Audit, Case, moves
from draplan.audit.classifiers.text import lacks_text
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.fixes import Fix
from draplan.autoscaler.moves import MAX_MOVED


class Fragmented:
    name = "Fragmented"
    categories = ("Fragmentation",)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        if case.view.fits or case.timeouts:
            return None
        where = "devices or partitions of one node" if case.candidates else "nodes"
        hosts = case.hosts  # never empty: CapacityExhausted takes a pod no node could hold
        best = hosts[0]

        # A gang needs room for all its pending members at once: no single node's moves
        # give it that; a node per member does (checked like every fix).
        add = case.scale if case.gang is not None else 1

        def proposals(pod: Pod) -> Iterator[Fix]:
            if add == 1:
                yield from moves(audit, pod, hosts)
            what = "a node" if add == 1 else f"{add} nodes"
            action = "add a node" if add == 1 else "add nodes"
            yield Fix(f"add {what} like {best.node}", action, add=add, like=best.node)

        return case.diagnosis(
            "Fragmentation",
            f"Enough free capacity exists in total but it is split across {where}, so no single "
            f"node fits the pod (nearest: {lacks_text(best)})",
            proposals=proposals,
            otherwise=f"moving up to {MAX_MOVED} pods frees no node for it and no node draplan "
            "tried to add helps",
        )
