"""PoolLimitReached on a derived pool names where its node group's maximum is written
(autoscaler/derived.py, raise_to): the Cluster API max-size annotation of a MachineDeployment
(nodes found through the owner-name annotation of their MachineSet) or of a MachinePool (nodes
found by providerIDList), and for a group known only by its nodes' labels, that the maximum is
not in the input. Gaudi3 device-plugin nodes beside a control-plane node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from draplan.api import clusterapi
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.meta import ObjectMeta
from draplan.autoscaler.derived import derive_pools, raise_to
from draplan.cluster.state import ClusterState
from draplan.sources.files import load_files
from gaudi_scenarios import node
from test_derived_pools import _scalable

GAUDI = "habana.ai/gaudi"


def _gaudi(name: str, annotations: dict[str, str], provider: str = "") -> dict[str, Any]:
    obj = node(name, labels={"node.kubernetes.io/instance-type": "gaudi3-8x"})
    obj["status"]["allocatable"][GAUDI] = "8"
    obj["metadata"]["annotations"] = annotations
    if provider:
        obj["spec"]["providerID"] = provider
    return obj


def _full(name: str, on: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "nodeName": on,
            "containers": [{"name": "main", "resources": {"requests": {GAUDI: "8"}}}],
        },
        "status": {"phase": "Running"},
    }


def _pending(count: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"train-{i}", "namespace": "ml"},
            "spec": {"containers": [{"name": "main", "resources": {"requests": {GAUDI: "8"}}}]},
        }
        for i in range(count)
    ]


def _cluster(tmp_path: Path, kind: str) -> str:
    """Two full Gaudi nodes of one Cluster API group whose max is 3; two pods of a whole node
    each pend: one new node fits the max, the second needs 4."""
    if kind == "MachineDeployment":
        nodes = [_gaudi(f"gaudi-{i}", {clusterapi.OWNER_NAME: "gaudi-md-7f9c2"}) for i in (0, 1)]
        group = _scalable(kind, "gaudi-md", 3)
    else:
        ids = [f"aws:///us-east-2a/i-0{i}" for i in (0, 1)]
        nodes = [_gaudi(f"gaudi-{i}", {}, ids[i]) for i in (0, 1)]
        group = _scalable(kind, "gaudi-mp", 3, providerIDList=ids)
    cp = node("cp-0", "8", {"node-role.kubernetes.io/control-plane": ""})
    cp["spec"]["taints"] = [
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
    ]
    objs = [cp, *nodes, group, *(_full(f"held-{i}", f"gaudi-{i}") for i in (0, 1)), *_pending(2)]
    path = tmp_path / f"{kind}.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    return str(path)


@pytest.mark.parametrize(
    ("kind", "name"), [("MachineDeployment", "gaudi-md"), ("MachinePool", "gaudi-mp")]
)
def test_the_cluster_api_max_size_annotation_is_named(
    run_cli: Any, tmp_path: Path, kind: str, name: str
) -> None:
    why = {
        p["pod"]: p
        for p in run_cli("why", "-f", _cluster(tmp_path, kind), "-o", "json").json()["pods"]
    }
    limited = [p for p in why.values() if p["category"] == "PoolLimitReached"]
    [verdict] = limited  # the other pod gets the group's third node
    fix = verdict["fix"]
    assert fix["object"] == f"{kind} capi/{name}"
    assert fix["annotation"] == clusterapi.MAX_SIZE
    assert fix["value"] == "4"  # the two nodes there, the one planned, and one more
    assert f"{clusterapi.MAX_SIZE} annotation of {kind} capi/{name} to 4" in verdict["message"]


def test_a_node_group_known_by_labels_says_its_maximum_is_not_in_the_input(
    tmp_path: Path,
) -> None:
    """An EKS managed node group seen only through its nodes' label: raise_to names the label
    and the maximum draplan assumed, never an object to edit."""
    objs = [_gaudi(f"gaudi-{i}", {}) for i in (0, 1)]
    for obj in objs:
        obj["metadata"]["labels"]["eks.amazonaws.com/nodegroup"] = "gaudi"
    path = tmp_path / "labels.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    state = ClusterState.from_objects(load_files([str(path)]))
    pool = derive_pools(state, {}, default_max_nodes=2).pools["gaudi"]
    found = raise_to(state, pool, 5)
    assert found is not None
    words, fields = found
    assert fields == {"object": "label eks.amazonaws.com/nodegroup", "value": "5"}
    assert "the input does not show it, draplan took 2" in words
    # A NodePool written as such has its own maxNodes: nothing else to name.
    assert raise_to(state, NodePool(metadata=ObjectMeta(name="gaudi")), 5) is None
