"""Focused tests of the allocator (dra-semantics §3), built from small typed objects."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.allocator import AllocationError, Options, Outcome, allocate
from draplan.allocator.validate import validate_allocation
from draplan.api.core_v1 import Node
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.api.quantity import Quantity
from draplan.api.resource_v1 import (
    AllocationResult,
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    CapacityRequirements,
    CELDeviceSelector,
    Counter,
    CounterSet,
    Device,
    DeviceAllocationResult,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClaim,
    DeviceClaimConfiguration,
    DeviceClass,
    DeviceClassConfiguration,
    DeviceClassSpec,
    DeviceConstraint,
    DeviceCounterConsumption,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSelector,
    DeviceSubRequest,
    DeviceTaint,
    DeviceTaintRule,
    DeviceTaintRuleSpec,
    DeviceTaintSelector,
    DeviceToleration,
    ExactDeviceRequest,
    OpaqueDeviceConfiguration,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimStatus,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from draplan.cel import clear_caches
from draplan.cluster.state import ClusterState

DRIVER = "gpu.example.com"
NODE = "node-1"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NUMA = f"{DRIVER}/numa"


@pytest.fixture(autouse=True)
def _fresh_cel_caches() -> Iterator[None]:
    # Selector results are cached per device ID, and these tests reuse device IDs.
    clear_caches()
    yield
    clear_caches()


# --- builders ------------------------------------------------------------------------------


def q(text: str | int) -> Quantity:
    return Quantity.parse(str(text))


def node(name: str = NODE) -> Node:
    return Node(metadata=ObjectMeta(name=name, labels={"kubernetes.io/hostname": name}))


def attr(value: int | str | bool) -> DeviceAttribute:
    if isinstance(value, bool):
        return DeviceAttribute(bool_=value)
    if isinstance(value, int):
        return DeviceAttribute(int_=value)
    return DeviceAttribute(string=value)


def device(
    name: str,
    *,
    multi: bool = False,
    capacity: dict[str, DeviceCapacity] | None = None,
    consumes: dict[str, dict[str, int | str]] | None = None,
    taints: Iterable[DeviceTaint] = (),
    **attributes: int | str | bool,
) -> Device:
    """A device; attribute keyword `pcie_root` publishes resource.kubernetes.io/pcieRoot."""
    attrs = {(PCIE_ROOT if k == "pcie_root" else k): attr(v) for k, v in attributes.items()}
    return Device(
        name=name,
        attributes=attrs,
        capacity=capacity or {},
        consumes_counters=tuple(
            DeviceCounterConsumption(
                counter_set=cs, counters={c: Counter(value=q(v)) for c, v in counters.items()}
            )
            for cs, counters in (consumes or {}).items()
        ),
        taints=tuple(taints),
        allow_multiple_allocations=True if multi else None,
    )


def capacity(
    value: str,
    *,
    default: str | None = None,
    minimum: str | None = None,
    step: str | None = None,
    maximum: str | None = None,
    values: Iterable[str] = (),
) -> DeviceCapacity:
    policy = None
    if default or minimum or values:
        rng = None
        if minimum:
            rng = CapacityRequestPolicyRange(
                min=q(minimum),
                step=q(step) if step else None,
                max=q(maximum) if maximum else None,
            )
        policy = CapacityRequestPolicy(
            default=q(default) if default else None,
            valid_values=tuple(q(v) for v in values),
            valid_range=rng,
        )
    return DeviceCapacity(value=q(value), request_policy=policy)


def rslice(
    name: str,
    devices: Iterable[Device] = (),
    *,
    pool: str = NODE,
    count: int = 1,
    counters: Iterable[CounterSet] = (),
    node_name: str = NODE,
) -> ResourceSlice:
    return ResourceSlice(
        metadata=ObjectMeta(name=name),
        spec=ResourceSliceSpec(
            driver=DRIVER,
            pool=ResourcePool(name=pool, generation=1, resource_slice_count=count),
            node_name=node_name,
            devices=tuple(devices),
            shared_counters=tuple(counters),
        ),
    )


def counter_set(name: str, **counters: int | str) -> CounterSet:
    return CounterSet(name=name, counters={c: Counter(value=q(v)) for c, v in counters.items()})


def device_class(name: str = "gpu", *expressions: str) -> DeviceClass:
    exprs = expressions or (f'device.driver == "{DRIVER}"',)
    return DeviceClass(
        metadata=ObjectMeta(name=name),
        spec=DeviceClassSpec(
            selectors=tuple(DeviceSelector(cel=CELDeviceSelector(expression=e)) for e in exprs)
        ),
    )


def _request_fields(
    count: int,
    cls: str,
    selectors: Iterable[str],
    all_devices: bool,
    tolerations: Iterable[DeviceToleration],
    cap: dict[str, str] | None,
) -> dict[str, object]:
    return {
        "device_class_name": cls,
        "selectors": tuple(DeviceSelector(cel=CELDeviceSelector(expression=e)) for e in selectors),
        "allocation_mode": "All" if all_devices else "ExactCount",
        "count": 0 if all_devices else count,
        "tolerations": tuple(tolerations),
        "capacity": (
            CapacityRequirements(requests={k: q(v) for k, v in cap.items()}) if cap else None
        ),
    }


def request(
    name: str,
    count: int = 1,
    *,
    cls: str = "gpu",
    selectors: Iterable[str] = (),
    all_devices: bool = False,
    admin: bool = False,
    tolerations: Iterable[DeviceToleration] = (),
    cap: dict[str, str] | None = None,
) -> DeviceRequest:
    fields = _request_fields(count, cls, selectors, all_devices, tolerations, cap)
    exact = ExactDeviceRequest(admin_access=True if admin else None, **fields)  # type: ignore[arg-type]
    return DeviceRequest(name=name, exactly=exact)


def sub(
    name: str,
    count: int = 1,
    *,
    cls: str = "gpu",
    selectors: Iterable[str] = (),
    all_devices: bool = False,
    cap: dict[str, str] | None = None,
) -> DeviceSubRequest:
    fields = _request_fields(count, cls, selectors, all_devices, (), cap)
    return DeviceSubRequest(name=name, **fields)  # type: ignore[arg-type]


def first_available(name: str, *subs: DeviceSubRequest) -> DeviceRequest:
    return DeviceRequest(name=name, first_available=subs)


def match(attribute: str, *requests: str) -> DeviceConstraint:
    return DeviceConstraint(match_attribute=attribute, requests=requests)


def claim(
    name: str, *requests: DeviceRequest, constraints: Iterable[DeviceConstraint] = ()
) -> ResourceClaim:
    return ResourceClaim(
        metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"),
        spec=ResourceClaimSpec(
            devices=DeviceClaim(requests=requests, constraints=tuple(constraints))
        ),
    )


def allocated(name: str, *devices: str, pool: str = NODE, admin: bool = False) -> ResourceClaim:
    """A claim already allocated (in the input) to dedicated devices of `pool`."""
    results = tuple(
        DeviceRequestAllocationResult(
            request="req", driver=DRIVER, pool=pool, device=d, admin_access=True if admin else None
        )
        for d in devices
    )
    alloc = AllocationResult(devices=DeviceAllocationResult(results=results))
    return msgspec.structs.replace(claim(name), status=ResourceClaimStatus(allocation=alloc))


def cluster(*objects: KubeStruct) -> ClusterState:
    have_class = any(isinstance(o, DeviceClass) for o in objects)
    extra: list[KubeStruct] = [] if have_class else [device_class()]
    return ClusterState.from_objects([node(), *extra, *objects])


def run(
    state: ClusterState, *claims: ResourceClaim, order: str = "tight", **options: object
) -> Outcome:
    opts = Options(device_order=order, **options)  # type: ignore[arg-type]
    outcome = allocate(state, node(), list(claims), opts)
    if outcome.ok:
        # The independent checker accepts it (problems already in the input excepted).
        before = validate_allocation(state, node(), [])
        after = validate_allocation(state, node(), list(outcome.claims))
        assert [p for p in after if p not in before] == []
    return outcome


def results(outcome: Outcome, index: int = 0) -> list[DeviceRequestAllocationResult]:
    assert outcome.ok, outcome.reason
    alloc = outcome.claims[index].status.allocation
    assert alloc is not None
    return list(alloc.devices.results)


def picked(outcome: Outcome, index: int = 0) -> list[str]:
    return [r.device for r in results(outcome, index)]


def code(outcome: Outcome) -> str:
    assert outcome.reason is not None, "expected a failure"
    return outcome.reason.code


# --- matchAttribute ------------------------------------------------------------------------


def two_socket_node() -> ResourceSlice:
    """8 GPUs: socket 0 has roots pci0 (gpu-0, gpu-1) and pci1 (gpu-2, gpu-3); socket 1 has
    one root pci2 with gpu-4 .. gpu-7."""
    roots = ["pci0", "pci0", "pci1", "pci1", "pci2", "pci2", "pci2", "pci2"]
    return rslice(
        "gpus",
        [
            device(f"gpu-{i}", pcie_root=root, numa=0 if i < 4 else 1)
            for i, root in enumerate(roots)
        ],
    )


@pytest.mark.parametrize("order", ["tight", "first-fit"])
def test_match_attribute_takes_four_gpus_on_one_pcie_root(order: str) -> None:
    state = cluster(two_socket_node())
    c = claim("train", request("gpus", 4), constraints=[match(PCIE_ROOT)])
    outcome = run(state, c, order=order)
    assert sorted(picked(outcome)) == ["gpu-4", "gpu-5", "gpu-6", "gpu-7"]
    alloc = outcome.claims[0].status.allocation
    assert alloc is not None and alloc.node_selector is not None
    (term,) = alloc.node_selector.node_selector_terms
    assert [(r.key, r.operator, r.values) for r in term.match_fields] == [
        ("metadata.name", "In", (NODE,))
    ]


def test_match_attribute_two_gpus_share_a_root_and_numa() -> None:
    state = cluster(two_socket_node())
    c = claim(
        "pair",
        request("a", 1),
        request("b", 1),
        constraints=[match(PCIE_ROOT), match(NUMA)],
    )
    outcome = run(state, c, order="first-fit")
    devs = picked(outcome)
    roots = {"gpu-0": 0, "gpu-1": 0, "gpu-2": 1, "gpu-3": 1}
    assert len(devs) == 2 and all(d in roots for d in devs)
    assert roots[devs[0]] == roots[devs[1]]


def test_match_attribute_fails_when_a_device_of_the_only_group_is_in_use() -> None:
    state = cluster(two_socket_node(), allocated("other", "gpu-5"))
    c = claim("train", request("gpus", 4), constraints=[match(PCIE_ROOT)])
    outcome = run(state, c)
    assert code(outcome) == "ConstraintUnsatisfiable"


def test_match_attribute_device_without_the_attribute_is_not_eligible() -> None:
    state = cluster(rslice("s", [device("a", numa=0), device("b"), device("c", numa=0)]))
    outcome = run(state, claim("c", request("r", 2), constraints=[match(NUMA)]))
    assert sorted(picked(outcome)) == ["a", "c"]
    outcome = run(state, claim("c", request("r", 3), constraints=[match(NUMA)]))
    assert not outcome.ok


def test_match_attribute_compares_type_as_well_as_value() -> None:
    state = cluster(rslice("s", [device("a", numa=1), device("b", numa="1")]))
    outcome = run(state, claim("c", request("r", 2), constraints=[match(NUMA)]))
    assert not outcome.ok


def test_distinct_attribute_is_pairwise_across_requests() -> None:
    devs = [device("a", numa=0), device("b", numa=0), device("c", numa=1)]
    state = cluster(rslice("s", devs))
    distinct = DeviceConstraint(distinct_attribute=NUMA)
    outcome = run(state, claim("c", request("x", 1), request("y", 1), constraints=[distinct]))
    assert sorted(picked(outcome)) in (["a", "c"], ["b", "c"])
    three = claim("c", request("x", 3), constraints=[distinct])
    assert not run(state, three).ok


# --- infeasible requests end quickly -------------------------------------------------------


def test_count_six_over_five_devices_is_insufficient_devices_quickly() -> None:
    state = cluster(rslice("s", [device(f"gpu-{i}") for i in range(5)]))
    start = time.perf_counter()
    outcome = run(state, claim("big", request("gpus", 6)))
    assert code(outcome) == "InsufficientDevices"
    assert outcome.steps < 10
    assert time.perf_counter() - start < 1.0
    row = outcome.reason.evidence["requests"][0] if outcome.reason else {}
    assert row["needed"] == 6 and row["matching"] == 5


def test_count_eight_over_groups_of_seven_is_constraint_unsatisfiable_in_few_steps() -> None:
    # 64 devices in 10 NUMA groups of at most 7: no group holds 8, whatever the order.
    devs = [device(f"gpu-{i:02d}", numa=i // 7) for i in range(64)]
    state = cluster(rslice("s", devs))
    for order in ("tight", "first-fit"):
        start = time.perf_counter()
        outcome = run(state, claim("c", request("gpus", 8), constraints=[match(NUMA)]), order=order)
        assert code(outcome) == "ConstraintUnsatisfiable"
        assert outcome.steps < 2000
        assert time.perf_counter() - start < 2.0
    # Split over two requests, the group must hold both: the memory of failed sub-states
    # keeps this small too (about 600 steps).
    split = claim("c", request("a", 4), request("b", 4), constraints=[match(NUMA)])
    outcome = run(state, split)
    assert code(outcome) == "ConstraintUnsatisfiable"
    assert outcome.steps < 2000


def test_groups_are_tried_until_one_fits_across_claims() -> None:
    # claim a needs 3 matching GPUs; claim b then needs 3 on the other root: both fit only if a
    # avoids the group b needs (b's selector excludes numa 1).
    devs = [device(f"g{i}", numa=i // 3) for i in range(6)]
    state = cluster(rslice("s", devs))
    a = claim("a", request("r", 3), constraints=[match(NUMA)])
    b = claim(
        "b",
        request("r", 3, selectors=[f'device.attributes["{DRIVER}"].numa == 0']),
        constraints=[match(NUMA)],
    )
    for order in ("tight", "first-fit"):
        outcome = run(state, a, b, order=order)
        assert sorted(picked(outcome, 0)) == ["g3", "g4", "g5"]
        assert sorted(picked(outcome, 1)) == ["g0", "g1", "g2"]


@pytest.mark.parametrize("order", ["tight", "first-fit"])
def test_memory_of_failed_states_keeps_constraint_bindings_apart(order: str) -> None:
    # x and z must share a NUMA node; z can only be C (numa 1). x=A,y=B fails at z, and
    # x=B,y=A reaches z with the same busy devices {A, B} but x bound to numa 1: a memory of
    # failed sub-states keyed on busy devices alone would wrongly prune the only solution.
    devs = [
        device("A", numa=0, tag="a"),
        device("B", numa=1, tag="b"),
        device("C", numa=1, tag="c"),
    ]
    state = cluster(rslice("s", devs))
    only_c = f'device.attributes["{DRIVER}"].tag == "c"'
    not_c = f'device.attributes["{DRIVER}"].tag != "c"'
    c = claim(
        "c",
        request("x", 1),
        request("y", 1, selectors=[not_c]),
        request("z", 1, selectors=[only_c]),
        constraints=[match(NUMA, "x", "z")],
    )
    res = results(run(state, c, order=order))
    assert {r.request: r.device for r in res} == {"x": "B", "y": "A", "z": "C"}


# --- firstAvailable ------------------------------------------------------------------------


def test_first_available_takes_the_first_subrequest_that_fits() -> None:
    state = cluster(rslice("s", [device(f"gpu-{i}") for i in range(3)]))
    c = claim("c", first_available("gpus", sub("four", 4), sub("two", 2), sub("one", 1)))
    res = results(run(state, c))
    assert [r.request for r in res] == ["gpus/two", "gpus/two"]


def test_first_available_backtracks_so_that_later_requests_fit() -> None:
    # r0/big alone would fit (2 of 3), but then r1 (2 devices) cannot: r0 must take r0/small.
    state = cluster(rslice("s", [device(f"gpu-{i}") for i in range(3)]))
    c = claim("c", first_available("r0", sub("big", 2), sub("small", 1)), request("r1", 2))
    res = results(run(state, c))
    assert sorted(r.request for r in res) == ["r0/small", "r1", "r1"]


def test_first_available_backtracks_across_claims() -> None:
    state = cluster(rslice("s", [device(f"gpu-{i}") for i in range(3)]))
    a = claim("a", first_available("r", sub("big", 2), sub("small", 1)))
    b = claim("b", request("r", 2))
    outcome = run(state, a, b)
    assert [r.request for r in results(outcome, 0)] == ["r/small"]
    assert len(results(outcome, 1)) == 2


def test_first_available_with_all_devices_then_fallback() -> None:
    devs = [device("gpu-0"), device("gpu-1")]
    state = cluster(rslice("s", devs), allocated("other", "gpu-1"))
    c = claim("c", first_available("r", sub("all", all_devices=True), sub("one", 1)))
    assert [r.request for r in results(run(state, c))] == ["r/one"]
    free = cluster(rslice("s", devs))
    assert [r.request for r in results(run(free, c))] == ["r/all", "r/all"]


def test_constraint_naming_a_parent_request_covers_its_subrequests() -> None:
    devs = [device("a", numa=0), device("b", numa=1), device("c", numa=1)]
    state = cluster(rslice("s", devs))
    c = claim(
        "c",
        request("x", 1, selectors=[f'device.attributes["{DRIVER}"].numa == 1']),
        first_available("y", sub("one", 1)),
        constraints=[match(NUMA, "x", "y")],
    )
    res = results(run(state, c, order="first-fit"))
    assert {r.device for r in res} == {"b", "c"}
    assert sorted(r.request for r in res) == ["x", "y/one"]


# --- partitionable devices (shared counters) -----------------------------------------------


def mig_cluster(*extra: KubeStruct) -> ClusterState:
    """One GPU with 8 memory slices: the full GPU, and three 4-slice MIG partitions where
    mig-b overlaps both mig-a and mig-c."""

    def slices(*ids: int) -> dict[str, dict[str, int | str]]:
        return {"gpu-0": {f"slice-{i}": 1 for i in ids}}

    devs = [
        device("gpu-0", type="gpu", consumes=slices(*range(8))),
        device("gpu-0-mig-a", type="mig", part="a", consumes=slices(0, 1, 2, 3)),
        device("gpu-0-mig-b", type="mig", part="b", consumes=slices(2, 3, 4, 5)),
        device("gpu-0-mig-c", type="mig", part="c", consumes=slices(4, 5, 6, 7)),
    ]
    counters = counter_set("gpu-0", **{f"slice-{i}": 1 for i in range(8)})
    return cluster(
        rslice("counters", counters=[counters], count=2),
        rslice("devices", devs, count=2),
        *extra,
    )


MIG = f'device.attributes["{DRIVER}"].type == "mig"'


def test_overlapping_mig_partitions_exclude_each_other() -> None:
    state = mig_cluster()
    outcome = run(state, claim("c", request("mig", 2, selectors=[MIG])))
    assert sorted(picked(outcome)) == ["gpu-0-mig-a", "gpu-0-mig-c"]
    three = run(state, claim("c", request("mig", 3, selectors=[MIG])))
    assert not three.ok


def test_allocated_partition_blocks_the_overlapping_ones_and_the_full_gpu() -> None:
    state = mig_cluster(allocated("other", "gpu-0-mig-b"))
    assert code(run(state, claim("c", request("mig", 1, selectors=[MIG])))) == "CountersExhausted"
    full = f'device.attributes["{DRIVER}"].type == "gpu"'
    assert not run(state, claim("c", request("gpu", 1, selectors=[full]))).ok


def test_full_gpu_and_a_partition_never_share_the_counters() -> None:
    state = mig_cluster()
    c = claim("c", request("full", 1, selectors=[f'device.attributes["{DRIVER}"].type == "gpu"']))
    m = claim("m", request("mig", 1, selectors=[MIG]))
    assert run(state, c).ok and run(state, m).ok
    outcome = run(state, c, m)
    assert code(outcome) == "CountersExhausted"


def test_pool_counters_released_when_a_rejected_branch_backtracks() -> None:
    # Claim a may take mig-b or mig-c and tries mig-b first; claim b needs mig-a, which
    # overlaps mig-b. The search must give mig-b's counters back when it backtracks to mig-c
    # (upstream 1.35 leaked counters of rejected devices, kubernetes#140436).
    state = mig_cluster()
    not_a = f'{MIG} && device.attributes["{DRIVER}"].part != "a"'
    only_a = f'{MIG} && device.attributes["{DRIVER}"].part == "a"'
    a = claim("a", request("r", 1, selectors=[not_a]))
    b = claim("b", request("r", 1, selectors=[only_a]))
    for order in ("tight", "first-fit"):
        outcome = run(state, a, b, order=order)
        assert picked(outcome, 0) == ["gpu-0-mig-c"]
        assert picked(outcome, 1) == ["gpu-0-mig-a"]
    three = claim("b", request("r", 2, selectors=[MIG]))
    assert code(run(state, a, three)) == "CountersExhausted"  # three partitions, two fit


def test_over_consumed_pool_admits_no_counter_consuming_device() -> None:
    # The published counters shrank below what allocated devices already consume (sm: 2 of
    # 1). Upstream checks every counter of the pool, so even a device that consumes only
    # `mem` cannot be allocated; a device without counters still can.
    devs = [
        device("p0", consumes={"gpu-0": {"sm": 1}}),
        device("p1", consumes={"gpu-0": {"sm": 1}}),
        device("p2", consumes={"gpu-0": {"mem": 1}}),
        device("plain"),
    ]
    state = cluster(
        rslice("counters", counters=[counter_set("gpu-0", mem=8, sm=1)], count=2),
        rslice("devices", devs, count=2),
        allocated("old", "p0", "p1"),
    )
    assert picked(run(state, claim("c", request("r", 1)), order="first-fit")) == ["plain"]
    assert not run(state, claim("c", request("r", 2))).ok


# --- consumable capacity -------------------------------------------------------------------


def nic(
    *,
    default: str | None = None,
    minimum: str | None = None,
    step: str | None = None,
    maximum: str | None = None,
    values: Iterable[str] = (),
) -> ResourceSlice:
    """One multi-allocatable NIC with 10Gi of `bandwidth` and the given request policy."""
    cap = capacity(
        "10Gi", default=default, minimum=minimum, step=step, maximum=maximum, values=values
    )
    return rslice("nics", [device("nic-0", multi=True, capacity={"bandwidth": cap})])


def test_capacity_rounded_up_to_the_valid_range_step() -> None:
    state = cluster(nic(default="1Gi", minimum="1Gi", step="2Gi", maximum="8Gi"))
    outcome = run(state, claim("c", request("r", 1, cap={"bandwidth": "2Gi"})))
    (res,) = results(outcome)
    assert res.device == "nic-0"
    assert res.consumed_capacity == {"bandwidth": q("3Gi")}  # 1Gi + ceil(1Gi/2Gi)*2Gi
    assert res.share_id is not None and uuid.UUID(res.share_id)


def test_capacity_default_used_when_nothing_is_requested() -> None:
    state = cluster(nic(default="2Gi", minimum="1Gi", step="1Gi", maximum="8Gi"))
    (res,) = results(run(state, claim("c", request("r", 1))))
    assert res.consumed_capacity == {"bandwidth": q("2Gi")}


def test_capacity_whole_value_used_without_a_policy() -> None:
    state = cluster(
        rslice("s", [device("nic-0", multi=True, capacity={"bandwidth": capacity("10Gi")})])
    )
    (res,) = results(run(state, claim("c", request("r", 1))))
    assert res.consumed_capacity == {"bandwidth": q("10Gi")}
    assert not run(state, claim("a", request("r", 1)), claim("b", request("r", 1))).ok


def test_capacity_above_the_range_maximum_is_not_eligible() -> None:
    state = cluster(nic(minimum="1Gi", step="1Gi", maximum="4Gi"))
    outcome = run(state, claim("c", request("r", 1, cap={"bandwidth": "5Gi"})))
    assert code(outcome) == "CapacityExhausted"


def test_capacity_rounded_up_to_the_next_valid_value() -> None:
    state = cluster(nic(values=("1Gi", "4Gi", "8Gi")))
    (res,) = results(run(state, claim("c", request("r", 1, cap={"bandwidth": "2Gi"}))))
    assert res.consumed_capacity == {"bandwidth": q("4Gi")}
    assert not run(state, claim("c", request("r", 1, cap={"bandwidth": "9Gi"}))).ok


def test_capacity_request_for_a_capacity_the_device_lacks_is_not_eligible() -> None:
    state = cluster(nic(minimum="1Gi"))
    outcome = run(state, claim("c", request("r", 1, cap={"memory": "1Gi"})))
    assert not outcome.ok


def test_shared_device_serves_claims_until_its_capacity_is_used() -> None:
    state = cluster(nic(minimum="1Gi", step="1Gi"))
    claims = [claim(f"c{i}", request("r", 1, cap={"bandwidth": "3Gi"})) for i in range(4)]
    outcome = run(state, *claims[:3])
    shares = [results(outcome, i)[0] for i in range(3)]
    assert {r.device for r in shares} == {"nic-0"}
    assert len({r.share_id for r in shares}) == 3
    assert all(r.consumed_capacity == {"bandwidth": q("3Gi")} for r in shares)
    assert not run(state, *claims).ok  # 4 x 3Gi > 10Gi


def test_capacity_exhausted_jointly_is_reported_as_capacity() -> None:
    state = cluster(nic(minimum="1Gi", step="1Gi"))
    claims = [claim(f"c{i}", request("r", 1, cap={"bandwidth": "3Gi"})) for i in range(4)]
    assert code(run(state, *claims)) == "CapacityExhausted"


def test_shared_device_counts_capacity_already_allocated() -> None:
    share = DeviceRequestAllocationResult(
        request="r",
        driver=DRIVER,
        pool=NODE,
        device="nic-0",
        share_id="4a0d3ae7-63c3-4e1e-9d8f-5b3ad0b7c1a1",
        consumed_capacity={"bandwidth": q("8Gi")},
    )
    alloc = AllocationResult(devices=DeviceAllocationResult(results=(share,)))
    other = msgspec.structs.replace(claim("other"), status=ResourceClaimStatus(allocation=alloc))
    state = cluster(nic(minimum="1Gi", step="1Gi"), other)
    assert run(state, claim("c", request("r", 1, cap={"bandwidth": "2Gi"}))).ok
    assert not run(state, claim("c", request("r", 1, cap={"bandwidth": "3Gi"}))).ok


def test_dedicated_device_capacity_is_an_eligibility_filter_only() -> None:
    gpu = device("gpu-0", capacity={"memory": capacity("40Gi")})
    state = cluster(rslice("s", [gpu]))
    (res,) = results(run(state, claim("c", request("r", 1, cap={"memory": "16Gi"}))))
    assert res.share_id is None and res.consumed_capacity == {}
    assert not run(state, claim("c", request("r", 1, cap={"memory": "80Gi"}))).ok


def test_share_ids_are_deterministic_across_runs() -> None:
    def once() -> list[tuple[str, str | None]]:
        clear_caches()
        state = cluster(nic(minimum="1Gi", step="1Gi"))
        claims = [
            claim(
                "a",
                request("x", 1, cap={"bandwidth": "1Gi"}),
                request("y", 1, cap={"bandwidth": "2Gi"}),
            ),
            claim("b", request("x", 1, cap={"bandwidth": "1Gi"})),
        ]
        outcome = run(state, *claims)
        return [(r.request, r.share_id) for i in range(2) for r in results(outcome, i)]

    first, second = once(), once()
    assert first == second
    ids = [s for _, s in first]
    assert all(s is not None for s in ids) and len(set(ids)) == len(ids) == 3


# --- admin access --------------------------------------------------------------------------


def test_admin_access_ignores_other_claims_use() -> None:
    state = cluster(rslice("s", [device("gpu-0")]), allocated("busy", "gpu-0"))
    assert code(run(state, claim("c", request("r", 1)))) == "InsufficientDevices"
    (res,) = results(run(state, claim("monitor", request("r", 1, admin=True))))
    assert res.device == "gpu-0" and res.admin_access is True


def test_admin_access_cannot_take_a_device_twice_in_its_own_claim() -> None:
    state = cluster(rslice("s", [device("gpu-0")]))
    assert not run(state, claim("m", request("a", 1, admin=True), request("b", 1, admin=True))).ok


def test_admin_allocation_blocks_later_claims_in_the_same_call_only() -> None:
    state = cluster(rslice("s", [device("gpu-0")]))
    admin = claim("monitor", request("r", 1, admin=True))
    normal = claim("job", request("r", 1))
    assert not run(state, admin, normal).ok  # the admin claim went first: gpu-0 is taken
    outcome = run(state, normal, admin)
    assert picked(outcome, 0) == picked(outcome, 1) == ["gpu-0"]


def test_persisted_admin_access_results_do_not_make_a_device_in_use() -> None:
    state = cluster(rslice("s", [device("gpu-0")]), allocated("monitor", "gpu-0", admin=True))
    assert picked(run(state, claim("c", request("r", 1)))) == ["gpu-0"]


# --- taints --------------------------------------------------------------------------------


def tainted_cluster() -> ClusterState:
    devs = [
        device("gpu-0", taints=[DeviceTaint(key="maintenance", value="bad", effect="NoSchedule")]),
        device("gpu-1", taints=[DeviceTaint(key="health", effect="NoExecute")]),
        device("gpu-2", taints=[DeviceTaint(key="note", effect="None")]),
    ]
    return cluster(rslice("s", devs))


def test_untolerated_taints_block_and_effect_none_does_not() -> None:
    state = tainted_cluster()
    assert picked(run(state, claim("c", request("r", 1)))) == ["gpu-2"]
    assert code(run(state, claim("c", request("r", 2)))) == "Tainted"


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        (DeviceToleration(key="maintenance", operator="Exists"), {"gpu-0"}),
        (DeviceToleration(key="maintenance", value="bad", effect="NoSchedule"), {"gpu-0"}),
        (DeviceToleration(key="maintenance", value="good"), set()),
        (DeviceToleration(key="maintenance", operator="Exists", effect="NoExecute"), set()),
        (DeviceToleration(operator="Exists"), {"gpu-0", "gpu-1"}),
        (DeviceToleration(operator="Exists", effect="NoExecute"), {"gpu-1"}),
    ],
)
def test_tolerations(toleration: DeviceToleration, expected: set[str]) -> None:
    state = tainted_cluster()
    outcome = run(state, claim("c", request("r", 1 + len(expected), tolerations=[toleration])))
    res = results(outcome)
    assert {r.device for r in res} == expected | {"gpu-2"}
    assert all(r.tolerations == (toleration,) for r in res)
    assert not run(state, claim("c", request("r", 2 + len(expected), tolerations=[toleration]))).ok


def taint_rule(name: str, effect: str = "NoSchedule", **selector: str) -> DeviceTaintRule:
    """A DeviceTaintRule; no keyword selects every device, `none=""` sets no selector."""
    sel = None if "none" in selector else DeviceTaintSelector(**selector)
    return DeviceTaintRule(
        metadata=ObjectMeta(name=name),
        spec=DeviceTaintRuleSpec(
            device_selector=sel, taint=DeviceTaint(key=f"rule/{name}", effect=effect)
        ),
    )


@pytest.mark.parametrize(
    ("rule", "blocked"),
    [
        (taint_rule("one", device="gpu-0"), {"gpu-0"}),
        (taint_rule("pool", driver=DRIVER, pool=NODE), {"gpu-0", "gpu-1"}),
        (taint_rule("other-driver", driver="nic.example.com"), set()),
        (taint_rule("other-pool", pool="node-2", device="gpu-0"), set()),
        (taint_rule("empty-selector"), {"gpu-0", "gpu-1"}),
        (taint_rule("no-selector", none=""), set()),
        (taint_rule("effect-none", "None", device="gpu-0"), set()),
        (taint_rule("no-execute", "NoExecute", device="gpu-1"), {"gpu-1"}),
    ],
    ids=lambda v: v.metadata.name if isinstance(v, DeviceTaintRule) else None,
)
def test_device_taint_rules_taint_the_devices_they_select(
    rule: DeviceTaintRule, blocked: set[str]
) -> None:
    devs = [device("gpu-0"), device("gpu-1")]
    # The rule comes after the slice in the input: its taints still apply.
    state = cluster(rslice("s", devs), rule)
    free = {"gpu-0", "gpu-1"} - blocked
    outcome = run(state, claim("c", request("r", 2)))
    if blocked:
        assert code(outcome) == "Tainted"
        if free:
            assert picked(run(state, claim("c", request("r", 1)))) == sorted(free)
    else:
        assert picked(outcome) == ["gpu-0", "gpu-1"]
    tolerated = claim("c", request("r", 2, tolerations=[DeviceToleration(operator="Exists")]))
    assert picked(run(state, tolerated)) == ["gpu-0", "gpu-1"]


# --- pools ---------------------------------------------------------------------------------


def test_incomplete_pool_is_skipped_with_incomplete_pool_reason() -> None:
    state = cluster(rslice("s", [device("gpu-0"), device("gpu-1")], count=2))
    outcome = run(state, claim("c", request("r", 1)))
    assert code(outcome) == "IncompletePool"


def test_all_devices_over_an_incomplete_pool_is_fatal() -> None:
    state = cluster(rslice("s", [device("gpu-0")], count=2))
    with pytest.raises(AllocationError, match="currently being updated"):
        allocate(state, node(), [claim("c", request("r", all_devices=True))])


def test_invalid_pool_with_duplicate_device_names_is_skipped() -> None:
    bad = [
        rslice("bad-0", [device("gpu-0"), device("gpu-1")], pool="bad", count=2),
        rslice("bad-1", [device("gpu-1")], pool="bad", count=2),
    ]
    good = rslice("good", [device("gpu-9")], pool="good")
    state = cluster(*bad, good)
    res = results(run(state, claim("c", request("r", 1))))
    assert [(r.pool, r.device) for r in res] == [("good", "gpu-9")]
    assert not run(state, claim("c", request("r", 2))).ok
    only_bad = cluster(*bad)
    assert code(run(only_bad, claim("c", request("r", 1)))) == "InvalidPool"
    with pytest.raises(AllocationError, match="currently invalid"):
        allocate(state, node(), [claim("c", request("r", all_devices=True))])


def test_all_mode_takes_every_matching_device_and_fails_if_one_is_in_use() -> None:
    devs = [device(f"gpu-{i}", model="a" if i < 3 else "b") for i in range(5)]
    sel = [f'device.attributes["{DRIVER}"].model == "a"']
    state = cluster(rslice("s", devs))
    c = claim("c", request("r", all_devices=True, selectors=sel))
    assert sorted(picked(run(state, c))) == ["gpu-0", "gpu-1", "gpu-2"]
    busy = cluster(rslice("s", devs), allocated("other", "gpu-1"))
    assert not run(busy, c).ok
    none = claim("c", request("r", all_devices=True, selectors=['device.driver == "x"']))
    assert not run(state, none).ok  # All needs at least one device


# --- limits --------------------------------------------------------------------------------


def test_more_than_32_devices_per_claim_is_fatal() -> None:
    state = cluster(rslice("s", [device(f"gpu-{i}") for i in range(40)]))
    with pytest.raises(AllocationError, match="exceeds the claim limit of 32"):
        allocate(state, node(), [claim("c", request("r", 33))])
    with pytest.raises(AllocationError, match="number of requested devices 33"):
        allocate(state, node(), [claim("c", request("a", 20), request("b", 13))])
    assert len(picked(run(state, claim("c", request("a", 20), request("b", 12))))) == 32


def test_claim_limit_uses_the_smallest_subrequest() -> None:
    state = cluster(rslice("s", [device(f"gpu-{i}") for i in range(40)]))
    c = claim("c", request("a", 31), first_available("b", sub("many", 2), sub("one", 1)))
    res = results(run(state, c))
    assert len(res) == 32 and res[-1].request == "b/one"


def test_timeout_when_the_step_budget_is_tiny() -> None:
    devs = [device(f"gpu-{i:02d}", numa=i // 8) for i in range(16)]
    state = cluster(rslice("s", devs))
    c = claim("c", request("a", 3), request("b", 3), constraints=[match(NUMA)])
    outcome = run(state, c, step_budget=3)
    assert code(outcome) == "Timeout"
    assert outcome.steps <= 4
    assert run(state, c).ok


# --- device order --------------------------------------------------------------------------


def numa_cluster() -> ClusterState:
    """numa 0: 4 free GPUs; numa 1: 4 GPUs of which 2 are in use."""
    devs = [device(f"gpu-{i}", numa=0 if i < 4 else 1) for i in range(8)]
    return cluster(rslice("s", devs), allocated("other", "gpu-4", "gpu-5"))


def test_tight_order_keeps_a_whole_numa_group_free() -> None:
    c = claim("c", request("r", 2), constraints=[match(NUMA)])
    assert sorted(picked(run(numa_cluster(), c, order="tight"))) == ["gpu-6", "gpu-7"]


def test_first_fit_order_takes_the_first_devices() -> None:
    c = claim("c", request("r", 2), constraints=[match(NUMA)])
    assert sorted(picked(run(numa_cluster(), c, order="first-fit"))) == ["gpu-0", "gpu-1"]


def test_tight_order_without_constraint_prefers_the_fuller_group() -> None:
    c = claim("c", request("r", 1))
    assert picked(run(numa_cluster(), c, order="tight")) in (["gpu-6"], ["gpu-7"])
    assert picked(run(numa_cluster(), c, order="first-fit")) == ["gpu-0"]


# --- ClusterState fork / revert / commit ---------------------------------------------------


def test_fork_revert_commit_of_the_ledgers() -> None:
    state = cluster(rslice("s", [device("gpu-0"), device("gpu-1")]))
    dev = (DRIVER, NODE, "gpu-0")
    first = run(state, claim("a", request("r", 1)), order="first-fit")
    assert picked(first) == ["gpu-0"]

    state.fork()
    state.put_claim(first.claims[0])
    assert state.in_use(dev)
    assert picked(run(state, claim("b", request("r", 1)), order="first-fit")) == ["gpu-1"]
    assert not run(state, claim("b", request("r", 2))).ok
    state.revert()
    assert not state.in_use(dev)
    assert ("default", "a") not in state.claims
    assert picked(run(state, claim("b", request("r", 1)), order="first-fit")) == ["gpu-0"]

    with state.forked():
        state.put_claim(first.claims[0])
        assert state.in_use(dev)
    assert not state.in_use(dev)

    with state.forked(commit=True):
        state.put_claim(first.claims[0])
    assert state.in_use(dev)
    assert picked(run(state, claim("b", request("r", 1)))) == ["gpu-1"]
    state.remove_claim(("default", "a"))
    assert not state.in_use(dev)


def test_fork_revert_of_counters_and_shared_capacity() -> None:
    state = mig_cluster()
    outcome = run(state, claim("a", request("r", 1, selectors=[MIG])), order="first-fit")
    assert picked(outcome) == ["gpu-0-mig-a"]
    pool = (DRIVER, NODE)
    with state.forked():
        state.put_claim(outcome.claims[0])
        assert state.counter_used(pool, ("gpu-0", "slice-2")) == 10**9  # nano units
        assert picked(run(state, claim("b", request("r", 1, selectors=[MIG])))) == ["gpu-0-mig-c"]
    assert state.counter_used(pool, ("gpu-0", "slice-2")) == 0

    nics = cluster(nic(minimum="1Gi", step="1Gi"))
    shared = run(nics, claim("a", request("r", 1, cap={"bandwidth": "6Gi"})))
    big = claim("b", request("r", 1, cap={"bandwidth": "6Gi"}))
    with nics.forked():
        nics.put_claim(shared.claims[0])
        use = nics.shared_use((DRIVER, NODE, "nic-0"))
        assert use is not None and use.consumed == {"bandwidth": 6 * 2**30 * 10**9}
        assert not run(nics, big).ok
    assert nics.shared_use((DRIVER, NODE, "nic-0")) is None
    assert run(nics, big).ok


# --- selector results must follow device content -------------------------------------------


def test_selector_cache_follows_a_republished_device() -> None:
    model_a = f'device.attributes["{DRIVER}"].model == "a"'
    c = claim("c", request("r", 1, selectors=[model_a]))
    before = cluster(rslice("s", [device("gpu-0", model="a")]))
    assert run(before, c).ok
    # The same device ID republished with another model (a new snapshot, or a slice update in
    # a fork): the selector must be evaluated again, not answered from the cache.
    after = cluster(rslice("s", [device("gpu-0", model="b")]))
    assert not run(after, c).ok


def test_selector_cache_follows_a_slice_update_in_a_fork() -> None:
    model_a = f'device.attributes["{DRIVER}"].model == "a"'
    c = claim("c", request("r", 1, selectors=[model_a]))
    state = cluster(rslice("s", [device("gpu-0", model="a")]))
    assert run(state, c).ok
    with state.forked():
        state.add_slice(rslice("s", [device("gpu-0", model="b")]))
        assert not run(state, c).ok


def test_consumed_capacity_keeps_the_kubernetes_quantity_form() -> None:
    state = cluster(nic(default="2Gi", minimum="1Gi", step="2Gi", maximum="8Gi"))
    (res,) = results(run(state, claim("c", request("r", 1))))
    assert str(res.consumed_capacity["bandwidth"]) == "2Gi"
    (res,) = results(run(state, claim("c", request("r", 1, cap={"bandwidth": "2Gi"}))))
    assert str(res.consumed_capacity["bandwidth"]) == "3Gi"


@pytest.mark.parametrize(
    ("policy", "asked", "written"),
    [
        ({}, None, "10Gi"),  # the whole value, as published
        ({}, "1500M", "1500M"),  # no policy: the request as written
        ({"default": "1Gi", "minimum": "1Gi", "maximum": "8Gi"}, "500M", "1Gi"),  # the minimum
        # The request itself (Quantity canonicalises 2000M as 2G, as Go's String() does).
        ({"default": "1Gi", "minimum": "1Gi", "maximum": "8Gi"}, "2000M", "2G"),
        ({"default": "1Gi", "values": ["1Gi", "4Gi"]}, "2Gi", "4Gi"),  # the valid value
        # Rounded up to a step: an integer printed as BinarySI (2e9 = 1953125Ki).
        ({"default": "1G", "minimum": "1G", "step": "1G", "maximum": "8G"}, "1500M", "1953125Ki"),
    ],
)
def test_consumed_capacity_forms(policy: dict[str, Any], asked: str | None, written: str) -> None:
    state = cluster(nic(**policy))
    cap = {"bandwidth": asked} if asked else None
    (res,) = results(run(state, claim("c", request("r", 1, cap=cap))))
    assert str(res.consumed_capacity["bandwidth"]) == written


def test_a_relabelled_node_sees_the_slices_its_new_labels_select() -> None:
    """A slice for every node labelled rack=a: a node that gains the label by a new Node
    object sees the pool at once (the per-node pool cache follows the Node object)."""
    from draplan.api.core_v1 import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm

    racked = rslice("rack-a", [device("nic-0")], pool="rack-a", node_name="")
    term = NodeSelectorTerm(
        match_expressions=(NodeSelectorRequirement(key="rack", operator="In", values=("a",)),)
    )
    racked = msgspec.structs.replace(
        racked,
        spec=msgspec.structs.replace(
            racked.spec, node_selector=NodeSelector(node_selector_terms=(term,))
        ),
    )
    state = ClusterState.from_objects([node(), racked])
    assert state.pools_for_node(state.nodes[NODE]) == ()
    labelled = node()
    labelled = msgspec.structs.replace(
        labelled,
        metadata=msgspec.structs.replace(labelled.metadata, labels={"rack": "a"}),
    )
    state.add_node(labelled)
    assert [p.id for p in state.pools_for_node(state.nodes[NODE])] == [(DRIVER, "rack-a")]


def test_changed_since_names_the_nodes_the_log_names() -> None:
    state = ClusterState.from_objects([node("a"), node("b")])
    assert state.changed_since(-1) is None  # nothing seen yet: every node
    cursor = len(state.change_log)
    assert state.changed_since(cursor) == []
    state.add_node(node("c"))
    state.add_node(node("a"))
    assert state.changed_since(cursor) == ["a", "c"]
    state.add_slice(rslice("shared", [device("d")], pool="p", node_name=""))
    assert state.changed_since(cursor) is None  # a cluster-wide change


# --- selectors failing at run time: fatal only where the answer depends on them ----------

HEALTHY = f"device.attributes['{DRIVER}'].healthy == true"


def healthy_devices(*health: bool | None) -> ResourceSlice:
    """Devices gpu-0.. with `healthy` set as given (None: no such attribute, a CEL error)."""
    return rslice(
        "gpus",
        [
            device(f"gpu-{i}") if h is None else device(f"gpu-{i}", healthy=h)
            for i, h in enumerate(health)
        ],
    )


@pytest.mark.parametrize("order", ["tight", "first-fit"])
def test_a_failing_device_the_search_never_reaches_is_not_an_error(order: str) -> None:
    # Upstream allocates gpu-0 and never evaluates gpu-1 (kubernetes' allocateOne is lazy).
    state = cluster(healthy_devices(True, None))
    c = claim("c", request("req-0", selectors=[HEALTHY]))
    assert picked(run(state, c, order=order)) == ["gpu-0"]


def test_first_fit_reaches_a_failing_device_before_a_healthy_one_as_upstream_does() -> None:
    state = cluster(healthy_devices(None, True))
    c = claim("c", request("req-0", selectors=[HEALTHY]))
    with pytest.raises(
        AllocationError,
        match=r'^ResourceClaim "default/c": spec\.devices\.requests\[0\]\.exactly\.selectors\[0\]'
        r"\.cel\.expression: CEL runtime error: device gpu\.example\.com/node-1/gpu-0",
    ):
        run(state, c, order="first-fit")
    # tight finds an answer that never needs gpu-0's verdict.
    assert picked(run(state, c, order="tight")) == ["gpu-1"]


def test_tight_raises_only_where_the_failing_device_could_change_the_answer() -> None:
    state = cluster(healthy_devices(True, None))
    two = claim("c", request("req-0", 2, selectors=[HEALTHY]))
    with pytest.raises(AllocationError, match="gpu-1"):
        run(state, two, order="tight")  # gpu-1 healthy would make it fit
    three = claim("c", request("req-0", 3, selectors=[HEALTHY]))
    assert code(run(state, three, order="tight")) == "InsufficientDevices"
    with pytest.raises(AllocationError, match="gpu-1"):
        run(state, three, order="first-fit")  # upstream scans every device before failing


@pytest.mark.parametrize("order", ["tight", "first-fit"])
def test_a_failing_device_in_use_is_skipped_before_its_selector_runs(order: str) -> None:
    state = cluster(healthy_devices(None, True), allocated("other", "gpu-0"))
    c = claim("c", request("req-0", selectors=[HEALTHY]))
    assert picked(run(state, c, order=order)) == ["gpu-1"]


@pytest.mark.parametrize("order", ["tight", "first-fit"])
def test_all_mode_evaluates_every_device_up_front(order: str) -> None:
    state = cluster(healthy_devices(True, None))
    c = claim("c", request("req-0", all_devices=True, selectors=[HEALTHY]))
    with pytest.raises(AllocationError, match="gpu-1"):
        run(state, c, order=order)


@settings(max_examples=300, deadline=None)
@given(
    health=st.lists(st.sampled_from([True, False, None]), min_size=1, max_size=7),
    busy=st.sets(st.integers(0, 6)),
    count=st.integers(1, 4),
)
def test_lazy_selector_errors_follow_the_documented_rule(
    health: list[bool | None], busy: set[int], count: int
) -> None:
    """first-fit: upstream scans free devices in order, so an error iff a failing device comes
    before the count-th healthy one. tight: an answer that avoids failing devices if one
    exists, else an error iff counting them in would fit, else "does not fit"."""
    clear_caches()
    in_use = [f"gpu-{i}" for i in sorted(busy) if i < len(health)]
    objects: list[KubeStruct] = [healthy_devices(*health)]
    if in_use:
        objects.append(allocated("other", *in_use))
    state = cluster(*objects)
    c = claim("c", request("req-0", count, selectors=[HEALTHY]))
    free = [(f"gpu-{i}", h) for i, h in enumerate(health) if f"gpu-{i}" not in in_use]

    upstream: list[str] | str = "fail"
    taken: list[str] = []
    for name, h in free:
        if h is None:
            upstream = "error"
            break
        if h:
            taken.append(name)
            if len(taken) == count:
                upstream = taken
                break
    healthy = [n for n, h in free if h]
    tight: list[str] | str = (
        "fit"
        if len(healthy) >= count
        else "error"
        if len([h for _, h in free if h is not False]) >= count
        else "fail"
    )
    for order, expected in (("first-fit", upstream), ("tight", tight)):
        if expected == "error":
            with pytest.raises(AllocationError):
                run(state, c, order=order)
            continue
        outcome = run(state, c, order=order)
        if expected == "fail":
            assert not outcome.ok
        elif expected == "fit":
            assert set(picked(outcome)) <= set(healthy) and len(picked(outcome)) == count
        else:
            assert picked(outcome) == expected


# --- All under distinctAttribute: fatal exactly where upstream's check rejects -------------


def distinct(attribute: str, *requests: str) -> DeviceConstraint:
    return DeviceConstraint(distinct_attribute=attribute, requests=requests)


def health_flags(*health: bool) -> ResourceSlice:
    return rslice("s", [device(f"gpu-{i}", healthy=h, numa=0) for i, h in enumerate(health)])


def all_then_one(*order: str) -> ResourceClaim:
    """req-1 = firstAvailable [All, 1, 1]; healthy distinct over both requests (the issue's
    shape), requests in the given order."""
    reqs = {
        "req-1": first_available(
            "req-1", sub("sub-0", all_devices=True), sub("sub-1"), sub("sub-2")
        ),
        "req-0": request("req-0"),
    }
    return claim(
        "c",
        *(reqs[name] for name in order),
        constraints=[distinct(f"{DRIVER}/healthy", "req-1", "req-0"), match(NUMA, "req-0")],
    )


@pytest.mark.parametrize("order", ["tight", "first-fit"])
def test_all_moves_on_where_only_pairwise_distinct_rejects(order: str) -> None:
    # All takes gpu-0 (true), gpu-1 (false), then gpu-2 (true): upstream compares with the
    # request's last value only (false) and goes on, so the All fails later for want of a device
    # for req-0 and sub-1 is taken. draplan rejects gpu-2 (true twice) and moves on too.
    state = cluster(health_flags(True, False, True))
    outcome = run(state, all_then_one("req-1", "req-0"), order=order)
    got = {r.request: r.device for r in results(outcome)}
    assert set(got) == {"req-1/sub-1", "req-0"}
    healthy = {"gpu-0": True, "gpu-1": False, "gpu-2": True}
    assert healthy[got["req-1/sub-1"]] != healthy[got["req-0"]]


@pytest.mark.parametrize("order", ["tight", "first-fit"])
def test_all_is_fatal_where_upstream_rejects_too(order: str) -> None:
    state = cluster(health_flags(True, True, False))
    with pytest.raises(AllocationError, match="because a claim constraint would not be satisfied"):
        run(state, all_then_one("req-1", "req-0"), order=order)


def upstream_all_then_one(health: list[bool], busy: set[int]) -> dict[str, int] | str:
    """Upstream's search (dra-semantics §3.3, §3.6 with kubernetes#140438) on the claim of
    `all_then_one("req-1", "req-0")`, devices in publish order: the picks, "error" or "unsat"."""
    free = [i for i in range(len(health)) if i not in busy]
    last: dict[str, bool] = {}  # upstream's distinctAttribute memory: request -> last value
    # sub-0: All, in publish order: an in-use device ends it quietly, a constraint rejection
    # is fatal; if every device is added, req-0 finds none left and All is undone.
    for i in range(len(health)):
        if i in busy:
            break
        if health[i] in last.values():
            return "error"
        last["req-1"] = health[i]
    last.clear()
    for _ in ("sub-1", "sub-2"):  # identical alternatives: the second finds what the first did
        for i in free:
            if health[i] in last.values():
                continue
            last["req-1"] = health[i]
            for j in free:
                if j != i and health[j] not in last.values():
                    return {"req-1/sub-1": i, "req-0": j}
            last.pop("req-1")
    return "unsat"


@settings(max_examples=300, deadline=None)
@given(
    health=st.lists(st.booleans(), min_size=1, max_size=5),
    busy=st.sets(st.integers(0, 4)),
)
def test_first_fit_all_then_one_matches_upstream(health: list[bool], busy: set[int]) -> None:
    clear_caches()
    busy = {i for i in busy if i < len(health)}
    objects: list[KubeStruct] = [health_flags(*health)]
    if busy:
        objects.append(allocated("other", *(f"gpu-{i}" for i in sorted(busy))))
    state = cluster(*objects)
    expected = upstream_all_then_one(health, busy)
    c = all_then_one("req-1", "req-0")
    if expected == "error":
        with pytest.raises(AllocationError, match="claim constraint would not be satisfied"):
            run(state, c, order="first-fit")
        return
    outcome = run(state, c, order="first-fit")
    if expected == "unsat":
        assert not outcome.ok
        return
    assert isinstance(expected, dict)
    got = {r.request: int(r.device.removeprefix("gpu-")) for r in results(outcome)}
    assert got == expected


# --- upstream allocator fixes since v0.36.0 that draplan carries ---------------------------


def test_all_mode_over_counter_consuming_devices() -> None:
    # kubernetes#138885: upstream panicked on `All` over devices that consume counters.
    parts = [device(f"part-{i}", consumes={"set": {"mem": 1}}) for i in range(2)]
    roomy = cluster(rslice("s", parts, counters=[counter_set("set", mem=2)]))
    assert picked(run(roomy, claim("c", request("r", all_devices=True)))) == ["part-0", "part-1"]
    tight = cluster(rslice("s", parts, counters=[counter_set("set", mem=1)]))
    assert not run(tight, claim("c", request("r", all_devices=True))).ok


def test_a_committed_shared_device_keeps_its_counters() -> None:
    # kubernetes#139040: a multi-allocatable device allocated in an earlier cycle still holds
    # the counters it consumes, so an overlapping partition cannot be allocated beside it.
    shared = device(
        "shared", multi=True, capacity={"mem": capacity("10Gi")}, consumes={"set": {"mem": 1}}
    )
    part = device("part", consumes={"set": {"mem": 1}})
    result = DeviceRequestAllocationResult(
        request="req", driver=DRIVER, pool=NODE, device="shared", share_id="0" * 36
    )
    alloc = AllocationResult(devices=DeviceAllocationResult(results=(result,)))
    earlier = msgspec.structs.replace(
        claim("earlier"), status=ResourceClaimStatus(allocation=alloc)
    )
    state = cluster(rslice("s", [shared, part], counters=[counter_set("set", mem=1)]), earlier)
    assert picked(run(state, claim("c", request("r", 1)))) == ["shared"]  # another share
    assert code(run(state, claim("c", request("r", 2)))) == "CountersExhausted"


def configured_class(name: str = "gpu") -> DeviceClass:
    dc = device_class(name)
    opaque = OpaqueDeviceConfiguration(driver=DRIVER, parameters={"mode": "fast"})
    spec = msgspec.structs.replace(dc.spec, config=(DeviceClassConfiguration(opaque=opaque),))
    return msgspec.structs.replace(dc, spec=spec)


def with_claim_config(c: ResourceClaim, *requests: str) -> ResourceClaim:
    cfg = DeviceClaimConfiguration(
        requests=requests, opaque=OpaqueDeviceConfiguration(driver=DRIVER, parameters={})
    )
    devices = msgspec.structs.replace(c.spec.devices, config=(cfg,))
    return msgspec.structs.replace(c, spec=msgspec.structs.replace(c.spec, devices=devices))


def configs(outcome: Outcome) -> list[tuple[str, tuple[str, ...]]]:
    alloc = outcome.claims[0].status.allocation
    assert alloc is not None
    return [(c.source, c.requests) for c in alloc.devices.config]


def test_a_config_covering_every_request_is_written_without_requests() -> None:
    state = cluster(configured_class(), rslice("s", [device("gpu-0"), device("gpu-1")]))
    both = claim("c", request("r0"), request("r1"))
    # One class config for both requests, once (upstream once duplicated it per request).
    assert configs(run(state, both)) == [("FromClass", ())]
    scoped = with_claim_config(both, "r0")
    assert configs(run(state, scoped)) == [("FromClass", ()), ("FromClaim", ("r0",))]
    everyone = with_claim_config(both, "r0", "r1")
    assert configs(run(state, everyone)) == [("FromClass", ()), ("FromClaim", ())]


def test_a_config_scoped_to_subrequests_of_one_request_stays_scoped() -> None:
    # kubernetes#139803: two subrequests of r0 named, the claim has two requests: upstream's
    # length check widened this config to the whole claim; it covers r0 only.
    state = cluster(rslice("s", [device("gpu-0"), device("gpu-1")]))
    c = claim("c", first_available("r0", sub("s0"), sub("s1")), request("r1"))
    scoped = with_claim_config(c, "r0/s0", "r0/s1")
    assert configs(run(state, scoped)) == [("FromClaim", ("r0/s0", "r0/s1"))]
    # Naming the chosen subrequest and the other request covers the claim.
    covering = with_claim_config(c, "r0/s0", "r1")
    assert configs(run(state, covering)) == [("FromClaim", ())]


# --- upstream's search order (first-fit) ----------------------------------------------------
# k8s.io/dynamic-resource-allocation structured/internal/incubating, allocator_incubating.go
# (the variant kube-scheduler 1.36 and 1.37 run with their default gates): allocateOne tries
# devices in pool, slice and device order, each next device of a request after the previous
# one, and keeps the first full solution.


def gaudi_node() -> ResourceSlice:
    """Gaudi-like cards on two NUMA nodes, published out of NUMA order; only hl-0 is of
    model "hl-325l" (the one the second request wants)."""
    numa = (0, 1, 1, 0, 0)
    return rslice(
        "gaudi",
        [
            device(f"hl-{i}", numa=n, model="hl-325l" if i == 0 else "hl-225")
            for i, n in enumerate(numa)
        ],
    )


def test_first_fit_tries_groups_in_device_order_not_group_by_group() -> None:
    # Upstream: hl-0 first, so {hl-0, hl-3} and {hl-0, hl-4}, each leaving the second request
    # nothing; then hl-1, whose NUMA node holds {hl-1, hl-2}. Trying NUMA 0 whole first would
    # answer {hl-3, hl-4}, a solution upstream never reaches.
    c = claim(
        "c",
        request("cards", 2),
        request("host", selectors=[f'device.attributes["{DRIVER}"].model == "hl-325l"']),
        constraints=[match(f"{DRIVER}/numa", "cards")],
    )
    assert picked(run(cluster(gaudi_node()), c, order="first-fit")) == ["hl-1", "hl-2", "hl-0"]
    # draplan's tight order keeps its own choice: the smallest group that holds the request.
    assert picked(run(cluster(gaudi_node()), c, order="tight")) == ["hl-1", "hl-2", "hl-0"]


def tpu_hosts(n: int, failing: int) -> ResourceSlice:
    """TPU chips tpu-0..; chip `failing` publishes no `healthy`, so a selector on it fails."""
    return rslice(
        "tpu",
        [
            device(f"tpu-{i}") if i == failing else device(f"tpu-{i}", healthy=True)
            for i in range(n)
        ],
    )


def test_over_the_claim_limit_goes_back_to_the_subrequest_without_trying_other_devices() -> None:
    # With "pair", the claim would hold 2 + 31 > 32 devices: upstream's allocateOne returns
    # errAllocationResultMaxSizeExceeded up through the pair's device loop to the
    # firstAvailable loop, which tries "one". tpu-2, whose selector fails, is never reached.
    c = claim(
        "c",
        first_available("chips", sub("pair", 2, selectors=[HEALTHY]), sub("one", 1)),
        request("rest", 31),
    )
    for order in ("first-fit", "tight"):
        res = results(run(cluster(tpu_hosts(40, failing=2)), c, order=order))
        assert res[0].request == "chips/one"
        assert len(res) == 32


def test_a_claims_size_is_checked_before_the_next_claims_devices_are_evaluated() -> None:
    # Upstream's Allocate validates claim by claim: "a" over the limit is the error, before
    # "b"'s All set (whose selector fails on tpu-1) is evaluated.
    a = claim("a", request("many", 33))
    b = claim("b", request("every", all_devices=True, selectors=[HEALTHY]))
    with pytest.raises(AllocationError, match=r'"default/a".*exceeds the claim limit of 32'):
        run(cluster(tpu_hosts(4, failing=1)), a, b, order="first-fit")


def nvlink_rack_slice() -> ResourceSlice:
    """A GB200-like rack's network-attached devices in one slice with per-device node
    selection: imex-0 belongs to node-2 and publishes no `healthy`; imex-1 is node-1's."""
    devices = [
        msgspec.structs.replace(device("imex-0"), node_name="node-2"),
        msgspec.structs.replace(device("imex-1", healthy=True), node_name=NODE),
    ]
    return ResourceSlice(
        metadata=ObjectMeta(name="rack-a"),
        spec=ResourceSliceSpec(
            driver=DRIVER,
            pool=ResourcePool(name="rack-a", generation=1, resource_slice_count=1),
            per_device_node_selection=True,
            devices=tuple(devices),
        ),
    )


