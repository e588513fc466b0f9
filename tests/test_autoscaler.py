"""The autoscaler's options around the seed scenarios: limits, the expander chain, NodePool
templates (fromNode, $NODE_NAME, pool completeness), the legacy count view, `-o yaml` manifests
and determinism."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from draplan.api.autoscaling import ProvisioningRequest
from draplan.api.codec import decode
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.resource_v1 import ResourceClaim, ResourceClaimSpec, ResourceSlice
from draplan.autoscaler import Autoscaler, Limits, scaleup
from draplan.autoscaler.legacy import claim_counts, lossy_state, physical_counts
from draplan.autoscaler.templates import POOL_LABEL, make_node
from draplan.cluster.devices import device_views
from draplan.scheduler.claims import pod_claims
from scale_scenarios import (
    CLIQUE,
    DRIVER,
    MIG_CLASS,
    NIC_DRIVER,
    allocated_claim,
    device_class,
    from_node_pool,
    gpu_node,
    gpu_request,
    gpus,
    load,
    mig_class,
    mig_slices,
    node_pool,
    nvl_pool,
    plan_api,
    pod,
    pool_with_slices,
    running_pod,
    scenario_gang,
    scenario_mig,
    scenario_numa,
    scenario_pcie,
    scenario_provreq,
    scenario_scale_down,
    slice_spec,
    template,
    write,
)

ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
MODES = [pytest.param(False, id="dra"), pytest.param(True, id="legacy")]


def scale(run_cli: Any, tmp_path: Path, objs: list[dict[str, Any]], *flags: str) -> Any:
    result = run_cli("scale", "-f", write(tmp_path, objs), *flags, "-o", "json")
    assert result.code == 0, result.err
    return result.json()


def added(doc: dict[str, Any]) -> list[tuple[str, int]]:
    return [(u["pool"], u["add"]) for u in doc["scaleUp"]]


def eight_gpu_pods(n: int, pool_max: int = 10, price: str = "20") -> list[dict[str, Any]]:
    """n independent pods of 8 GPUs; pool `gpu8` (8 GPUs a node, $price/h)."""
    objs = [
        device_class(),
        node_pool("gpu8", price, gpus(8), max_nodes=pool_max),
        template("eight", [gpu_request(8)]),
    ]
    return objs + [pod(f"p{i}", "eight") for i in range(n)]


# --- limits ------------------------------------------------------------------------------------


@pytest.mark.parametrize("legacy", MODES)
def test_pool_max_nodes_caps_the_pool(legacy: bool) -> None:
    doc, _ = plan_api(eight_gpu_pods(5, pool_max=3), legacy)
    assert added(doc) == [("gpu8", 3)]
    assert doc["summary"]["podsPlaced"] == 3 and doc["summary"]["podsStillPending"] == 2
    for entry in doc["pending"]:
        assert "gpu8" in entry["reason"]["autoscaler"]


@pytest.mark.parametrize("legacy", MODES)
def test_pool_max_counts_existing_members(legacy: bool) -> None:
    objs = eight_gpu_pods(3, pool_max=3)
    member = gpu_node("gpu8-old", labels={POOL_LABEL: "gpu8"})
    claim = allocated_claim("old", "gpu8-old", [f"gpu-{i}" for i in range(8)], ["old"])
    objs += [*member, claim, running_pod("old", "gpu8-old", "old")]
    doc, _ = plan_api(objs, legacy)
    assert added(doc) == [("gpu8", 2)]
    assert doc["summary"]["podsStillPending"] == 1


@pytest.mark.parametrize("legacy", MODES)
def test_limits_that_fit_the_plan_do_not_change_it(
    run_cli: Any, tmp_path: Path, legacy: bool
) -> None:
    flags = ["--max-nodes-total", "2", "--max-cost-per-hour", "40", "--max-devices-total", "16"]
    doc = scale(run_cli, tmp_path, eight_gpu_pods(2), *flags, *(["--legacy"] if legacy else []))
    assert added(doc) == [("gpu8", 2)]
    assert doc["summary"]["costPerHour"] == 40.0 and doc["pending"] == []


@pytest.mark.parametrize("legacy", MODES)
def test_cost_cap_below_one_node_adds_nothing(run_cli: Any, tmp_path: Path, legacy: bool) -> None:
    flags = ["--max-cost-per-hour", "19.99", *(["--legacy"] if legacy else [])]
    doc = scale(run_cli, tmp_path, eight_gpu_pods(1), *flags)
    assert doc["scaleUp"] == [] and doc["summary"]["podsStillPending"] == 1


@pytest.mark.parametrize("legacy", MODES)
def test_max_nodes_total_counts_existing_nodes(legacy: bool) -> None:
    objs = eight_gpu_pods(1) + gpu_node("busy")
    objs += [
        allocated_claim("busy", "busy", [f"gpu-{i}" for i in range(8)], ["busy"]),
        running_pod("busy", "busy", "busy"),
    ]
    doc, _ = plan_api(objs, legacy, limits=Limits(max_nodes_total=1))
    assert doc["scaleUp"] == [] and doc["summary"]["podsStillPending"] == 1
    doc, _ = plan_api(objs, legacy, limits=Limits(max_nodes_total=2))
    assert added(doc) == [("gpu8", 1)]


@pytest.mark.parametrize(
    "limits",
    [
        pytest.param(Limits(max_nodes_total=2), id="max-nodes-total"),
        pytest.param(Limits(max_cost_per_hour=50), id="max-cost-per-hour"),
        pytest.param(Limits(max_devices_total=16), id="max-devices-total"),
    ],
)
def test_cluster_limits_cap_the_scale_up(limits: Limits) -> None:
    doc, _ = plan_api(eight_gpu_pods(5), limits=limits)
    assert added(doc) == [("gpu8", 2)]
    assert doc["summary"]["podsStillPending"] == 3


def test_legacy_honours_max_devices_total() -> None:
    doc, _ = plan_api(eight_gpu_pods(2), legacy=True, limits=Limits(max_devices_total=8))
    assert doc["summary"]["nodesAdded"] <= 1


# --- expanders ---------------------------------------------------------------------------------


def small_and_big(small_max: int = 4) -> list[dict[str, Any]]:
    """8 one-GPU pods. `small`: 1 GPU, $10, at most `small_max` nodes ($10 a pod);
    `big`: 8 GPUs, $100 ($12.5 a pod, serves all 8)."""
    objs = [
        device_class(),
        node_pool("small", "10", gpus(1), max_nodes=small_max),
        node_pool("big", "100", gpus(8), max_nodes=4),
        template("one", [gpu_request(1)]),
    ]
    return objs + [pod(f"p{i}", "one") for i in range(8)]


@pytest.mark.parametrize("legacy", MODES)
@pytest.mark.parametrize(
    ("chain", "expected", "cost"),
    [
        ("least-cost", [("small", 8)], 80.0),
        ("least-cost,most-pods", [("small", 8)], 80.0),
        ("most-pods", [("big", 1)], 100.0),  # both serve all 8 pods: the pool name decides
        ("most-pods,least-cost", [("small", 8)], 80.0),  # the tie falls through to least-cost
    ],
)
def test_expander_chain_order_decides(
    run_cli: Any, tmp_path: Path, legacy: bool, chain: str, expected: Any, cost: float
) -> None:
    flags = ["--expander", chain, *(["--legacy"] if legacy else [])]
    doc = scale(run_cli, tmp_path, small_and_big(small_max=8), *flags)
    assert added(doc) == expected
    assert doc["summary"]["costPerHour"] == cost
    assert doc["summary"]["podsStillPending"] == 0


@pytest.mark.parametrize("legacy", MODES)
def test_least_cost_counts_the_cover_of_the_rest(legacy: bool) -> None:
    """`small` is cheaper per pod but may only take 4 pods: the other 4 would need a `big`
    node anyway, and one `big` node holds all 8 ($100 rather than 4 x $10 + $100)."""
    doc, _ = plan_api(small_and_big(small_max=4), legacy)
    assert added(doc) == [("big", 1)]
    assert doc["summary"]["costPerHour"] == 100.0 and doc["pending"] == []


def same_price_pools() -> list[dict[str, Any]]:
    """One pod of 2 GPUs; `a-wide` (8 GPUs) and `b-snug` (2 GPUs) cost the same and have the
    same cpu and memory: only DRA devices tell them apart."""
    return [
        device_class(),
        node_pool("a-wide", "10", gpus(8)),
        node_pool("b-snug", "10", gpus(2)),
        template("two", [gpu_request(2)]),
        pod("p", "two"),
    ]


@pytest.mark.parametrize(
    ("chain", "pool"),
    [
        ("least-waste", "b-snug"),  # counts the 6 idle GPUs of a-wide
        ("least-cost", "a-wide"),  # a tie: the pool name decides
        ("least-cost,least-waste", "b-snug"),
    ],
)
def test_least_waste_counts_dra_devices(chain: str, pool: str) -> None:
    doc, _ = plan_api(same_price_pools(), expanders=tuple(chain.split(",")))
    assert added(doc) == [(pool, 1)]


def test_priority_expander_prefers_the_higher_priority_pool() -> None:
    objs = [
        device_class(),
        pool_with_slices("alpha", "10", [slice_spec(gpus(8))]),
        pool_with_slices("beta", "30", [slice_spec(gpus(8))], priority=5),
        template("two", [gpu_request(2)]),
        pod("p", "two"),
    ]
    assert added(plan_api(objs, expanders=("priority",))[0]) == [("beta", 1)]
    assert added(plan_api(objs, expanders=("least-cost",))[0]) == [("alpha", 1)]


def test_unknown_expander_is_a_usage_error(run_cli: Any, tmp_path: Path) -> None:
    result = run_cli(
        "scale", "-f", write(tmp_path, scenario_numa()), "--expander", "cheapest", "-o", "json"
    )
    assert result.code == 2
    assert "cheapest" in result.err


def mixed_sizes(small_first: bool) -> list[dict[str, Any]]:
    """Pool g4: 16 cpu, 4 GPUs, $6.50. Pods: 11 × (1 cpu, 1 GPU), 12 × (8 cpu, 2 GPUs),
    8 × (12 cpu, 2 GPUs). 14 nodes hold them all (the small pods fill the 12-cpu nodes)."""
    objs = [
        device_class(),
        pool_with_slices("g4", "6.5", [slice_spec(gpus(4))], cpu="16", max_nodes=40),
        template("one", [gpu_request(1)]),
        template("two", [gpu_request(2)]),
    ]
    small = [("one", "1")] * 11
    big = [("two", "8")] * 12 + [("two", "12")] * 8
    seq = small + big if small_first else big + small
    return objs + [pod(f"p-{i:02d}", t, cpu=c) for i, (t, c) in enumerate(seq)]


def test_bin_packing_big_pods_first_is_optimal() -> None:
    doc, _ = plan_api(mixed_sizes(small_first=False))
    assert added(doc) == [("g4", 14)] and doc["pending"] == []


def test_bin_packing_does_not_depend_on_pod_names() -> None:
    doc, _ = plan_api(mixed_sizes(small_first=True))
    assert added(doc) == [("g4", 14)]


def big_and_tiny() -> list[dict[str, Any]]:
    """Pods 4 x (1 cpu, 2 GPUs) + 10 x (4 cpu, 1 GPU); pools big (32 cpu, 8 GPUs, $16.81) and
    tiny (16 cpu, 1 GPU, $3.74). Optimum: 2 x big + 2 x tiny = $41.10 (bench_autoscaler
    instance 10); big alone takes 3 nodes ($50.43), its last one a quarter full."""
    objs = [
        device_class(),
        pool_with_slices("big", "16.81", [slice_spec(gpus(8))], cpu="32", max_nodes=40),
        pool_with_slices("tiny", "3.74", [slice_spec(gpus(1))], cpu="16", max_nodes=40),
        template("one", [gpu_request(1)]),
        template("two", [gpu_request(2)]),
    ]
    objs += [pod(f"a-{i}", "two", cpu="1") for i in range(4)]
    objs += [pod(f"b-{i}", "one", cpu="4") for i in range(10)]
    return objs


@pytest.mark.parametrize("legacy", MODES)
def test_plan_cost_is_the_optimum_on_a_two_pool_instance(legacy: bool) -> None:
    doc, state = plan_api(big_and_tiny(), legacy)
    assert doc["pending"] == []
    assert sorted(added(doc)) == [("big", 2), ("tiny", 2)]
    assert doc["summary"]["costPerHour"] == 41.1
    assert all(p.spec.node_name for p in state.pods.values())


def thirty_of_each() -> list[dict[str, Any]]:
    """big_and_tiny's pools; 30 pods each of (1 cpu, 2 GPUs), (4 cpu, 1 GPU), (12 cpu, 1 GPU):
    31^3 vectors of pods left, more than the exact choice takes at once."""
    objs = big_and_tiny()[:5]
    objs += [pod(f"a-{i:02d}", "two", cpu="1") for i in range(30)]
    objs += [pod(f"b-{i:02d}", "one", cpu="4") for i in range(30)]
    objs += [pod(f"c-{i:02d}", "one", cpu="12") for i in range(30)]
    return objs


def test_too_big_for_the_exact_choice_still_reaches_its_optimum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whole nodes chosen greedily, then the worst of them chosen again exactly, find what
    the exact choice finds when its limits are raised; class by class costs much more."""
    doc, _ = plan_api(thirty_of_each())
    assert doc["pending"] == []
    monkeypatch.setattr(scaleup, "EXACT_STATES", 40_000)
    monkeypatch.setattr(scaleup, "EXACT_WORK", 3_000_000)
    monkeypatch.setattr(scaleup, "PROBE_BUDGET", 20_000)
    exact, _ = plan_api(thirty_of_each())
    assert doc["summary"] == exact["summary"]
    assert doc["summary"]["costPerHour"] == 272.74
    monkeypatch.setattr(scaleup, "EXACT_STATES", 0)
    monkeypatch.setattr(scaleup, "MIXED_GREEDY", 0)
    by_class, _ = plan_api(thirty_of_each())
    assert by_class["summary"]["costPerHour"] > 300


