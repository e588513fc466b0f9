"""Issue 26 point 13, each rule on an input of its shape (written here): a pod waiting for a
scale-up is told its own share of the nodes; a NoPoolCanFit example is a pool the pod's
selector asks for; the GPU series name TPU and Gaudi models from their model-like attributes;
stranded cost is not counted once per device class when classes describe the same GPUs; a
pending pod's "0/N nodes are available" counts the nodes that exist, as kube-scheduler does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gaudi_scenarios as g
from draplan.api.codec import decode
from draplan.audit.documents import metrics_document
from draplan.cluster.state import ClusterState
from draplan.serve.answers import Auditor
from scale_scenarios import cli_json, write

Objs = list[dict[str, Any]]
NVIDIA = "gpu.nvidia.com"


def device_class(name: str, expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def node_with(
    name: str, driver: str, devices: Objs, labels: dict[str, str], cpu: str = "144"
) -> Objs:
    return [
        {**g.node(name, cpu, labels)},
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-{driver}"},
            "spec": {
                "driver": driver,
                "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        },
    ]


def gb200_devices(gpus: int = 4, mig: bool = False) -> Objs:
    devices: Objs = []
    for i in range(gpus):
        attrs = {"productName": {"string": "NVIDIA GB200"}, "type": {"string": "gpu"}}
        devices.append({"name": f"gpu-{i}", "attributes": attrs})
        if mig:
            for p in range(2):
                devices.append(
                    {
                        "name": f"gpu-{i}-mig-{p}",
                        "attributes": {**attrs, "type": {"string": "mig"}},
                    }
                )
    return devices


def pending(name: str, driver_class: str, count: int, selector: dict[str, str]) -> Objs:
    objs = g.pending(name, count, cpu="8")
    objs[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = driver_class
    if selector:
        objs[1]["spec"]["nodeSelector"] = selector
    objs[1]["spec"]["tolerations"] = [{"operator": "Exists"}]
    return objs


def test_each_pod_is_told_its_own_share_of_the_nodes(tmp_path: Path, run_cli: Any) -> None:
    """Two 4-GPU pods, a full GB200 node and its Karpenter pool: the plan adds two nodes,
    one for each pod; each pod waits for one ($96.4/h), not for both."""
    labels = {"karpenter.sh/nodepool": "gb200", "node.kubernetes.io/instance-type": "gb200"}
    objs = [
        device_class(NVIDIA, f"device.driver == '{NVIDIA}'"),
        *g.system_nodes(),
        *node_with("gb200-0", NVIDIA, gb200_devices(), labels),
        *pending("train-a", NVIDIA, 4, {}),
        *pending("train-b", NVIDIA, 4, {}),
    ]
    for i in range(4):  # the node is full
        objs += g.running(f"busy-{i}", "gb200-0", [], ("ReplicaSet", "busy"))
    objs = [o for o in objs if o["kind"] != "ResourceClaim"]
    for o in objs:
        if o["kind"] == "Pod" and o["metadata"]["name"].startswith("busy"):
            o["spec"]["resourceClaims"] = []
            o["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "36"
    prices = tmp_path / "prices.yaml"
    prices.write_text("gb200: 96.4\n")
    path = write(tmp_path, objs)
    plan = cli_json(run_cli, "scale", "-f", path, "--prices", str(prices))
    assert [(u["pool"], u["add"]) for u in plan["scaleUp"]] == [("gb200", 2)]
    pods = cli_json(run_cli, "why", "-f", path, "--prices", str(prices))["pods"]
    for verdict in pods:
        assert verdict["category"] == "WaitingForScaleUp", verdict
        assert verdict["fix"]["add"] == 1 and verdict["fix"]["costPerHour"] == 96.4
        assert verdict["evidence"]["poolAdds"] == 2
        assert (
            "adds 1 node(s) of pool gb200 ($96.4/h) for it (of 2 it adds for 2 pods)"
            in (verdict["message"])
        )


def test_no_pool_can_fit_cites_the_pool_the_pod_selects(tmp_path: Path, run_cli: Any) -> None:
    """A pod selecting the GKE node pool of a TPU v5e host (8 chips) asks 16 chips: no pool
    can hold it; the example is that pool, not a CPU pool whose name sorts first."""
    tpu = {"tpuType": {"string": "v5litepod"}}
    chips = [{"name": f"tpu-{i}", "attributes": tpu} for i in range(8)]
    pool_label = "cloud.google.com/gke-nodepool"
    objs = [
        device_class("tpu.google.com", "device.driver == 'tpu.google.com'"),
        g.node("gke-aaa-cpu-0", "32", {pool_label: "aaa-cpu"}),
        *node_with("gke-v5e-0", "tpu.google.com", chips, {pool_label: "tpu-v5e"}),
        *pending("big-tpu", "tpu.google.com", 16, {pool_label: "tpu-v5e"}),
    ]
    (verdict,) = cli_json(run_cli, "why", "-f", write(tmp_path, objs))["pods"]
    assert verdict["category"] == "NoPoolCanFit", verdict
    assert verdict["message"].startswith("No NodePool's node could ever hold it (pool tpu-v5e: ")
    assert set(verdict["evidence"]["pools"]) == {"aaa-cpu", "tpu-v5e"}


def series(objs: Objs) -> dict[str, dict[tuple[str, ...], float]]:
    state = ClusterState.from_objects(decode(o) for o in objs)
    answers = Auditor().audit(state, 1)
    return {f.name: dict(f.samples) for f in answers.series}


def test_gpu_series_name_tpu_and_gaudi_models() -> None:
    tpu = {"tpuType": {"string": "v5litepod"}, "type": {"string": "tpu"}}
    chips = [{"name": f"tpu-{i}", "attributes": tpu} for i in range(8)]
    objs = [
        g.device_class(),
        device_class("tpu.google.com", "device.driver == 'tpu.google.com'"),
        *g.gaudi_node("gaudi-0"),
        *node_with("gke-v5e-0", "tpu.google.com", chips, {}),
    ]
    gpus = series(objs)["draplan_gpus"]
    assert {labels[0] for labels in gpus} == {"Gaudi3", "v5litepod"}
    assert sum(gpus.values()) == 16


def stranded(objs: Objs) -> dict[str, Any]:
    return metrics_document(ClusterState.from_objects(decode(o) for o in objs))


@pytest.mark.parametrize("mig", [False, True])
def test_stranded_cost_counts_each_gpu_once_whatever_classes_describe_it(mig: bool) -> None:
    """Two classes select the same GB200 GPUs (whole; and, with `mig`, a class of their MIG
    partitions too), pods of each class run and pend: the cluster's stranded GPUs and cost are
    the nodes', and the classes' parts add up to them, not to a multiple."""
    classes = [
        device_class(
            NVIDIA, f"device.driver == '{NVIDIA}' && device.attributes['{NVIDIA}'].type == 'gpu'"
        ),
        device_class(
            "gb200",
            f"device.driver == '{NVIDIA}' && device.attributes['{NVIDIA}'].productName "
            "== 'NVIDIA GB200' && device.attributes['{NVIDIA}'].type == 'gpu'",
        ),
    ]
    if mig:
        classes.append(
            device_class(
                "mig", f"device.driver == '{NVIDIA}' && device.attributes['{NVIDIA}'].type == 'mig'"
            )
        )
    labels = {"draplan.io/price-per-hour": "96.4"}
    objs = [*classes]
    for n in range(3):
        objs += node_with(f"gb200-{n}", NVIDIA, gb200_devices(mig=mig), labels)
    objs += pending("p3", NVIDIA, 3, {}) + pending("q3", "gb200", 3, {})
    for n, held in ((0, [0]), (1, [0, 1])):
        claim, pod = g.running(f"run-{n}", f"gb200-{n}", held, ("StatefulSet", "run"))
        for r in claim["status"]["allocation"]["devices"]["results"]:
            r["driver"], r["device"] = NVIDIA, r["device"].replace("card", "gpu")
        claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = NVIDIA
        objs += [claim, pod]
    doc = stranded(objs)
    cluster = doc["cluster"]
    nodes = doc["nodes"].values()
    assert cluster["strandedGpus"] > 0
    assert cluster["strandedGpus"] == pytest.approx(sum(n["strandedGpus"] for n in nodes), abs=1e-3)
    assert cluster["strandedCostPerHour"] == pytest.approx(
        sum(n["strandedCostPerHour"] or 0 for n in nodes), abs=1e-3
    )
    by_class = doc["deviceClasses"].values()
    assert sum(c["strandedCostPerHour"] or 0 for c in by_class) == pytest.approx(
        cluster["strandedCostPerHour"], abs=1e-3
    )
    # No more is stranded than is free.
    assert cluster["strandedGpus"] <= cluster["freeGpus"]


def test_pending_reasons_count_the_nodes_that_exist(tmp_path: Path, run_cli: Any) -> None:
    """The plan adds a Gaudi node for one pod; another pod (16 cards) still pends: its
    FailedScheduling message counts the 5 nodes that exist, not the plan's new one."""
    pool = {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": "gaudi"},
        "spec": {"maxNodes": 4, "pricePerHour": "42", "fromNode": "gaudi-1"},
    }
    objs = [g.device_class(), *g.system_nodes(), *g.gaudi_node("gaudi-0"), *g.gaudi_node("gaudi-1")]
    objs += g.running("a", "gaudi-0", list(range(8)), ("StatefulSet", "a"))
    objs += g.running("b", "gaudi-1", list(range(8)), ("StatefulSet", "b"))
    objs += g.pending("eight", 8) + g.pending("sixteen", 16)
    plan = cli_json(run_cli, "scale", "-f", write(tmp_path, [*objs, pool]))
    assert plan["summary"]["nodesAdded"] == 1
    [still] = [p for p in plan["pending"] if p["pod"] == "ml/sixteen"]
    assert still["reason"]["message"].startswith("0/5 nodes are available: ")
