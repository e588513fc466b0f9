"""`snapshot --redact` of the realistic dump: it loads back, no node or pod name is left in it,
and `why` / `schedule` give the same answers under the pseudonyms."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA
from draplan.sources.kuberedact import Redactor

REAL = DATA / "realistic"
MULTIVENDOR = DATA / "multivendor" / "cluster.yaml"


@pytest.fixture
def redacted(run_cli: Any, tmp_path: Path) -> str:
    snap = run_cli("snapshot", "-f", str(REAL), "--redact")
    assert snap.code == 0, snap.err
    path = tmp_path / "redacted.yaml"
    path.write_text(snap.out)
    return str(path)


def _names() -> tuple[list[str], list[str]]:
    items = yaml.safe_load((REAL / "cluster.yaml").read_text())["items"]
    nodes = [i["metadata"]["name"] for i in items if i["kind"] == "Node"]
    pods = [i["metadata"]["name"] for i in items if i["kind"] == "Pod"]
    return nodes, pods


def test_redacted_snapshot_reloads_and_leaks_no_name(run_cli: Any, redacted: str) -> None:
    text = Path(redacted).read_text()
    nodes, pods = _names()
    for name in nodes + pods:
        assert not re.search(rf"(?<![\w.]){re.escape(name)}(?![\w.])", text), name
    again = run_cli("validate", "-f", redacted, "-o", "json")
    assert again.code == 0, again.err
    plain = run_cli("validate", "-f", str(REAL), "-o", "json").json()
    assert again.json()["kinds"] == plain["kinds"]
    doc = yaml.safe_load(text)
    pools = {i["metadata"]["name"]: i for i in doc["items"] if i["kind"] == "NodePool"}
    node_names = {i["metadata"]["name"] for i in doc["items"] if i["kind"] == "Node"}
    # fromNode still names a node of the snapshot (it failed to load before).
    assert pools["h100"]["spec"]["fromNode"] == Redactor([], []).node("gpu-h100-a")
    assert {p["spec"]["fromNode"] for p in pools.values()} <= node_names
    # A device's UUID held the node name; the rest of the value is kept.
    uuids = [
        d["attributes"]["uuid"]["string"]
        for i in doc["items"]
        if i["kind"] == "ResourceSlice"
        for d in i["spec"].get("devices", [])
        if "uuid" in d.get("attributes", {})
    ]
    assert uuids and all(u.startswith("GPU-") and "h100" not in u for u in uuids)


def _types(path: Path) -> dict[str, str]:
    items = yaml.safe_load(path.read_text())["items"]
    return {
        i["metadata"]["name"]: i["metadata"]["labels"]["node.kubernetes.io/instance-type"]
        for i in items
        if i["kind"] == "Node"
    }


def test_why_and_schedule_answer_the_same_under_pseudonyms(run_cli: Any, redacted: str) -> None:
    names = Redactor(*_names())
    # Ties between equal nodes break by name, and names change: compare node by node kind,
    # and a pod moved off one of two equal nodes by what is left of the sentence.
    anonymous = re.compile(r"node-[0-9a-f]{12}|(?<=moving )\S+(?= to )")
    plain = run_cli("why", "-f", str(REAL), "-o", "json").json()
    hidden = {d["pod"]: d for d in run_cli("why", "-f", redacted, "-o", "json").json()["pods"]}
    assert len(hidden) == len(plain["pods"])
    for d in plain["pods"]:
        ns, name = d["pod"].split("/")
        other = hidden[f"{ns}/{names.pod(name)}"]
        assert other["category"] == d["category"], d["pod"]
        expected = anonymous.sub("NODE", names.rewrite(d["message"]))
        assert anonymous.sub("NODE", other["message"]) == expected
    before = run_cli("schedule", "-f", str(REAL), "-o", "json").json()
    after = run_cli("schedule", "-f", redacted, "-o", "json").json()
    assert after["summary"] == before["summary"]
    types, hidden_types = _types(REAL / "cluster.yaml"), _types(Path(redacted))
    placed = {(p["namespace"], p["name"]): p["node"] for p in after["pods"]}
    for p in before["pods"]:
        node = placed[(p["namespace"], names.pod(p["name"]))]
        assert (hidden_types[node] if node else None) == (
            types[p["node"]] if p["node"] else None
        ), p["name"]


def test_qualified_names_are_not_names() -> None:
    # Pods named like a resource or an attribute must not rename what refers to keys.
    redactor = Redactor(["node-1"], ["gpu", "numa", "train"])
    assert redactor.rewrite("nvidia.com/gpu") == "nvidia.com/gpu"
    assert redactor.rewrite("gpu.nvidia.com/numa") == "gpu.nvidia.com/numa"
    assert redactor.rewrite("gpu.nvidia.com") == "gpu.nvidia.com"
    # A sentence's full stop is no domain: the name before it is replaced.
    assert "node-1" not in redactor.rewrite("drained from node-1. Then node-1.")
    # namespace/name references are names too; a pod named like a resource stays a key there.
    assert redactor.rewrite("ml/train") == f"ml/{redactor.pod('train')}"
    assert redactor.rewrite("evicted default/train and ml/gpu") == (
        f"evicted default/{redactor.pod('train')} and ml/{redactor.pod('gpu')}"
    )
    assert redactor.rewrite("GPU-node-1-3") == f"GPU-{redactor.node('node-1')}-3"
    assert redactor.rewrite("uid-ml-train") == f"uid-ml-{redactor.pod('train')}"
    assert redactor.rewrite("It fits (on node-1).") == f"It fits (on {redactor.node('node-1')})."
    assert redactor.rewrite("node-10") == "node-10"  # another name, not node-1 and a suffix


def _identities(node: dict[str, Any]) -> set[str]:
    """What says which machine a node is, as the dump has it."""
    meta, spec, status = node["metadata"], node["spec"], node["status"]
    out = {a["address"] for a in status["addresses"]}
    out |= set(meta["annotations"]["alpha.kubernetes.io/provided-node-ip"].split(","))
    out.add(meta["labels"]["kubernetes.io/hostname"])
    out.add(spec["providerID"].rpartition("/")[2])
    out |= {status["nodeInfo"][k] for k in ("machineID", "systemUUID", "bootID")}
    for key in ("container.googleapis.com/instance_id", "cluster.x-k8s.io/machine"):
        out |= {meta["annotations"][key]} if key in meta["annotations"] else set()
    return out


def test_every_value_that_identifies_a_node_is_pseudonymised(run_cli: Any, tmp_path: Path) -> None:
    snap = run_cli("snapshot", "-f", str(MULTIVENDOR), "--redact", "-o", "json")
    assert snap.code == 0, snap.err
    text = snap.out
    items = yaml.load(MULTIVENDOR.read_text(), Loader=yaml.CSafeLoader)["items"]
    nodes = [i for i in items if i["kind"] == "Node"]
    secrets = set().union(*(_identities(n) for n in nodes))
    ips = {
        ip
        for n in nodes
        for ip in n["metadata"]["annotations"]["alpha.kubernetes.io/provided-node-ip"].split(",")
    }
    secrets |= {ip.replace(".", "-") for ip in ips}  # ip-10-42-17-203
    devices = [
        d for i in items if i["kind"] == "ResourceSlice" for d in i["spec"].get("devices", [])
    ]
    secrets |= {
        a["string"]
        for d in devices
        for k, a in d["attributes"].items()
        if k in ("uuid", "parentUUID", "serial")
    }
    assert len(secrets) > 100
    for secret in sorted(secrets):
        assert secret not in text, secret
    doc = snap.json()
    hidden = [i for i in doc["items"] if i["kind"] == "Node"]
    for n in hidden:
        labels, notes = n["metadata"]["labels"], n["metadata"]["annotations"]
        assert labels["kubernetes.io/hostname"] == n["metadata"]["name"]
        assert notes["alpha.kubernetes.io/provided-node-ip"].startswith(("198.18.", "198.19."))
        assert n["spec"]["providerID"].startswith(("aws:///us-west-2b/i-", "gce://", "metal3://"))
    # Answers stay the same under the pseudonyms.
    path = tmp_path / "redacted.json"
    path.write_text(text)
    plain = run_cli("why", "-f", str(MULTIVENDOR), "-o", "json").json()["pods"]
    again = run_cli("why", "-f", str(path), "-o", "json").json()["pods"]
    names = Redactor([], [p["pod"].split("/")[1] for p in plain])
    categories = {p["pod"]: p["category"] for p in again}
    for p in plain:
        ns, name = p["pod"].split("/")
        assert categories[f"{ns}/{names.pod(name)}"] == p["category"], p["pod"]


def test_machine_ids_keep_their_shape() -> None:
    redactor = Redactor([], [], "k")
    instance = redactor.machine_id("i-0a1b2c3d4e5f60718")
    assert re.fullmatch(r"i-[0-9a-f]{17}", instance) and instance != "i-0a1b2c3d4e5f60718"
    gpu = redactor.machine_id("GPU-5bd3bb6a-1b53-5f4e-8b3e-6f1b2a3c4d5e")
    assert re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", gpu)
    assert re.fullmatch(r"[0-9]{12}", redactor.machine_id("428918372615"))
    assert redactor.machine_id("HTL3A1234567") != "HTL3A1234567"
    assert redactor.address("10.42.17.203") == Redactor([], [], "k").address("10.42.17.203")
    assert redactor.address("10.42.17.203") != Redactor([], [], "other").address("10.42.17.203")
    assert redactor.address("fd00::17").startswith("2001:db8:")
