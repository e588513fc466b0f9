"""`draplan.audit.why`: every category on at least two scenarios (category and key evidence),
the ranking where several fit, the same 8-GPU pod on three cluster states, one actionable
sentence per pod, determinism, and `draplan why` on the command line."""

from __future__ import annotations

import gc
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import audit_scenarios as sc
from draplan.api.codec import decode
from draplan.api.draplan_v1alpha1 import SchedulerProfile
from draplan.audit import CATEGORIES, Diagnosis, why
from draplan.audit.why import Auditor, Placer
from draplan.cluster.state import ClusterState
from draplan.scheduler import Profile, Scheduler, build_profile
from draplan.sources.files import gc_paused
from scale_scenarios import (
    TOPOLOGY_GATE,
    load,
    scenario_gang,
    scenario_numa,
    scenario_pcie,
    write,
)

Objs = list[dict[str, Any]]


def zero_timeout() -> Profile:
    doc = decode(sc.zero_timeout_profile())
    assert isinstance(doc, SchedulerProfile)
    return build_profile(doc)


def audit(objs: Objs, profile: Profile | None = None, gates: str = "") -> dict[str, Diagnosis]:
    return {d.pod[1]: d for d in why(load(objs, gates), profile)}


def one(
    objs: Objs, pod: str, category: str, profile: Profile | None = None, gates: str = ""
) -> Diagnosis:
    d = audit(objs, profile, gates)[pod]
    assert d.category == category, d.to_dict()
    assert_one_sentence(d.message)
    return d


def assert_one_sentence(message: str) -> None:
    """One sentence: starts with a capital, ends with a full stop, no full stop inside."""
    assert message[:1].isupper() or message[:1].isdigit(), message
    assert message.endswith("."), message
    assert not re.search(r"[.!?]\s+[A-Z]", message[:-1]), message


# --- the seed's distinction: one pod, three cluster states ----------------------------------


@pytest.mark.parametrize(
    ("state", "category"),
    [
        (sc.fragmented, "Fragmentation"),
        (sc.topology_mismatch, "TopologyMismatch"),
        (sc.exhausted, "CapacityExhausted"),
    ],
)
def test_same_eight_gpu_pod_on_three_states(state: Callable[[], Objs], category: str) -> None:
    d = one(state(), "trainer", category)
    assert d.devices == 8
    if category == "Fragmentation":
        # 8 GPUs free in total, one per node: each nearest miss has 1 of 8.
        assert d.evidence["nodes"] == {"InsufficientDevices": 8}
        assert all(
            v == ["pod claim 'dev' gpus: 1 of 8 devices free"]
            for v in d.evidence["nearestMiss"].values()
        )
    elif category == "TopologyMismatch":
        # Groups of 4 on every node shape: 8 on one NUMA node can never fit.
        assert d.evidence["constraint"]["largestGroup"] == 4
        assert d.evidence["constraint"]["needed"] == 8
        assert "gpu.example.com/numa" in d.message
    else:
        assert d.evidence["short"] == {"pod claim 'dev' gpus": {"needed": 8, "free": 4}}
        assert d.fix is not None and d.fix["missing"] == 4 and d.fix["add"] == 1


# --- NoMatchingDevice ------------------------------------------------------------------------


def test_no_matching_device_selector_matches_nothing() -> None:
    # The selector reads an attribute no device has: a CEL runtime error on every device,
    # said as such (upstream's scheduler fails the claim on it).
    d = one(sc.no_such_model(), "wants-b200", "NoMatchingDevice")
    assert d.evidence["requests"] == [
        "pod claim 'dev' request gpus (class gpu.example.com with its selectors matches no "
        "device; they cannot be evaluated (CEL runtime error: device gpu.example.com/node-0/"
        "gpu-0: no such key: model (expression: device.attributes['gpu.example.com'].model "
        "== 'b200')))"
    ]
    assert d.fix == {"action": "fix the claim's class or CEL selectors", "verified": False}


def test_no_matching_device_class_missing() -> None:
    d = one(sc.missing_class(), "wants-tpu", "NoMatchingDevice")
    assert "device class tpu.example.com does not exist" in d.evidence["requests"][0]


