"""The seed's scenarios, each planned twice: DRA-aware and `--legacy` (device-plugin counts
judged by the real scheduler), through `draplan scale -o json` or the public Autoscaler API.

(a) 4 GPUs on one NUMA node; (b) a gang of 4 × 8 GPUs in one NVLink domain that the pool can
only fill with 3 nodes; (c) seven 1g MIG slices on one partitionable GPU; (d) GPU + RDMA NIC on
one PCIe root; (e) both ProvisioningRequest classes and their conditions; (f) scale-down.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from draplan.autoscaler import Autoscaler
from draplan.autoscaler.legacy import EXTENDED_PREFIX, lossy_pool
from draplan.scheduler.profile import draplan_profile
from scale_scenarios import (
    CLIQUE,
    MIG_CLASS,
    T0,
    TOPOLOGY_GATE,
    gpu_request,
    gpus,
    load,
    node_pool,
    plan_api,
    pod,
    provisioned_condition,
    scenario_gang,
    scenario_mig,
    scenario_numa,
    scenario_pcie,
    scenario_provreq,
    scenario_scale_down,
    scenario_shared_claim,
    template,
    write,
)

CHECK = "check-capacity.autoscaling.x-k8s.io"
ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
MODES = [pytest.param(False, id="dra"), pytest.param(True, id="legacy")]


def scale(run_cli: Any, tmp_path: Path, objs: list[dict[str, Any]], *flags: str) -> Any:
    result = run_cli("scale", "-f", write(tmp_path, objs), *flags, "-o", "json")
    assert result.code == 0, result.err
    return result.json()


def pools_added(doc: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for up in doc["scaleUp"]:
        out[up["pool"]] = out.get(up["pool"], 0) + up["add"]
    return out


def conditions(doc: dict[str, Any], name: str = "req") -> dict[str, dict[str, Any]]:
    [pr] = [p for p in doc["provisioningRequests"] if p["name"] == name]
    return {c["type"]: c for c in pr["conditions"]}


def pending(doc: dict[str, Any]) -> list[str]:
    return [p["pod"] for p in doc["pending"]]


# --- (a) 4 GPUs on one NUMA node ---------------------------------------------------------------


def test_a_numa_dra_aware_picks_the_pool_with_a_free_socket(run_cli: Any, tmp_path: Path) -> None:
    doc = scale(run_cli, tmp_path, scenario_numa())
    assert doc["scaleUp"] == [
        {
            "pool": "right-numa",
            "add": 1,
            "nodes": ["right-numa-0"],
            "pods": ["default/finetune"],
            "costPerHour": 30.0,
        }
    ]
    assert doc["wasted"] == [] and doc["pending"] == []
    assert doc["summary"] == {
        "nodesAdded": 1,
        "costPerHour": 30.0,
        "podsPlaced": 1,
        "podsFitExisting": 0,
        "podsStillPending": 0,
        "wastedNodes": 0,
    }


def test_a_numa_legacy_picks_the_cheap_pool_and_wastes_it(run_cli: Any, tmp_path: Path) -> None:
    doc = scale(run_cli, tmp_path, scenario_numa(), "--legacy")
    assert pools_added(doc) == {"cheap-pcie": 1}
    [wasted] = doc["wasted"]
    assert wasted["pool"] == "cheap-pcie" and wasted["node"] == "cheap-pcie-0"
    assert "default/finetune" in wasted["reason"] and "Tainted" in wasted["reason"]
    assert pending(doc) == ["default/finetune"]
    assert doc["summary"]["podsPlaced"] == 0 and doc["summary"]["wastedNodes"] == 1


# --- (b) a gang of 4 × 8 GPUs in one NVLink domain; 3 nodes per domain ----------------------------

GANG_PODS = [f"default/train-{i}" for i in range(4)]
# kube-scheduler gangs the Workload API's groups; a Kueue group is draplan's gang policy's.
GANG_POLICY = {"workload": ("--feature-gates", TOPOLOGY_GATE), "kueue": ("--profile", "draplan")}


@pytest.mark.parametrize("api", ["workload", "kueue"])
def test_b_gang_dra_aware_adds_nothing_and_says_why(run_cli: Any, tmp_path: Path, api: str) -> None:
    doc = scale(run_cli, tmp_path, scenario_gang(api=api), *GANG_POLICY[api])
    assert doc["scaleUp"] == [] and doc["wasted"] == []
    assert doc["summary"]["nodesAdded"] == 0 and doc["summary"]["costPerHour"] == 0
    assert pending(doc) == GANG_PODS
    for entry in doc["pending"]:
        why = entry["reason"]["autoscaler"]
        assert "nvl72" in why and "gang or topology" in why


def test_b_gang_dra_aware_pool_max_below_gang_size_adds_nothing() -> None:
    """18 nodes per domain, but the pool may only grow to 3: still no partial gang."""
    doc, state = plan_api(scenario_gang(per_domain=18, max_nodes=3), gates=TOPOLOGY_GATE)
    assert doc["scaleUp"] == [] and len(state.nodes) == 0
    assert pending(doc) == GANG_PODS


def test_b_gang_dra_aware_completes_the_gang_when_a_domain_can_hold_it() -> None:
    """Control: with 4 nodes per domain the same gang gets 4 nodes, all in one clique."""
    doc, state = plan_api(scenario_gang(per_domain=4), gates=TOPOLOGY_GATE)
    assert pools_added(doc) == {"nvl72": 4}
    assert doc["pending"] == [] and doc["summary"]["podsPlaced"] == 4
    domains = {state.nodes[n].metadata.labels[CLIQUE] for n in doc["scaleUp"][0]["nodes"]}
    assert len(domains) == 1


def test_b_gang_reason_names_the_domain_key_and_the_per_domain_limit() -> None:
    doc, _ = plan_api(scenario_gang(), gates=TOPOLOGY_GATE)
    for entry in doc["pending"]:
        text = " ".join(str(v) for v in entry["reason"].values())
        assert CLIQUE in text and "3" in text
        assert entry["reason"]["autoscaler"].endswith(
            f"needs 4 nodes in one {CLIQUE} domain of nvl72; at most 3 per domain"
        )
        assert entry["reason"]["nodes"] == {"TopologyUnsatisfiable": 0}


def test_b_gang_reason_names_the_pool_max() -> None:
    doc, _ = plan_api(scenario_gang(per_domain=18, max_nodes=3), gates=TOPOLOGY_GATE)
    for entry in doc["pending"]:
        assert entry["reason"]["autoscaler"].endswith(
            f"needs 4 nodes in one {CLIQUE} domain of nvl72; pool max reached at 3"
        )


@pytest.mark.parametrize("api", ["workload", "kueue"])
def test_b_gang_legacy_adds_nodes_that_are_all_wasted(
    run_cli: Any, tmp_path: Path, api: str
) -> None:
    doc = scale(run_cli, tmp_path, scenario_gang(api=api), "--legacy", *GANG_POLICY[api])
    added = pools_added(doc)
    assert added.get("nvl72", 0) >= 3
    nodes = [n for up in doc["scaleUp"] for n in up["nodes"]]
    assert sorted(w["node"] for w in doc["wasted"]) == sorted(nodes)
    assert doc["summary"]["wastedNodes"] == len(nodes) and doc["summary"]["podsPlaced"] == 0
    assert pending(doc) == GANG_PODS


def test_b_gang_legacy_wasted_reason_is_the_schedulers() -> None:
    """The members still pend: each wasted node gives the gang's reason (alone a member
    would fit the node, which is not why it pends)."""
    doc, _ = plan_api(scenario_gang(), legacy=True, gates=TOPOLOGY_GATE)
    for w in doc["wasted"]:
        assert "placed elsewhere" not in w["reason"]
        assert CLIQUE in w["reason"]
    for entry in doc["pending"]:
        assert entry["reason"].get("message")


# --- (c) seven 1g MIG slices on one partitionable GPU ---------------------------------------------

MIG_PODS = [f"default/infer-{i}" for i in range(7)]


def test_c_mig_dra_aware_adds_one_node(run_cli: Any, tmp_path: Path) -> None:
    doc = scale(run_cli, tmp_path, scenario_mig())
    assert doc["scaleUp"] == [
        {
            "pool": "a100-mig",
            "add": 1,
            "nodes": ["a100-mig-0"],
            "pods": MIG_PODS,
            "costPerHour": 4.0,
        }
    ]
    assert doc["pending"] == [] and doc["wasted"] == []


def test_c_mig_dra_aware_eighth_slice_needs_a_second_gpu() -> None:
    doc, _ = plan_api(scenario_mig(pods=8))
    assert pools_added(doc) == {"a100-mig": 2}
    assert doc["pending"] == []


def test_c_mig_legacy_counts_the_partitionable_gpu_once() -> None:
    state = load(scenario_mig())
    lossy = lossy_pool(state, state.node_pools["a100-mig"])
    assert lossy.spec.resource_slices == ()
    assert lossy.spec.template is not None
    alloc = lossy.spec.template.status.allocatable
    assert alloc[EXTENDED_PREFIX + MIG_CLASS].value() == 1


def test_c_mig_legacy_adds_capacity_for_seven_gpus(run_cli: Any, tmp_path: Path) -> None:
    doc = scale(run_cli, tmp_path, scenario_mig(), "--legacy")
    assert pools_added(doc) == {"a100-mig": 7}
    assert doc["summary"]["costPerHour"] == 28.0
    # kube-scheduler's LeastAllocated spreads the seven slices over the seven new nodes: each
    # is used, by one slice of its GPU.
    assert doc["summary"]["podsPlaced"] == 7 and doc["pending"] == []
    assert doc["summary"]["wastedNodes"] == 0
    # A bin-packing scheduler (draplan's profile) puts all seven on one GPU: six idle nodes.
    packed = scale(run_cli, tmp_path, scenario_mig(), "--legacy", "--profile", "draplan")
    assert packed["summary"]["podsPlaced"] == 7 and packed["summary"]["wastedNodes"] == 6
    assert {w["pool"] for w in packed["wasted"]} == {"a100-mig"}


# --- (d) GPU + RDMA NIC on one PCIe root ----------------------------------------------------------


def test_d_pcie_dra_aware_picks_the_pool_that_pairs_roots(run_cli: Any, tmp_path: Path) -> None:
    doc = scale(run_cli, tmp_path, scenario_pcie())
    assert pools_added(doc) == {"paired-roots": 1}
    assert doc["scaleUp"][0]["pods"] == ["default/rdma-worker"]
    assert doc["wasted"] == [] and doc["pending"] == []


def test_d_pcie_legacy_picks_the_cheaper_split_pool_and_wastes_it(
    run_cli: Any, tmp_path: Path
) -> None:
    doc = scale(run_cli, tmp_path, scenario_pcie(), "--legacy")
    assert pools_added(doc) == {"split-roots": 1}
    [wasted] = doc["wasted"]
    assert wasted["node"] == "split-roots-0"
    assert "ConstraintUnsatisfiable" in wasted["reason"]
    [still] = doc["pending"]
    assert still["pod"] == "default/rdma-worker"
    # kube-scheduler's word with no node at all (ErrNoNodesAvailable); the planned node's is
    # the note.
    assert still["reason"]["message"] == "no nodes available to schedule pods"
    assert "paired-roots" in still["reason"]["autoscaler"]
    assert "planned it on split-roots-0" in still["reason"]["autoscaler"]
    assert "ConstraintUnsatisfiable" in still["reason"]["autoscaler"]


# --- (e) ProvisioningRequests ---------------------------------------------------------------------


def _assert_accepted(doc: dict[str, Any]) -> None:
    for pr in doc["provisioningRequests"]:
        accepted = {c["type"]: c for c in pr["conditions"]}["Accepted"]
        assert accepted["status"] == "True"


@pytest.mark.parametrize("legacy", MODES)
def test_e_check_capacity_fits_existing_nodes(legacy: bool) -> None:
    doc, _ = plan_api(scenario_provreq(CHECK, 2), legacy)
    _assert_accepted(doc)
    conds = conditions(doc)
    assert conds["Provisioned"]["status"] == "True"
    assert conds["Provisioned"]["reason"] == "CapacityIsFound"
    assert "Failed" not in conds and "BookingExpired" not in conds
    assert doc["scaleUp"] == []


@pytest.mark.parametrize("legacy", MODES)
def test_e_check_capacity_does_not_fit_and_never_scales_up(legacy: bool) -> None:
    # 10 one-GPU pods, 8 GPUs on n1; a pool could help but check-capacity never scales up.
    doc, _ = plan_api(scenario_provreq(CHECK, 10), legacy)
    _assert_accepted(doc)
    conds = conditions(doc)
    assert (conds["Provisioned"]["status"], conds["Provisioned"]["reason"]) == (
        "False",
        "CapacityIsNotFound",
    )
    assert "Failed" not in conds
    assert doc["scaleUp"] == []


@pytest.mark.parametrize("legacy", MODES)
def test_e_check_capacity_no_retry_fails(run_cli: Any, tmp_path: Path, legacy: bool) -> None:
    objs = scenario_provreq(CHECK, 10, parameters={"noRetry": "true"})
    doc = scale(run_cli, tmp_path, objs, *(["--legacy"] if legacy else []))
    _assert_accepted(doc)
    conds = conditions(doc)
    assert conds["Provisioned"]["status"] == "False"
    assert conds["Provisioned"]["reason"] == "CapacityIsNotFound"
    assert conds["Failed"]["status"] == "True"


@pytest.mark.parametrize("legacy", MODES)
def test_e_atomic_scales_up_when_one_pool_fits_all(
    run_cli: Any, tmp_path: Path, legacy: bool
) -> None:
    objs = scenario_provreq(ATOMIC, 3, gpus_per_pod=8, existing_gpus=0)
    doc = scale(run_cli, tmp_path, objs, *(["--legacy"] if legacy else []))
    _assert_accepted(doc)
    conds = conditions(doc)
    assert conds["Provisioned"]["status"] == "True"
    assert conds["Provisioned"]["reason"] == "CapacityIsProvisioned"
    assert doc["scaleUp"] == [
        {
            "pool": "gpu8",
            "add": 3,
            "nodes": ["gpu8-0", "gpu8-1", "gpu8-2"],
            "pods": ["default/req-0-0", "default/req-0-1", "default/req-0-2"],
            "costPerHour": 60.0,
        }
    ]


@pytest.mark.parametrize("legacy", MODES)
def test_e_atomic_adds_nothing_when_no_pool_fits_all(legacy: bool) -> None:
    # 5 pods × 8 GPUs; the pool may grow by 4 only: all or nothing means nothing.
    doc, state = plan_api(scenario_provreq(ATOMIC, 5, gpus_per_pod=8, existing_gpus=0), legacy)
    _assert_accepted(doc)
    conds = conditions(doc)
    assert (conds["Provisioned"]["status"], conds["Provisioned"]["reason"]) == (
        "False",
        "CapacityIsNotFound",
    )
    assert "Failed" not in conds
    assert doc["scaleUp"] == [] and len(state.nodes) == 0


@pytest.mark.parametrize("legacy", MODES)
def test_e_atomic_does_not_split_a_request_over_two_pools(legacy: bool) -> None:
    """Two pools of 3 nodes could hold 5 pods together, but one option must fit them all."""
    objs = scenario_provreq(ATOMIC, 5, gpus_per_pod=8, existing_gpus=0, pool_max=3)
    objs.append(node_pool("gpu8-b", "20", gpus(8), max_nodes=3))
    doc, _ = plan_api(objs, legacy)
    assert conditions(doc)["Provisioned"]["reason"] == "CapacityIsNotFound"
    assert doc["scaleUp"] == []


@pytest.mark.parametrize("legacy", MODES)
def test_e_atomic_that_fits_existing_nodes_needs_no_scale_up(legacy: bool) -> None:
    doc, _ = plan_api(scenario_provreq(ATOMIC, 1, gpus_per_pod=8), legacy)
    conds = conditions(doc)
    assert (conds["Provisioned"]["status"], conds["Provisioned"]["reason"]) == (
        "True",
        "CapacityIsFound",
    )
    assert doc["scaleUp"] == []


def _late_pod(created: str) -> list[dict[str, Any]]:
    return [template("one-gpu", [gpu_request(1)]), pod("late", "one-gpu", created=created)]


@pytest.mark.parametrize("legacy", MODES)
def test_e_booking_expires_after_ten_minutes(legacy: bool) -> None:
    objs = scenario_provreq(CHECK, 8, conditions=[provisioned_condition(T0)])
    objs += _late_pod("2025-01-01T00:15:00Z")  # "now" is the newest timestamp in the input
    doc, state = plan_api(objs, legacy)
    _assert_accepted(doc)
    conds = conditions(doc)
    assert conds["BookingExpired"]["status"] == "True"
    assert conds["BookingExpired"]["reason"] == "CapacityReservationTimeExpired"
    assert conds["Provisioned"]["status"] == "True"
    assert conds["Provisioned"]["lastTransitionTime"] == T0
    # The expired booking holds nothing: the late pod takes a GPU of n1, no scale-up.
    assert doc["scaleUp"] == [] and doc["pending"] == []
    assert state.pods[("default", "late")].spec.node_name == "n1"


@pytest.mark.parametrize("legacy", MODES)
@pytest.mark.parametrize("booked", ["fresh", "five-minutes-old"])
def test_e_booked_capacity_is_not_given_to_other_pods(legacy: bool, booked: str) -> None:
    conds = [provisioned_condition(T0)] if booked != "fresh" else None
    objs = scenario_provreq(CHECK, 8, conditions=conds) + _late_pod("2025-01-01T00:05:00Z")
    doc, state = plan_api(objs, legacy)
    got = conditions(doc)
    assert got["Provisioned"]["status"] == "True" and "BookingExpired" not in got
    # n1's 8 GPUs are booked for the request: the other pod gets a new node instead.
    assert pools_added(doc) == {"gpu8": 1}
    assert doc["scaleUp"][0]["pods"] == ["default/late"]
    assert state.pods[("default", "late")].spec.node_name == "gpu8-0"


@pytest.mark.parametrize("legacy", MODES)
def test_e_booked_capacity_without_a_pool_leaves_the_pod_pending(legacy: bool) -> None:
    objs = scenario_provreq(CHECK, 8, with_pool=False) + _late_pod(T0)
    doc, _ = plan_api(objs, legacy)
    assert conditions(doc)["Provisioned"]["reason"] == "CapacityIsFound"
    assert pending(doc) == ["default/late"]


def test_e_rechecked_booking_keeps_its_transition_time() -> None:
    """Provisioned=True at 00:00, now 00:05: the re-checked condition keeps 00:00, or the
    booking clock would restart every pass and never expire."""
    objs = scenario_provreq(CHECK, 8, conditions=[provisioned_condition(T0)])
    doc, _ = plan_api(objs + _late_pod("2025-01-01T00:05:00Z"))
    got = conditions(doc)["Provisioned"]
    assert (got["status"], got["lastTransitionTime"]) == ("True", T0)


def test_e_request_not_provisioned_within_seven_days_fails() -> None:
    state = load(scenario_provreq(ATOMIC, 5, gpus_per_pod=8, existing_gpus=0))
    doc = Autoscaler().plan(state, now=datetime(2025, 1, 9, tzinfo=UTC)).to_dict()
    conds = conditions(doc)
    assert conds["Provisioned"]["reason"] == "CapacityIsNotFound"
    assert (conds["Failed"]["status"], conds["Failed"]["reason"]) == ("True", "Expired")


def test_e_failed_request_stays_failed_and_accepted() -> None:
    failed = {
        "type": "Failed",
        "status": "True",
        "reason": "CapacityIsNotFound",
        "message": "capacity is not found and noRetry is set",
        "lastTransitionTime": T0,
    }
    doc, _ = plan_api(scenario_provreq(CHECK, 2, conditions=[failed]))
    _assert_accepted(doc)
    conds = conditions(doc)
    assert conds["Failed"]["status"] == "True" and "Provisioned" not in conds


# --- (f) scale-down -------------------------------------------------------------------------------


def removed(doc: dict[str, Any]) -> list[str]:
    return [r["node"] for r in doc["scaleDown"]]


@pytest.mark.parametrize("legacy", MODES)
@pytest.mark.parametrize("draplan", [False, True])
def test_f_scale_down_removes_the_idle_dra_node_and_gang_nodes_only_as_ca_does(
    run_cli: Any, tmp_path: Path, legacy: bool, draplan: bool
) -> None:
    """CA drains a gang member like any replicated pod; keeping running gangs whole
    (GangMember) is draplan's rule, under its own profile only."""
    flags = [*(["--legacy"] if legacy else []), *(["--profile", "draplan"] if draplan else [])]
    doc = scale(run_cli, tmp_path, scenario_scale_down(), *flags)
    idle = {
        "node": "a-idle",
        "autoscaler": "cluster-autoscaler",
        "reason": "utilization 0.00; no pod to move",
        "pool": "gpus",
        "unneededFor": "10m",
    }
    kept = {k["node"]: (k["reason"], k["message"]) for k in doc["scaleDownKept"]}
    if draplan:
        assert doc["scaleDown"] == [idle]
        assert kept["d-gang"][0] == "GangMember"
    else:
        gang = {**idle, "node": "d-gang", "reason": "utilization 0.25; 2 pod(s) move elsewhere"}
        assert doc["scaleDown"] == [idle, gang]
        assert "d-gang" not in kept
    assert kept["b-special"] == ("NoPlaceToMovePods", "its pods fit no other existing node")
    assert kept["c-annotated"][1].startswith("NotSafeToEvictAnnotation")
    assert kept["z-busy"][0] == "NotUnderutilized"
    assert doc["scaleUp"] == [] and doc["pending"] == []


