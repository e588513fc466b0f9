"""`draplan metrics` counts the accelerators device plugins serve (extended resources in a
node's allocatable) beside the DRA drivers' GPUs: NVIDIA GPUs and MIG profiles, Gaudi, TPU
chips, Neuron devices under their three names, never a DRA-backed extended resource twice.
Stranded devices are checked against the FGD rule computed here from its definition."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.codec import decode
from draplan.audit.documents import metrics_document
from draplan.audit.metrics import metrics
from draplan.audit.metrics_memo import MetricsMemo
from draplan.cluster.state import ClusterState
from draplan.sources import load_objects
from generated_clusters import KeptObjects
from scale_scenarios import write

Objs = list[dict[str, Any]]


def node(
    name: str, extended: dict[str, int], cpu: int = 96, memory_gi: int = 768
) -> dict[str, Any]:
    allocatable = {"cpu": str(cpu), "memory": f"{memory_gi}Gi", "pods": "110"}
    allocatable.update({k: str(v) for k, v in extended.items()})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def pod(name: str, on: str | None, extended: dict[str, int], cpu: int = 4) -> dict[str, Any]:
    requests = {"cpu": str(cpu), "memory": "16Gi", **{k: str(v) for k, v in extended.items()}}
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "resources": {"requests": requests, "limits": {
            k: v for k, v in requests.items() if "/" in k}}}],
    }  # fmt: skip
    if on is not None:
        spec["nodeName"] = on
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"phase": "Running" if on else "Pending"},
    }


def measured(objs: Objs) -> dict[str, Any]:
    return metrics(ClusterState.from_objects(decode(o) for o in objs)).to_dict()


def test_nvidia_gpus_are_counted_per_node_pool_and_resource() -> None:
    gpu = "nvidia.com/gpu"
    objs = [
        node("a", {gpu: 8}),
        node("b", {gpu: 8}),
        node("cpu", {}),
        pod("one", "a", {gpu: 1}),
        pod("four", "a", {gpu: 4}),
        pod("eight", "b", {gpu: 8}),
        pod("web", "cpu", {}),
    ]
    doc = measured(objs)
    a, b, cpu = doc["nodes"]["a"], doc["nodes"]["b"], doc["nodes"]["cpu"]
    assert (a["gpus"], a["gpusInUse"], a["freeGpus"]) == (8, 5, 3)
    assert (b["gpus"], b["gpusInUse"], b["freeGpus"]) == (8, 8, 0)
    assert cpu["gpus"] == 0
    assert doc["cluster"]["gpus"] == 16 and doc["cluster"]["gpusInUse"] == 13
    assert doc["extendedResources"][gpu]["gpus"] == 16
    assert doc["deviceClasses"] == {}
    # Shapes: 1 GPU (1 pod), 4 (1), 8 (1), each a third. On a: 3 free; the 1-GPU shape uses
    # them, the 4- and 8-GPU shapes cannot: (0 + 3 + 3) / 3 = 2 stranded.
    assert a["strandedGpus"] == 2 and a["stranded"][gpu]["stranded"] == 2
    assert b["strandedGpus"] == 0


def test_neuron_devices_counted_once_and_cores_fill_them() -> None:
    """The Neuron plugin's `neuron` and `neurondevice` name the same 16 devices; a pod's 24
    NeuronCores (8 per device) fill 3 of them, a 2-device pod 2 more and their 16 cores."""
    objs = [
        node(
            "trn2",
            {
                "aws.amazon.com/neuron": 16,
                "aws.amazon.com/neurondevice": 16,
                "aws.amazon.com/neuroncore": 128,
            },
        ),
        pod("cores", "trn2", {"aws.amazon.com/neuroncore": 24}),
        pod("devices", "trn2", {"aws.amazon.com/neurondevice": 2}),
    ]
    doc = measured(objs)
    trn = doc["nodes"]["trn2"]
    assert (trn["gpus"], trn["gpusInUse"], trn["gpusAllocated"]) == (16, 5, 5)
    assert (trn["partitions"], trn["partitionsAllocated"]) == (128, 24 + 16)
    assert set(doc["extendedResources"]) == {"aws.amazon.com/neuron", "aws.amazon.com/neuroncore"}


def test_mig_profiles_and_shared_replicas_are_partitions_not_gpus() -> None:
    objs = [
        node("mig", {"nvidia.com/mig-1g.10gb": 7, "nvidia.com/mig-3g.40gb": 2}),
        node("sliced", {"nvidia.com/gpu.shared": 16}),
        pod("small", "mig", {"nvidia.com/mig-1g.10gb": 3}),
        pod("replica", "sliced", {"nvidia.com/gpu.shared": 1}),
    ]
    doc = measured(objs)
    assert doc["cluster"]["gpus"] == 0 and doc["cluster"]["strandedGpus"] == 0
    assert (doc["nodes"]["mig"]["partitions"], doc["nodes"]["mig"]["partitionsAllocated"]) == (9, 3)
    assert doc["nodes"]["sliced"]["partitionsAllocated"] == 1


def test_a_dra_backed_extended_resource_is_counted_with_its_devices_only() -> None:
    """On tests/data/multivendor a TPU v5e host serves google.com/tpu through a DeviceClass
    (extendedResourceName) while the v6e slices' hosts advertise it by device plugin: the
    devices of each are counted once, in their own section."""
    data = Path(__file__).parent / "data" / "multivendor" / "cluster.yaml"
    state = ClusterState.from_objects(load_objects([str(data)], notify=None))
    doc = metrics(state).to_dict()
    plugin_nodes = {
        name
        for name, n in state.nodes.items()
        if "google.com/tpu" in (n.status.allocatable or n.status.capacity)
    }
    assert plugin_nodes
    per_node = {name: d["gpus"] for name, d in doc["nodes"].items()}
    dra = sum(d["gpus"] for c, d in doc["deviceClasses"].items() if c != "mig.nvidia.com")
    plugins = sum(d["gpus"] for d in doc["extendedResources"].values())
    assert plugins == sum(per_node[n] for n in plugin_nodes) > 0
    assert doc["cluster"]["gpus"] == dra + plugins


def _fgd(
    units: int, free: int, spare_cpu: int, cpu: int, shapes: list[tuple[int, int, float]]
) -> float:
    """FGD over device-plugin shapes (count, cpu, weight) on one node of one resource."""
    eligible = [(n, c, w) for n, c, w in shapes if n <= units and c <= cpu]
    total = sum(w for _, _, w in eligible)
    if not total:
        return 0.0
    lost = sum(w * (0 if n <= free and c <= spare_cpu else free) for n, c, w in eligible)
    return lost / total


@pytest.mark.parametrize("seed", range(12))
def test_stranded_devices_follow_the_fgd_rule(seed: int) -> None:
    """Random Gaudi clusters (8 cards a node, some CPU-poor): every node's stranded cards are
    FGD's over the pods' shapes, and the scopes add up."""
    rng = random.Random(seed)
    card = "habana.ai/gaudi"
    sizes = rng.sample([1, 2, 4, 8], rng.randint(1, 3))
    objs: Objs = []
    nodes: dict[str, tuple[int, int]] = {}  # name: (cpu, cards)
    for i in range(rng.randint(2, 6)):
        cpu = rng.choice([16, 96])
        nodes[f"g{i}"] = (cpu, 8)
        objs.append(node(f"g{i}", {card: 8}, cpu=cpu))
    used = {n: [0, 0] for n in nodes}  # cards, cpu
    counts: dict[tuple[int, int], int] = {}
    for j in range(rng.randint(4, 14)):
        size, cpu = rng.choice(sizes), rng.choice([4, 12])
        fits = [
            n for n, (c, k) in nodes.items() if used[n][0] + size <= k and used[n][1] + cpu <= c
        ]
        on = rng.choice([*fits, None]) if fits else None
        objs.append(pod(f"p{j}", on, {card: size}, cpu=cpu))
        if on is not None:
            used[on][0] += size
            used[on][1] += cpu
        counts[size, cpu] = counts.get((size, cpu), 0) + 1
    doc = measured(objs)
    total = sum(counts.values())
    # Every shape is typical when none is rarer than 5 % of the pods.
    assert all(c / total > 0.05 for c in counts.values())
    shapes = [(n, c * 1000, k / total) for (n, c), k in sorted(counts.items())]
    for name, (cpu, cards) in nodes.items():
        free = cards - used[name][0]
        want = _fgd(cards, free, (cpu - used[name][1]) * 1000, cpu * 1000, shapes)
        got = doc["nodes"][name]
        assert got["freeGpus"] == free, (seed, name)
        assert got["strandedGpus"] == pytest.approx(round(want, 3), abs=1e-3), (seed, name)
    cluster = doc["cluster"]
    assert cluster["gpus"] == 8 * len(nodes) == doc["extendedResources"][card]["gpus"]
    assert cluster["strandedGpus"] == pytest.approx(
        sum(d["strandedGpus"] for d in doc["nodes"].values()), abs=1e-2
    )


def test_the_table_lists_the_device_plugins_resources(run_cli: Any, tmp_path: Path) -> None:
    objs = [node("g0", {"habana.ai/gaudi": 8}), pod("p", "g0", {"habana.ai/gaudi": 2})]
    out = run_cli("metrics", "-f", write(tmp_path, objs))
    assert out.code == 0, out.err
    lines = out.out.splitlines()
    at = lines.index("Device plugins' resources")
    assert lines[at + 2].split()[:4] == ["habana.ai/gaudi", "8", "2", "25"]


def _plugin_universe() -> list[list[Any]]:
    """Device-plugin nodes (Gaudi, Neuron, MIG) and pods, each with the changes a watch would
    bring for it: a node resized, a pod done or bound elsewhere."""
    gaudi, neuron, core = "habana.ai/gaudi", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore"
    nodes = [
        node("g0", {gaudi: 8}),
        node("g1", {gaudi: 8}, cpu=16),
        node("t0", {neuron: 16, core: 128}),
        node("m0", {"nvidia.com/mig-1g.10gb": 7}),
    ]
    out: list[list[Any]] = [
        [decode(n), decode(node(n["metadata"]["name"], {gaudi: 4}))] for n in nodes
    ]
    pods = [
        pod("a", "g0", {gaudi: 2}),
        pod("b", "g1", {gaudi: 4}, cpu=12),
        pod("c", None, {gaudi: 8}),
        pod("d", "t0", {core: 24}),
        pod("e", "t0", {neuron: 4}),
        pod("f", "m0", {"nvidia.com/mig-1g.10gb": 2}),
        pod("g", None, {neuron: 16}),
    ]
    for p in pods:
        done = {**p, "status": {"phase": "Succeeded"}}
        moved = {**p, "spec": {**p["spec"], "nodeName": "g0"}}
        out.append([decode(p), decode(done), decode(moved)])
    return out


PLUGIN_UNIVERSE = _plugin_universe()


@settings(max_examples=40, deadline=None)
@given(
    initial=st.lists(st.integers(0, len(PLUGIN_UNIVERSE) - 1), unique=True, max_size=11),
    changes=st.lists(
        st.tuples(
            st.sampled_from(("put", "put", "delete")),
            st.integers(0, len(PLUGIN_UNIVERSE) - 1),
            st.integers(0, 2),
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_a_kept_memo_measures_device_plugins_as_a_fresh_state_does(
    initial: list[int], changes: list[tuple[str, int, int]]
) -> None:
    kept = KeptObjects([PLUGIN_UNIVERSE[i][0] for i in initial], "src")
    memo = MetricsMemo()
    metrics_document(kept.inc.flush(), memo)
    for action, i, v in changes:
        variants = PLUGIN_UNIVERSE[i]
        kept.change(action, variants[v % len(variants)])
        got = json.dumps(metrics_document(kept.inc.flush(), memo))
        assert got == json.dumps(metrics_document(kept.fresh(), None))


@pytest.mark.parametrize(("label", "gpus"), [("4", 0), ("1", 8), ("0", 8), (None, 8)])
def test_replicas_left_named_nvidia_gpu_are_partitions(label: str | None, gpus: int) -> None:
    """GPU feature discovery labels `nvidia.com/gpu.replicas` with the replicas per GPU when
    time-slicing or MPS shares them without renaming the resource: allocatable then counts
    replicas (8 GPUs x 4 = 32), partitions like `nvidia.com/gpu.shared`'s, not GPUs."""
    sliced = node("t4", {"nvidia.com/gpu": 32 if label == "4" else 8})
    if label is not None:
        sliced["metadata"]["labels"]["nvidia.com/gpu.replicas"] = label
    doc = measured([sliced, pod("infer", "t4", {"nvidia.com/gpu": 3})])
    t4 = doc["nodes"]["t4"]
    assert t4["gpus"] == gpus == doc["cluster"]["gpus"]
    if gpus:
        assert (t4["gpusInUse"], t4["partitions"]) == (3, 0)
    else:
        assert (t4["partitions"], t4["partitionsAllocated"]) == (32, 3)
        assert t4["strandedGpus"] == 0


def test_pending_pods_no_device_plugin_serves_are_no_device_plugin_shapes() -> None:
    """Twenty pending pods ask `nvidia.com/gpu`, which no node's device plugin serves (a
    DeviceClass could, or a node still to come): they are not device-plugin shapes, so the
    Gaudi node's three shapes all stay typical and its FGD is theirs: 1 free card, usable by
    the 1-card shape, lost to the 2- and 4-card ones: 2/3."""
    card = "habana.ai/gaudi"
    objs = [node("g0", {card: 8}), *(pod(f"p{n}", "g0", {card: n}) for n in (1, 2, 4))]
    objs += [pod(f"h100-{i}", None, {"nvidia.com/gpu": 8}) for i in range(20)]
    g0 = measured(objs)["nodes"]["g0"]
    assert g0["freeGpus"] == 1
    assert g0["strandedGpus"] == pytest.approx(round(2 / 3, 3), abs=1e-3)