def test_class_by_class_choice_without_least_cost_first() -> None:
    """most-pods first: big serves every pod, so it gets them all (3 nodes, the last one
    partly used); the plan still places every pod."""
    doc, _ = plan_api(big_and_tiny(), expanders=("most-pods", "least-cost"))
    assert added(doc) == [("big", 3)] and doc["pending"] == []


# --- NodePool templates ------------------------------------------------------------------------


def _donor(pool_name: str = "donor") -> list[dict[str, Any]]:
    """A busy node `donor` (8 GPUs, all taken) and a pending 8-GPU pod."""
    objs = [device_class(), *gpu_node("donor", labels={"node.kubernetes.io/instance-type": "p5"})]
    objs[-1]["spec"]["pool"]["name"] = pool_name
    claim = allocated_claim("busy", pool_name, [f"gpu-{i}" for i in range(8)], ["busy"])
    term = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]
    term["matchFields"][0]["values"] = ["donor"]
    return [
        *objs,
        claim,
        running_pod("busy", "donor", "busy"),
        from_node_pool("copy", "25", "donor"),
        template("eight", [gpu_request(8)]),
        pod("p", "eight"),
    ]


@pytest.mark.parametrize("legacy", MODES)
def test_from_node_pool_copies_the_node_and_its_slices(legacy: bool) -> None:
    doc, state = plan_api(_donor(), legacy)
    assert doc["scaleUp"][0]["pool"] == "copy" and doc["scaleUp"][0]["nodes"] == ["copy-0"]
    assert doc["pending"] == [] and doc["wasted"] == []
    new = state.nodes["copy-0"]
    assert new.metadata.labels["node.kubernetes.io/instance-type"] == "p5"
    assert new.metadata.labels[POOL_LABEL] == "copy"
    copied = [rs for rs in state.slices.values() if rs.spec.node_name == "copy-0"]
    assert len(copied) == 1
    assert copied[0].spec.pool.name == "copy-0" and copied[0].spec.pool.resource_slice_count == 1
    assert [d.name for d in copied[0].spec.devices] == [f"gpu-{i}" for i in range(8)]
    assert state.pods[("default", "p")].spec.node_name == "copy-0"


