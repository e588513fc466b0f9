"""Derived pools that are slices (issue 26, point 2): the hosts of one GKE multi-host TPU slice
are a pool of that slice's size, which only grows whole; a label a gang's topology names, on
every node of a pool, is that pool's domain — never the false "does not label its nodes".
Inputs: TPU v5p hosts whose chips come through the DRA driver (no allocatable, no chip-count
label), a single-host v6e, GB200 racks labelled by NVLink clique, and the multi-vendor dump."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from draplan.api.features import DEFAULT_VERSION, feature_gates
from draplan.autoscaler import Autoscaler
from draplan.autoscaler.derived import MAX_NODES_REASON, SLICE_NODES, derive_pools
from draplan.cluster.state import ClusterState
from draplan.sources import load_objects
from scale_scenarios import (
    CLIQUE,
    TOPOLOGY_GATE,
    device_class,
    gang_workload,
    load,
    node,
    pod,
    resource_slice,
    template,
)

TPU = "tpu.google.com"
NODEPOOL = "cloud.google.com/gke-nodepool"
MULTIVENDOR = Path(__file__).parent / "data" / "multivendor"


def _tpu_class() -> dict[str, Any]:
    return device_class(TPU, f"device.driver == '{TPU}'")


def _host(pool: str, i: int, topology: str, chips: int) -> list[dict[str, Any]]:
    name = f"gke-prod-{pool}-7a1b2c3d-{i:04d}"
    labels = {
        NODEPOOL: pool,
        "cloud.google.com/gke-tpu-topology": topology,
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
    }
    devices = [{"name": f"tpu-{c}", "attributes": {"index": {"int": c}}} for c in range(chips)]
    return [node(name, cpu="200", labels=labels), resource_slice(name, devices, driver=TPU)]


def _cluster(objs: list[dict[str, Any]]) -> ClusterState:
    """With TopologyAwareWorkloadScheduling: these gangs' constraints name their slice."""
    state = load(objs, TOPOLOGY_GATE)
    state.node_pools.update(derive_pools(state).pools)
    return state


@pytest.mark.parametrize(
    ("topology", "chips", "present", "hosts"),
    [("2x2x4", 4, 4, 4), ("2x2x4", 4, 2, 4), ("4x4x4", 4, 3, 16), ("2x4", 8, 1, None)],
)
def test_a_multi_host_tpu_slice_is_a_pool_of_its_hosts(
    topology: str, chips: int, present: int, hosts: int | None
) -> None:
    """Chips per host come from the node's DRA devices here; hosts are chips over that."""
    objs = [_tpu_class(), *(o for i in range(present) for o in _host("v5p", i, topology, chips))]
    pool = _cluster(objs).node_pools["v5p"]
    if hosts is None:  # one host is the whole slice: new hosts are new slices
        assert pool.spec.max_nodes == 100 and SLICE_NODES not in pool.metadata.annotations
        return
    assert pool.spec.max_nodes == hosts and pool.metadata.annotations[SLICE_NODES] == str(hosts)
    assert pool.metadata.annotations[MAX_NODES_REASON] == (
        f"it is one {topology} TPU slice of {hosts} hosts, and GKE adds a multi-host slice "
        "only whole, as a node pool of its own"
    )


def _tpu_gang(members: int, present: int) -> list[dict[str, Any]]:
    objs = [_tpu_class(), *(o for i in range(present) for o in _host("v5p", i, "2x2x4", 4))]
    objs.append(
        template("four-chips", [{"name": "tpu", "exactly": {"deviceClassName": TPU, "count": 4}}])
    )
    objs.extend(gang_workload("sft", members, NODEPOOL))
    for i in range(members):
        spec = {"schedulingGroup": {"podGroupName": "sft"}}
        objs.append(pod(f"sft-{i}", "four-chips", spec_extra=spec))
    # Every present host is busy: the gang needs new hosts.
    for i in range(present):
        host = f"gke-prod-v5p-7a1b2c3d-{i:04d}"
        busy = pod(f"busy-{i}", None, cpu="200", spec_extra={"nodeName": host})
        busy["status"] = {"phase": "Running"}
        objs.append(busy)
    return objs


