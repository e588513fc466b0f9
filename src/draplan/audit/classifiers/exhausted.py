"""CapacityExhausted: the nodes that could hold the pod (or the gang) if they were empty lack
free devices or resources in total, or no node could hold it even empty. Free capacity
elsewhere is of the wrong kind (too few matching devices, too small)."""

from __future__ import annotations

import math
from collections.abc import Iterator

from draplan.api.core_v1 import Pod
from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.classifiers.text import amount, lacks_text
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.fixes import Fix
from draplan.audit.supply import NodeSupply
from draplan.cluster.podresources import Resources
from draplan.cluster.podresources import pod_requests as requests_of


class Exhausted:
    name = "Exhausted"
    categories = ("CapacityExhausted",)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        who = "the gang" if case.gang is not None else "the pod"
        hosts = case.hosts
        if not hosts:
            best = lacks_text(case.supplies[0]) if case.supplies else "no usable node"
            return case.diagnosis(
                "CapacityExhausted",
                f"No node could hold {who} even if it were empty (best: {best}); add nodes "
                "with enough matching devices and room.",
                fix={"action": "add nodes that can hold the pod"},
            )
        short = _shortfall(hosts, requests_of(case.pod, case.audit.state.features), case.scale)
        if not short:
            return None
        what, (need, have) = next(iter(short.items()))
        unit = need // case.scale
        like = min(hosts, key=lambda s: (-_per_node(s, what, unit), s.node))
        per_node = _per_node(like, what, unit)
        add = math.ceil((need - have) / per_node) if per_node else 1
        extra = (("resource", what), ("missing", need - have))

        def proposals(pod: Pod) -> Iterator[Fix]:
            for n in (add, add + 1):
                yield Fix(
                    f"add {n} node(s) like {like.node}",
                    "add nodes",
                    add=n,
                    like=like.node,
                    extra=extra,
                )

        return case.diagnosis(
            "CapacityExhausted",
            f"The nodes that could hold {who} have {amount(what, have)} free for {what} but "
            f"{who} needs {amount(what, need)}",
            {"short": {k: {"needed": n, "free": f} for k, (n, f) in short.items()}},
            proposals=proposals,
            otherwise="wait for running work to finish (no node draplan tried to add helps)",
        )


def _shortfall(
    hosts: list[NodeSupply], requests: Resources, scale: int
) -> dict[str, tuple[int, int]]:
    """What the demand (`scale` pods) exceeds in total over `hosts`: {what: (needed, free)}."""
    short: dict[str, tuple[int, int]] = {}
    for k, n in sorted(hosts[0].needed.items()):
        free = sum(s.devices.get(k, 0) for s in hosts)
        if free < n * scale:
            short[k] = (n * scale, free)
    for r, amount_ in sorted(requests.items()):
        if amount_ <= 0:
            continue
        free = sum(max(0, s.free.get(r, 0)) for s in hosts)
        if free < amount_ * scale:
            short[r] = (amount_ * scale, free)
    return short


def _per_node(s: NodeSupply, what: str, unit: int) -> int:
    """How much of `what` one more node like `s` offers, in whole pods of `unit` each."""
    total = s.matching.get(what, 0) if what in s.needed else s.capacity.get(what, 0)
    return (total // unit) * unit if unit > 0 else total