@pytest.mark.parametrize("legacy", MODES)
def test_from_node_pool_renames_pools_not_named_after_the_node(legacy: bool) -> None:
    """The donor publishes pool `donor-gpus`: the copy must publish its own pool, or both
    pools become incomplete (two slices, resourceSliceCount 1)."""
    doc, state = plan_api(_donor(pool_name="donor-gpus"), legacy)
    assert added(doc) == [("copy", 1)] and doc["pending"] == [] and doc["wasted"] == []
    [copied] = [rs for rs in state.slices.values() if rs.spec.node_name == "copy-0"]
    assert copied.spec.pool.name == "copy-0-gpus"
    for node in ("donor", "copy-0"):
        [pool] = state.pools_for_node(state.nodes[node])
        assert not pool.incomplete


def test_from_node_missing_is_bad_input(run_cli: Any, tmp_path: Path) -> None:
    objs = [
        device_class(),
        from_node_pool("copy", "1", "ghost"),
        template("eight", [gpu_request(8)]),
        pod("p", "eight"),
    ]
    result = run_cli("scale", "-f", write(tmp_path, objs), "-o", "json")
    assert result.code != 0
    assert "ghost" in result.err


def test_node_name_is_substituted_everywhere() -> None:
    devs = gpus(2)
    devs[0]["attributes"]["resource.kubernetes.io/pcieRoot"] = {"string": "$NODE_NAME-root-0"}
    objs = [device_class(), pool_with_slices("sub", "1", [slice_spec(devs)])]
    state = load(objs)
    new = make_node(state, state.node_pools["sub"], "sub-7", {"zone": "z1"})
    assert new.node.metadata.name == "sub-7"
    assert new.node.metadata.labels["kubernetes.io/hostname"] == "sub-7"
    assert new.node.metadata.labels["zone"] == "z1"
    [rs] = new.slices
    assert rs.spec.node_name == "sub-7" and rs.spec.pool.name == "sub-7"
    assert "$NODE_NAME" not in rs.metadata.name
    root = rs.spec.devices[0].attributes["resource.kubernetes.io/pcieRoot"].string
    assert root == "sub-7-root-0"
    # The placeholder stays in the pool itself (the next node gets its own name).
    again = make_node(state, state.node_pools["sub"], "sub-8", {})
    assert again.slices[0].spec.pool.name == "sub-8"