def test_no_matching_device_template_missing() -> None:
    d = one(sc.missing_template(), "orphan", "NoMatchingDevice")
    assert "no-such-template" in d.evidence["claim"]


def test_a_nodepool_template_device_is_a_match() -> None:
    """The b200 exists only in a NodePool template: not a configuration error."""
    objs = [
        *sc.no_such_model(),
        sc.node_pool(
            "b200s",
            "50",
            [{"name": "gpu-0", "attributes": {"model": {"string": "b200"}}}],
        ),
    ]
    d = one(objs, "wants-b200", "WaitingForScaleUp")
    assert d.fix == {
        "action": "wait for the autoscaler's nodes",
        "pool": "b200s",
        "add": 1,
        "costPerHour": 50.0,
        "verified": True,
    }


# --- GangIncomplete --------------------------------------------------------------------------


def test_gang_incomplete_fewer_members_than_min() -> None:
    result = audit(sc.gang_short_of_members())
    for name in ("quad-0", "quad-1"):
        d = result[name]
        assert d.category == "GangIncomplete"
        assert d.evidence == {"gang": "PodGroup default/quad", "members": 2, "minCount": 4}
        assert d.fix == {"action": "create the missing members", "missing": 2, "verified": False}
        assert_one_sentence(d.message)


def test_gang_incomplete_group_object_missing() -> None:
    d = one(sc.gang_without_group(), "lost-0", "GangIncomplete")
    assert d.evidence["missing"] == "podgroup default/ghost not found"
    assert d.fix == {"action": "create the group object", "verified": False}


# --- Schedulable -----------------------------------------------------------------------------


def test_schedulable_single_pod() -> None:
    d = one(sc.fits_now(), "p", "Schedulable")
    assert d.evidence == {"node": "node-0"} and d.fix is None


def test_schedulable_gang() -> None:
    result = audit(sc.gang_fits_now())
    assert {n: d.category for n, d in result.items()} == {
        "pair-0": "Schedulable",
        "pair-1": "Schedulable",
    }


def test_the_queue_ahead_takes_its_share_first() -> None:
    result = audit(sc.queue_contention())
    assert result["first"].category == "Schedulable"
    second = result["second"]
    assert second.category == "CapacityExhausted"
    assert second.evidence["short"] == {"pod claim 'dev' gpus": {"needed": 8, "free": 0}}


# --- NodeConstraints -------------------------------------------------------------------------


def test_a_node_selector_is_the_scope_never_relaxed() -> None:
    """The pod selects zone b, whose node is full; zone a has room. The selector is its
    owner's choice: the question is zone b's capacity, and no fix drops the selector."""
    d = one(sc.selector_excludes(), "zoned", "CapacityExhausted")
    assert "excludedNodes" not in d.evidence
    assert list(d.evidence["nearestMiss"]) == ["node-b"]
    assert d.fix is not None and d.fix["like"] == "node-b" and d.fix["verified"]
    assert "relax" not in d.fix and "relax" not in d.message


def test_node_constraints_selector_admits_no_node() -> None:
    """A selector no node or pool matches (zone c): NodeConstraints, and the advice is nodes
    it admits, not dropping it."""
    objs = sc.selector_excludes()
    objs[-1]["spec"]["nodeSelector"] = {"zone": "c"}
    d = one(objs, "zoned", "NodeConstraints")
    assert set(d.evidence["excludedNodes"]) == {"node-a", "node-b"}
    assert d.fix == {
        "action": "add nodes that the pod's node selector and affinity admit",
        "verified": False,
    }


def test_node_constraints_taint() -> None:
    d = one(sc.taint_excludes(), "untolerated", "NodeConstraints")
    assert d.evidence["excludedNodes"]["node-free"] == "node(s) had untolerated taint(s)"
    assert d.fix == {
        "action": "add a toleration",
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "verified": True,
    }
    assert d.message.endswith("; add a toleration for dedicated.")


# --- NodePools -------------------------------------------------------------------------------


