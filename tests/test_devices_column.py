"""DEVICES (README): `why` counts the devices a pending pod asks for and `schedule` the devices a
placed pod holds, device-plugin devices included, one per unit of an extended resource, so a
pod counts the same whether a device plugin or a DRA driver (KEP-5004) serves it. On Intel
Gaudi3: one node whose device plugin serves `habana.ai/gaudi`, one whose DRA driver does (a
DeviceClass with that extendedResourceName), a control-plane and two system nodes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from gaudi_scenarios import device_class, gaudi_node, node, system_nodes

GAUDI = "habana.ai/gaudi"
# What each pod asks: habana.ai/gaudi cards, and a NIC of a device plugin beside them.
# The NIC pod can go only to the device-plugin node; the six-card pod then only to the DRA one.
ASKS = {"two": {GAUDI: "2"}, "six": {GAUDI: "6"}, "nic": {GAUDI: "4", "example.com/nic": "1"}}
TOO_BIG = {"sixteen": {GAUDI: "16"}}


def _pod(name: str, requests: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"containers": [{"name": "main", "resources": {"requests": requests}}]},
    }


def _cluster(tmp_path: Path, *, cordoned: bool = False) -> str:
    served = device_class()
    served["spec"]["extendedResourceName"] = GAUDI
    plugin = node("gaudi-dp-0", labels={"node.kubernetes.io/instance-type": "gaudi3-8x"})
    plugin["status"]["allocatable"].update({GAUDI: "8", "example.com/nic": "2"})
    objs = [served, *system_nodes(), plugin, *gaudi_node("gaudi-dra-0")]
    objs += [_pod(n, r) for n, r in {**ASKS, **TOO_BIG}.items()]
    for obj in objs:
        if cordoned and obj["kind"] == "Node":
            obj["spec"]["unschedulable"] = True
    path = tmp_path / ("cordoned.yaml" if cordoned else "cluster.yaml")
    path.write_text(yaml.safe_dump_all(copy.deepcopy(objs)))
    return str(path)


def _asked(requests: dict[str, str]) -> int:
    return sum(int(v) for v in requests.values())


def test_schedule_counts_the_devices_a_pod_holds_from_either_source(
    run_cli: Any, tmp_path: Path
) -> None:
    rows = {
        line.split()[1]: line.split()
        for line in run_cli("schedule", "-f", _cluster(tmp_path), "-o", "wide", "--no-headers")
        .out.strip()
        .splitlines()
    }
    nodes = {rows[name][3] for name in ASKS}
    assert nodes == {"gaudi-dp-0", "gaudi-dra-0"}  # both sources serve a pod
    for name, requests in ASKS.items():
        assert rows[name][2] == "Scheduled"
        assert int(rows[name][4]) == _asked(requests), rows[name]
    assert rows["sixteen"][2:5] == ["Unschedulable", "<none>", "0"]  # holds nothing


def test_why_counts_what_schedule_would_give(run_cli: Any, tmp_path: Path) -> None:
    """With every node cordoned all four pods pend: each one's DEVICES in `why` is what
    `schedule` shows it holding once placed, and the 16-card pod asks for 16."""
    out = run_cli("why", "-f", _cluster(tmp_path, cordoned=True), "--no-headers").out
    counts = {line.split()[2]: int(line.split()[3]) for line in out.strip().splitlines()}
    assert counts == {name: _asked(r) for name, r in {**ASKS, **TOO_BIG}.items()}


def test_a_device_plugin_node_is_not_judged_by_a_node_without_devices(
    run_cli: Any, tmp_path: Path
) -> None:
    """DynamicResources' answer is shared between nodes with the same devices; a node whose
    device plugin serves the pod's extended resource has no DRA devices, like a system node,
    yet the claim kube-scheduler makes there is empty (KEP-5004): it must not take the system
    node's "cannot allocate all claims". Eight cards fill one Gaudi node; two more go to the
    other, whichever source serves it."""
    path = _cluster(tmp_path)
    objs = [
        o
        for o in yaml.safe_load_all(Path(path).read_text())
        if o["kind"] != "Pod" or o["metadata"]["name"] == "two"
    ]
    objs.append(_pod("eight", {GAUDI: "8"}))
    Path(path).write_text(yaml.safe_dump_all(objs))
    doc = run_cli("schedule", "-f", path, "-o", "json").json()
    placed = {p["name"]: p["node"] for p in doc["pods"]}
    assert sorted(map(str, placed.values())) == ["gaudi-dp-0", "gaudi-dra-0"], doc