def test_pool_completeness_is_filled_in_per_driver_pool() -> None:
    """autoscaler#10199: template slices without resourceSliceCount must not leave the pool
    incomplete. MIG publishes two slices in one pool; (d) publishes one pool per driver."""
    state = load([mig_class(), pool_with_slices("mig", "1", mig_slices())])
    new = make_node(state, state.node_pools["mig"], "mig-0", {})
    assert [rs.spec.pool.resource_slice_count for rs in new.slices] == [2, 2]
    state = load(scenario_pcie())
    new = make_node(state, state.node_pools["paired-roots"], "p-0", {})
    assert {rs.spec.driver: rs.spec.pool.resource_slice_count for rs in new.slices} == {
        DRIVER: 1,
        NIC_DRIVER: 1,
    }


def test_explicit_resource_slice_count_is_kept() -> None:
    first = slice_spec(gpus(2), slice_count=2)
    second = slice_spec([{"name": "gpu-9"}], slice_count=2)
    state = load([device_class(), pool_with_slices("two", "1", [first, second])])
    new = make_node(state, state.node_pools["two"], "two-0", {})
    assert [rs.spec.pool.resource_slice_count for rs in new.slices] == [2, 2]


@pytest.mark.parametrize("legacy", MODES)
def test_scale_from_zero_without_resource_slice_count(legacy: bool) -> None:
    objs = eight_gpu_pods(1)
    assert "resourceSliceCount" not in objs[1]["spec"]["resourceSlices"][0]["pool"]
    doc, state = plan_api(objs, legacy)
    assert added(doc) == [("gpu8", 1)] and doc["pending"] == [] and doc["wasted"] == []
    [pool] = state.pools_for_node(state.nodes["gpu8-0"])
    assert not pool.incomplete


