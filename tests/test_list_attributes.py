"""List-typed device attributes (KEP-5491, DRAListTypeAttributes, alpha and off in 1.37):
`ints` / `bools` / `strings` / `versions`, CEL includes(), matchAttribute as a common element
of the devices' sets and distinctAttribute as pairwise disjoint sets; with the gate off a list
value or includes() is an error, as an API server with the gate off leaves them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from draplan.api.codec import encode
from draplan.api.errors import BadInput
from draplan.api.features import DEFAULT, FeatureGates, feature_gates
from draplan.api.meta import KubeStruct
from draplan.api.resource_v1 import Device, DeviceAttribute, DeviceConstraint
from draplan.cluster.state import ClusterState
from test_allocator import (
    DRIVER,
    PCIE_ROOT,
    claim,
    code,
    device,
    device_class,
    node,
    picked,
    request,
    rslice,
    run,
)

ON = feature_gates("1.37", "DRAListTypeAttributes=true")


def with_attrs(name: str, **attrs: DeviceAttribute) -> Device:
    return Device(
        name=name, attributes={(PCIE_ROOT if k == "root" else k): v for k, v in attrs.items()}
    )


def strings(*values: str) -> DeviceAttribute:
    return DeviceAttribute(strings=values)


def ints(*values: int) -> DeviceAttribute:
    return DeviceAttribute(ints=values)


def state(gates: FeatureGates, *objects: KubeStruct) -> ClusterState:
    return ClusterState.from_objects([node(), device_class(), *objects], gates)


def test_with_the_gate_off_a_list_value_is_an_error() -> None:
    objs = rslice("s", [with_attrs("cpu-0", root=strings("pci0", "pci1"))])
    with pytest.raises(BadInput, match="DRAListTypeAttributes") as err:
        state(DEFAULT, objs)
    assert err.value.path == f"spec.devices[0].attributes[{PCIE_ROOT}].strings"
    state(ON, objs)  # the same slice is fine with the gate on


def test_with_the_gate_off_includes_is_an_undeclared_function() -> None:
    sel = f'device.attributes["{DRIVER}"].model.includes("a100")'
    c = claim("c", request("r", selectors=[sel]))
    with pytest.raises(BadInput, match="includes") as err:
        state(DEFAULT, c)
    assert err.value.path == "spec.devices.requests[0].exactly.selectors[0].cel.expression"


def test_the_cli_says_so_in_one_line(run_cli: Any, tmp_path: Path) -> None:
    doc = encode(rslice("s", [with_attrs("cpu-0", numa=ints(0, 1))]))
    path = tmp_path / "slice.yaml"
    path.write_text(yaml.safe_dump(doc))
    off = run_cli("validate", "-f", str(path))
    assert off.code == 2 and len(off.err.strip().splitlines()) == 1
    assert "attributes[numa].ints: list-typed attribute values need" in off.err
    on = run_cli("validate", "-f", str(path), "--feature-gates", "DRAListTypeAttributes=true")
    assert on.code == 0, on.err


def test_includes_works_on_lists_and_scalars() -> None:
    sel = f'device.attributes["{DRIVER}"].models.includes("a100")'
    devs = [
        with_attrs("gpu-0", models=strings("h100", "h200")),
        with_attrs("gpu-1", models=DeviceAttribute(string="a100")),
        with_attrs("gpu-2", models=strings("l4", "a100")),
    ]
    st = state(ON, rslice("s", devs))
    assert picked(run(st, claim("c", request("r", 2, selectors=[sel])))) == ["gpu-1", "gpu-2"]
    # Elements compare as CEL does: an int list never includes a bool or a string.
    one = [with_attrs("gpu-0", numa=ints(1))]
    for expr, ok in (("numa.includes(1)", True), ("numa.includes(true)", False)):
        st = state(ON, rslice("s", one))
        sel = f'device.attributes["{DRIVER}"].{expr}'
        assert run(st, claim("c", request("r", selectors=[sel]))).ok is ok


def test_versions_are_a_list_of_semvers() -> None:
    devs = [with_attrs("gpu-0", fw=DeviceAttribute(versions=("1.2.3", "2.0.0")))]
    sel = f'device.attributes["{DRIVER}"].fw.includes(semver("2.0.0"))'
    assert run(state(ON, rslice("s", devs)), claim("c", request("r", selectors=[sel]))).ok
    bad = [with_attrs("gpu-0", fw=DeviceAttribute(versions=("v1",)))]
    with pytest.raises(BadInput, match="semver"):
        from draplan.api.codec import decode

        decode(encode(rslice("s", bad)))


def match(attribute: str, *requests: str) -> DeviceConstraint:
    return DeviceConstraint(requests=requests, match_attribute=attribute)


def distinct(attribute: str, *requests: str) -> DeviceConstraint:
    return DeviceConstraint(requests=requests, distinct_attribute=attribute)


def test_match_attribute_needs_an_element_common_to_every_device() -> None:
    # A CPU near two PCIe roots goes with a GPU on either; a scalar is a set of one.
    devs = [
        with_attrs("cpu-0", kind=DeviceAttribute(string="cpu"), root=strings("pci0", "pci1")),
        with_attrs(
            "gpu-0", kind=DeviceAttribute(string="gpu"), root=DeviceAttribute(string="pci2")
        ),
        with_attrs(
            "gpu-1", kind=DeviceAttribute(string="gpu"), root=DeviceAttribute(string="pci1")
        ),
    ]
    st = state(ON, rslice("s", devs))
    cpu = request("cpu", selectors=[f'device.attributes["{DRIVER}"].kind == "cpu"'])
    gpu = request("gpu", selectors=[f'device.attributes["{DRIVER}"].kind == "gpu"'])
    got = run(st, claim("c", cpu, gpu, constraints=[match(PCIE_ROOT)]))
    assert picked(got) == ["cpu-0", "gpu-1"]


def test_match_attribute_intersects_over_all_devices() -> None:
    # Pairwise overlaps are not enough: {a,b} ∩ {b,c} ∩ {c} is empty.
    devs = [
        with_attrs("d0", root=strings("a", "b")),
        with_attrs("d1", root=strings("b", "c")),
        with_attrs("d2", root=strings("c")),
    ]
    st = state(ON, rslice("s", devs))
    assert code(run(st, claim("c", request("r", 3), constraints=[match(PCIE_ROOT)])))
    # Two of them do share an element; draplan must not group devices by their whole value.
    assert picked(run(st, claim("c", request("r", 2), constraints=[match(PCIE_ROOT)]))) == [
        "d0",
        "d1",
    ]


def test_distinct_attribute_wants_pairwise_disjoint_sets() -> None:
    devs = [
        with_attrs("d0", numa=ints(0, 1)),
        with_attrs("d1", numa=ints(1, 2)),
        with_attrs("d2", numa=ints(2, 3)),
    ]
    st = state(ON, rslice("s", devs))
    got = run(st, claim("c", request("r", 2), constraints=[distinct(f"{DRIVER}/numa")]))
    assert picked(got) == ["d0", "d2"]
    assert code(run(st, claim("c", request("r", 3), constraints=[distinct(f"{DRIVER}/numa")])))


@pytest.mark.parametrize("order", ["tight", "first-fit"])
def test_scalars_keep_their_meaning_with_the_gate_on(order: str) -> None:
    devs = [device(f"gpu-{i}", pcie_root=f"pci{i // 2}") for i in range(4)]
    for gates in (DEFAULT, ON):
        st = state(gates, rslice("s", devs))
        got = run(st, claim("c", request("r", 2), constraints=[match(PCIE_ROOT)]), order=order)
        assert picked(got) == ["gpu-0", "gpu-1"]
        got = run(st, claim("c", request("r", 2), constraints=[distinct(PCIE_ROOT)]), order=order)
        assert len({int(d[-1]) // 2 for d in picked(got)}) == 2


def test_simulate_admits_a_jobs_objects_under_the_command_lines_gates(
    run_cli: Any, tmp_path: Path
) -> None:
    # A job's claim uses includes(): refused with the gate at its default, accepted (and the
    # job run) with it on, as the cluster's own objects are.
    sel = f'device.attributes["{DRIVER}"].model.includes("a100")'
    job_claim = encode(claim("c", request("r", selectors=[sel])))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}],
        },
    }
    scenario = {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "s"},
        "spec": {
            "workload": {
                "jobs": [
                    {
                        "name": "j",
                        "arrivalSeconds": 0,
                        "durationSeconds": 5,
                        "objects": [job_claim, pod],
                    }
                ]
            }
        },
    }
    host = encode(node())
    host["status"] = {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}
    cluster = [host, encode(device_class())]
    cluster.append(encode(rslice("s", [with_attrs("gpu-0", model=DeviceAttribute(string="a100"))])))
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump_all([*cluster, scenario]))
    off = run_cli("simulate", "-f", str(path), "--policies", "dra")
    assert off.code == 2 and len(off.err.strip().splitlines()) == 1
    assert "spec.workload.jobs[0].objects[0]" in off.err and "includes" in off.err
    on = run_cli(
        "simulate",
        "-f",
        str(path),
        "--policies",
        "dra",
        "-o",
        "json",
        "--feature-gates",
        "DRAListTypeAttributes=true",
    )
    assert on.code == 0, on.err
    assert on.json()["results"][0]["totals"]["jobsStarted"] == 1
