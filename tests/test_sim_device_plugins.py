"""The simulator counts the accelerators device plugins serve as `draplan metrics` does: the
same GPUs, in use and stranded on a state whose pods have the workload's shapes, and a gang
member's devices by what its requests fill (NeuronCores as parts of devices, MIG profiles and
time-sliced replicas as no whole device)."""

from __future__ import annotations

from typing import Any

import pytest

from draplan.api.codec import decode
from draplan.audit.metrics import metrics
from draplan.cluster.state import ClusterState
from draplan.sim.metrics import Recorder
from draplan.sim.stranded import StrandedMeter
from draplan.sim.workloads import Job
from test_metrics_device_plugins import node, pod

NEURON = {
    "aws.amazon.com/neuron": 16,
    "aws.amazon.com/neurondevice": 16,
    "aws.amazon.com/neuroncore": 128,
}


def _cluster() -> list[dict[str, Any]]:
    """Gaudi and Trainium hosts (device plugins only), a MIG node, a time-sliced T4 node, a
    control-plane node, and running pods of several shapes."""
    t4 = node("t4", {"nvidia.com/gpu": 16})
    t4["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "4"
    control = node("cp", {}, cpu=8, memory_gi=32)
    control["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
    return [
        node("gaudi-0", {"habana.ai/gaudi": 8}),
        node("gaudi-1", {"habana.ai/gaudi": 8}),
        node("trn2", NEURON),
        node("mig", {"nvidia.com/mig-1g.10gb": 7}),
        t4,
        control,
        pod("g1", "gaudi-0", {"habana.ai/gaudi": 1}),
        pod("g4", "gaudi-0", {"habana.ai/gaudi": 4}),
        pod("g8", "gaudi-1", {"habana.ai/gaudi": 8}),
        pod("cores", "trn2", {"aws.amazon.com/neuroncore": 24}),
        pod("devs", "trn2", {"aws.amazon.com/neurondevice": 2}),
        pod("slice", "mig", {"nvidia.com/mig-1g.10gb": 2}),
        pod("replica", "t4", {"nvidia.com/gpu": 1}),
        pod("etcd", "cp", {}, cpu=1),
    ]


def _state() -> ClusterState:
    return ClusterState.from_objects(decode(o) for o in _cluster())


def test_the_simulation_counts_what_metrics_counts() -> None:
    state = _state()
    recorder = Recorder(state, StrandedMeter(state, []))
    recorder.advance(0.0)
    gpus, used, _, stranded, _ = recorder.now
    cluster = metrics(state).to_dict()["cluster"]
    assert gpus == cluster["gpus"] == 16 + 16  # Gaudi and Neuron devices; MIG, T4 replicas not
    assert used == pytest.approx(cluster["gpusAllocated"]) == 5 + 8 + 3 + 2
    assert stranded == pytest.approx(cluster["strandedGpus"]) and stranded > 0


@pytest.mark.parametrize(
    ("on", "asks", "devices"),
    [
        ("trn2", {"aws.amazon.com/neuroncore": 24}, 3.0),  # 8 cores per device
        ("trn2", {"aws.amazon.com/neurondevice": 2}, 2.0),
        ("trn2", {"aws.amazon.com/neuron": 1, "aws.amazon.com/neurondevice": 1}, 2.0),
        ("gaudi-0", {"habana.ai/gaudi": 2}, 2.0),
        ("mig", {"nvidia.com/mig-1g.10gb": 3}, 0.0),
        ("t4", {"nvidia.com/gpu": 2}, 0.0),
    ],
)
def test_a_partly_placed_gang_holds_the_devices_its_requests_fill(
    on: str, asks: dict[str, int], devices: float
) -> None:
    objs = [o for o in _cluster() if o["kind"] == "Node"]
    objs.append(pod("member-0", on, asks))
    objs.append(pod("member-1", None, asks))
    state = ClusterState.from_objects(decode(o) for o in objs)
    recorder = Recorder(state, StrandedMeter(state, []))
    keys = (("ml", "member-0"), ("ml", "member-1"))
    recorder.job_arrived(Job("gang", "training", 0.0, 3600.0, (), keys, 2), 0.0)
    recorder.advance(3600.0)
    assert recorder.totals["partialGang"] == pytest.approx(devices * 3600.0)
