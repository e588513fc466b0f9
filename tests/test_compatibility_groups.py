"""DRADeviceCompatibilityGroups (alpha, off in 1.37): `consumesCounters[].compatibilityGroups`.
Devices drawing on one counter set are allocated together only if their groups share one; a
device with no groups goes only with others that have none; other counter sets never matter."""

from __future__ import annotations

import pytest

from draplan.allocator.compatibility import compatible
from draplan.api.codec import decode, encode
from draplan.api.errors import BadInput
from draplan.api.features import DEFAULT, FeatureGates, feature_gates
from draplan.api.meta import KubeStruct
from draplan.api.quantity import Quantity
from draplan.api.resource_v1 import Counter, Device, DeviceCounterConsumption
from draplan.cluster.state import ClusterState
from test_allocator import (
    allocated,
    claim,
    code,
    counter_set,
    device_class,
    node,
    picked,
    request,
    rslice,
    run,
)

ON = feature_gates("1.37", "DRADeviceCompatibilityGroups=true")


def part(name: str, *groups: str, cset: str = "gpu-0") -> Device:
    use = DeviceCounterConsumption(
        counter_set=cset,
        counters={"mem": Counter(value=Quantity.parse("1"))},
        compatibility_groups=groups,
    )
    return Device(name=name, consumes_counters=(use,))


def state(gates: FeatureGates, devices: list[Device], *objects: KubeStruct) -> ClusterState:
    counters = rslice(
        "counters", counters=[counter_set("gpu-0", mem=8), counter_set("gpu-1", mem=8)], count=2
    )
    devs = rslice("devices", devices, count=2)
    return ClusterState.from_objects([node(), device_class(), counters, devs, *objects], gates)


def test_the_rule() -> None:
    x, y, xy, none = frozenset("x"), frozenset("y"), frozenset("xy"), frozenset()
    assert compatible([x, xy]) and compatible([none, none]) and compatible([])
    assert not compatible([x, y]) and not compatible([x, xy, y])
    assert not compatible([none, x]) and not compatible([x, none])


@pytest.mark.parametrize("order", ["tight", "first-fit"])
def test_devices_that_share_no_group_are_not_allocated_together(order: str) -> None:
    devs = [part("a", "x"), part("c", "y"), part("b", "x", "y")]
    st = state(ON, devs)
    got = run(st, claim("c", request("r", 2)), order=order)
    assert sorted(picked(got)) in (["a", "b"], ["b", "c"])
    # All three share no group: {x} ∩ {y} ∩ {x, y} is empty.
    assert code(run(st, claim("c", request("r", 3)), order=order))


def test_no_groups_only_goes_with_no_groups() -> None:
    devs = [part("a", "x"), part("d"), part("e")]
    st = state(ON, devs)
    assert sorted(picked(run(st, claim("c", request("r", 2))))) == ["d", "e"]
    # With "a" already allocated on the set, only grouped devices may join it.
    held = state(ON, devs, allocated("held", "a", pool="node-1"))
    assert code(run(held, claim("c", request("r", 1))))


def test_other_counter_sets_are_never_compared() -> None:
    devs = [part("a", "x"), part("b", "y", cset="gpu-1")]
    assert sorted(picked(run(state(ON, devs), claim("c", request("r", 2))))) == ["a", "b"]


def test_with_the_gate_off_the_field_is_an_error() -> None:
    with pytest.raises(BadInput, match="DRADeviceCompatibilityGroups") as err:
        state(DEFAULT, [part("a", "x")])
    assert err.value.path == "spec.devices[0].consumesCounters[0].compatibilityGroups"
    assert picked(run(state(DEFAULT, [part("a"), part("b")]), claim("c", request("r", 2))))


@pytest.mark.parametrize(
    ("groups", "message"),
    [(("x", "y", "z"), "at most 2"), (("x", "x"), "duplicate value 'x'")],
)
def test_validation(groups: tuple[str, ...], message: str) -> None:
    doc = encode(rslice("devices", [part("a", *groups)]))
    with pytest.raises(BadInput, match=message):
        decode(doc)