def test_first_fit_reaches_a_failing_device_of_another_node_in_a_slice_it_sees() -> None:
    # Upstream's isSelectable runs the selectors before the device's own node selection, so
    # node-1's search fails on imex-0 (node-2's) before it gets to imex-1.
    state = cluster(nvlink_rack_slice())
    c = claim("c", request("channel", selectors=[HEALTHY]))
    with pytest.raises(AllocationError, match="imex-0"):
        run(state, c, order="first-fit")
    with pytest.raises(AllocationError, match="imex-0"):
        run(state, claim("c", request("all", all_devices=True, selectors=[HEALTHY])))
    # tight never needs imex-0's verdict: it is not node-1's to allocate.
    assert picked(run(state, c, order="tight")) == ["imex-1"]


def test_claims_of_one_shape_share_verdicts_but_each_error_names_its_own_claim() -> None:
    # What is known of the devices is kept per request shape (the pods of one template); the
    # error of a failing selector is still located in the claim that asks.
    state = cluster(tpu_hosts(3, failing=0))
    for name in ("worker-0", "worker-1"):
        c = claim(name, request("chips", selectors=[HEALTHY]))
        with pytest.raises(AllocationError, match=rf'^ResourceClaim "default/{name}": .*tpu-0'):
            run(state, c, order="first-fit")


def test_kept_candidates_follow_the_ledgers_through_forks() -> None:
    state = cluster(tpu_hosts(2, failing=99))
    c = claim("a", request("chip"))
    assert picked(run(state, c, order="first-fit")) == ["tpu-0"]
    with state.forked():
        state.put_claim(run(state, c, order="first-fit").claims[0])
        assert picked(run(state, claim("b", request("chip")), order="first-fit")) == ["tpu-1"]
    assert picked(run(state, claim("b", request("chip")), order="first-fit")) == ["tpu-0"]