def _domain_sizes(doc: dict[str, Any], state: Any) -> list[int]:
    domains: dict[str, int] = {}
    for name in (n for u in doc["scaleUp"] for n in u["nodes"]):
        d = state.nodes[name].metadata.labels[CLIQUE]
        domains[d] = domains.get(d, 0) + 1
    return sorted(domains.values())


def test_topology_labels_fill_domains_then_open_new_ones() -> None:
    objs = [
        device_class(),
        nvl_pool(per_domain=4),
        template("eight-gpus", [gpu_request(8)]),
        *(pod(f"solo-{i}", "eight-gpus") for i in range(7)),
    ]
    doc, state = plan_api(objs)
    assert added(doc) == [("nvl72", 7)]
    assert _domain_sizes(doc, state) == [3, 4]


def test_gang_gets_a_fresh_domain_when_other_pods_fill_one() -> None:
    """Gang of 4 × 8 GPUs in one clique + 3 solo 8-GPU pods, 4 nodes per clique: the gang
    gets a clique of its own, the solo pods the next one."""
    objs = scenario_gang(per_domain=4)
    objs += [pod(f"solo-{i}", "eight-gpus") for i in range(3)]
    doc, state = plan_api(objs)
    assert doc["pending"] == []
    assert doc["summary"]["nodesAdded"] == 7
    gang_domains = {
        state.nodes[state.pods[("default", f"train-{i}")].spec.node_name].metadata.labels[CLIQUE]
        for i in range(4)
    }
    assert len(gang_domains) == 1


