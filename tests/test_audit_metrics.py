"""`draplan.audit.metrics`: physical GPUs and partitions, allocation, counters, shared capacity
and stranded GPUs (draplan.audit.stranded, FGD's measure) per scope, with costs; `draplan
metrics`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import audit_scenarios as sc
from draplan.audit.metrics import metrics, workload_shapes
from draplan.audit.stranded import RequestShape
from draplan.cluster.fragmentation import Shape, Workload, free_state, node_fragmentation
from draplan.cluster.podresources import node_allocatable
from scale_scenarios import DRIVER, load, write

GI = 2**30


def stranded(doc: dict[str, Any], cls: str = DRIVER) -> dict[str, Any]:
    out: dict[str, Any] = doc["stranded"][cls]
    return out


def test_fragmented_cluster_strands_every_free_gpu() -> None:
    """8 free GPUs, one per node; the only GPU shapes are the running 7-GPU pods and the
    pending 8-GPU pod: no free GPU can serve either."""
    doc = metrics(load(sc.fragmented())).to_dict()
    cluster = doc["cluster"]
    assert (cluster["gpus"], cluster["gpusInUse"], cluster["gpusAllocated"]) == (64, 56, 56)
    assert (cluster["gpuAllocationPercent"], cluster["freeGpus"]) == (87.5, 8)
    assert (cluster["strandedGpus"], cluster["strandedPercent"]) == (8, 100)
    assert (cluster["devices"], cluster["allocated"], cluster["partitions"]) == (64, 56, 0)
    assert stranded(cluster) == {"free": 8, "stranded": 8, "percent": 100, "costPerHour": None}
    assert doc["nodes"]["node-3"]["strandedGpus"] == 1
    assert doc["resourcePools"][f"{DRIVER}/node-3"]["strandedGpus"] == 1
    assert doc["deviceClasses"][DRIVER]["gpusAllocated"] == 56


def test_stranded_is_the_fgd_measure_of_the_cluster_module() -> None:
    """node-0: 6 free, node-1: 4 free. Shapes: 1 GPU (2 running pods), 4 GPUs (1 running),
    8 GPUs (1 pending): weights 1/2, 1/4, 1/4, and all three fit an empty 8-GPU node. Only the
    8-GPU shape fails on either node, so node-0 strands 6/4 and node-1 4/4."""
    state = load(sc.defragmentable())
    doc = metrics(state).to_dict()
    assert doc["nodes"]["node-0"]["strandedGpus"] == pytest.approx(1.5)
    assert doc["nodes"]["node-1"]["strandedGpus"] == pytest.approx(1.0)
    cluster = doc["cluster"]
    assert (cluster["freeGpus"], cluster["strandedGpus"], cluster["strandedPercent"]) == (
        10,
        2.5,
        25,
    )
    # On nodes of whole GPUs, the same numbers straight from draplan.cluster.fragmentation.
    shapes = workload_shapes(state)
    assert sorted((s.device_count, w) for s, w in shapes) == [(1, 0.5), (4, 0.25), (8, 0.25)]
    workload = Workload((Shape(s.cpu_milli, 0, s.device_count), w) for s, w in shapes)
    dc = state.device_classes[DRIVER]
    for name in ("node-0", "node-1"):
        node = state.nodes[name]
        free = free_state(
            state,
            node,
            cpu_milli=node_allocatable(node)["cpu"] - state.requested(name).get("cpu", 0),
            memory=512 * GI,
            device_class=dc,
            capacity="",
        )
        assert doc["nodes"][name]["strandedGpus"] == pytest.approx(
            node_fragmentation(free, workload)
        )


def test_typical_shapes_and_every_pending_shape() -> None:
    """40 running 1-GPU pods cover 95 % of the 41 running ones: the one 2-GPU pod is not
    typical; the pending 4-GPU pod counts anyway."""
    objs: list[dict[str, Any]] = [sc.device_class()]
    for n in range(6):
        held = {f"one-{n}-{i}": [i] for i in range(7 if n < 5 else 5)}
        if n == 5:
            held["two"] = [6, 7]
        objs += sc.gpu_node(f"node-{n}", held_by=held)
    objs += [sc.gpu_template("four", 4), sc.pending("waiting", "four")]
    got = {s.device_count: w for s, w in workload_shapes(load(objs))}
    assert got == pytest.approx({1: 40 / 41, 4: 1 / 41})


def test_costs_from_nodepool_prices() -> None:
    doc = metrics(load(sc.priced_fragmented())).to_dict()
    for name in ("gpu8-0", "gpu8-1"):
        node = doc["nodes"][name]
        assert node["costPerHour"] == 20.0
        assert node["strandedCostPerHour"] == 2.5  # 1 of 8 GPUs of a $20/h node
        assert stranded(node)["costPerHour"] == 2.5
    pool = doc["nodePools"]["gpu8"]
    assert (pool["costPerHour"], pool["gpus"], pool["strandedCostPerHour"]) == (40.0, 16, 5.0)
    assert stranded(pool) == {"free": 2, "stranded": 2, "percent": 100, "costPerHour": 5.0}
    assert doc["cluster"]["strandedCostPerHour"] == 5.0


def test_a_price_label_prices_a_node_without_nodepool() -> None:
    objs = sc.priced_fragmented()
    for obj in objs:
        if obj["kind"] == "Node":
            obj["metadata"]["labels"] = {"draplan.io/price-per-hour": "16"}
    objs = [o for o in objs if o["kind"] != "NodePool"]
    doc = metrics(load(objs)).to_dict()
    assert doc["nodes"]["gpu8-0"]["strandedCostPerHour"] == 2.0  # 1 of 8 GPUs of $16/h
    assert doc["cluster"]["strandedCostPerHour"] == 4.0
    assert doc["nodePools"] == {}


def test_shared_devices_consumed_capacity_and_stranded_gpus() -> None:
    """Two shareable 80Gi GPUs; 30Gi of gpu-0 is taken, so it is 30/80 used and 0.625 free.
    Shapes: 30Gi (running) and 60Gi (pending), half each, both fit the empty node. gpu-0's
    50Gi suits the 30Gi shape, not the 60Gi one: 1/2 × 0.625 = 0.3125 GPU stranded."""
    doc = metrics(load(sc.shared_gpus())).to_dict()
    node = doc["nodes"]["node-0"]
    assert node["sharedCapacity"] == {
        "memory": {"consumed": 30 * GI, "capacity": 160 * GI, "percent": 18.8}
    }
    assert (node["gpus"], node["gpusInUse"], node["gpusAllocated"]) == (2, 1, 0.375)
    assert node["allocated"] == 1  # one of the two shareable GPUs has a share
    assert (node["freeGpus"], node["strandedGpus"]) == (1.625, pytest.approx(0.3125, abs=1e-3))


def test_a_partitioned_gpu_is_one_gpu() -> None:
    """One GPU published as the whole device and seven 1g partitions over 7 memory-slice
    counters; a pod holds two partitions: 2/7 of the counters consumed. One GPU, partly used."""
    doc = metrics(load(sc.mig_node(taken=2))).to_dict()
    node = doc["nodes"]["mig-0"]
    assert (node["gpus"], node["gpusInUse"], node["gpusAllocated"]) == (1, 1, 0.286)
    assert (node["partitions"], node["partitionsAllocated"]) == (7, 2)
    assert (node["devices"], node["allocated"], node["counterUtilizationPercent"]) == (8, 2, 28.6)
    mig = doc["deviceClasses"][sc.MIG_CLASS]
    assert (mig["gpus"], mig["partitions"], mig["partitionsAllocated"]) == (1, 7, 2)
    # Five free partitions take the running pod's shape (2 partitions) again: none stranded.
    assert stranded(mig, sc.MIG_CLASS) == {
        "free": 0.714,
        "stranded": 0,
        "percent": 0,
        "costPerHour": None,
    }
    # No pod asks for whole GPUs: no stranded entry for that class.
    assert set(node["stranded"]) == {sc.MIG_CLASS}


def test_empty_cluster_and_no_device_classes() -> None:
    doc = metrics(load([sc.node("lonely")])).to_dict()
    assert (doc["cluster"]["devices"], doc["cluster"]["gpus"]) == (0, 0)
    assert doc["cluster"]["gpuAllocationPercent"] is None
    assert doc["cluster"]["strandedPercent"] is None
    assert doc["nodes"]["lonely"]["stranded"] == {}


def test_metrics_leave_the_state_alone() -> None:
    state = load(sc.defragmentable())
    before = sorted(state.exclusive.items())
    metrics(state)
    assert sorted(state.exclusive.items()) == before


def test_shape_weights_use_pod_cpu() -> None:
    """Shapes carry the pod's cpu: a node without cpu for a shape strands all its GPUs for it.
    Shapes: 1 cpu (2 pods), 64 cpu (1 pod), both fit an empty 64-cpu node. node-0 has no cpu
    left: 7 GPUs stranded; node-1 has 63 cpu: the 64-cpu third cannot use its 7 GPUs."""
    objs = [
        sc.device_class(),
        *sc.gpu_node("node-0", held_by={"w": [0]}, used_cpu="64"),  # no cpu left
        *sc.gpu_node("node-1", held_by={"v": [0]}),
        sc.gpu_template("one", 1),
        sc.pending("p", "one"),
    ]
    doc = metrics(load(objs)).to_dict()
    assert doc["nodes"]["node-0"]["strandedGpus"] == 7.0
    assert doc["nodes"]["node-1"]["strandedGpus"] == pytest.approx(7 / 3, abs=1e-3)
    assert {s for s, _ in workload_shapes(load(objs))} == {
        RequestShape(1000, 0, DRIVER, 1),
        RequestShape(64000, 0, DRIVER, 1),
    }


def test_a_shape_too_big_for_a_node_does_not_strand_it() -> None:
    """A 4-GPU node with 1 GPU held, and pending 8-GPU pods: they could never run on it, so
    its 3 free GPUs are idle, not stranded (FGD would count them). The 1-GPU shape of the
    running pod is the node's only shape, and it fits: nothing stranded."""
    objs = [
        sc.device_class(),
        sc.node("small"),
        sc.gpu_slice("small", [0] * 4),
        *sc.held("small", [0], "one"),
        *sc.eight_gpu_pod(),
    ]
    doc = metrics(load(objs)).to_dict()
    assert (doc["nodes"]["small"]["freeGpus"], doc["nodes"]["small"]["strandedGpus"]) == (3, 0)


# --- the command line --------------------------------------------------------------------------


def test_metrics_cli_json(run_cli: Any, tmp_path: Path) -> None:
    out = run_cli("metrics", "-f", write(tmp_path, sc.priced_fragmented()), "-o", "json")
    assert out.code == 0, out.err
    doc = out.json()
    assert set(doc) == {"cluster", "deviceClasses", "nodePools", "resourcePools", "nodes"}
    assert doc["nodePools"]["gpu8"]["strandedCostPerHour"] == 5.0
    assert doc["nodePools"]["gpu8"]["stranded"][DRIVER]["costPerHour"] == 5.0


def test_metrics_cli_table(run_cli: Any, tmp_path: Path) -> None:
    out = run_cli("metrics", "-f", write(tmp_path, sc.shared_gpus()), "--top", "1")
    assert out.code == 0, out.err
    assert "Nodes (1 of 1, most stranded first)" in out.out
    row = next(line for line in out.out.splitlines() if line.split()[:1] == ["node-0"])
    assert row.split()[1:4] == ["2", "1", "18.8"]  # GPUs, in use, allocation %
    assert "0.312 (19.2 %)" in row  # stranded GPUs: 0.3125 of 1.625 free
