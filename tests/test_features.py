"""--kubernetes-version and --feature-gates: upstream's defaults per release, kube-scheduler's
errors, and the gates that change draplan's answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from draplan.allocator import Options, Outcome, allocate
from draplan.api.errors import BadInput
from draplan.api.features import DEFAULT, GATES, FeatureGates, Gate, defaults, feature_gates
from draplan.api.meta import KubeStruct
from draplan.api.resource_v1 import DeviceTaint
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler, build_profile
from test_allocator import (
    claim,
    code,
    counter_set,
    device,
    device_class,
    node,
    picked,
    request,
    rslice,
    taint_rule,
)
from test_extended_resources import GPU, dra_node, gpu_class, gpu_pod

REALISTIC = Path(__file__).parent / "data" / "realistic" / "cluster.yaml"


def test_release_defaults_are_upstreams() -> None:
    # kube_features.go's versioned specs for 1.36 and 1.37.
    only_137 = {"DRADeviceTaintRules", "DRAFractionalCapacityRange"}
    assert defaults("1.37").enabled - defaults("1.36").enabled == only_137
    assert defaults("1.36").enabled <= defaults("1.37").enabled
    assert "DRAWorkloadResourceClaims" not in defaults("1.37")  # beta, off
    assert "GenericWorkload" not in defaults("1.37")  # beta, off
    assert DEFAULT.version == "1.37"


@pytest.mark.parametrize(
    ("version", "text", "message"),
    [
        ("1.38", "", "unsupported Kubernetes version '1.38'"),
        ("1.37", "NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
        ("1.36", "DRADeviceCompatibilityGroups=false", "unrecognized feature gate"),
        ("1.37", "DRAPartitionableDevices", "expected Name=true|false"),
        ("1.37", "DRAPartitionableDevices=yes", "expected Name=true|false"),
        (
            "1.37",
            "DRAExtendedResource=false",
            "cannot set feature gate DRAExtendedResource to false, feature is locked to true",
        ),
        ("1.37", "CompositePodGroup=true", "is not modelled by draplan"),
        ("1.36", "DRAConsumableCapacity=false", "is not modelled by draplan"),
    ],
)
def test_bad_flags_are_one_clear_error(version: str, text: str, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        feature_gates(version, text)


def test_overrides_apply_on_the_release_defaults() -> None:
    gates = feature_gates("1.36", "DRADeviceTaintRules=true, DRADeviceTaints=false")
    assert "DRADeviceTaintRules" in gates and "DRADeviceTaints" not in gates
    assert "DRAExtendedResource" in gates  # beta, on in 1.36, not locked there
    assert "DRAExtendedResource" not in feature_gates("1.36", "DRAExtendedResource=false")


def _state(features: FeatureGates, *objects: KubeStruct) -> ClusterState:
    return ClusterState.from_objects([node(), device_class(), *objects], features)


def _allocate(state: ClusterState, count: int = 1) -> Outcome:
    return allocate(state, node(), [claim("c", request("r", count))], Options())


def test_partitionable_devices_off_never_allocates_counter_consumers() -> None:
    devs = [device("gpu-0", consumes={"set": {"mem": 1}}), device("plain")]
    parts = rslice("s", devs, counters=[counter_set("set", mem=1)])
    off = _state(feature_gates("1.37", "DRAPartitionableDevices=false"), parts)
    assert picked(_allocate(off)) == ["plain"]
    assert not _allocate(off, 2).ok
    assert _allocate(_state(DEFAULT, parts), 2).ok


def test_device_taints_off_ignores_taints() -> None:
    tainted = rslice("s", [device("gpu-0", taints=[DeviceTaint(key="k", effect="NoSchedule")])])
    assert code(_allocate(_state(DEFAULT, tainted))) == "Tainted"
    off = _state(feature_gates("1.37", "DRADeviceTaints=false"), tainted)
    assert picked(_allocate(off)) == ["gpu-0"]


def test_device_taint_rules_are_off_by_default_in_1_36() -> None:
    objs = (rslice("s", [device("gpu-0")]), taint_rule("all"))
    assert code(_allocate(_state(defaults("1.37"), *objs))) == "Tainted"
    assert picked(_allocate(_state(defaults("1.36"), *objs))) == ["gpu-0"]
    enabled = feature_gates("1.36", "DRADeviceTaintRules=true")
    assert code(_allocate(_state(enabled, *objs))) == "Tainted"


def test_extended_resource_off_counts_node_allocatable_only() -> None:
    objects = [gpu_class(), *dra_node(), gpu_pod("p", 1).obj()]
    on = ClusterState.from_objects(objects, defaults("1.36"))
    off = ClusterState.from_objects(objects, feature_gates("1.36", "DRAExtendedResource=false"))
    assert [r.node for r in Scheduler(build_profile()).run(on)] == ["dra-1"]
    result = Scheduler(build_profile()).run(off)[0]
    assert result.node is None and result.reason is not None
    assert f"Insufficient {GPU}" in result.reason.message


def test_flags_change_the_answer_on_a_real_dump(run_cli: Any) -> None:
    def categories(*flags: str) -> dict[str, str]:
        result = run_cli("why", "-f", str(REALISTIC), "-o", "json", *flags)
        assert result.code == 0, result.err
        return {d["pod"]: d["category"] for d in result.json()["pods"]}

    # The MIG pod fits an A100 partition; without partitionable devices no partition serves it.
    assert categories()["serving/infer-mig-0"] == "Schedulable"
    off = categories("--feature-gates", "DRAPartitionableDevices=false")
    assert off["serving/infer-mig-0"] != "Schedulable"


def test_a_bad_flag_is_one_line_and_exit_2(run_cli: Any) -> None:
    bad = run_cli("why", "-f", str(REALISTIC), "--feature-gates", "Nope=true")
    assert bad.code == 2
    assert bad.err.strip() == (
        "error: --feature-gates: unrecognized feature gate: Nope (Kubernetes 1.37)"
    )


def test_readme_table_is_the_gate_table() -> None:
    def cell(gate: Gate, version: str) -> str:
        spec = gate.specs.get(version)
        if spec is None:
            return "–"
        return f"{spec.stage}, {'on' if spec.default else 'off'}" + (
            ", locked" if spec.locked else ""
        )

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    for gate in GATES.values():
        row = f"| `{gate.name}` | {cell(gate, '1.36')} | {cell(gate, '1.37')} | {gate.effect} |"
        assert row in readme, row


def test_simulate_runs_the_cluster_under_the_gates(run_cli: Any, tmp_path: Path) -> None:
    assert run_cli("demo", "--export", str(tmp_path)).code == 0
    files = [
        x for name in ("cluster", "pools", "scenario") for x in ("-f", f"{tmp_path}/{name}.yaml")
    ]

    def started(*flags: str) -> int:
        result = run_cli("simulate", *files, "--policies", "dra", "-o", "json", *flags)
        assert result.code == 0, result.err
        return int(result.json()["results"][0]["totals"]["jobsStarted"])

    # Without partitionable devices no MIG slice is ever allocated: the inference jobs never
    # start, where by default every job does.
    everything = started()
    assert started("--feature-gates", "DRAPartitionableDevices=false") < everything