# --- the legacy (device-plugin) view -----------------------------------------------------------


def test_physical_counts_count_a_partitionable_gpu_once() -> None:
    state = load([mig_class(), device_class()])
    specs = mig_slices(gpu_count=2)
    views = []
    for i, spec in enumerate(specs):
        spec = yaml.safe_load(yaml.safe_dump(spec).replace("$NODE_NAME", "n1"))
        spec["pool"]["resourceSliceCount"] = 2
        doc = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "spec": spec}
        rs = decode({**doc, "metadata": {"name": f"s{i}"}})
        assert isinstance(rs, ResourceSlice)
        views.extend(device_views(rs))
    counts = physical_counts(state.device_classes, views)
    assert counts[MIG_CLASS] == 2  # 14 MIG partitions on 2 physical GPUs
    assert counts[DRIVER] == 2  # the driver-wide class: still 2 physical GPUs


def test_physical_counts_join_the_counter_sets_one_device_consumes() -> None:
    """The whole GPU consumes from both of its counter sets, each partition from one: one
    physical GPU, as cluster.accelerators groups it (not one per counter set)."""
    state = load([device_class()])

    def consumes(cset: str, counter: str, value: str) -> dict[str, Any]:
        return {"counterSet": cset, "counters": {counter: {"value": value}}}

    counters = [
        {"name": "memory", "counters": {"slices": {"value": "2"}}},
        {"name": "engines", "counters": {"copy": {"value": "2"}}},
    ]
    devices = [
        {"name": "part-engines", "consumesCounters": [consumes("engines", "copy", "1")]},
        {
            "name": "whole",
            "consumesCounters": [
                consumes("engines", "copy", "2"),
                consumes("memory", "slices", "2"),
            ],
        },
        {"name": "part-memory", "consumesCounters": [consumes("memory", "slices", "1")]},
    ]
    views = []
    for i, body in enumerate([{"sharedCounters": counters}, {"devices": devices}]):
        spec = {
            "driver": DRIVER,
            "nodeName": "n1",
            "pool": {"name": "n1", "resourceSliceCount": 2},
            **body,
        }
        doc = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "spec": spec}
        rs = decode({**doc, "metadata": {"name": f"s{i}"}})
        assert isinstance(rs, ResourceSlice)
        views.extend(device_views(rs))
    assert physical_counts(state.device_classes, views) == {DRIVER: 1}


