"""ClusterState.from_objects counts a whole input's pods in one pass (each node's requests summed
in place, its pods listed, one usage per group of pods that ask alike): the ledgers must equal
those of the same pods put one by one, in the same order, as a watch delivers them."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.core_v1 import Affinity, ContainerPort, Pod, PodAffinity, PodSchedulingGate
from draplan.cluster.podresources import host_ports
from draplan.cluster.state import ClusterState
from scheduler_builders import MakeNode, MakePod

NODES = ("gaudi-0", "tpu-host-0", "control-plane-0")

# Requests as each kind of pod asks: a Gaudi trainer (its extended resource first), a
# DaemonSet agent with only cpu (memory left to the non-zero default), a TPU job asking the same
# amounts in another order (not alike), an empty pause container.
ASKS: tuple[dict[str, str | int], ...] = (
    {"habana.ai/gaudi": 8, "cpu": "90", "memory": "900Gi"},
    {"cpu": "100m"},
    {"memory": "900Gi", "cpu": "90", "habana.ai/gaudi": 8},
    {},
)


def _pod(i: int, kind: int, ask: int, node: int) -> Pod:
    make = MakePod().name(f"p{i}").req(ASKS[ask])
    if kind == 0:
        return make.node(NODES[node]).obj()
    if kind == 1:  # a bound pod with a sidecar and runtime overhead (never alike others)
        pod = make.node(NODES[node]).init_req(cpu="2").overhead(cpu="250m").obj()
        sidecar = msgspec.structs.replace(pod.spec.init_containers[0], restart_policy="Always")
        return msgspec.structs.replace(
            pod, spec=msgspec.structs.replace(pod.spec, init_containers=(sidecar,))
        )
    if kind == 2:  # waiting for the node it preempted on: counted there, not among its pods
        return make.nominated(NODES[node]).obj()
    if kind == 3:  # nominated but gated: not counted
        pod = make.nominated(NODES[node]).obj()
        gate = (PodSchedulingGate(name="example.com/quota"),)
        return msgspec.structs.replace(
            pod, spec=msgspec.structs.replace(pod.spec, scheduling_gates=gate)
        )
    if kind == 4:  # finished: takes nothing
        pod = make.node(NODES[node]).obj()
        return msgspec.structs.replace(
            pod, status=msgspec.structs.replace(pod.status, phase="Succeeded")
        )
    if kind == 5:  # with pod anti-affinity (NodeInfo.PodsWithAffinity)
        pod = make.node(NODES[node]).obj()
        affinity = Affinity(pod_anti_affinity=PodAffinity())
        return msgspec.structs.replace(
            pod, spec=msgspec.structs.replace(pod.spec, affinity=affinity)
        )
    # A node-exporter DaemonSet pod holding a host port (NodeInfo.UsedPorts).
    pod = make.node(NODES[node]).obj()
    port = ContainerPort(container_port=9100, host_port=9100)
    container = msgspec.structs.replace(pod.spec.containers[0], ports=(port,))
    return msgspec.structs.replace(
        pod, spec=msgspec.structs.replace(pod.spec, containers=(container,))
    )


def _ledgers(state: ClusterState) -> dict[str, Any]:
    return {
        # Item lists: the order of each node's resources must match too.
        "requested": {n: list(r.items()) for n, r in state.node_requested.items()},
        "node_pods": dict(state.node_pods.items()),
        "held": dict(state.held.items()),
        "affinity_pods": dict(state.affinity_pods.items()),
        "port_pods": dict(state.port_pods.items()),
    }


def _ports_by_node(state: ClusterState) -> dict[str, tuple[tuple[str, str], ...]]:
    held = {
        n: tuple(k for k in keys if host_ports(state.pods[k]))
        for n, keys in state.node_pods.items()
    }
    return {n: keys for n, keys in held.items() if keys}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, len(ASKS) - 1), st.integers(0, 2)),
        max_size=30,
    )
)
def test_a_bulk_load_counts_pods_as_putting_them_one_by_one(
    specs: list[tuple[int, int, int]],
) -> None:
    nodes = [MakeNode().name(n).capacity({"habana.ai/gaudi": 8}).obj() for n in NODES]
    pods = [_pod(i, *spec) for i, spec in enumerate(specs)]
    loaded = ClusterState.from_objects([*nodes, *pods])
    one_by_one = ClusterState.from_objects(nodes)
    for pod in pods:
        one_by_one.put_pod(pod)
    assert _ledgers(loaded) == _ledgers(one_by_one)
    # Pods leaving (a fork's trial, then for good) keep the ports index to the pods held.
    loaded.fork()
    for pod in pods[::2]:
        loaded.delete_pod((pod.metadata.namespace, pod.metadata.name))
    assert _ports_by_node(loaded) == {n: k for n, k in loaded.port_pods.items() if k}
    loaded.revert()
    assert _ledgers(loaded) == _ledgers(one_by_one)
    # A node whose pods count has a version of its own: per-node caches tell it apart.
    assert all(loaded.version(n)[1] > 0 for n in loaded.node_requested)