def test_waiting_for_scale_up_single_pod() -> None:
    d = one(scenario_numa(), "finetune", "WaitingForScaleUp")
    assert d.fix == {
        "action": "wait for the autoscaler's nodes",
        "pool": "right-numa",
        "add": 1,
        "costPerHour": 30.0,
        "verified": True,
    }


@pytest.mark.parametrize("enabled", [True, False])
def test_the_audit_runs_without_the_cyclic_collector_then_leaves_it_as_it_was(
    enabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = load(scenario_numa())
    during: list[bool] = []
    audit = Auditor.audit

    def recorded(self: Auditor, pods: list[Any]) -> list[Diagnosis]:
        during.append(gc.isenabled())
        return audit(self, pods)

    monkeypatch.setattr(Auditor, "audit", recorded)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        why(state)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert during == [False]


def test_pauses_of_the_collector_in_two_threads_end_when_the_last_ends() -> None:
    """`serve`'s audit and the expander's judge pause the collector from two threads, each
    ending while the other's pause is under way: it stays off until both have ended."""
    was = gc.isenabled()
    gc.enable()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with gc_paused(freeze=False):
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with gc_paused(freeze=False):
            second_in.set()
            first_out.wait(10)
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert seen == [False, True]
    finally:
        (gc.enable if was else gc.disable)()


def test_waiting_for_scale_up_gang() -> None:
    result = audit(scenario_gang(per_domain=4), gates=TOPOLOGY_GATE)
    assert {d.category for d in result.values()} == {"WaitingForScaleUp"}
    assert result["train-0"].fix == {
        "action": "wait for the autoscaler's nodes",
        "pool": "nvl72",
        "add": 4,
        "costPerHour": 393.28,
        "verified": True,
    }


def test_waiting_for_scale_up_pcie_pairs() -> None:
    d = one(scenario_pcie(), "rdma-worker", "WaitingForScaleUp")
    assert d.fix is not None and d.fix["pool"] == "paired-roots"


def test_pool_limit_max_nodes() -> None:
    result = audit(sc.pool_max_reached())
    assert result["first"].category == "WaitingForScaleUp"
    d = result["second"]
    assert d.category == "PoolLimitReached"
    assert d.fix == {
        "action": "raise the pool's maxNodes",
        "pool": "gpu8",
        "maxNodes": 2,
        "add": 1,
        "verified": True,
    }
    assert "maxNodes 1" in d.message


def test_pool_limit_domain_size() -> None:
    d = one(scenario_gang(), "train-0", "PoolLimitReached", gates=TOPOLOGY_GATE)
    assert d.fix == {
        "action": "raise the pool's nodesPerDomain",
        "pool": "nvl72",
        "add": 4,
        "nodesPerDomain": 3,
        "needed": 4,
        "verified": True,
    }
    assert "nvl72" in d.evidence["autoscaler"]


def test_pool_limit_both_limits_named() -> None:
    d = one(scenario_gang(max_nodes=2), "train-0", "PoolLimitReached", gates=TOPOLOGY_GATE)
    assert d.fix is not None and d.fix["nodesPerDomain"] == 3 and d.fix["maxNodes"] == 4


def test_no_pool_can_fit_numa() -> None:
    d = one(sc.pool_wrong_numa(), "finetune", "NoPoolCanFit")
    assert "tolerated taints" in d.evidence["pools"]["cheap-pcie"]


def test_no_pool_shape_meets_the_pcie_pairing() -> None:
    """The only pool's NICs sit on other PCIe roots than its GPUs: no pool can ever host it,
    and the reason is the shape (TopologyMismatch), not a missing pool."""
    d = one(sc.pool_split_roots(), "rdma-worker", "TopologyMismatch")
    assert d.evidence["constraint"]["largestGroup"] == 1
    assert d.evidence["constraint"]["needed"] == 2
    assert "on any node or pool" in d.message


# --- CapacityExhausted -----------------------------------------------------------------------


def test_capacity_exhausted_gang_demand() -> None:
    result = audit(sc.gang_exhausted())
    for name in ("big-0", "big-1"):
        d = result[name]
        assert d.category == "CapacityExhausted"
        assert d.evidence["short"] == {"pod claim 'dev' gpus": {"needed": 16, "free": 8}}
        assert d.fix == {
            "action": "add nodes",
            "resource": "pod claim 'dev' gpus",
            "missing": 8,
            "add": 1,
            "like": "node-0",
            "verified": True,
        }
        assert "the gang" in d.message


def test_capacity_exhausted_no_node_big_enough() -> None:
    d = one(sc.too_big(), "huge", "CapacityExhausted")
    assert d.evidence["nearestMiss"]["node-0"] == ["cpu: 64 cpu free of 128 cpu needed"]
    assert d.fix == {"action": "add nodes that can hold the pod", "verified": False}


# --- TopologyMismatch ------------------------------------------------------------------------


def test_topology_mismatch_pcie_root() -> None:
    """The node's NICs sit on other roots than its GPUs: no group of the shape exists."""
    d = one(sc.pcie_mismatch(), "rdma-worker", "TopologyMismatch")
    assert d.evidence["constraint"]["matchAttribute"] == "resource.kubernetes.io/pcieRoot"
    assert d.evidence["constraint"]["largestGroup"] == 1
    assert "resource.kubernetes.io/pcieRoot" in d.message


def split_groups() -> Objs:
    """node-0: 4 free GPUs, 2 on each NUMA node of 4; node-1: 3 free on one NUMA node; the
    pod wants 4 on one NUMA node."""
    return [
        sc.device_class(),
        sc.gpu_template("four", 4, numa=True),
        *sc.gpu_node("node-0", [0, 0, 0, 0, 1, 1, 1, 1], held_by={"a": [0, 1], "b": [4, 5]}),
        *sc.gpu_node("node-1", held_by=sc.holding("node-1", 3)),
        sc.pending("p", "four"),
    ]


def test_no_fix_is_printed_when_none_works() -> None:
    """Impossible pairing and 128 cpu on 64-cpu nodes: dropping the constraint, even with a
    new node like the cluster's, never places it, so no fix is printed and the message says
    so."""
    objs = sc.pcie_mismatch()
    objs[-1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "128"
    d = one(objs, "rdma-worker", "TopologyMismatch")
    assert d.fix is None
    assert "relaxing the constraint alone does not make it fit" in d.message


def test_topology_mismatch_free_devices_split() -> None:
    """4 free GPUs, 2 on each NUMA node of a node whose NUMA nodes hold 4: the shape can
    hold the pod, the free devices cannot; moving the holder of one group fixes it."""
    d = one(split_groups(), "p", "TopologyMismatch")
    assert d.evidence["shapedNodes"] == ["node-0"]
    assert d.fix is not None and d.fix["verified"] and d.fix["node"] == "node-0"


def test_topology_mismatch_gang_domain() -> None:
    d = one(sc.gang_domain_mismatch(), "ring-0", "TopologyMismatch", gates=TOPOLOGY_GATE)
    assert d.evidence["domains"] == 2
    assert d.evidence["bestDomain"] == "a" and d.evidence["fitsInBest"] == 1
    assert d.fix is not None and d.fix["domain"] == "a"


# --- Fragmentation ---------------------------------------------------------------------------


def test_fragmentation_names_the_pods_to_move() -> None:
    d = one(sc.defragmentable(), "trainer", "Fragmentation")
    assert d.fix == {
        "action": "move pods to defragment",
        "node": "node-0",
        "move": {"default/small-a": "node-1", "default/small-b": "node-1"},
        "verified": True,
    }
    assert d.message.endswith(
        "moving default/small-a and default/small-b to node-1 makes room on node-0."
    )
    assert d.evidence["nearestMiss"]["node-0"] == ["pod claim 'dev' gpus: 6 of 8 devices free"]


def test_fragmentation_without_a_move_suggests_a_node() -> None:
    """Every node holds a 7-GPU pod that fits nowhere else: no move helps."""
    d = one(sc.fragmented(), "trainer", "Fragmentation")
    assert d.fix == {"action": "add a node", "add": 1, "like": "node-0", "verified": True}


# --- GangUnplaceable -------------------------------------------------------------------------


def test_gang_unplaceable_device_leftovers() -> None:
    d = one(sc.gang_split_leftovers(), "trio-0", "GangUnplaceable")
    assert d.evidence["fitTogether"] == 2 and d.evidence["needed"] == 3
    assert d.fix == {
        "action": "free room for the whole gang or lower minCount",
        "more": 1,
        "verified": False,
    }


def test_gang_unplaceable_cpu() -> None:
    d = one(sc.gang_cpu_split(), "duo-1", "GangUnplaceable")
    assert d.evidence["fitTogether"] == 1 and d.evidence["needed"] == 2
    assert d.evidence["nearestMiss"]["node-1"] == ["cpu: 34 cpu free of 40 cpu needed"]


# --- Timeout ---------------------------------------------------------------------------------


@pytest.mark.parametrize("nodes", [1, 2])
def test_timeout_when_every_candidate_runs_out_of_budget(nodes: int) -> None:
    d = one(sc.search_budget(nodes), "searcher", "Timeout", zero_timeout())
    assert d.evidence["nodes"] == {"Timeout": nodes}
    assert d.evidence["timedOut"] == [f"node-{n}" for n in range(nodes)]


def test_timeout_cli(run_cli: Any, tmp_path: Path) -> None:
    profile = write(tmp_path, [sc.zero_timeout_profile()], "profile.yaml")
    path = write(tmp_path, sc.search_budget(2))
    out = run_cli("why", "-f", path, "--profile", profile, "-o", "json")
    assert out.code == 0, out.err
    assert out.json()["summary"] == {"Timeout": 1}


# --- the ranking where several categories fit -------------------------------------------------


def test_rank_no_matching_device_before_gang_incomplete() -> None:
    objs = [
        *sc.no_such_model(),
        sc.pod_group("g", 3),
        sc.gang_member("g-0", "g", "b200"),
    ]
    assert audit(objs)["g-0"].category == "NoMatchingDevice"


def test_rank_gang_incomplete_before_schedulable() -> None:
    """Room for both members, but only one exists."""
    objs = [*sc.gang_fits_now()[:-1]]
    assert audit(objs)["pair-0"].category == "GangIncomplete"


def test_rank_schedulable_before_node_constraints() -> None:
    """A tainted node with room is no problem while an untainted one has room too."""
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    objs = [
        sc.device_class(),
        *sc.gpu_node("a-tainted", taints=taint),
        *sc.gpu_node("b-open"),
        sc.gpu_template("four", 4),
        sc.pending("p", "four"),
    ]
    assert audit(objs)["p"].category == "Schedulable"


def test_device_taints_on_the_only_fitting_devices() -> None:
    d = one(sc.device_tainted(), "trainer", "DeviceTaints")
    assert [t["deviceTaintRule"] for t in d.evidence["deviceTaints"]] == ["gpu-3-xid-errors"]
    assert list(d.evidence["nearestMiss"]) == ["node-0"]
    assert d.fix == {
        "action": "add a device toleration",
        "deviceTolerations": [
            {"key": "gpu.example.com/xid", "operator": "Exists", "effect": "NoExecute"}
        ],
        "verified": True,
    }


def test_rank_scale_up_before_device_taints() -> None:
    """A pool adds a node whose devices carry no taint: that is what happens to the pod."""
    objs = [*sc.device_tainted(), sc.node_pool("gpu8", "20", sc.gpus(8))]
    assert audit(objs)["trainer"].category == "WaitingForScaleUp"


def test_rank_scale_up_before_node_constraints() -> None:
    """A pool adds a node for it while an existing node with room is excluded by a taint:
    the autoscaler's scale-up is what happens to it (as `scale` says)."""
    objs = [*sc.taint_excludes(), sc.node_pool("gpu8", "20", sc.gpus(8))]
    d = audit(objs)["untolerated"]
    assert d.category == "WaitingForScaleUp"
    assert d.fix is not None and d.fix["pool"] == "gpu8"


def test_rank_node_constraints_before_pools_that_add_nothing() -> None:
    """An existing node with room is excluded by a taint; the pool's nodes are too small."""
    objs = [*sc.taint_excludes(), sc.node_pool("gpu2", "20", sc.gpus(2))]
    assert audit(objs)["untolerated"].category == "NodeConstraints"


def test_rank_pools_before_capacity() -> None:
    """Capacity is exhausted, but a NodePool can add a node: the autoscaler's answer wins."""
    objs = [*sc.exhausted(), sc.node_pool("gpu8", "20", sc.gpus(8))]
    d = one(objs, "trainer", "WaitingForScaleUp")
    assert d.fix == {
        "action": "wait for the autoscaler's nodes",
        "pool": "gpu8",
        "add": 1,
        "costPerHour": 20.0,
        "verified": True,
    }


def test_rank_capacity_before_topology() -> None:
    """A node of 8 GPUs on one NUMA node with 6 free: the 8-on-one-NUMA pod fits the shape,
    and 6 < 8 free is the answer."""
    objs = [
        sc.device_class(),
        *sc.eight_gpu_pod(numa=True),
        *sc.gpu_node("node-0", held_by={"w": [0, 4]}),
    ]
    d = one(objs, "trainer", "CapacityExhausted")
    assert d.evidence["short"] == {"pod claim 'dev' gpus": {"needed": 8, "free": 6}}


def test_rank_impossible_topology_before_capacity() -> None:
    """A node whose 6 free GPUs are split 3/3 over NUMA nodes of 4: 8 on one NUMA node can
    never fit, so freeing GPUs would not help: TopologyMismatch, not CapacityExhausted."""
    objs = [
        sc.device_class(),
        *sc.eight_gpu_pod(numa=True),
        *sc.gpu_node("node-0", [0, 0, 0, 0, 1, 1, 1, 1], held_by={"w": [0, 4]}),
    ]
    d = one(objs, "trainer", "TopologyMismatch")
    assert d.evidence["constraint"]["largestGroup"] == 4
    assert d.fix is None or d.fix["verified"]


def test_rank_topology_before_fragmentation() -> None:
    """node-0 has 4 free split over two NUMA nodes, node-1 3 free: a shape problem on node-0
    comes before the split across nodes."""
    assert audit(split_groups())["p"].category == "TopologyMismatch"


def test_rank_timeout_when_the_other_node_can_never_host() -> None:
    """One node runs out of budget, another's shape can never meet the constraint: only the
    first could hold the pod, so its timeout is the answer, not the other's shape."""
    objs = sc.search_budget(1)
    easy = sc.hard_slice("node-easy")
    for i, dev in enumerate(easy["spec"]["devices"]):
        # Five values of a and b: never six distinct, which the search sees at once.
        dev["attributes"] = {"a": {"int": i % 5}, "b": {"int": i % 5}}
    objs += [sc.node("node-easy"), easy]
    d = one(objs, "searcher", "Timeout", zero_timeout())
    assert d.evidence["nodes"] == {"ConstraintUnsatisfiable": 1, "Timeout": 1}
    assert d.evidence["timedOut"] == ["node-0"]


def test_rank_fragmentation_before_gang_unplaceable() -> None:
    """Three nodes with 4 free GPUs each and a gang of two 6-GPU pods: 12 free for 12 needed,
    but no member fits anywhere alone: Fragmentation (judged per pod), not GangUnplaceable."""
    objs = [sc.device_class(), sc.gpu_template("six", 6), sc.pod_group("pair", 2)]
    for n in range(3):
        objs += sc.gpu_node(f"node-{n}", held_by=sc.holding(f"node-{n}", 4))
    objs += [sc.gang_member(f"pair-{i}", "pair", "six") for i in range(2)]
    d = one(objs, "pair-0", "Fragmentation")
    assert d.evidence["nodes"] == {"InsufficientDevices": 3}


# --- properties of every answer ---------------------------------------------------------------

ALL: list[tuple[Callable[[], Objs], Profile | None]] = [
    (sc.mixed_queue, None),
    (sc.fragmented, None),
    (sc.topology_mismatch, None),
    (sc.exhausted, None),
    (sc.no_such_model, None),
    (sc.missing_template, None),
    (sc.missing_class, None),
    (sc.gang_short_of_members, None),
    (sc.gang_without_group, None),
    (sc.fits_now, None),
    (sc.gang_fits_now, None),
    (sc.queue_contention, None),
    (sc.selector_excludes, None),
    (sc.taint_excludes, None),
    (sc.anti_affinity_held, None),
    (sc.spread_skewed, None),
    (sc.host_port_held, None),
    (sc.pool_max_reached, None),
    (sc.pool_wrong_numa, None),
    (sc.pool_split_roots, None),
    (sc.gang_exhausted, None),
    (sc.too_big, None),
    (sc.pcie_mismatch, None),
    (sc.gang_domain_mismatch, None),
    (sc.defragmentable, None),
    (sc.gang_split_leftovers, None),
    (sc.gang_cpu_split, None),
    (scenario_numa, None),
    (scenario_gang, None),
    (scenario_pcie, None),
    (sc.gated, None),
    (sc.device_tainted, None),
]


def test_every_category_is_reached() -> None:
    seen = {d.category for build, profile in ALL for d in why(load(build()), profile)}
    seen |= {d.category for d in why(load(sc.search_budget()), zero_timeout())}
    assert seen == set(CATEGORIES)


@pytest.mark.parametrize(("build", "profile"), ALL, ids=lambda x: getattr(x, "__name__", ""))
def test_deterministic_one_sentence_and_state_unchanged(
    build: Callable[[], Objs], profile: Profile | None
) -> None:
    state = load(build())
    before = _snapshot(state)
    first = [d.to_dict() for d in why(state, profile)]
    assert _snapshot(state) == before
    assert [d.to_dict() for d in why(state, profile)] == first
    # Input order does not matter either.
    assert [d.to_dict() for d in why(load(list(reversed(build()))), profile)] == first
    for d in first:
        assert d["category"] in CATEGORIES
        assert_one_sentence(d["message"])


def _snapshot(state: ClusterState) -> tuple[Any, ...]:
    return (
        sorted((k, p.spec.node_name) for k, p in state.pods.items()),
        sorted(
            (k, c.status.allocation is not None, len(c.status.reserved_for))
            for k, c in state.claims.items()
        ),
        sorted(state.nodes.keys()),
        sorted(state.exclusive.items()),
    )


@pytest.mark.parametrize(
    "build",
    [
        sc.queue_contention,
        sc.gang_fits_now,
        sc.gang_split_leftovers,
        sc.defragmentable,
        sc.mixed_queue,
    ],
)
def test_placer_places_as_the_scheduler_does(build: Callable[[], Objs]) -> None:
    """The audit's quiet scheduler only skips failure messages: same placements."""

    ours = {r.key: r.node for r in Placer().place(load(build()))}
    assert ours == {r.key: r.node for r in Scheduler().run(load(build()))}


# --- the command line --------------------------------------------------------------------------


def test_why_cli_json(run_cli: Any, tmp_path: Path) -> None:
    objs = [*sc.queue_contention()]
    out = run_cli("why", "-f", write(tmp_path, objs), "-o", "json")
    assert out.code == 0, out.err
    doc = out.json()
    assert [p["pod"] for p in doc["pods"]] == ["default/first", "default/second"]
    assert set(doc["pods"][0]) == {"pod", "category", "message", "evidence", "fix"}
    assert doc["summary"] == {"Schedulable": 1, "CapacityExhausted": 1}


def test_why_cli_table_groups_by_category(run_cli: Any, tmp_path: Path) -> None:
    out = run_cli("why", "-f", write(tmp_path, sc.gang_exhausted()))
    assert out.code == 0, out.err
    assert "CapacityExhausted (2)" in out.out
    lines = out.out.splitlines()
    assert lines[1].split() == ["NAMESPACE", "NAME", "DEVICES", "MESSAGE"]
    assert lines[2].split()[:2] == ["default", "big-0"]


def test_why_cli_wide_adds_the_fix(run_cli: Any, tmp_path: Path) -> None:
    path = write(tmp_path, sc.gang_exhausted())
    doc = run_cli("why", "-f", path, "-o", "json").json()
    out = run_cli("why", "-f", path, "-o", "wide")
    assert out.code == 0, out.err
    assert out.out.splitlines()[1].split()[-1] == "FIX"
    action = doc["pods"][0]["fix"]["action"]
    assert f"action={action}" in out.out
