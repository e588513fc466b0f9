"""Karpenter's consolidation of the nodes it owns (autoscaler.karpenter_disruption), on clusters
of Trainium and GB200 NodePools with DaemonSets beside Cluster Autoscaler's EKS node groups and
a control-plane node: every Karpenter node is deleted by a named method or kept with what keeps
it in Karpenter's terms; budgets, do-not-disrupt, PodDisruptionBudgets, consolidateAfter and
DRA claims change the answers as they change Karpenter's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from draplan.api.errors import BadInput
from karpenter_scenarios import (
    NEURON,
    NOW,
    clock,
    control_plane,
    daemon_pods,
    eks_node,
    gb200_claim,
    gb200_class,
    gb200_slice,
    karpenter_node,
    karpenter_pool,
    node_claim,
    plan_of,
    pod,
    state_of,
)
from scale_scenarios import pdb, write

DND = {"karpenter.sh/do-not-disrupt": "true"}
GB200 = "p6e-gb200.36xlarge"


def trainium(budgets: list[dict[str, Any]] | None = None, **pool: Any) -> list[dict[str, Any]]:
    """Four trn2 nodes of a Karpenter NodePool: trn-a empty (DaemonSets only), trn-b and trn-e
    light (their pods fit elsewhere), trn-c busy, trn-d running a do-not-disrupt pod; an EKS
    system group and a control-plane node beside."""
    objs = [
        control_plane(),
        eks_node("sys-a", "system"),
        pod("coredns-a", "sys-a", ns="kube-system"),
        clock(),
        karpenter_pool("trainium", budgets=budgets, **pool),
    ]
    for n in "abcde":
        objs += [
            karpenter_node(f"trn-{n}", "trainium", extended={NEURON: "16"}),
            *daemon_pods(f"trn-{n}"),
        ]
    objs += [
        pod("light-0", "trn-b", neuron=2),
        pod("light-1", "trn-e", neuron=2),
        pod("busy-0", "trn-c", cpu="100", neuron=12),
        pod("pinned-0", "trn-d", neuron=2, annotations=DND),
    ]
    return objs


def _doc(objs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    plan, _ = plan_of(objs)
    doc = plan.to_dict()
    return doc, {k["node"]: k for k in doc["scaleDownKept"]}


def _removed(doc: dict[str, Any], by: str = "karpenter") -> list[str]:
    return [r["node"] for r in doc["scaleDown"] if r["autoscaler"] == by]


def test_every_node_has_one_owner_and_one_answer() -> None:
    doc, kept = _doc(trainium(budgets=[{"nodes": "100%"}]))
    removed = {r["node"]: r for r in doc["scaleDown"]}
    names = {"cp-0", "sys-a", *(f"trn-{n}" for n in "abcde")}
    assert set(removed) | set(kept) == names and not set(removed) & set(kept)
    # The control-plane node carries Karpenter's label: neither autoscaler touches it.
    assert kept["cp-0"]["autoscaler"] == "cluster-autoscaler"
    assert (kept["cp-0"]["reason"], kept["cp-0"]["message"]) == (
        "NotAutoscaled",
        "a control-plane node",
    )
    assert kept["sys-a"]["autoscaler"] == "cluster-autoscaler"
    for name in ("trn-a", "trn-b", "trn-c", "trn-d", "trn-e"):
        entry = removed.get(name) or kept[name]
        assert entry["autoscaler"] == "karpenter", name
    assert kept["trn-d"]["reason"] == "DoNotDisrupt"
    assert "ml/pinned-0" in kept["trn-d"]["message"]
    assert removed["trn-a"]["disruptionReason"] == "Empty"
    assert removed["trn-a"]["consolidation"] == "empty"
    # The cheapest nodes with pods, found together: trn-b's pod and the busy one fit the
    # others; with them gone, trn-e's pods (the busy one moved there) fit nowhere.
    assert [removed[n]["consolidation"] for n in ("trn-b", "trn-c")] == ["multi", "multi"]
    assert "deleted together with trn-c" in removed["trn-b"]["reason"]
    assert kept["trn-e"]["reason"] == "Unconsolidatable"


@pytest.mark.parametrize(
    ("budgets", "removed"),
    [
        ([{"nodes": "0"}], set()),  # nothing may be disrupted
        ([{"nodes": "10%"}], {"trn-a"}),  # ceil(10% of 5) = 1: the empty node goes first
        ([{"nodes": "2"}], {"trn-a", "trn-b"}),  # the cheapest underutilized one after it
        ([{"nodes": "40%"}], {"trn-a", "trn-b"}),
        ([{"nodes": "100%"}], {"trn-a", "trn-b", "trn-c"}),
        (None, {"trn-a"}),  # the CRD's default: one budget of 10%
        # Only Empty is blocked: the others' pods move onto the empty node.
        ([{"nodes": "0", "reasons": ["Empty"]}], {"trn-b", "trn-c", "trn-e"}),
        ([{"nodes": "0", "reasons": ["Underutilized"]}, {"nodes": "3"}], {"trn-a"}),
        ([{"nodes": "0", "reasons": ["Drifted"]}], {"trn-a", "trn-b", "trn-c"}),
    ],
)
def test_budgets_bound_what_karpenter_deletes(
    budgets: list[dict[str, Any]] | None, removed: set[str]
) -> None:
    doc, kept = _doc(trainium(budgets=budgets))
    assert set(_removed(doc)) == removed
    if len(removed) < 3:  # the budget, not the room, is what stopped it
        for name in {"trn-a", "trn-b", "trn-c", "trn-e"} - removed:
            assert kept[name]["reason"] == "DisruptionBudget", kept[name]


def test_a_budget_counts_nodes_already_deleting() -> None:
    """A node NotReady or being deleted takes one of the budget's disruptions."""
    objs = trainium(budgets=[{"nodes": "2"}])
    for o in objs:
        if o["metadata"]["name"] == "trn-c":
            o["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    doc, kept = _doc(objs)
    assert _removed(doc) == ["trn-a"]
    assert "1 NotReady or deleting" in kept["trn-b"]["message"]


def test_a_scheduled_budget_limits_only_while_active() -> None:
    """Budget.IsActive: a schedule's window since its last hit; now is 12:00 UTC."""
    active = [{"nodes": "0", "schedule": "0 11 * * *", "duration": "2h"}, {"nodes": "100%"}]
    inactive = [{"nodes": "0", "schedule": "0 13 * * *", "duration": "30m"}, {"nodes": "100%"}]
    assert _removed(_doc(trainium(budgets=active))[0]) == []
    assert set(_removed(_doc(trainium(budgets=inactive))[0])) == {"trn-a", "trn-b", "trn-c"}


def test_a_schedule_cron_cannot_read_fails_closed() -> None:
    """The CRD's pattern admits five words; one cron cannot parse blocks every disruption."""
    budgets = [{"nodes": "100%", "schedule": "every day at nine am", "duration": "1h"}]
    doc, kept = _doc(trainium(budgets=budgets))
    assert _removed(doc) == []
    assert kept["trn-a"]["reason"] == "DisruptionBudget"


def test_when_empty_pool_beside_an_underutilized_one() -> None:
    """consolidationPolicy WhenEmpty: emptiness only; the light node keeps its pod."""
    objs = trainium(budgets=[{"nodes": "100%"}], policy="WhenEmpty")
    objs += [karpenter_pool("general", budgets=[{"nodes": "100%"}])]
    for n in "xy":
        objs += [
            karpenter_node(f"gen-{n}", "general", cpu="16", memory="64Gi", instance="m7i.4xlarge"),
            pod(f"web-{n}", f"gen-{n}", cpu="2", selector={"karpenter.sh/nodepool": "general"}),
        ]
    doc, kept = _doc(objs)
    assert "trn-a" in _removed(doc)
    assert kept["trn-b"]["reason"] == kept["trn-e"]["reason"] == "WhenEmpty"
    assert "consolidationPolicy: WhenEmpty" in kept["trn-b"]["message"]
    # The general pool consolidates one of its two light nodes onto the other.
    gen = [n for n in _removed(doc) if n.startswith("gen-")]
    assert len(gen) == 1
    assert kept[({"gen-x", "gen-y"} - set(gen)).pop()]["reason"] == "Unconsolidatable"


def test_do_not_disrupt_on_the_node() -> None:
    objs = trainium(budgets=[{"nodes": "100%"}])
    objs[5]["metadata"]["annotations"] = DND  # trn-a, the empty one
    assert objs[5]["metadata"]["name"] == "trn-a"
    doc, kept = _doc(objs)
    assert "trn-a" not in _removed(doc)
    assert kept["trn-a"]["reason"] == "DoNotDisrupt"


def test_a_do_not_disrupt_pod_that_finished_blocks_nothing() -> None:
    """IsDisruptable: only an active pod's annotation counts."""
    objs = trainium(budgets=[{"nodes": "100%"}])
    done = pod("done-0", "trn-a", annotations=DND)
    done["status"]["phase"] = "Succeeded"
    doc, _ = _doc([*objs, done])
    assert "trn-a" in _removed(doc)


@pytest.mark.parametrize(
    ("allowed", "tolerates", "blocked"), [(0, False, True), (1, False, False), (0, True, False)]
)
def test_a_pod_disruption_budget_that_allows_no_eviction_keeps_the_node(
    allowed: int, tolerates: bool, blocked: bool
) -> None:
    """CanEvictPods; a pod that tolerates karpenter.sh/disrupted is not evicted (IsEvictable),
    so its budget does not matter."""
    objs = trainium(budgets=[{"nodes": "100%"}])
    for o in objs:
        if o["metadata"]["name"] == "light-0":
            o["metadata"]["labels"] = {"app": "light"}
            if tolerates:
                o["spec"]["tolerations"] = [{"key": "karpenter.sh/disrupted", "operator": "Exists"}]
    objs.append(pdb("light", "ml", "light", allowed))
    doc, kept = _doc(objs)
    if blocked:
        assert kept["trn-b"]["reason"] == "PodDisruptionBudget"
        assert "ml/light" in kept["trn-b"]["message"]
    else:
        assert "trn-b" in _removed(doc)


def test_consolidate_after_from_the_node_claims_last_pod_event() -> None:
    """Consolidatable once consolidateAfter has passed since lastPodEventTime; Never: never."""
    objs = trainium(budgets=[{"nodes": "100%"}], after="10m")
    objs += [
        node_claim("trn-a", "trainium", last_pod_event="2026-05-01T11:55:00Z"),  # 5 min ago
        node_claim("trn-b", "trainium", last_pod_event="2026-05-01T11:40:00Z"),  # 20 min ago
    ]
    doc, kept = _doc(objs)
    assert kept["trn-a"]["reason"] == "NotConsolidatable"
    assert "Consolidatable at 2026-05-01T12:05:00Z" in kept["trn-a"]["message"]
    assert "trn-b" in _removed(doc)
    never, kept = _doc(trainium(budgets=[{"nodes": "100%"}], after="Never"))
    assert _removed(never) == []
    assert {kept[f"trn-{n}"]["reason"] for n in "abce"} == {"ConsolidationDisabled"}


def test_a_node_without_the_initialized_label_is_no_candidate() -> None:
    objs = trainium(budgets=[{"nodes": "100%"}])
    objs[5] = karpenter_node("trn-a", "trainium", extended={NEURON: "16"}, initialized=False)
    doc, kept = _doc(objs)
    assert kept["trn-a"]["reason"] == "NotInitialized"
    assert "trn-a" not in _removed(doc)


def test_a_pending_pod_that_fits_nominates_the_node() -> None:
    objs = trainium(budgets=[{"nodes": "100%"}])
    waiting = pod("waiting-0", None, neuron=16)
    waiting["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    doc, kept = _doc([*objs, waiting])
    assert "trn-a" not in _removed(doc)
    assert kept["trn-a"]["reason"] == "Nominated"


def _gb200(free_elsewhere: bool) -> list[dict[str, Any]]:
    """Two GB200 nodes of a Karpenter NodePool; gb-a's trainer holds two GPUs by an allocated
    claim; gb-b has room for them, or not."""
    objs = [clock(), gb200_class(), karpenter_pool("gb200", budgets=[{"nodes": "100%"}])]
    for n in "ab":
        name = f"gb-{n}"
        objs += [
            karpenter_node(
                name, "gb200", cpu="144", memory="1800Gi", instance="p6e-gb200.36xlarge"
            ),
            gb200_slice(name),
            *daemon_pods(name),
        ]
    objs += [gb200_claim("train-0-gpu", "gb-a", ["gpu-0", "gpu-1"], "train-0")]
    objs += [pod("train-0", "gb-a", claim="train-0-gpu", cpu="32")]
    used = ["gpu-0", "gpu-1", "gpu-2"] if not free_elsewhere else ["gpu-0"]
    objs += [gb200_claim("serve-0-gpu", "gb-b", used, "serve-0")]
    objs += [pod("serve-0", "gb-b", claim="serve-0-gpu", cpu="96")]
    return objs


def test_dra_claims_move_with_their_pods() -> None:
    plan, state = plan_of(_gb200(free_elsewhere=True))
    doc = plan.to_dict()
    assert _removed(doc) == ["gb-a"]
    assert state.pods[("ml", "train-0")].spec.node_name == "gb-b"
    claim = state.claims[("ml", "train-0-gpu")]
    assert claim.status.allocation is not None
    devices = {r.device for r in claim.status.allocation.devices.results}
    assert {r.pool for r in claim.status.allocation.devices.results} == {"gb-b"}
    assert devices.isdisjoint({"gpu-0"})  # serve-0 holds it


def test_a_pod_whose_devices_fit_nowhere_keeps_its_node() -> None:
    doc, kept = _doc(_gb200(free_elsewhere=False))
    assert _removed(doc) == []
    assert kept["gb-a"]["reason"] == "Unconsolidatable"
    assert "ml/train-0" in kept["gb-a"]["message"]
    assert "no cheaper replacement" in kept["gb-a"]["message"]


def test_disruption_cost_orders_single_node_consolidation() -> None:
    """Only one of two light nodes fits the other's room; the cheaper (fewer, lower-priority
    pods) goes."""
    objs = [clock(), karpenter_pool("general", budgets=[{"nodes": "1"}])]
    for n in "xy":
        objs += [karpenter_node(f"gen-{n}", "general", cpu="8", memory="32Gi")]
    objs += [pod("web-x", "gen-x", cpu="2"), pod("web-x2", "gen-x", cpu="2")]
    objs += [pod("web-y", "gen-y", cpu="2")]
    doc, kept = _doc(objs)
    assert _removed(doc) == ["gen-y"]
    assert doc["scaleDown"][0]["consolidation"] == "single"
    assert kept["gen-x"]["reason"] == "DisruptionBudget"


def test_a_node_pool_missing_from_the_input_is_said() -> None:
    objs = [o for o in trainium() if o["kind"] != "NodePool"]
    doc, kept = _doc(objs)
    assert _removed(doc) == []
    assert kept["trn-a"]["reason"] == "NodePoolNotFound"


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("consolidateAfter", "5 minutes", "spec.disruption.consolidateAfter"),
        ("budgets", [{"nodes": "150%"}], "spec.disruption.budgets[0].nodes"),
        ("budgets", [{"nodes": "1", "schedule": "@daily"}], "spec.disruption.budgets[0]"),
        (
            "budgets",
            [{"nodes": "1", "reasons": ["Expired"]}],
            "spec.disruption.budgets[0].reasons[0]",
        ),
    ],
)
def test_bad_disruption_settings_are_refused(field: str, value: Any, path: str) -> None:
    objs = trainium()
    objs[4]["spec"]["disruption"][field] = value
    with pytest.raises(BadInput) as raised:
        state_of(objs)
    assert path in str(raised.value)


