"""ClusterState.pools_for_node across forks: a fork without a slice change answers with the
Pool objects of the layers below (the schedulers' and metrics' memos key on them); a slice or
Node change in a fork is seen in it, and gone again on revert."""

from __future__ import annotations

from pathlib import Path

import msgspec

from draplan.api.resource_v1 import ResourceSlice
from draplan.cluster.state import ClusterState
from draplan.sources import load_objects

CLUSTER = Path(__file__).resolve().parent / "data" / "realistic" / "cluster.yaml"
NODE = "gpu-h100-a"


def _state() -> ClusterState:
    return ClusterState.from_objects(load_objects([str(CLUSTER)]))


def _devices(state: ClusterState) -> list[str]:
    return [v.name for pool in state.pools_for_node(state.nodes[NODE]) for v in pool.devices]


def test_a_fork_reads_the_pools_below_until_a_slice_changes() -> None:
    state = _state()
    node = state.nodes[NODE]
    pools = state.pools_for_node(node)
    other = state.nodes["gpu-h100-b"]
    others = state.pools_for_node(other)
    everything = _devices(state)
    with state.forked():
        with state.forked():
            assert state.pools_for_node(node) is pools
        rs = state.node_slices(NODE)[0]
        fewer = msgspec.structs.replace(
            rs, spec=msgspec.structs.replace(rs.spec, devices=rs.spec.devices[:-1])
        )
        state.add_slice(fewer)
        with state.forked():
            assert _devices(state) == everything[:-1]
            assert state.pools_for_node(other) is others  # its pools are its own slices'
        assert _devices(state) == everything[:-1]
    assert _devices(state) == everything
    kept = state.pools_for_node(node)
    with state.forked():
        assert state.pools_for_node(node) is kept
    with state.forked(commit=True):
        state.add_slice(fewer)
        _devices(state)
    assert _devices(state) == everything[:-1]
    assert _devices(state) == [
        v.name for p in _fresh_with(fewer).pools_for_node(node) for v in p.devices
    ]


def test_a_node_replaced_in_a_fork_gathers_its_pools_again() -> None:
    state = _state()
    node = state.nodes[NODE]
    pools = state.pools_for_node(node)
    with state.forked():
        state.add_node(msgspec.structs.replace(node))
        assert state.pools_for_node(state.nodes[NODE]) is not pools
        assert _devices(state) == [v.name for p in pools for v in p.devices]


def _fresh_with(rs: ResourceSlice) -> ClusterState:
    state = _state()
    state.add_slice(rs)
    return state
