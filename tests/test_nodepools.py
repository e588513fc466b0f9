"""cluster.nodepools: one rule for a node's pool and price."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from draplan.api.clusterapi import OWNER_NAME
from draplan.api.codec import decode
from draplan.autoscaler.derived import derive_again
from draplan.autoscaler.templates import pool_members
from draplan.cluster.nodepools import POOL_LABEL, node_pool, pool_name, pool_sizes, price_per_hour
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


def _node(name: str, labels: dict[str, str], owner: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if owner:
        meta["annotations"] = {OWNER_NAME: owner}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta}


def _pool(name: str, from_node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"maxNodes": 10, "pricePerHour": "1"}
    if from_node:
        spec["fromNode"] = from_node
    else:
        spec["template"] = {"status": {"allocatable": {"cpu": "8", "pods": "110"}}}
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_pool_sizes_count_each_rule_in_order() -> None:
    """Gaudi hosts by the pool label, a TPU host a pool copies (two pools copy it: the first
    wins), EKS and GKE groups by their labels, Cluster API machines by their MachineSet's
    deployment, and a control-plane node in no pool: `pool_sizes` counts as `node_pool` rules."""
    objects = [
        _pool("gaudi"),
        _pool("tpu", from_node="tpu-host-0"),
        _pool("tpu-again", from_node="tpu-host-0"),
        _pool("eks-h100"),
        _pool("gke-l4"),
        _pool("capi-gb200"),
        _node("gaudi-0", {POOL_LABEL: "gaudi"}),
        # The pool label wins over a provider label naming another pool.
        _node("gaudi-1", {POOL_LABEL: "gaudi", "eks.amazonaws.com/nodegroup": "eks-h100"}),
        _node("tpu-host-0", {"cloud.google.com/gke-nodepool": "gke-l4"}),
        _node("eks-0", {"eks.amazonaws.com/nodegroup": "eks-h100"}),
        _node("gke-0", {"cloud.google.com/gke-nodepool": "gke-l4"}),
        _node("gb200-0", {}, owner="capi-gb200-7c9f5"),
        _node("control-plane", {"node-role.kubernetes.io/control-plane": ""}),
    ]
    state = ClusterState.from_objects(decode(o) for o in objects)
    sizes = pool_sizes(state)
    assert sizes == {"gaudi": 2, "tpu": 1, "eks-h100": 1, "gke-l4": 1, "capi-gb200": 1}
    for name, pool in state.node_pools.items():
        assert sizes.get(name, 0) == len(pool_members(state, pool))


def test_pool_sizes_agree_with_the_members_on_the_unseen_clusters() -> None:
    for dump in ("multivendor", "hybrid"):
        data = DUMP.parent / dump
        state = ClusterState.from_objects(load_files([str(data / "cluster.yaml")]))
        derive_again(state, {})
        sizes = pool_sizes(state)
        assert len(sizes) > 1, dump
        assert sum(sizes.values()) == sum(1 for n in state.nodes.values() if node_pool(state, n))
        for name, pool in state.node_pools.items():
            assert sizes.get(name, 0) == len(pool_members(state, pool)), (dump, name)