def test_claim_counts_turn_requests_into_whole_devices() -> None:
    spec = {
        "devices": {
            "requests": [
                {"name": "a", "exactly": {"deviceClassName": DRIVER, "count": 3}},
                {"name": "b", "exactly": {"deviceClassName": MIG_CLASS}},
                {"name": "c", "exactly": {"deviceClassName": NIC_DRIVER, "allocationMode": "All"}},
                {
                    "name": "d",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": DRIVER, "count": 2},
                        {"name": "small", "deviceClassName": DRIVER, "count": 1},
                    ],
                },
            ]
        }
    }
    claim = ResourceClaim(spec=decode_spec(spec))
    counts = claim_counts([claim], {NIC_DRIVER: 4})
    assert counts == {DRIVER: 5, MIG_CLASS: 1, NIC_DRIVER: 4}


def decode_spec(spec: dict[str, Any]) -> ResourceClaimSpec:
    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": spec,
    }
    claim = decode(doc)
    assert isinstance(claim, ResourceClaim)
    return claim.spec


def test_lossy_state_drops_claims_gangs_and_slices() -> None:
    state = load(scenario_gang())
    lossy = lossy_state(state)
    assert not lossy.slices and not lossy.claims
    pod0 = lossy.pods[("default", "train-0")]
    assert pod0.spec.resource_claims == () and pod0.spec.scheduling_group is None
    ext = "deviceclass.resource.kubernetes.io/" + DRIVER
    assert pod0.spec.containers[0].resources.requests[ext].value() == 8
    assert pod_claims(lossy, pod0) == []


# --- output ------------------------------------------------------------------------------------


def _yaml_docs(run_cli: Any, tmp_path: Path, objs: list[dict[str, Any]]) -> list[Any]:
    result = run_cli("scale", "-f", write(tmp_path, objs), "--target", "draplan", "-o", "yaml")
    assert result.code == 0, result.err
    return [d for d in yaml.safe_load_all(result.out) if d is not None]


def test_yaml_manifests_decode(run_cli: Any, tmp_path: Path) -> None:
    objs = scenario_provreq(ATOMIC, 3, gpus_per_pod=8, existing_gpus=0)
    docs = _yaml_docs(run_cli, tmp_path, objs)
    decoded = [decode(d) for d in docs]
    kinds = [type(d).__name__ for d in decoded]
    assert kinds == ["ProvisioningRequest", "NodePool"]
    pr, pool = decoded
    assert isinstance(pr, ProvisioningRequest) and isinstance(pool, NodePool)
    assert {c.type: c.status for c in pr.status.conditions} == {
        "Accepted": "True",
        "Provisioned": "True",
    }
    assert pool.metadata.name == "gpu8"
    assert pool.metadata.annotations["draplan.io/target-size-increase"] == "3"
    # The manifests are valid input again: planning them reproduces the pool.
    again = load([*objs[:-1], docs[0]])
    assert "gpu8" in again.node_pools


@pytest.mark.parametrize("legacy", MODES)
def test_yaml_target_sizes_per_pool(run_cli: Any, tmp_path: Path, legacy: bool) -> None:
    result = run_cli(
        "scale",
        "-f",
        write(tmp_path, big_and_tiny()),
        "--expander",
        "least-cost",
        *(["--legacy"] if legacy else []),
        "--target",
        "draplan",
        "-o",
        "yaml",
    )
    docs = [decode(d) for d in yaml.safe_load_all(result.out) if d is not None]
    sizes = {
        d.metadata.name: d.metadata.annotations["draplan.io/target-size-increase"]
        for d in docs
        if isinstance(d, NodePool)
    }
    assert sizes == {"big": "2", "tiny": "2"}


def test_yaml_writes_a_provisioning_request_for_each_gang(run_cli: Any, tmp_path: Path) -> None:
    docs = _yaml_docs(run_cli, tmp_path, scenario_gang(per_domain=4))
    kinds = {d["kind"] for d in docs}
    assert {"ProvisioningRequest", "PodTemplate", "NodePool"} <= kinds