def test_scale_shows_which_autoscaler_removes_and_keeps(run_cli: Any, tmp_path: Any) -> None:
    path = write(tmp_path, trainium(budgets=[{"nodes": "2"}]))
    table = run_cli("scale", "-f", path)
    assert table.code == 0, table.err
    lines = table.out.splitlines()
    header = next(
        i for i, line in enumerate(lines) if line.startswith("NODE") and "AUTOSCALER" in line
    )
    row = lines[header + 1].split()
    assert row[:3] == ["trn-a", "trainium", "karpenter"]
    assert any(line.split()[:2] == ["karpenter", "DoNotDisrupt"] for line in lines)
    wide = run_cli("scale", "-f", path, "-o", "wide")
    assert any(
        line.split()[:4] == ["trn-d", "trainium", "karpenter", "DoNotDisrupt"]
        for line in wide.out.splitlines()
    )
    doc = run_cli("scale", "-f", path, "-o", "json").json()
    first = doc["scaleDown"][0]
    assert (first["autoscaler"], first["disruptionReason"], first["after"]) == (
        "karpenter",
        "Empty",
        "15s",
    )
    assert NOW  # the plan's now is the clock pod's creation


def test_the_pass_new_nodes_do_not_raise_a_budget() -> None:
    """BuildDisruptionBudgetMapping counts initialized nodes only: a node the same pass adds
    (a copy of an initialized one) is not among them, so 25% of four nodes stays one."""
    objs = [clock(), karpenter_pool("trainium", budgets=[{"nodes": "25%"}])]
    for n in "abcd":
        objs.append(karpenter_node(f"trn-{n}", "trainium", extended={NEURON: "16"}))
    objs += [pod("small-a", "trn-a", neuron=2), pod("small-b", "trn-b", neuron=2)]
    objs += [pod(f"busy-{n}", f"trn-{n}", neuron=14) for n in "cd"]
    objs += [pod("whole-node", None, neuron=16)]
    plan, _ = plan_of(objs)
    doc = plan.to_dict()
    assert [u["pool"] for u in doc["scaleUp"]] == ["trainium"]
    assert len(_removed(doc)) == 1


