"""`draplan.audit.metrics`: allocation, counters, shared capacity and stranded capacity (the FGD
measure of draplan.cluster.fragmentation) per scope, with costs; `draplan metrics`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import audit_scenarios as sc
from draplan.audit.metrics import metrics, workload_for
from draplan.cluster.fragmentation import Shape, free_state, node_fragmentation
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
    assert (cluster["devices"], cluster["allocated"], cluster["allocationPercent"]) == (
        64,
        56,
        87.5,
    )
    assert stranded(cluster) == {
        "unit": "devices",
        "free": 8.0,
        "stranded": 8.0,
        "percent": 100.0,
        "costPerHour": None,
    }
    assert stranded(doc["nodes"]["node-3"])["stranded"] == 1.0
    assert stranded(doc["resourcePools"][f"{DRIVER}/node-3"])["stranded"] == 1.0
    assert doc["deviceClasses"][DRIVER]["allocated"] == 56


def test_stranded_is_the_fgd_measure_of_the_cluster_module() -> None:
    """node-0: 6 free, node-1: 4 free. Shapes: 1 GPU (2 running pods), 4 GPUs (1 running),
    8 GPUs (1 pending): weights 1/2, 1/4, 1/4. Only the 8-GPU shape fails on either node, so
    node-0 strands 6/4 and node-1 4/4."""
    state = load(sc.defragmentable())
    doc = metrics(state).to_dict()
    assert stranded(doc["nodes"]["node-0"])["stranded"] == pytest.approx(1.5)
    assert stranded(doc["nodes"]["node-1"])["stranded"] == pytest.approx(1.0)
    assert stranded(doc["cluster"]) == {
        "unit": "devices",
        "free": 10.0,
        "stranded": 2.5,
        "percent": 25.0,
        "costPerHour": None,
    }
    # The same numbers straight from draplan.cluster.fragmentation.
    dc = state.device_classes[DRIVER]
    workload = workload_for(state, dc, "")
    assert workload is not None
    assert sorted((s.device_count, w) for s, w in workload.shapes) == [
        (1, 0.5),
        (4, 0.25),
        (8, 0.25),
    ]
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
        assert stranded(doc["nodes"][name])["stranded"] == pytest.approx(
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
    state = load(objs)
    workload = workload_for(state, state.device_classes[DRIVER], "")
    assert workload is not None
    got = {s.device_count: w for s, w in workload.shapes}
    assert got == pytest.approx({1: 40 / 41, 4: 1 / 41})


def test_costs_from_nodepool_prices() -> None:
    doc = metrics(load(sc.priced_fragmented())).to_dict()
    for name in ("gpu8-0", "gpu8-1"):
        node = doc["nodes"][name]
        assert node["costPerHour"] == 20.0
        assert stranded(node)["costPerHour"] == 2.5  # 1 of 8 GPUs of a $20/h node
    pool = doc["nodePools"]["gpu8"]
    assert pool["costPerHour"] == 40.0 and pool["devices"] == 16
    assert stranded(pool) == {
        "unit": "devices",
        "free": 2.0,
        "stranded": 2.0,
        "percent": 100.0,
        "costPerHour": 5.0,
    }
    assert stranded(doc["cluster"])["costPerHour"] == 5.0


def test_shared_devices_consumed_capacity_and_stranded_memory() -> None:
    doc = metrics(load(sc.shared_gpus())).to_dict()
    node = doc["nodes"]["node-0"]
    assert node["sharedCapacity"] == {
        "memory": {"consumed": 30 * GI, "capacity": 160 * GI, "percent": 18.8}
    }
    assert node["allocated"] == 1  # one of the two shareable GPUs has a share
    s = stranded(node)
    assert s["unit"] == "memory"
    assert s["free"] == 130 * GI and s["stranded"] == 25 * GI


def test_partitionable_counters() -> None:
    """Two of seven 1g partitions taken: 2/7 of the memory-slice counters consumed."""
    doc = metrics(load(sc.mig_node(taken=2))).to_dict()
    node = doc["nodes"]["mig-0"]
    assert node["counterUtilizationPercent"] == 28.6
    assert (node["devices"], node["allocated"]) == (8, 2)
    mig = doc["deviceClasses"][sc.MIG_CLASS]
    assert (mig["devices"], mig["allocated"], mig["counterUtilizationPercent"]) == (7, 2, 28.6)
    # Five free partitions, and every MIG shape (1 partition) fits each of them.
    assert stranded(mig, sc.MIG_CLASS)["free"] == 5.0
    assert stranded(mig, sc.MIG_CLASS)["stranded"] == 0.0
    # No pod asks for whole GPUs: their free capacity is idle, not stranded.
    assert doc["deviceClasses"][DRIVER]["stranded"] == {}


def test_empty_cluster_and_no_device_classes() -> None:
    doc = metrics(load([sc.node("lonely")])).to_dict()
    assert doc["cluster"]["devices"] == 0
    assert doc["cluster"]["allocationPercent"] is None
    assert doc["nodes"]["lonely"]["stranded"] == {}


def test_metrics_leave_the_state_alone() -> None:
    state = load(sc.defragmentable())
    before = sorted(state.exclusive.items())
    metrics(state)
    assert sorted(state.exclusive.items()) == before


def test_shape_weights_use_pod_cpu() -> None:
    """Shapes carry the pod's cpu: a node without cpu for a shape strands all its GPUs for it.
    Shapes: 1 cpu (2 pods), 64 cpu (1 pod). node-0 has no cpu left: 7 GPUs stranded; node-1
    has 63 cpu: the 64-cpu third of the workload cannot use its 7 GPUs."""
    objs = [
        sc.device_class(),
        *sc.gpu_node("node-0", held_by={"w": [0]}, used_cpu="64"),  # no cpu left
        *sc.gpu_node("node-1", held_by={"v": [0]}),
        sc.gpu_template("one", 1),
        sc.pending("p", "one"),
    ]
    doc = metrics(load(objs)).to_dict()
    assert stranded(doc["nodes"]["node-0"])["stranded"] == 7.0
    assert stranded(doc["nodes"]["node-1"])["stranded"] == pytest.approx(7 / 3, abs=1e-3)
    shapes = workload_for(load(objs), load(objs).device_classes[DRIVER], "")
    assert shapes is not None
    assert {s for s, _ in shapes.shapes} == {
        Shape(1000, 0, 1, 0, None),
        Shape(64000, 0, 1, 0, None),
    }


# --- the command line --------------------------------------------------------------------------


def test_metrics_cli_json(run_cli: Any, tmp_path: Path) -> None:
    out = run_cli("metrics", "-f", write(tmp_path, sc.priced_fragmented()), "-o", "json")
    assert out.code == 0, out.err
    doc = out.json()
    assert set(doc) == {"cluster", "deviceClasses", "nodePools", "resourcePools", "nodes"}
    assert doc["nodePools"]["gpu8"]["stranded"][DRIVER]["costPerHour"] == 5.0


def test_metrics_cli_table(run_cli: Any, tmp_path: Path) -> None:
    out = run_cli("metrics", "-f", write(tmp_path, sc.shared_gpus()), "--top", "1")
    assert out.code == 0, out.err
    assert "25Gi of 130Gi memory free" in out.out
    assert "Nodes (1 of 1, most stranded first)" in out.out
