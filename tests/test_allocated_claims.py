"""A claim that is already allocated can be used only where its allocation's nodeSelector
points: kube-scheduler's DynamicResources filter rejects every other node ("resourceclaim not
available on the node"), and `draplan allocate` says so, naming the nodes and devices it is
allocated for, instead of "satisfiable"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ZONE = "topology.kubernetes.io/zone"


def _node(name: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {ZONE: zone, "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def _cluster(tmp_path: Path) -> Path:
    """Four nodes in two zones; a network-attached accelerator pool serves zone a only, and
    the claim `ml/shared-fpga` is allocated there, by zone (not by node name)."""
    zone_a = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": ZONE, "operator": "In", "values": ["zone-a"]}
    ]}]}  # fmt: skip
    objects: list[dict[str, Any]] = [
        _node("edge-a1", "zone-a"),
        _node("edge-a2", "zone-a"),
        _node("edge-b1", "zone-b"),
        _node("edge-b2", "zone-b"),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "fpga.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'fpga.example.com'"}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "fabric-a"},
            "spec": {
                "driver": "fpga.example.com",
                "pool": {"name": "fabric-a", "generation": 1, "resourceSliceCount": 1},
                "nodeSelector": zone_a,
                "devices": [{"name": f"fpga-{i}"} for i in range(2)],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "shared-fpga", "namespace": "ml"},
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "fpga", "exactly": {"deviceClassName": "fpga.example.com"}}
                    ]
                }
            },
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {
                                "request": "fpga",
                                "driver": "fpga.example.com",
                                "pool": "fabric-a",
                                "device": "fpga-1",
                            }
                        ]
                    },
                    "nodeSelector": zone_a,
                }
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "reader", "namespace": "ml"},
            "spec": {
                "containers": [{"name": "main", "resources": {"claims": [{"name": "fpga"}]}}],
                "resourceClaims": [{"name": "fpga", "resourceClaimName": "shared-fpga"}],
            },
        },
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return path


def test_allocate_names_where_the_claim_is_allocated(run_cli: Any, tmp_path: Path) -> None:
    cluster = str(_cluster(tmp_path))
    for node in ("edge-b1", "edge-b2"):
        result = run_cli(
            "allocate", "-f", cluster, "--node", node, "--claim", "ml/shared-fpga", "-o", "json"
        )
        assert result.code == 0, result.err
        doc = result.json()
        assert doc["satisfiable"] is False and doc["claims"] == []
        reason = doc["reason"]
        assert reason["code"] == "AllocatedElsewhere"
        assert reason["allocatedNodes"] == ["edge-a1", "edge-a2"]
        assert reason["devices"] == ["fpga.example.com/fabric-a/fpga-1"]
        assert f"not for {node}" in reason["message"] and "ml/shared-fpga" in reason["message"]
    for node in ("edge-a1", "edge-a2"):
        result = run_cli(
            "allocate", "-f", cluster, "--node", node, "--claim", "ml/shared-fpga", "-o", "json"
        )
        doc = result.json()
        assert doc["satisfiable"] is True
        (claim,) = doc["claims"]
        assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "fpga-1"


def test_allocate_and_the_scheduler_reject_the_same_nodes(run_cli: Any, tmp_path: Path) -> None:
    cluster = str(_cluster(tmp_path))
    placed = run_cli("schedule", "-f", cluster, "-o", "json").json()["pods"]
    (reader,) = placed
    assert reader["node"] in ("edge-a1", "edge-a2")
    for node in ("edge-a1", "edge-a2", "edge-b1", "edge-b2"):
        doc = run_cli(
            "allocate", "-f", cluster, "--node", node, "--claim", "ml/shared-fpga", "-o", "json"
        ).json()
        assert doc["satisfiable"] is node.startswith("edge-a"), node