@pytest.mark.parametrize("fixture", ["hybrid", "multivendor"])
def test_the_fixtures_karpenter_nodes_by_their_node_pools_rules(run_cli: Any, fixture: str) -> None:
    """multivendor's gb200 NodePool is WhenEmpty (consolidateAfter 1h): a node running pods
    stays for that policy, the one a pending pod is placed on is nominated; hybrid's Trainium
    nodes lack `karpenter.sh/initialized`, which Karpenter requires of a candidate."""
    data = Path(__file__).parent / "data" / fixture
    out = run_cli(
        "scale",
        "-f",
        str(data / "cluster.yaml"),
        "--prices",
        str(data / "prices.yaml"),
        "-o",
        "json",
    )
    assert out.code == 0, out.err
    doc = out.json()
    nodes = yaml.safe_load((data / "cluster.yaml").read_text())["items"]
    karpenter = {
        n["metadata"]["name"]
        for n in nodes
        if n["kind"] == "Node" and "karpenter.sh/nodepool" in n["metadata"]["labels"]
    }
    answers = {e["node"]: e for e in [*doc["scaleDown"], *doc["scaleDownKept"]]}
    assert (
        karpenter and {n for n in answers if answers[n]["autoscaler"] == "karpenter"} == karpenter
    )
    reasons = {answers[n]["reason"] for n in karpenter}
    if fixture == "hybrid":
        # Each Trainium node waits for a trainer nominated there (its victims evicted).
        assert reasons == {"Nominated"}
    else:
        assert reasons == {"WhenEmpty", "Nominated"}


