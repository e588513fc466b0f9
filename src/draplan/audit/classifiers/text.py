"""How verdicts word what they found: nodes, shortfalls, amounts, moves, constraints."""

from __future__ import annotations

from draplan.api.resource_v1 import ResourceClaim
from draplan.audit.supply import NodeSupply
from draplan.cluster.podresources import PODS


def sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def nearness(s: NodeSupply) -> tuple[int, int, int, str]:
    """Nodes that fit first, then those lacking the fewest devices and resources."""
    return (0 if s.fits else 1, -s.found(), len(s.lacking), s.node)


def lacks(s: NodeSupply) -> list[str]:
    parts = [
        f"{k}: {s.devices.get(k, 0)} of {n} devices free"
        for k, n in sorted(s.needed.items())
        if s.devices.get(k, 0) < n
    ]
    parts += [
        f"{r}: {amount(r, max(0, s.free.get(r, 0)))} free of {amount(r, s.requests[r])} needed"
        for r in s.lacking
    ]
    if not parts and s.code:
        parts.append(f"{s.code}: {s.message}")
    return parts or ["nothing (it fits)"]


def lacks_text(s: NodeSupply) -> str:
    return f"{s.node} has {'; '.join(lacks(s))}" if s.needed or s.lacking else s.node


def amount(what: str, value: int) -> str:
    if what == "cpu":
        return f"{value / 1000:g} cpu"
    if what in ("memory", "ephemeral-storage") or what.startswith("hugepages-"):
        return f"{value / 1000 / 2**30:.1f}Gi {what}"  # bytes, as a quantity
    if what == PODS:
        return f"{value // 1000} pod slot(s)"
    if " " not in what:
        return f"{value / 1000:g} {what}"
    return f"{value} device(s)"


def moves_text(moves: dict[str, str]) -> str:
    by_target: dict[str, list[str]] = {}
    for pod, target in moves.items():
        by_target.setdefault(target, []).append(pod)
    return ", ".join(f"{' and '.join(pods)} to {target}" for target, pods in by_target.items())


def nodes_text(nodes: list[str]) -> str:
    if len(nodes) == 1:
        return f"Node {nodes[0]} has"
    return f"Nodes {nodes[0]} and {len(nodes) - 1} more have"


def constraint_attributes(claims: list[ResourceClaim]) -> list[str]:
    return [
        c.match_attribute or c.distinct_attribute or ""
        for claim in claims
        for c in claim.spec.devices.constraints
    ]


def constraint_text(claims: list[ResourceClaim]) -> str:
    for claim in claims:
        for con in claim.spec.devices.constraints:
            if con.match_attribute:
                return f"all on one {con.match_attribute}"
            if con.distinct_attribute:
                return f"each on a distinct {con.distinct_attribute}"
    return "shared counters or capacity"
