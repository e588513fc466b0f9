"""A `fromNode` pool's new nodes are stamped from the first one built in full, as a template
pool's are: each must equal the node built in full from the donor as it is, and a donor that
changes (another Node object, its slices replaced in a fork) must be copied anew.

The donor (unlike the GPU fixtures): an Intel Gaudi3 node with a DaemonSet pod holding a host
port, beside a tainted control-plane node and CPU-only system nodes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from draplan.api.codec import decode, encode
from draplan.api.core_v1 import Node
from draplan.api.draplan_v1alpha1 import NodePool, NodePoolSpec
from draplan.api.meta import ObjectMeta
from draplan.api.resource_v1 import DeviceAttribute, ResourceSlice
from draplan.autoscaler import templates
from draplan.autoscaler.templates import NewNode, make_node, node_daemons
from draplan.cluster.state import ClusterState
from gaudi_scenarios import device_class, gaudi_node, owner, system_nodes


def _daemon(node_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"exporter-{node_name}",
            "namespace": "monitoring",
            "ownerReferences": owner("DaemonSet", "exporter"),
        },
        "spec": {
            "nodeName": node_name,
            "containers": [
                {
                    "name": "main",
                    "resources": {"requests": {"cpu": "100m"}},
                    "ports": [{"containerPort": 9400, "hostPort": 9400}],
                }
            ],
        },
        "status": {"phase": "Running"},
    }


def _state() -> tuple[ClusterState, NodePool]:
    docs = [device_class(), *system_nodes(), *gaudi_node("gaudi-0"), _daemon("gaudi-0")]
    state = ClusterState.from_objects([decode(d) for d in docs])
    pool = NodePool(
        metadata=ObjectMeta(name="gaudi"),
        spec=NodePoolSpec(max_nodes=50, from_node="gaudi-0"),
    )
    state.node_pools["gaudi"] = pool
    return state, pool


def _as_built(state: ClusterState, pool: NodePool, name: str, labels: dict[str, str]) -> Any:
    """The node built in full from the donor as it is now (what stamping must equal)."""
    new = templates._make_node(state, pool, name, labels)
    source = state.nodes[pool.spec.from_node]
    return _doc(NewNode(new.node, new.slices, node_daemons(state, source, name)))


def _doc(new: NewNode) -> Any:
    return (
        encode(new.node),
        [encode(s) for s in new.slices],
        [encode(p) for p in new.pods],
    )


@pytest.mark.parametrize("names", [["gaudi-1", "gaudi-2", "gaudi-10"], ["g.x-7", "gaudi-3"]])
def test_stamped_nodes_equal_nodes_built_in_full(names: list[str]) -> None:
    state, pool = _state()
    for i, name in enumerate(names):
        labels = {"topology.kubernetes.io/zone": f"z{i % 2}"} if i else {}
        assert _doc(make_node(state, pool, name, labels)) == _as_built(state, pool, name, labels)


def test_a_changed_donor_is_copied_anew() -> None:
    state, pool = _state()
    first = make_node(state, pool, "gaudi-1", {})
    with state.forked():
        donor = state.nodes["gaudi-0"]
        labels = {**donor.metadata.labels, "rack": "r7"}
        meta = msgspec.structs.replace(donor.metadata, labels=labels)
        state.add_node(msgspec.structs.replace(donor, metadata=meta))
        relabelled = make_node(state, pool, "gaudi-1", {})
        assert relabelled.node.metadata.labels["rack"] == "r7"
        assert _doc(relabelled) == _as_built(state, pool, "gaudi-1", {})
    with state.forked():
        (rs,) = state.node_slices("gaudi-0")
        first_device = rs.spec.devices[0]
        model = {**first_device.attributes, "model": DeviceAttribute(string="Gaudi3E")}
        devices = (msgspec.structs.replace(first_device, attributes=model), *rs.spec.devices[1:])
        state.remove_slice(rs.metadata.name)
        state.add_slice(
            msgspec.structs.replace(rs, spec=msgspec.structs.replace(rs.spec, devices=devices))
        )
        reslice = make_node(state, pool, "gaudi-1", {})
        (new_slice,) = reslice.slices
        assert isinstance(new_slice, ResourceSlice)
        assert new_slice.spec.devices[0].attributes["model"].string == "Gaudi3E"
        assert _doc(reslice) == _as_built(state, pool, "gaudi-1", {})
    # Back to the donor as it was: the first node's copy again.
    assert _doc(make_node(state, pool, "gaudi-1", {})) == _doc(first)
    assert isinstance(first.node, Node)
