"""`draplan.audit.metrics`: physical GPUs and partitions, allocation, counters, shared capacity
and stranded GPUs (draplan.audit.stranded, FGD's measure) per scope, with costs; `draplan
metrics`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import audit_scenarios as sc
from draplan.audit.metrics import metrics, workload_shapes
from draplan.audit.metrics_memo import MetricsMemo
from draplan.audit.stranded import RequestShape
from draplan.cluster.fragmentation import Shape, Workload, free_state, node_fragmentation
from draplan.cluster.podresources import node_allocatable
from draplan.cluster.state import ClusterState
from draplan.sources import load_objects
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
    assert set(doc) == {
        "cluster",
        "deviceClasses",
        "extendedResources",
        "nodePools",
        "resourcePools",
        "nodes",
        "poolStatus",
        "poolStatusRequests",
    }
    assert doc["nodePools"]["gpu8"]["strandedCostPerHour"] == 5.0
    assert doc["nodePools"]["gpu8"]["stranded"][DRIVER]["costPerHour"] == 5.0


def test_metrics_cli_table(run_cli: Any, tmp_path: Path) -> None:
    out = run_cli("metrics", "-f", write(tmp_path, sc.shared_gpus()), "--top", "1")
    assert out.code == 0, out.err
    assert "Nodes (1 of 1, most stranded first)" in out.out
    row = next(line for line in out.out.splitlines() if line.split()[:1] == ["node-0"])
    assert row.split()[1:4] == ["2", "1", "18.8"]  # GPUs, in use, allocation %
    assert "0.312 (19.2 %)" in row  # stranded GPUs: 0.3125 of 1.625 free


def test_metrics_negative_top_is_a_usage_error(run_cli: Any, tmp_path: Path) -> None:
    out = run_cli("metrics", "-f", write(tmp_path, sc.shared_gpus()), "--top", "-1")
    assert out.code == 2
    assert "--top" in out.err and out.out == ""


# --- the realistic dump (tests/data/realistic) ---------------------------------------------------
#
# Physical GPUs, by hand from cluster.yaml:
#   gpu-h100-a/b: 8 devices each, no counters: 8 GPUs each (16).
#   gpu-a100-a/b: 26 devices each: gpu-0 and gpu-1 (the whole GPU, all 8 memory slices of its
#     counter set) and 12 MIG devices per GPU (7 x 1g.5gb, 3 x 2g.10gb, 2 x 3g.20gb) on the
#     counter sets gpu-0-counter-set / gpu-1-counter-set: 2 GPUs and 24 partitions each.
#   gpu-l4-a/b: 4 devices each: 4 GPUs each (8).  28 GPUs, 48 partitions, 76 devices.
# Allocated: train-a 6 H100 (gpu-h100-a), finetune-b 4 + embed-0 1 H100 (gpu-h100-b): 11 whole
#   GPUs; notebook-0 holds gpu-0-mig-3g20gb-0 of gpu-a100-a, slices 0-3 of gpu-0's 8: that GPU
#   is in use and 4/8 allocated, one partition. In use 12, allocated 11.5 (41.1 %), free 16.5.
# Shapes (10 pods ask for GPUs, fewer than 20, so every shape is typical; 1/10 per pod):
#   train-a 6 H100 (96 cpu, 1Ti); finetune-b 4 H100 (64, 512Gi); embed-0 1 GPU of any model
#   (4, 16Gi); notebook-0 1 MIG (4, 32Gi); infer-l4-0 1 L4 (4, 16Gi); infer-mig-0 1 MIG 1g.5gb
#   (2, 8Gi); train-pcie-0 and finetune-numa-0 4 H100 (32, 256Gi; constraints are not part of a
#   shape); train-8-0 8 H100 (96, 1Ti); kueue-job-0 2 H100 (16, 128Gi).
# Stranded GPUs per node (only the shapes that fit the node when empty count):
#   gpu-h100-a: the H100 and any-GPU shapes, 7 pods. 2 GPUs free, 96 cpu and 1Ti left: the 6-,
#     4-, 4-, 4- and 8-GPU pods cannot use them, the 1- and 2-GPU ones can: 5 x 2 / 7 = 10/7.
#   gpu-h100-b: 3 GPUs free, 124 cpu left: the same 5 pods cannot use them: 5 x 3 / 7 = 15/7.
#   gpu-a100-a: embed-0, notebook-0 and infer-mig-0 fit an A100 node. gpu-0 is half free but
#     its whole device cannot be allocated (its counters are half taken); gpu-1 takes embed-0,
#     so gpu-0's 0.5 is stranded for it; its free 1g.5gb, 2g.10gb and 3g.20gb partitions take
#     either MIG pod: 0.5 / 3 = 1/6.
#   gpu-a100-b, gpu-l4-a, gpu-l4-b: nothing allocated, nothing stranded.
#   Cluster: 10/7 + 15/7 + 1/6 = 157/42 = 3.738 GPUs, 22.7 % of the 16.5 free.

REALISTIC = Path(__file__).resolve().parent / "data" / "realistic"


def realistic(*extra: str) -> dict[str, Any]:
    files = [str(REALISTIC / "cluster.yaml"), *(str(REALISTIC / f) for f in extra)]
    return metrics(ClusterState.from_objects(load_objects(files))).to_dict()


def test_realistic_dump_counts_physical_gpus_and_partitions() -> None:
    doc = realistic()
    cluster = doc["cluster"]
    assert (cluster["gpus"], cluster["gpusInUse"], cluster["gpusAllocated"]) == (28, 12, 11.5)
    assert (cluster["gpuAllocationPercent"], cluster["freeGpus"]) == (41.1, 16.5)
    assert (cluster["partitions"], cluster["partitionsAllocated"], cluster["devices"]) == (
        48,
        1,
        76,
    )
    nodes = doc["nodes"]
    got = {
        n: (t["gpus"], t["gpusInUse"], t["gpusAllocated"], t["partitions"])
        for n, t in nodes.items()
    }
    assert got == {
        "gpu-h100-a": (8, 6, 6, 0),
        "gpu-h100-b": (8, 5, 5, 0),
        "gpu-a100-a": (2, 1, 0.5, 24),  # one GPU partly used by a 3g.20gb partition
        "gpu-a100-b": (2, 0, 0, 24),
        "gpu-l4-a": (4, 0, 0, 0),
        "gpu-l4-b": (4, 0, 0, 0),
    }
    classes = doc["deviceClasses"]
    assert (classes["gpu.nvidia.com"]["gpus"], classes["gpu.nvidia.com"]["partitions"]) == (28, 0)
    assert (classes["mig.nvidia.com"]["gpus"], classes["mig.nvidia.com"]["partitions"]) == (4, 48)


def test_realistic_dump_stranded_gpus() -> None:
    doc = realistic()
    stranded_by_node = {n: t["strandedGpus"] for n, t in doc["nodes"].items()}
    assert stranded_by_node == {
        "gpu-h100-a": round(10 / 7, 3),
        "gpu-h100-b": round(15 / 7, 3),
        "gpu-a100-a": round(1 / 6, 3),
        "gpu-a100-b": 0,  # an empty node strands nothing
        "gpu-l4-a": 0,
        "gpu-l4-b": 0,
    }
    assert doc["nodes"]["gpu-a100-a"]["freeGpus"] == 1.5  # free partitions count once per GPU
    cluster = doc["cluster"]
    assert (cluster["strandedGpus"], cluster["strandedPercent"]) == (round(157 / 42, 3), 22.7)
    assert cluster["strandedCostPerHour"] is None  # no NodePool, no price label


def test_realistic_dump_node_pools_from_karpenter_labels() -> None:
    """Without NodePools the karpenter.sh/nodepool label groups the nodes."""
    pools = realistic()["nodePools"]
    got = {n: (t["gpus"], t["gpusInUse"], t["strandedGpus"]) for n, t in pools.items()}
    assert got == {
        "h100": (16, 11, round(25 / 7, 3)),
        "a100": (4, 1, round(1 / 6, 3)),
        "l4": (8, 0, 0),
    }


def test_realistic_dump_stranded_cost_from_pool_prices() -> None:
    """pools.yaml prices h100 $98.32/h, a100 $32.77/h, l4 $4.60/h; a node's stranded GPUs cost
    their share of its GPUs: gpu-h100-a 98.32 x (10/7) / 8 = 17.557, gpu-h100-b 98.32 x (15/7)
    / 8 = 26.336, gpu-a100-a 32.77 x (1/6) / 2 = 2.731."""
    doc = realistic("pools.yaml")
    costs = {n: t["strandedCostPerHour"] for n, t in doc["nodes"].items()}
    assert costs == pytest.approx(
        {
            "gpu-h100-a": 98.32 * 10 / 7 / 8,
            "gpu-h100-b": 98.32 * 15 / 7 / 8,
            "gpu-a100-a": 32.77 / 6 / 2,
            "gpu-a100-b": 0,
            "gpu-l4-a": 0,
            "gpu-l4-b": 0,
        },
        abs=1e-4,
    )
    assert doc["nodePools"]["h100"]["strandedCostPerHour"] == pytest.approx(
        98.32 * 25 / 7 / 8, abs=1e-4
    )
    assert doc["nodePools"]["h100"]["costPerHour"] == pytest.approx(2 * 98.32)
    assert doc["cluster"]["strandedCostPerHour"] == pytest.approx(
        98.32 * 25 / 56 + 32.77 / 12, abs=1e-4
    )
    # The stranded GPUs themselves do not depend on prices.
    assert doc["cluster"]["strandedGpus"] == round(157 / 42, 3)


def test_realistic_dump_table_most_stranded_first(run_cli: Any) -> None:
    out = run_cli("metrics", "-f", str(REALISTIC / "cluster.yaml"), "--top", "0")
    assert out.code == 0, out.err
    sections = out.out.split("\n")

    def names(title: str) -> list[str]:
        start = next(i for i, line in enumerate(sections) if line.startswith(title))
        rows = []
        for line in sections[start + 2 :]:
            if not line or line[0].isupper():  # the next table's title
                break
            rows.append(line.split()[0])
        return rows

    assert names("Nodes") == [
        "gpu-h100-b",  # 2.143
        "gpu-h100-a",  # 1.429
        "gpu-a100-a",  # 0.167
        "gpu-a100-b",  # then none stranded, by name
        "gpu-l4-a",
        "gpu-l4-b",
    ]
    assert names("Node pools") == ["h100", "a100", "l4"]
    assert names("Resource pools")[:3] == [
        "gpu.nvidia.com/gpu-h100-b",
        "gpu.nvidia.com/gpu-h100-a",
        "gpu.nvidia.com/gpu-a100-a",
    ]
    cluster = next(line for line in sections if line.split()[:1] == ["cluster"]).split()
    assert cluster[1:4] == ["28", "12", "41.1"]  # GPUs, in use, allocation %
    assert "48 (1 used)" in " ".join(cluster)  # partitions


def test_a_kept_memo_measures_a_changed_state_as_a_fresh_measure_does() -> None:
    """`draplan serve` keeps a MetricsMemo between audits of one state: after a pod ends
    (its GPUs free, the shapes change) and after a device class goes, the memo's measure is
    the fresh one."""
    state = ClusterState.from_objects(load_objects([str(REALISTIC / "cluster.yaml")]))
    memo = MetricsMemo()
    before = metrics(state, memo).to_dict()
    assert before == metrics(state).to_dict()
    state.remove_pod(("research", "finetune-b"))
    state.remove_claim(("research", "finetune-b-gpu"))
    after = metrics(state, memo).to_dict()
    assert after == metrics(state).to_dict()
    assert after["nodes"]["gpu-h100-b"] != before["nodes"]["gpu-h100-b"]
    del state.device_classes["mig.nvidia.com"]
    without = metrics(state, memo).to_dict()
    assert without == metrics(state).to_dict()
    assert "mig.nvidia.com" in after["deviceClasses"]
    assert "mig.nvidia.com" not in without["deviceClasses"]
