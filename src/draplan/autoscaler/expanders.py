"""The expander chain: Cluster Autoscaler's seam that ranks scale-up options. draplan's planner
and the gRPC expander (`draplan.grpcplugin`) both rank through `rank` / `choose`.

Each expander keeps the options it rates best and passes ties down the chain, as CA's
`--expander=a,b,c` filters do; the last tie goes to the smallest pool name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from draplan.api.draplan_v1alpha1 import NodePool
from draplan.autoscaler.options import DEFAULT_EXPANDERS, Option

T = TypeVar("T")

MICRO = 1_000_000  # prices are summed in micro-dollars per hour, so equal plans tie exactly
# Device-aware ranking for options someone else built (the gRPC expander): cost per placed pod,
# then the accelerators the nodes strand (FGD), then the unused share of every resource kind.
DEVICE_AWARE = ("least-cost", "least-stranded", "least-waste", "most-pods")


def _least_cost(o: Option) -> float:
    # Price per pod served: an option that serves more pods per dollar wins.
    return o.cost_per_hour / max(1, len(o.pods))


_SCORES: dict[str, Callable[[Option], float]] = {
    "least-waste": lambda o: o.waste,
    "least-cost": _least_cost,
    "least-stranded": lambda o: o.stranded,
    "priority": lambda o: -o.pool.spec.priority,
    "most-pods": lambda o: -len(o.pods),
}


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def choose_by(
    items: Sequence[T],
    chain: Sequence[str],
    score: Callable[[str, T], float],
    name: Callable[[T], str],
) -> T:
    """Each expander keeps the items it rates best (`score(expander, item)`, lower is better);
    ties fall through the chain, then to the smallest `name`."""
    remaining = list(items)
    for expander in chain:
        best = min(score(expander, o) for o in remaining)
        remaining = [o for o in remaining if _same(score(expander, o), best)]
        if len(remaining) == 1:
            break
    return min(remaining, key=name)


def choose(options: Sequence[Option], chain: Sequence[str] = DEFAULT_EXPANDERS) -> Option:
    """The expander chain over whole options: the one it picks."""
    return choose_by(options, chain, lambda e, o: _SCORES[e](o), lambda o: o.pool.metadata.name)


def equal_best(options: Sequence[Option], chain: Sequence[str]) -> list[Option]:
    """The options no expander of the chain tells from the chain's pick (only the name's
    tie-break does)."""
    if not options:
        return []
    best = choose(options, chain)
    return [o for o in options if all(_same(_SCORES[e](o), _SCORES[e](best)) for e in chain)]


def rank(options: Sequence[Option], chain: Sequence[str] = DEFAULT_EXPANDERS) -> list[Option]:
    """Every option, best first: the chain's pick, then its pick among the rest, and so on."""
    left = list(options)
    out = []
    while left:
        best = choose(left, chain)
        out.append(best)
        left = [o for o in left if o is not best]  # equal options stay distinct
    return out


def price(pool: NodePool) -> float:
    return float(pool.spec.price_per_hour)


@dataclass(frozen=True)
class ClassOption:
    """A candidate for (part of) one class: `pods` of it on `nodes` new nodes of `pool`."""

    pool: NodePool
    pods: int
    nodes: int
    waste: float
    cost: float  # this option plus the cheapest cover of the rest of the class
    uncovered: int  # pods of the class no pool would take after this option


def class_score(name: str, o: ClassOption) -> float:
    """One expander's rating of a candidate for (part of) one class, lower is better."""
    if name == "least-cost":
        # Leaving pods uncovered is worse than any price.
        return o.uncovered * 1e12 + o.cost
    if name == "least-waste":
        return o.waste
    if name == "priority":
        return -o.pool.spec.priority
    return -o.pods  # most-pods


class StepValue:
    """One node's value in the exact choice (`costopt.cover_exactly`) as one integer, so that
    sums over a plan compare like (cost, the later expanders' sums, nodes, pool-name ranks)
    lexicographically: each part is weighted by more than the largest sum of the parts after
    it."""

    def __init__(self, chain: Sequence[str], pools: Sequence[NodePool], most_nodes: int) -> None:
        self.chain = [e for e in chain[1:] if e in ("least-waste", "priority")]
        self.rank = {p.metadata.name: n for n, p in enumerate(pools)}
        self.top = max((p.spec.priority for p in pools), default=0)
        spread = self.top - min((p.spec.priority for p in pools), default=0)
        self.limits = {"least-waste": 1000, "priority": spread}
        self.most = most_nodes + 1
        self.pools = max(1, len(pools))

    def __call__(self, pool: NodePool, used: float) -> int:
        value = round(price(pool) * MICRO)
        for name in self.chain:
            part = round(used * 1000) if name == "least-waste" else self.top - pool.spec.priority
            value = value * self.most * (self.limits[name] + 1) + part
        value = value * self.most + 1  # fewer nodes
        return value * self.most * self.pools + self.rank[pool.metadata.name]
