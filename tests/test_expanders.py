"""The expander chain's ranking, which draplan's planner and the gRPC expander share."""

from __future__ import annotations

from draplan.api.draplan_v1alpha1 import NodePool, NodePoolSpec
from draplan.api.meta import ObjectMeta
from draplan.autoscaler.expanders import DEVICE_AWARE, choose, rank
from draplan.autoscaler.options import Option
from draplan.cluster.state import ObjectKey


def _option(
    name: str, price: str, pods: int, count: int, stranded: float = 0.0, waste: float = 0.0
) -> Option:
    pool = NodePool(metadata=ObjectMeta(name=name), spec=NodePoolSpec(price_per_hour=price))
    keys: list[ObjectKey] = [("default", f"p-{i}") for i in range(pods)]
    return Option(pool, [], keys, waste=waste, stranded=stranded, count=count)


def test_rank_orders_by_cost_per_pod_then_stranded_then_waste_then_name() -> None:
    options = [
        _option("dear", "10", 2, 2),  # 10 a pod
        _option("strands", "4", 2, 2, stranded=1.0),  # 4 a pod, strands a GPU
        _option("wasteful", "4", 2, 2, waste=0.5),  # 4 a pod, wastes more
        _option("b-cheap", "4", 2, 2),
        _option("a-cheap", "8", 4, 2),  # 4 a pod too: ties to the name
    ]
    ranked = [o.pool.metadata.name for o in rank(options, DEVICE_AWARE)]
    assert ranked == ["a-cheap", "b-cheap", "wasteful", "strands", "dear"]
    assert choose(options, DEVICE_AWARE).pool.metadata.name == "a-cheap"


def test_rank_keeps_equal_options_apart() -> None:
    twins = [_option("same", "1", 1, 1), _option("same", "1", 1, 1)]
    assert len(rank(twins)) == 2 and rank(twins)[0] is not rank(twins)[1]


def test_cost_counts_the_nodes_cluster_autoscaler_adds() -> None:
    option = _option("g", "3", 2, 5)
    assert option.cost_per_hour == 15.0