@pytest.mark.parametrize("legacy", MODES)
def test_table_output(run_cli: Any, tmp_path: Path, legacy: bool) -> None:
    flags = ["--legacy"] if legacy else []
    result = run_cli("scale", "-f", write(tmp_path, scenario_numa()), *flags, "-o", "table")
    assert result.code == 0
    first = result.out.splitlines()[0]
    if legacy:
        assert first.startswith("legacy plan: +1 nodes") and "1 wasted" in first
        assert "wasted nodes" in result.out and "cheap-pcie-0" in result.out
    else:
        assert first.startswith("DRA-aware plan: +1 nodes") and "0 wasted" in first
        lines = result.out.splitlines()
        assert lines[1].split() == ["POOL", "ADD", "PODS", "COST/H"]
        assert lines[2].split()[:2] == ["right-numa", "1"]
        wide = run_cli("scale", "-f", write(tmp_path, scenario_numa()), "-o", "wide")
        assert wide.out.splitlines()[2].split()[-1] == "right-numa-0"


def test_plan_shape() -> None:
    doc, state = plan_api(scenario_numa())
    assert list(doc) == [
        "scaleUp",
        "fitExisting",
        "moves",
        "scaleDown",
        "scaleDownKept",
        "wasted",
        "provisioningRequests",
        "pending",
        "summary",
    ]
    assert set(doc["summary"]) == {
        "nodesAdded",
        "costPerHour",
        "podsPlaced",
        "podsFitExisting",
        "podsStillPending",
        "wastedNodes",
    }
    # The state is mutated into the planned cluster.
    assert state.nodes["right-numa-0"].metadata.labels[POOL_LABEL] == "right-numa"
    assert state.pods[("default", "finetune")].spec.node_name == "right-numa-0"


def test_empty_input_plans_nothing() -> None:
    doc, _ = plan_api([device_class()])
    assert doc["scaleUp"] == [] and doc["pending"] == [] and doc["summary"]["nodesAdded"] == 0


# --- determinism -------------------------------------------------------------------------------

SCENARIOS = {
    "numa": scenario_numa,
    "gang": scenario_gang,
    "mig": scenario_mig,
    "pcie": scenario_pcie,
    "atomic": lambda: scenario_provreq(ATOMIC, 3, gpus_per_pod=8, existing_gpus=0),
    "scale-down": scenario_scale_down,
    "expanders": small_and_big,
}


@pytest.mark.parametrize("legacy", MODES)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_input_gives_byte_identical_json(
    run_cli: Any, tmp_path: Path, legacy: bool, name: str
) -> None:
    objs = SCENARIOS[name]()
    flags = ["--legacy"] if legacy else []
    path = write(tmp_path, objs)
    outs = [run_cli("scale", "-f", path, *flags, "-o", "json").out for _ in range(2)]
    assert outs[0] == outs[1]
    # Object order in the input does not matter either.
    reordered = write(tmp_path, list(reversed(objs)), "reversed.yaml")
    assert run_cli("scale", "-f", reordered, *flags, "-o", "json").out == outs[0]


def test_same_state_planned_twice_through_the_api() -> None:
    first = Autoscaler().plan(load(scenario_mig(pods=9))).to_dict()
    second = Autoscaler().plan(load(scenario_mig(pods=9))).to_dict()
    assert first == second


# --- the benchmark at a tiny size (so it cannot rot) ----------------------------------------------


def _bench() -> Any:
    path = Path(__file__).parent.parent / "benchmarks" / "bench_autoscaler.py"
    spec = importlib.util.spec_from_file_location("bench_autoscaler", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_bench_scale_up_tiny() -> None:
    out = _bench().bench_scale_up(pods=40, pools=12)  # 12: every GPU count has a pool
    assert out["podsPlaced"] == 40 and out["podsStillPending"] == 0
    assert 0 < out["nodesAdded"] <= 40


def test_bench_cost_tiny_is_within_target() -> None:
    pytest.importorskip("ortools")
    out = _bench().bench_cost(instances=4, seed=7)
    assert out["plansWithPendingPods"] == 0
    assert out["worstRatio"] <= out["targetRatio"]
