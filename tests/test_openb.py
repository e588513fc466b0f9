"""The openb trace as DRA objects: counts from openb-benchmark.md §1.3-§1.4, validity, and
allocation through the ordinary allocator."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import SHARED
from draplan.allocator import allocate
from draplan.api.codec import decode, encode
from draplan.api.errors import BadInput
from draplan.api.quantity import Quantity
from draplan.api.resource_v1 import ResourceClaim
from draplan.cluster.state import ClusterState
from draplan.sources import openb

OPENB = SHARED / "data" / "openb"


@pytest.fixture(scope="module")
def cluster() -> openb.OpenbCluster:
    return openb.load_cluster(OPENB / openb.NODE_LIST)


@pytest.fixture(scope="module")
def default() -> openb.OpenbWorkload:
    return openb.load_workload(openb.trace_path("default", OPENB))


def test_node_list_counts(cluster: openb.OpenbCluster) -> None:
    # §1.4: 1,213 nodes, 107,018 vCPU, 6,212 GPUs of 7 models.
    assert len(cluster.nodes) == len(cluster.slices) == 1213
    assert sum(len(rs.spec.devices) for rs in cluster.slices) == 6212
    cpu = sum(n.status.allocatable["cpu"].milli_value() for n in cluster.nodes)
    assert cpu == 107_018_000
    nodes_per_model = Counter(r.model for r in cluster.rows)
    assert nodes_per_model == {
        "G2": 549,
        "T4": 404,
        "P100": 134,
        "V100M16": 55,
        "G3": 39,
        "V100M32": 30,
        "A10": 2,
    }


def test_node_objects(cluster: openb.OpenbCluster) -> None:
    node, rs = cluster.nodes[0], cluster.slices[0]
    row = cluster.rows[0]
    assert node.status.allocatable == {
        "cpu": Quantity.from_milli(row.cpu_milli),
        "memory": Quantity(f"{row.memory_mib}Mi"),
        "pods": Quantity("1001"),
    }
    assert rs.spec.node_name == node.metadata.name == rs.spec.pool.name
    assert rs.spec.driver == openb.DRIVER
    dev = rs.spec.devices[0]
    assert dev.allow_multiple_allocations is True
    assert dev.attributes["model"].string == row.model
    assert dev.capacity[openb.CAPACITY].value == Quantity("1000")


def test_cpu_nodes_get_no_slice() -> None:
    all_nodes = openb.load_cluster(OPENB / "openb_node_list_all_node.csv")
    assert len(all_nodes.nodes) == 1523
    assert len(all_nodes.slices) == 1213


def test_default_pod_counts(default: openb.OpenbWorkload) -> None:
    # §1.3: 1,088 CPU-only, 3,078 sharing, 3,911 whole single-GPU, 16×2 / 15×4 / 44×8,
    # 6,086.8 GPUs requested in total.
    rows = default.rows
    assert len(rows) == len(default.pods) == 8152
    kinds = Counter(
        "cpu" if r.num_gpu == 0 else "share" if r.gpu_milli < 1000 else f"x{r.num_gpu}"
        for r in rows
    )
    assert kinds == {"cpu": 1088, "share": 3078, "x1": 3911, "x2": 16, "x4": 15, "x8": 44}
    assert sum(r.gpu_request_milli for r in rows) == 6_086_800
    assert sum(c is None for c in default.claims) == 1088
    assert rows[1].creation_time == 427061 and rows[1].deletion_time == 12902960
    assert sum(r.scheduled_time is None for r in rows) == 897


def _request(claim: ResourceClaim | None) -> tuple[int, Quantity, tuple[str, ...]]:
    assert claim is not None
    req = claim.spec.devices.requests[0].exactly
    assert req is not None and req.capacity is not None
    exprs = tuple(s.cel.expression for s in req.selectors if s.cel is not None)
    return req.count, req.capacity.requests[openb.CAPACITY], exprs


def test_pod_objects(default: openb.OpenbWorkload) -> None:
    i = next(i for i, r in enumerate(default.rows) if 0 < r.gpu_milli < 1000)
    row, pod, claim = default.rows[i], default.pods[i], default.claims[i]
    assert claim is not None
    assert claim.metadata.name == f"{row.name}-gpu"
    assert claim.metadata.namespace == pod.metadata.namespace == "default"
    assert pod.spec.resource_claims[0].resource_claim_name == claim.metadata.name
    res = pod.spec.containers[0].resources
    assert res.requests == {
        "cpu": Quantity.from_milli(row.cpu_milli),
        "memory": Quantity(f"{row.memory_mib}Mi"),
    }
    assert [c.name for c in res.claims] == ["gpu"]
    assert _request(claim) == (1, Quantity(str(row.gpu_milli)), ())
    j = next(i for i, r in enumerate(default.rows) if r.num_gpu == 8)
    assert _request(default.claims[j]) == (8, Quantity("1000"), ())
    k = next(i for i, r in enumerate(default.rows) if r.num_gpu == 0)
    assert default.pods[k].spec.resource_claims == ()
    assert default.pods[k].spec.containers[0].resources.claims == ()


def test_gpu_spec_becomes_a_model_selector() -> None:
    spec33 = openb.load_workload(openb.trace_path("gpuspec33", OPENB))
    with_spec = [(r, c) for r, c in zip(spec33.rows, spec33.claims, strict=True) if r.gpu_spec]
    assert len(with_spec) == 2388  # §1.3
    claim = next(c for r, c in with_spec if r.gpu_spec == "V100M16|V100M32")
    assert _request(claim)[2] == (
        'device.attributes["gpu.openb.alibaba"].model in ["V100M16", "V100M32"]',
    )
    assert openb.model_selector(("T4",)) == 'device.attributes["gpu.openb.alibaba"].model == "T4"'
    # Repeated models in the trace ("V100M16|V100M32|V100M32") collapse.
    assert openb.PodRow("p", 1, 1, 1, 1000, "V100M32|V100M16|V100M32").models == (
        "V100M16",
        "V100M32",
    )


def test_multigpu_files_have_five_columns() -> None:
    rows = openb.read_pods(openb.trace_path("multigpu50", OPENB))
    assert len(rows) == 9061
    assert rows[0].creation_time is None and rows[0].qos == "" and rows[0].gpu_spec == ""


def test_objects_are_valid_api_objects(
    cluster: openb.OpenbCluster, default: openb.OpenbWorkload
) -> None:
    """Every object survives the API codec (which validates as the API server does), and a
    ClusterState compiles every selector."""
    spec33 = openb.load_workload(openb.trace_path("gpuspec33", OPENB))
    objects = [*cluster.objects(), *spec33.objects()]
    for obj in objects[:2000:7]:
        assert decode(encode(obj)) == obj
    for obj in spec33.objects():
        if isinstance(obj, ResourceClaim) and _request(obj)[2]:
            assert decode(encode(obj)) == obj
    state = ClusterState.from_objects(objects)
    assert len(state.nodes) == 1213 and len(state.claims) == 8152 - 1088


def test_allocation_through_the_allocator(cluster: openb.OpenbCluster) -> None:
    state = ClusterState.from_objects(cluster.objects())
    # A 1-GPU V100M16 node: a sharing pod fits, then a whole-GPU pod must not.
    row = next(r for r in cluster.rows if r.model == "V100M16" and r.gpus == 1)
    node = state.nodes[row.name]
    assert node is not None

    def claim(name: str, num_gpu: int, milli: int, spec: str = "") -> ResourceClaim:
        _, c = openb.pod_objects(openb.PodRow(name, 1000, 1024, num_gpu, milli, spec))
        assert c is not None
        return c

    share = allocate(state, node, [claim("a", 1, 470)])
    assert share.ok
    state.put_claim(share.claims[0])
    assert allocate(state, node, [claim("b", 1, 530)]).ok
    assert not allocate(state, node, [claim("c", 1, 531)]).ok
    assert not allocate(state, node, [claim("d", 1, 1000)]).ok
    # gpu_spec: a T4-only pod never lands on the V100M16 node.
    t4_only = allocate(state, node, [claim("e", 1, 100, "T4")])
    assert not t4_only.ok
    assert allocate(state, node, [claim("f", 1, 100, "V100M16|V100M32")]).ok


def test_resampled_pods_take_a_new_name() -> None:
    row = openb.PodRow("openb-pod-0001", 6000, 12288, 1, 460)
    pod, claim = openb.pod_objects(row, name="openb-pod-0001-tuned-3", namespace="ns")
    assert claim is not None
    assert pod.metadata.name == "openb-pod-0001-tuned-3"
    assert claim.metadata.name == "openb-pod-0001-tuned-3-gpu"
    assert claim.metadata.namespace == "ns"


def test_loading_is_fast() -> None:
    start = time.perf_counter()
    openb.load_cluster(OPENB / openb.NODE_LIST)
    openb.load_workload(openb.trace_path("cpu300", OPENB))  # the largest list: 10,094 pods
    assert time.perf_counter() - start < 1.5


def test_paths_given_by_the_user(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn1,8000,32768,2,T4\nn2,4000,8192,0,\n")
    cluster = openb.load_cluster(nodes)
    assert [n.metadata.name for n in cluster.nodes] == ["n1", "n2"]
    assert [rs.metadata.name for rs in cluster.slices] == ["n1-gpu"]
    pods = tmp_path / "pods.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,0,1,250\n")
    assert openb.trace_path(str(pods), "/nowhere") == pods
    assert openb.trace_path("default", "/data") == Path("/data/openb_pod_list_default.csv")
    assert openb.load_workload(pods).pods[0].metadata.name == "p1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,cpu_milli\np,1\n", "missing column(s) memory_mib, num_gpu, gpu_milli"),
        ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,x,1,0,0\n", "line 2: column cpu_milli"),
        ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,0,500\n", "is not a request"),
        ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,500\n", "whole GPUs"),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,0,0\np,1,1,0,0\n",
            "line 3: duplicate pod name",
        ),
    ],
)
def test_bad_pod_lists(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "pods.csv"
    path.write_text(text)
    with pytest.raises(BadInput) as err:
        openb.load_workload(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_missing_file() -> None:
    with pytest.raises(BadInput, match="No such file"):
        openb.load_cluster("/nonexistent/nodes.csv")