def _replaceable(weight: int | None = None, capacity: str = "on-demand") -> list[dict[str, Any]]:
    """A trn2 node ($40/h) running one small pod that no node left holds, and a general
    NodePool ($2/h) whose one node is full: one new general node would hold the pod."""
    objs = [
        clock(),
        karpenter_pool("trainium", budgets=[{"nodes": "100%"}], weight=weight),
        karpenter_pool("general", budgets=[{"nodes": "100%"}]),
        karpenter_node("trn-x", "trainium", extended={NEURON: "16"}, capacity=capacity),
        pod("web-0", "trn-x", cpu="4"),
        karpenter_node("gen-a", "general", cpu="16", memory="64Gi", capacity=capacity),
        pod("batch-0", "gen-a", cpu="15", selector={"karpenter.sh/nodepool": "general"}),
    ]
    return objs


PRICES = {"trainium": "40", "general": "2"}


def test_a_cheaper_node_replaces_an_underutilized_one() -> None:
    plan, state = plan_of(_replaceable(), PRICES)
    doc = plan.to_dict()
    removal = next(r for r in doc["scaleDown"] if r["node"] == "trn-x")
    assert removal["consolidation"] == "single"
    assert removal["replacement"] == {"node": "general-0", "pool": "general", "costPerHour": 2.0}
    assert "$2/h instead of $40/h" in removal["reason"]
    assert state.pods[("ml", "web-0")].spec.node_name == "general-0"
    assert "general-0" in state.nodes and "trn-x" not in state.nodes


def test_the_heaviest_node_pool_decides_the_replacement() -> None:
    """The replacement's NodeClaim comes from the first NodePool by weight that holds the pods:
    here trainium itself, no cheaper, so nothing is replaced."""
    doc, kept = _doc_priced(_replaceable(weight=50))
    assert "trn-x" not in _removed(doc)
    assert kept["trn-x"]["reason"] == "Unconsolidatable"
    assert "NodePool trainium would hold its pods but costs $40/h" in kept["trn-x"]["message"]


def test_no_spot_node_replaces_a_spot_node() -> None:
    doc, kept = _doc_priced(_replaceable(capacity="spot"))
    assert "trn-x" not in _removed(doc)
    assert "SpotToSpotConsolidation" in kept["trn-x"]["message"]


def _doc_priced(objs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    plan, _ = plan_of(objs, PRICES)
    doc = plan.to_dict()
    return doc, {k["node"]: k for k in doc["scaleDownKept"]}