@pytest.mark.parametrize("legacy", MODES)
@pytest.mark.parametrize(
    ("kwargs", "freed"),
    [
        ({"special": False}, "b-special"),  # the claim no longer needs this node's model
        ({"safe_to_evict": True}, "c-annotated"),  # annotation gone
        ({"gang": False}, "d-gang"),  # the two pods are no longer a gang
    ],
)
def test_f_each_guard_is_what_keeps_its_node(
    legacy: bool, kwargs: dict[str, bool], freed: str
) -> None:
    """Controls: lift one guard and exactly that node becomes removable (its pods fit on
    z-busy), so the default scenario keeps each node for the stated reason (GangMember is
    draplan's own, its profile's)."""
    doc, state = plan_api(scenario_scale_down(**kwargs), legacy, profile=draplan_profile())
    assert removed(doc) == sorted(["a-idle", freed])
    assert "pod(s) move elsewhere" in doc["scaleDown"][1]["reason"]
    moved = [p for p in state.pods.values() if p.spec.node_name == freed]
    assert moved == []


@pytest.mark.parametrize("legacy", MODES)
def test_f_claim_shared_by_pods_on_two_nodes_keeps_both(legacy: bool) -> None:
    doc, _ = plan_api(scenario_shared_claim(), legacy)
    assert removed(doc) == ["z-spare"]


@pytest.mark.parametrize("legacy", MODES)
def test_f_nodes_added_by_the_plan_are_not_removed(legacy: bool) -> None:
    doc, _ = plan_api(scenario_mig(), legacy)
    assert doc["scaleDown"] == []


@pytest.mark.parametrize("legacy", MODES)
def test_e_booked_capacity_is_not_scaled_down(legacy: bool) -> None:
    """n1 holds only the booking (2 of 8 GPUs): under the threshold, but the booked pods have
    nowhere else to go, so n1 stays (Cluster Autoscaler's known gap #6517)."""
    doc, _ = plan_api(scenario_provreq(CHECK, 2, with_pool=False), legacy)
    assert conditions(doc)["Provisioned"]["reason"] == "CapacityIsFound"
    assert doc["scaleDown"] == []
