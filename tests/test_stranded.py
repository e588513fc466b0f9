"""Physical accelerators (draplan.cluster.accelerators) and stranded GPUs
(draplan.audit.stranded): the one measure `draplan metrics` and the simulator share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import audit_scenarios as sc
from draplan.api.codec import decode
from draplan.api.core_v1 import Pod
from draplan.audit.metrics import metrics
from draplan.cluster.accelerators import node_accelerators, used
from draplan.cluster.state import key_of
from draplan.sim.engine import SimConfig, Simulation
from draplan.sim.workloads import Job
from draplan.sources import load_objects
from scale_scenarios import MIG_CLASS, gpu_request, load

REALISTIC = Path(__file__).resolve().parent / "data" / "realistic"


def with_eighth_slice(taken: int) -> list[dict[str, Any]]:
    """sc.mig_node with an 8th memory slice that the whole GPU consumes and no 1g partition
    covers (an A100's 7 compute slices over 8 memory slices)."""
    objs = sc.mig_node(taken=taken)
    for obj in objs:
        spec = obj["spec"] if obj["kind"] == "ResourceSlice" else {}
        if spec.get("sharedCounters"):
            spec["sharedCounters"][0]["counters"]["memory-slice-7"] = {"value": "1"}
        elif spec.get("devices"):
            whole = spec["devices"][0]["consumesCounters"][0]["counters"]
            whole["memory-slice-7"] = {"value": "1"}
    return objs


def test_devices_sharing_a_counter_set_are_one_gpu() -> None:
    state = load(sc.mig_node(taken=2))
    (acc,) = node_accelerators(state, state.nodes["mig-0"])
    assert [v.name for v in acc.devices][:2] == ["gpu-0", "gpu-0-mig-1g-0"]
    assert len(acc.devices) == 8
    # The whole-GPU device consumes every counter: it is the GPU, not a partition.
    assert [v.name for v in acc.partitions] == [f"gpu-0-mig-1g-{i}" for i in range(7)]
    assert used(state, acc) == pytest.approx(2 / 7)


def test_a_device_without_counters_is_a_gpu_of_its_own() -> None:
    state = load([sc.device_class(), sc.node("n"), sc.gpu_slice("n", [0, 0, 1])])
    accs = node_accelerators(state, state.nodes["n"])
    assert [[v.name for v in a.devices] for a in accs] == [["gpu-0"], ["gpu-1"], ["gpu-2"]]
    assert all(a.partitions == () for a in accs)


def test_a_device_consuming_two_counter_sets_joins_them() -> None:
    objs = sc.mig_node(taken=0)
    slices = [o for o in objs if o["kind"] == "ResourceSlice"]
    counters = slices[0]["spec"]["sharedCounters"]
    counters.append({"name": "link", "counters": {"nvlink": {"value": "1"}}})
    bridge = {
        "name": "bridge",
        "consumesCounters": [
            {"counterSet": "gpu-0-counter-set", "counters": {"memory-slice-0": {"value": "1"}}},
            {"counterSet": "link", "counters": {"nvlink": {"value": "1"}}},
        ],
    }
    lone = {
        "name": "link-only",
        "consumesCounters": [{"counterSet": "link", "counters": {"nvlink": {"value": "1"}}}],
    }
    slices[1]["spec"]["devices"] += [bridge, lone]
    state = load(objs)
    (acc,) = node_accelerators(state, state.nodes["mig-0"])
    assert {"bridge", "link-only", "gpu-0"} <= {v.name for v in acc.devices}


def test_a_partitioned_gpus_leftover_no_partition_fits_is_stranded() -> None:
    """8 memory slices, but 1g partitions only on slices 0-6; a pod holds all seven. Slice 7
    (1/8 of the GPU) is free, yet neither the whole GPU nor any partition can be allocated:
    the running pod's shape (seven 1g partitions, which an empty GPU takes) cannot use it."""
    objs = with_eighth_slice(taken=7)
    doc = metrics(load(objs)).to_dict()["nodes"]["mig-0"]
    assert (doc["gpus"], doc["gpusAllocated"], doc["freeGpus"]) == (1, 0.875, 0.125)
    assert doc["strandedGpus"] == 0.125


def test_several_partitions_of_one_gpu_serve_one_pod() -> None:
    """A GPU takes as many units of a shape as its free partitions fit together. Two of seven
    1g partitions free; shapes: the running pod's 5 partitions and a pending pod's 2, half
    each. The 2-partition pod fits the two free ones, so only the 5-partition half strands the
    free 2/7 of the GPU: 1/7 (one unit per GPU would have made it all 2/7)."""
    pending = [
        sc.template("two-mig", [gpu_request(2, cls=MIG_CLASS, name="mig")]),
        sc.pending("wants-two", "two-mig"),
    ]
    doc = metrics(load(sc.mig_node(taken=5) + pending)).to_dict()["nodes"]["mig-0"]
    assert (doc["freeGpus"], doc["strandedGpus"]) == (round(2 / 7, 3), round(1 / 7, 3))
    # One free partition: neither the 6- nor the 2-partition pod fits, all of it is stranded.
    doc = metrics(load(sc.mig_node(taken=6) + pending)).to_dict()["nodes"]["mig-0"]
    assert (doc["freeGpus"], doc["strandedGpus"]) == (round(1 / 7, 3), round(1 / 7, 3))


# --- the simulator measures what `draplan metrics` measures ------------------------------------


def _realistic_sim(horizon: float) -> tuple[Simulation, Any]:
    """The realistic dump with its pending pods turned into jobs arriving at 0."""
    objs = [o for o, _ in load_objects([str(REALISTIC / "cluster.yaml")])]
    waiting = [o for o in objs if isinstance(o, Pod) and not o.spec.node_name]
    cluster = [o for o in objs if not any(o is p for p in waiting)]
    jobs = [Job(p.metadata.name, "test", 0.0, 7200.0, (p,), (key_of(p),), 0) for p in waiting]
    sim = Simulation(cluster, jobs, SimConfig(policy="dra", horizon=horizon))
    return sim, sim.run()


def test_a_simulation_and_metrics_agree_on_stranded_gpus() -> None:
    """Every pod of the run (the dump's and the jobs') is in the state, and fewer than 20 pods
    make every shape typical, so both measure against the same shapes. At 0, before the
    scheduler runs, the state is the dump: test_audit_metrics derives its 157/42 GPUs by hand.
    The old simulator skipped every class with a counter-consuming device (gpu.nvidia.com
    selects the A100s' whole devices) and reported 0 stranded GPU-h here."""
    sim, result = _realistic_sim(horizon=600.0)
    series = result.series["strandedGpus"]
    assert series[0] == (0.0, round(157 / 42, 3))
    doc = metrics(sim.state).to_dict()["cluster"]
    assert series[-1] == (600.0, doc["strandedGpus"])
    assert doc["strandedGpus"] > 0
    assert result.totals["strandedGpuHours"] > 0


def test_the_simulator_counts_gpus_as_metrics_does() -> None:
    """The run's time-weighted allocation, on a run with nothing scheduled after 0 and a
    horizon of one second, is the dump's 11.5 of 28 GPUs."""
    objs = [o for o, _ in load_objects([str(REALISTIC / "cluster.yaml")])]
    running = [o for o in objs if not (isinstance(o, Pod) and not o.spec.node_name)]
    cpu_only = decode(sc.pod("idle", None))
    assert isinstance(cpu_only, Pod)
    idle = Job("idle", "test", 0.0, 1.0, (cpu_only,), (("default", "idle"),), 0)
    sim = Simulation(running, [idle], SimConfig(policy="dra", horizon=1.0))
    result = sim.run()
    assert result.totals["gpuAllocationPercent"] == round(100 * 11.5 / 28, 2)
    assert metrics(sim.state).to_dict()["cluster"]["gpusAllocated"] == 11.5
