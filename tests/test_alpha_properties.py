"""Property tests of the 1.37 alpha allocation rules against brute force: list-typed
attributes under matchAttribute / distinctAttribute (KEP-5491) and compatibility groups on a
counter set (DRADeviceCompatibilityGroups). The enumerator tries every assignment of distinct
devices to the requests and checks the rule as the API documents it, sharing no code with the
search."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draplan.api.features import feature_gates
from draplan.api.quantity import Quantity
from draplan.api.resource_v1 import (
    Counter,
    Device,
    DeviceAttribute,
    DeviceConstraint,
    DeviceCounterConsumption,
)
from draplan.cluster.state import ClusterState
from test_allocator import (
    DRIVER,
    allocated,
    claim,
    counter_set,
    device_class,
    node,
    request,
    rslice,
    run,
)

GATES = feature_gates("1.37", "DRAListTypeAttributes=true,DRADeviceCompatibilityGroups=true")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

values = st.lists(st.integers(0, 3), min_size=1, max_size=3)
scalar_or_list = st.tuples(st.booleans(), values)  # (as a scalar, its values)


def attribute(scalar: bool, items: list[int]) -> DeviceAttribute:
    return DeviceAttribute(int_=items[0]) if scalar else DeviceAttribute(ints=tuple(items))


def as_set(scalar: bool, items: list[int]) -> frozenset[int]:
    return frozenset(items[:1] if scalar else items)


def assignments(n_devices: int, counts: Sequence[int]) -> list[tuple[int, ...]]:
    """Every way to give each request its count of distinct devices (as one flat tuple)."""
    return list(itertools.permutations(range(n_devices), sum(counts)))


@SETTINGS
@given(
    devices=st.lists(scalar_or_list, min_size=1, max_size=6),
    counts=st.lists(st.integers(1, 2), min_size=1, max_size=2),
    match=st.booleans(),
    order=st.sampled_from(["tight", "first-fit"]),
)
def test_list_constraints_agree_with_brute_force(
    devices: list[tuple[bool, list[int]]], counts: list[int], match: bool, order: str
) -> None:
    devs = [Device(name=f"d{i}", attributes={"numa": attribute(*d)}) for i, d in enumerate(devices)]
    state = ClusterState.from_objects([node(), device_class(), rslice("s", devs)], GATES)
    attr = f"{DRIVER}/numa"
    con = (
        DeviceConstraint(match_attribute=attr)
        if match
        else DeviceConstraint(distinct_attribute=attr)
    )
    reqs = [request(f"r{i}", c) for i, c in enumerate(counts)]
    outcome = run(state, claim("c", *reqs, constraints=[con]), order=order)
    sets = [as_set(*d) for d in devices]

    def ok(chosen: tuple[int, ...]) -> bool:
        mine = [sets[i] for i in chosen]
        if match:
            return bool(frozenset.intersection(*mine))
        return all(not (a & b) for a, b in itertools.combinations(mine, 2))

    assert outcome.ok == any(ok(a) for a in assignments(len(devs), counts))


@SETTINGS
@given(
    groups=st.lists(
        st.lists(st.sampled_from("xyz"), max_size=2, unique=True), min_size=1, max_size=6
    ),
    held=st.lists(st.booleans(), max_size=6),
    count=st.integers(1, 3),
)
def test_compatibility_groups_agree_with_brute_force(
    groups: list[list[str]], held: list[bool], count: int
) -> None:
    one = Quantity.parse("1")

    def part(i: int, g: list[str]) -> Device:
        use = DeviceCounterConsumption(
            counter_set="gpu", counters={"mem": Counter(value=one)}, compatibility_groups=tuple(g)
        )
        return Device(name=f"d{i}", consumes_counters=(use,))

    devs = [part(i, g) for i, g in enumerate(groups)]
    taken = [i for i, h in enumerate(held[: len(devs)]) if h]
    pre = [allocated(f"pre{i}", f"d{i}") for i in taken]
    counters = rslice("counters", counters=[counter_set("gpu", mem=8)], count=2)
    objects = [node(), device_class(), counters, rslice("devices", devs, count=2), *pre]
    state = ClusterState.from_objects(objects, GATES)
    outcome = run(state, claim("c", request("r", count)))
    sets = [frozenset(g) for g in groups]
    held_sets = [sets[i] for i in taken]
    # Devices the input already holds count with the ones chosen (even if already at odds).
    free = [i for i in range(len(devs)) if i not in taken]

    def compatible(members: list[frozenset[str]]) -> bool:
        if not members:
            return True
        if any(not m for m in members):
            return all(not m for m in members)
        return bool(frozenset.intersection(*members))

    want = any(
        compatible([*held_sets, *(sets[i] for i in chosen)])
        for chosen in itertools.combinations(free, count)
    )
    assert outcome.ok == want
