"""Scale-up options, limits and the expander chain."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from draplan.api.draplan_v1alpha1 import NodePool
from draplan.autoscaler.templates import NewNode
from draplan.cluster.state import ObjectKey

EXPANDERS = ("least-waste", "least-cost", "priority", "most-pods")
DEFAULT_EXPANDERS = ("least-cost", "least-waste", "most-pods")

T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    """Cluster-wide caps on what a plan may add (per-pool caps are the NodePools' maxNodes)."""

    max_nodes_total: int | None = None
    max_devices_total: int | None = None
    max_cost_per_hour: float | None = None


@dataclass
class Option:
    """What adding nodes of one pool would achieve, simulated with the real scheduler."""

    pool: NodePool
    nodes: list[NewNode]
    pods: list[ObjectKey]
    waste: float = 0.0
    devices: int = 0
    # Which pending pods each new node is added for (wasted if none of them ever runs there).
    intended: dict[str, list[ObjectKey]] = field(default_factory=dict)

    @property
    def price(self) -> float:
        return float(self.pool.spec.price_per_hour)

    @property
    def cost_per_hour(self) -> float:
        return self.price * len(self.nodes)


def _least_cost(o: Option) -> float:
    # Price per pod served: an option that serves more pods per dollar wins.
    return o.cost_per_hour / max(1, len(o.pods))


_SCORES: dict[str, Callable[[Option], float]] = {
    "least-waste": lambda o: o.waste,
    "least-cost": _least_cost,
    "priority": lambda o: -o.pool.spec.priority,
    "most-pods": lambda o: -len(o.pods),
}


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
        remaining = [
            o for o in remaining if abs(score(expander, o) - best) <= 1e-9 * max(1.0, abs(best))
        ]
        if len(remaining) == 1:
            break
    return min(remaining, key=name)


def choose(options: Sequence[Option], chain: Sequence[str] = DEFAULT_EXPANDERS) -> Option:
    """The expander chain over whole options."""
    return choose_by(options, chain, lambda e, o: _SCORES[e](o), lambda o: o.pool.metadata.name)
