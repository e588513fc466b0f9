"""Extended resources backed by DRA (KEP-5004): `nvidia.com/gpu: 2` served by a DeviceClass
on nodes without a device plugin for it, and by the device plugin where there is one."""

from __future__ import annotations

import msgspec
import pytest

from draplan.api.meta import ObjectMeta
from draplan.api.resource_v1 import DeviceClass
from draplan.cluster.state import ClusterState
from draplan.scheduler.extended import CLAIM_ANNOTATION, IMPLICIT_PREFIX, class_mapping
from scheduler_builders import MakeNode, MakePod, MakeSlice, device_class, schedule

GPU = "example.com/gpu"


def gpu_class(name: str = "gpu.example.com", created: str = "2026-01-01T00:00:00Z") -> DeviceClass:
    dc = device_class(name)
    spec = msgspec.structs.replace(dc.spec, extended_resource_name=GPU)
    meta = ObjectMeta(name=name, creation_timestamp=created)
    return msgspec.structs.replace(dc, metadata=meta, spec=spec)


def dra_node(name: str = "dra-1", gpus: int = 4) -> list[object]:
    node = MakeNode().name(name).capacity(cpu="32", memory="64Gi", pods="110").obj()
    return [node, MakeSlice().node(name).gpus(gpus).obj()]


def gpu_pod(name: str, count: int, cpu: str = "1") -> MakePod:
    return MakePod().name(name).req({"cpu": cpu, GPU: count})


def test_a_dra_node_serves_the_extended_resource_through_a_claim() -> None:
    run = schedule([gpu_class(), *dra_node(), gpu_pod("p", 2).obj()])
    assert run.node_of("p") == "dra-1"
    claims = [c for c in run.state.claims.values() if CLAIM_ANNOTATION in c.metadata.annotations]
    assert len(claims) == 1
    claim = claims[0]
    assert claim.metadata.name.startswith("p-extended-resources-")
    assert [r.name for r in claim.spec.devices.requests] == ["container-0-request-1"]
    exact = claim.spec.devices.requests[0].exactly
    assert exact is not None and (exact.device_class_name, exact.count) == ("gpu.example.com", 2)
    alloc = claim.status.allocation
    assert alloc is not None and len(alloc.devices.results) == 2
    assert [r.name for r in claim.status.reserved_for] == ["p"]


def test_devices_run_out_like_any_claim() -> None:
    run = schedule([gpu_class(), *dra_node(gpus=4), gpu_pod("a", 3).obj(), gpu_pod("b", 2).obj()])
    assert run.node_of("a") == "dra-1"
    assert run.node_of("b") is None
    assert "cannot allocate all claims" in run.reason("b")


def test_a_device_plugin_node_is_checked_by_count_and_gets_no_claim() -> None:
    plugin = MakeNode().name("dp-1").capacity({"cpu": "32", "memory": "64Gi", GPU: 2}).obj()
    run = schedule([gpu_class(), plugin, gpu_pod("fits", 2).obj(), gpu_pod("over", 1).obj()])
    assert run.node_of("fits") == "dp-1"
    assert run.node_of("over") is None
    assert f"Insufficient {GPU}" in run.reason("over")
    assert not any(CLAIM_ANNOTATION in c.metadata.annotations for c in run.state.claims.values())


def test_without_a_class_the_resource_is_an_ordinary_extended_resource() -> None:
    run = schedule([device_class(), *dra_node(), gpu_pod("p", 1).obj()])
    assert run.node_of("p") is None
    assert f"Insufficient {GPU}" in run.reason("p")


def test_implicit_name_serves_every_class() -> None:
    pod = MakePod().name("p").req({"cpu": "1", f"{IMPLICIT_PREFIX}gpu.example.com": 1}).obj()
    run = schedule([device_class("gpu.example.com"), *dra_node(), pod])
    assert run.node_of("p") == "dra-1"


@pytest.mark.parametrize(
    ("first", "second", "winner"),
    [
        ("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "b-class"),
        ("2026-03-01T00:00:00Z", "2026-02-01T00:00:00Z", "a-class"),
        ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "a-class"),
    ],
)
def test_the_newest_class_wins_a_shared_name_then_the_first_by_name(
    first: str, second: str, winner: str
) -> None:
    state = ClusterState.from_objects([gpu_class("a-class", first), gpu_class("b-class", second)])
    mapping = class_mapping(state)
    assert mapping[GPU] == winner
    assert mapping[IMPLICIT_PREFIX + "a-class"] == "a-class"
    assert mapping[IMPLICIT_PREFIX + "b-class"] == "b-class"


def test_requests_are_named_per_container_and_sorted_resource_index() -> None:
    pod = (
        MakePod()
        .name("p")
        .init_req({"cpu": "1", GPU: 1})
        .req({"cpu": "1", "memory": "1Gi", GPU: 1})
        .obj()
    )
    run = schedule([gpu_class(), *dra_node(), pod])
    claim = next(c for c in run.state.claims.values() if c.metadata.name.startswith("p-ext"))
    # The init container is container 0; in container 1, example.com/gpu sorts before
    # memory and after cpu.
    assert [r.name for r in claim.spec.devices.requests] == [
        "container-0-request-1",
        "container-1-request-1",
    ]
