"""Scale-up options, limits and the expander names (the chain itself: `expanders`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from draplan.api.draplan_v1alpha1 import NodePool
from draplan.autoscaler.templates import NewNode
from draplan.cluster.state import ObjectKey

EXPANDERS = ("least-waste", "least-cost", "priority", "most-pods")
# Cluster Autoscaler's --expendable-pods-priority-cutoff default: pods below it are neither
# scaled for nor kept nodes from being removed.
EXPENDABLE_CUTOFF = -10
DEFAULT_EXPANDERS = ("least-cost", "least-waste", "most-pods")


@dataclass(frozen=True)
class Limits:
    """Cluster-wide caps on what a plan may add (per-pool caps are the NodePools' maxNodes)."""

    max_nodes_total: int | None = None
    max_devices_total: int | None = None
    max_cost_per_hour: float | None = None
    expendable_priority_cutoff: int = EXPENDABLE_CUTOFF


@dataclass
class Option:
    """What adding nodes of one pool would achieve, simulated with the real scheduler."""

    pool: NodePool
    nodes: list[NewNode]
    pods: list[ObjectKey]
    waste: float = 0.0
    devices: int = 0
    # Accelerators the option's nodes strand (the FGD measure); only the gRPC expander weighs it.
    stranded: float = 0.0
    # Nodes that will be added when not `len(nodes)` (Cluster Autoscaler's count, for its options).
    count: int | None = None
    # Which pending pods each new node is added for (wasted if none of them ever runs there).
    intended: dict[str, list[ObjectKey]] = field(default_factory=dict)

    @property
    def price(self) -> float:
        return float(self.pool.spec.price_per_hour)

    @property
    def cost_per_hour(self) -> float:
        return self.price * (len(self.nodes) if self.count is None else self.count)