def test_a_partial_slice_grows_to_its_whole_and_no_further() -> None:
    # Two of four hosts are up (the others are being repaired): the pool may add two.
    plan = Autoscaler().plan(_cluster(_tpu_gang(members=2, present=2)))
    assert [(o.pool.metadata.name, len(o.nodes)) for o in plan.scale_up] == [("v5p", 2)]
    # Four members need four free hosts; the slice has four in all, two of them busy.
    state = _cluster(_tpu_gang(members=4, present=2))
    plan = Autoscaler().plan(state)
    assert plan.scale_up == []
    why = {k[1]: text for k, _, text in plan.pending}["sft-0"]
    assert "does not label its nodes" not in why
    domain = "needs 4 nodes in one cloud.google.com/gke-nodepool domain of v5p"
    assert f"{domain}; pool max reached at 4: it is one 2x2x4 TPU slice" in why


def _racks() -> list[dict[str, Any]]:
    """GB200 nodes of one EKS node group in two NVLink cliques of two nodes each."""
    objs = [device_class("gpu.nvidia.com", "device.driver == 'gpu.nvidia.com'")]
    for i, clique in enumerate(["c-1", "c-1", "c-2", "c-2"]):
        name = f"ip-10-0-0-{i}"
        labels = {"eks.amazonaws.com/nodegroup": "gb200", CLIQUE: clique}
        devices = [{"name": f"gpu-{g}"} for g in range(4)]
        objs += [
            node(name, cpu="144", labels=labels),
            resource_slice(name, devices, driver="gpu.nvidia.com"),
        ]
    objs.extend(gang_workload("ddp", 2, CLIQUE))
    objs.append(
        template(
            "four-gpus",
            [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 4}}],
        )
    )
    for i in range(2):
        objs.append(
            pod(f"ddp-{i}", "four-gpus", spec_extra={"schedulingGroup": {"podGroupName": "ddp"}})
        )
    return objs


def test_a_gangs_domain_label_on_every_node_is_the_pools_topology() -> None:
    state = _cluster(_racks())
    [rule] = state.node_pools["gb200"].spec.topology
    assert (rule.key, rule.nodes_per_domain) == (CLIQUE, 2)
    # No gang names the zone label: it is not made a topology.
    assert [t.key for t in state.node_pools["gb200"].spec.topology] == [CLIQUE]


def test_the_multivendor_tpu_gang_is_told_the_real_limit() -> None:
    """The 4-host gang that must sit in one GKE node pool, on the multi-vendor dump: both 4x4
    slices exist whole, one host of the free one is busy. Its PodGroup's constraint keeps it in
    one node pool only with TopologyAwareWorkloadScheduling (without, the pools carry no
    domain)."""
    objs = load_objects([str(MULTIVENDOR / "cluster.yaml")])
    plain = ClusterState.from_objects(objs)
    assert derive_pools(plain).pools["tpu-v6e-a"].spec.topology == ()
    state = ClusterState.from_objects(objs, feature_gates(DEFAULT_VERSION, TOPOLOGY_GATE))
    state.node_pools.update(derive_pools(state).pools)
    for name in ("tpu-v6e-a", "tpu-v6e-b"):
        pool = state.node_pools[name]
        assert pool.spec.max_nodes == 4 and [t.key for t in pool.spec.topology] == [NODEPOOL]
    plan = Autoscaler().plan(state)
    assert not any(o.pool.metadata.name.startswith("tpu-v6e") for o in plan.scale_up)
    why = {k[1]: text for k, _, text in plan.pending}["maxtext-sft-0"]
    assert "does not label its nodes" not in why
    assert "pool max reached at 4: it is one 4x4 TPU slice of 4 hosts" in why
