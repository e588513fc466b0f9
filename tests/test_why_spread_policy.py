"""TopologySpread by node inclusion policies (audit/classifiers/spreadpolicy.py): a
DoNotSchedule constraint that counts domains the pod cannot go to, because its
nodeTaintsPolicy (default Ignore) or nodeAffinityPolicy is Ignore, gets those domains named
and the policy set to Honor as the fix, checked by the scheduler; never a toleration. On the
hybrid cluster (tainted on-premises zone `dc1`) and on GB200 racks beside system nodes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from conftest import DATA

HYBRID = DATA / "hybrid" / "cluster.yaml"
STOREFRONT = ("storefront-5d9c8b7f6-n9p2q", "storefront-5d9c8b7f6-r3s4t")
ZONE = "topology.kubernetes.io/zone"


def _why(run_cli: Any, path: str) -> dict[str, Any]:
    return {p["pod"]: p for p in run_cli("why", "-f", path, "-o", "json").json()["pods"]}


def test_the_hybrid_zone_counts_only_because_taints_are_ignored(run_cli: Any) -> None:
    why = _why(run_cli, str(HYBRID))
    likes = []
    for name in STOREFRONT:
        verdict = why[f"web/{name}"]
        assert verdict["category"] == "TopologySpread", verdict["message"]
        assert verdict["evidence"]["spreadPolicy"]["ignoredDomains"] == [f"{ZONE}=dc1"]
        fix = verdict["fix"]
        assert fix["topologySpreadConstraints"] == {"nodeTaintsPolicy": "Honor"}
        assert "tolerations" not in fix and fix["verified"] is True
        likes.append(fix["like"])
    # The general nodes are full: each replica gets a new node, one per zone.
    assert len(set(likes)) == 2


def _hybrid_with(tmp_path: Path, honor: bool) -> str:
    """The hybrid dump with a new empty node like each `general` node and, with `honor`,
    nodeTaintsPolicy: Honor on the pending storefront replicas' constraint."""
    dump = yaml.safe_load(HYBRID.read_text())
    items = dump["items"]
    for item in list(items):
        if item["kind"] == "Node" and item["metadata"]["labels"].get(
            "eks.amazonaws.com/nodegroup"
        ) == ("general"):
            new = copy.deepcopy(item)
            name = "new-" + item["metadata"]["name"]
            new["metadata"]["name"] = name
            new["metadata"]["labels"]["kubernetes.io/hostname"] = name
            items.append(new)
        if honor and item["kind"] == "Pod" and item["metadata"]["name"] in STOREFRONT:
            for c in item["spec"]["topologySpreadConstraints"]:
                c["nodeTaintsPolicy"] = "Honor"
    path = tmp_path / f"hybrid-{honor}.yaml"
    path.write_text(yaml.safe_dump(dump))
    return str(path)


def test_the_fix_is_what_the_scheduler_needs(run_cli: Any, tmp_path: Path) -> None:
    """Independently of `why`: with a new node per zone, the replicas stay pending under the
    default policy and are placed once their constraint honors node taints."""
    for honor in (False, True):
        doc = run_cli("schedule", "-f", _hybrid_with(tmp_path, honor), "-o", "json").json()
        nodes = {p["name"]: p["node"] for p in doc["pods"] if p["name"] in STOREFRONT}
        assert all(n is not None for n in nodes.values()) is honor, nodes
        if honor:
            assert all(n.startswith("new-") for n in nodes.values())


def _node(name: str, zone: str, pool: str) -> dict[str, Any]:
    alloc = {"cpu": "144", "memory": "1Ti", "pods": "110"}
    labels = {"kubernetes.io/hostname": name, ZONE: zone, "pool": pool}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": alloc, "allocatable": alloc},
    }


def _infer(name: str, node: str | None, policy: str | None) -> dict[str, Any]:
    constraint: dict[str, Any] = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "infer"}},
    }
    if policy:
        constraint["nodeAffinityPolicy"] = policy
    spec: dict[str, Any] = {
        "nodeSelector": {"pool": "gb200"},
        "topologySpreadConstraints": [constraint],
        "containers": [{"name": "trtllm", "resources": {"requests": {"cpu": "8"}}}],
    }
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "serve", "labels": {"app": "infer"}},
        "spec": spec,
    }
    if node:
        spec["nodeName"] = node
        pod["status"] = {"phase": "Running"}
    return pod


def _racks(tmp_path: Path, policy: str | None) -> str:
    """Two GB200 hosts in zones a and b, each running an `infer` replica, and system nodes in
    zone c that the replicas' node selector refuses."""
    objs = [
        _node("gb200-a", "a", "gb200"),
        _node("gb200-b", "b", "gb200"),
        _node("system-c0", "c", "system"),
        _node("system-c1", "c", "system"),
        _infer("infer-0", "gb200-a", policy),
        _infer("infer-1", "gb200-b", policy),
        _infer("infer-2", None, policy),
    ]
    path = tmp_path / f"racks-{policy}.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    return str(path)


def test_a_zone_counted_against_the_node_affinity_names_the_affinity_policy(
    run_cli: Any, tmp_path: Path
) -> None:
    verdict = _why(run_cli, _racks(tmp_path, "Ignore"))["serve/infer-2"]
    assert verdict["category"] == "TopologySpread"
    assert verdict["evidence"]["spreadPolicy"]["ignoredDomains"] == [f"{ZONE}=c"]
    fix = verdict["fix"]
    # The GB200 hosts have room: the policy alone is the fix; the taints policy is not named
    # (no node here is tainted).
    assert fix["topologySpreadConstraints"] == {"nodeAffinityPolicy": "Honor"}
    assert "add" not in fix and fix["verified"] is True
    # And the scheduler agrees: with the policy honored the replica is placed.
    doc = run_cli("schedule", "-f", _racks(tmp_path, "Honor"), "-o", "json").json()
    assert {p["name"]: p["node"] for p in doc["pods"]}["infer-2"] in ("gb200-a", "gb200-b")
