"""autoscaler.templates.NodeNamer: new nodes' names never clash with the state's or each other."""

from __future__ import annotations

from typing import Any

from draplan.api.codec import decode
from draplan.autoscaler.templates import NodeNamer, add_new_node, make_node
from draplan.cluster.state import ClusterState


def _objects() -> list[dict[str, Any]]:
    pool = {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": "trn2"},
        "spec": {
            "maxNodes": 16,
            "pricePerHour": "21.5",
            "template": {
                "metadata": {"labels": {"node.kubernetes.io/instance-type": "trn2.48xlarge"}},
                "status": {"allocatable": {"cpu": "192", "aws.amazon.com/neuron": "16"}},
            },
        },
    }
    nodes = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
        for name in ("trn2-0", "trn2-2", "control-plane-0")
    ]
    return [pool, *nodes]


def test_names_skip_the_state_s_nodes_and_those_given_even_when_reverted() -> None:
    state = ClusterState.from_objects(decode(o) for o in _objects())
    pool = state.node_pools["trn2"]
    namer = NodeNamer(state, pool)
    first, _ = namer.next()
    assert first == "trn2-1"
    add_new_node(state, make_node(state, pool, first, {}))
    with state.forked():
        second, _ = namer.next()
        add_new_node(state, make_node(state, pool, second, {}))
    assert second == "trn2-3"
    assert namer.next()[0] == "trn2-4"  # a name given once is not given again
    assert NodeNamer(state, pool).next()[0] == "trn2-3"  # free again in the reverted state
