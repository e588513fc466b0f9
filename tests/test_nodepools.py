"""cluster.nodepools: one rule for a node's pool and price."""

from __future__ import annotations

from pathlib import Path

from draplan.cluster.nodepools import node_pool, pool_name, price_per_hour
from draplan.cluster.state import ClusterState
from draplan.sources.files import load_files

DUMP = Path(__file__).parent / "data" / "realistic"


def _state(*names: str) -> ClusterState:
    return ClusterState.from_objects(load_files([str(DUMP / n) for n in names]))


def test_karpenter_labels_name_the_pool_when_no_nodepool_is_given() -> None:
    state = _state("cluster.yaml")
    names = {n: pool_name(state, node) for n, node in state.nodes.items()}
    assert names == {
        "gpu-h100-a": "h100",
        "gpu-h100-b": "h100",
        "gpu-a100-a": "a100",
        "gpu-a100-b": "a100",
        "gpu-l4-a": "l4",
        "gpu-l4-b": "l4",
    }
    assert all(node_pool(state, node) is None for node in state.nodes.values())
    assert price_per_hour(state, state.nodes["gpu-l4-a"]) is None


def test_nodepools_match_by_provider_label_and_give_their_price() -> None:
    state = _state("cluster.yaml", "pools.yaml")
    prices = {n: price_per_hour(state, node) for n, node in state.nodes.items()}
    assert prices["gpu-h100-b"] == 98.32
    assert prices["gpu-a100-b"] == 32.77
    assert prices["gpu-l4-b"] == 4.60
