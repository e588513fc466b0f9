"""Nodes that differ only in what nothing reads (a GPU's UUID, the provider ID) share their
evaluations; a claim that reads such an attribute, even one that arrives mid-run, tells them
apart again."""

from __future__ import annotations

from typing import Any

from draplan.api.codec import decode
from draplan.api.core_v1 import Pod
from draplan.api.resource_v1 import ResourceClaim
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler, build_profile
from draplan.scheduler.plugins.placement import DeviceResource
from draplan.scheduler.profile import draplan_profile
from draplan.scheduler.unread import TOPOLOGY, merge, profile_reads_only_known, state_reads

DRIVER = "gpu.example.com"
NODES = 6


def _objects() -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {
                "selectors": [
                    {"cel": {"expression": f"device.attributes['{DRIVER}'].type == 'gpu'"}}
                ]
            },
        }
    ]
    for n in range(NODES):
        name = f"n-{n}"
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "spec": {"providerID": f"aws:///zone/i-{n:04d}"},
                "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110"}},
            }
        )
        devices = [
            {
                "name": f"gpu-{i}",
                "attributes": {
                    "type": {"string": "gpu"},
                    "uuid": {"string": f"GPU-{name}-{i}"},
                    "index": {"int": i},
                },
            }
            for i in range(2)
        ]
        objs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpu"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
    return objs


def _claim(name: str, selector: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "count": 1}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def _pod(name: str, claim: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
        },
    }


def _state(extra: list[dict[str, Any]]) -> ClusterState:
    return ClusterState.from_objects([(decode(o), "test") for o in [*_objects(), *extra]])


def test_only_read_attributes_count() -> None:
    state = _state([_claim("c-0", f"device.attributes['{DRIVER}'].index == 1")])
    reads = state_reads(state)
    assert reads is not None
    assert reads.read("type", DRIVER) and reads.read("index", DRIVER)
    assert reads.read("numa", "any.io") and reads.read("resource.kubernetes.io/pcieRoot", DRIVER)
    assert not reads.read("uuid", DRIVER)
    wider = merge(reads, [], [decode(_claim("c-1", "device.attributes.size() > 0")).spec])  # type: ignore[attr-defined]
    assert wider is None  # a selector that may read anything
    assert TOPOLOGY.covers(reads) is False and reads.covers(TOPOLOGY)


def test_placement_policies_keep_every_attribute() -> None:
    assert profile_reads_only_known(build_profile())
    fgd = build_profile(placement="fgd", resource=DeviceResource("gpu", "memory"))
    assert not profile_reads_only_known(fgd)  # it reads the `model` of devices, say


def test_identical_nodes_share_until_a_claim_reads_the_uuid() -> None:
    state = _state(
        [_claim(f"c-{i}") for i in range(4)] + [_pod(f"p-{i}", f"c-{i}") for i in range(4)]
    )
    # draplan's profile: bin-packing with ties by name, so the placements are foreseeable.
    scheduler = Scheduler(draplan_profile())
    first = scheduler.run(state)
    assert sorted(r.node or "" for r in first) == ["n-0", "n-0", "n-1", "n-1"]
    evaluator = scheduler.evaluator
    n4, n5 = state.nodes["n-4"], state.nodes["n-5"]
    assert evaluator.signature(state, n4) == evaluator.signature(state, n5)
    # A pod pinned to one GPU of the last node, arriving after the others were placed.
    pinned = decode(_claim("pin", f"device.attributes['{DRIVER}'].uuid == 'GPU-n-5-1'"))
    assert isinstance(pinned, ResourceClaim)
    state.put_claim(pinned)
    pod = decode(_pod("pinned", "pin"))
    assert isinstance(pod, Pod)
    state.pods[("default", "pinned")] = pod
    (result,) = scheduler.run(state)
    assert result.node == "n-5"
    assert [r.device for r in result.claims[0].status.allocation.devices.results] == ["gpu-1"]  # type: ignore[union-attr]
    assert evaluator.signature(state, n4) != evaluator.signature(state, n5)
