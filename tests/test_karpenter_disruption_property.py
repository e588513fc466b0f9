"""Karpenter's consolidation over generated clusters (several Karpenter NodePools with random
policies, consolidateAfter and budgets, beside an EKS node group and a control-plane node;
DaemonSets, do-not-disrupt pods and nodes, PodDisruptionBudgets, GB200 nodes whose pods hold
DRA claims): whatever the plan removes breaks none of Karpenter's rules, checked from the
input, not from draplan's answer."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draplan.cluster.podresources import pod_requests
from karpenter_scenarios import (
    clock,
    control_plane,
    daemon_pods,
    eks_node,
    gb200_claim,
    gb200_class,
    gb200_slice,
    karpenter_node,
    karpenter_pool,
    plan_of,
    pod,
)
from scale_scenarios import pdb

DND = "karpenter.sh/do-not-disrupt"
NODES = ("0", "1", "2", "10%", "50%", "100%")
REASONS = ((), ("Empty",), ("Underutilized",))


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    objs: list[dict[str, Any]] = [
        clock(),
        control_plane(),
        eks_node("sys-a", "system"),
        gb200_class(),
    ]
    pools: dict[str, dict[str, Any]] = {}
    for p in range(draw(st.integers(1, 3))):
        name = f"pool{p}"
        budgets = [
            {"nodes": draw(st.sampled_from(NODES)), **({"reasons": list(r)} if r else {})}
            for r in draw(st.lists(st.sampled_from(REASONS), min_size=1, max_size=2))
        ]
        policy = draw(st.sampled_from(["WhenEmpty", "WhenEmptyOrUnderutilized"]))
        after = draw(st.sampled_from(["0s", "30s", "Never"]))
        # Pools named later cost more: the first by name (no weights) is the cheapest,
        # whose node replaces the others' (computeConsolidation takes the first that fits).
        price = ("1", "4", "20")[p]
        pools[name] = {"budgets": budgets, "policy": policy, "after": after, "price": price}
        objs.append(karpenter_pool(name, policy=policy, after=after, budgets=budgets))
        gpu = draw(st.booleans())
        for n in range(draw(st.integers(2, 5))):
            node = f"{name}-n{n}"
            doc = karpenter_node(
                node,
                name,
                cpu="16",
                memory="64Gi",
                initialized=draw(st.integers(0, 5)) > 0,
                annotations={DND: "true"} if draw(st.integers(0, 7)) == 0 else None,
            )
            objs.append(doc)
            if draw(st.booleans()):
                objs += daemon_pods(node)
            if gpu:
                objs.append(gb200_slice(node))
            used = 0
            for i in range(draw(st.integers(0, 3))):
                # Some pods large enough that only an empty node holds them: a replacement.
                cpu = draw(st.sampled_from([1, 3, 5, 12]))
                if used + cpu > 15:  # the pods and DaemonSets fit their node to begin with
                    break
                used += cpu
                name_i = f"{node}-p{i}"
                kind = draw(st.integers(0, 9))
                claim = None
                if gpu and kind == 1:
                    claim = f"{name_i}-gpu"
                    objs.append(gb200_claim(claim, node, [f"gpu-{i}"], name_i))
                objs.append(
                    pod(
                        name_i,
                        node,
                        cpu=str(cpu),
                        owner=None if kind == 2 else "ReplicaSet",
                        annotations={DND: "true"} if kind == 3 else None,
                        labels={"app": f"app{kind % 2}"},
                        claim=claim,
                    )
                )
    objs.append(pdb("app0", "ml", "app0", draw(st.integers(0, 2))))
    return {"objs": objs, "pools": pools}


def _allowed(budgets: list[dict[str, Any]], nodes: int, reason: str) -> int:
    out = math.inf
    for b in budgets:
        if b.get("reasons") and reason not in b["reasons"]:
            continue
        text = b["nodes"]
        out = min(out, math.ceil(int(text[:-1]) * nodes / 100) if text.endswith("%") else int(text))
    return int(out) if out != math.inf else 1 << 31


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_no_karpenter_removal_breaks_a_rule(cluster: dict[str, Any]) -> None:
    objs, pools = cluster["objs"], cluster["pools"]
    nodes = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Node"}
    pods = [o for o in objs if o["kind"] == "Pod" and o["spec"].get("nodeName")]
    blocked_pdb = next(o for o in objs if o["kind"] == "PodDisruptionBudget")
    plan, state = plan_of(objs, {name: rules["price"] for name, rules in pools.items()})
    removals = [r for r in plan.scale_down if r.autoscaler == "karpenter"]
    # A replacement is one new node of a Karpenter NodePool, cheaper than what it replaces.
    replaced: dict[str, list[float]] = {}
    for r in removals:
        if r.replaced_by is not None:
            replaced.setdefault(r.replaced_by[0], []).append(float(pools[r.pool]["price"]))
    for node, before in replaced.items():
        pool = node.rsplit("-", 1)[0]
        assert node in state.nodes and pool in pools
        assert float(pools[pool]["price"]) < sum(before)
    gone = {r.node for r in plan.scale_down}
    for r in plan.scale_down:
        labels = nodes[r.node]["metadata"]["labels"]
        assert "node-role.kubernetes.io/control-plane" not in labels
        # One owner per pool: Karpenter's nodes only by Karpenter, the others only by CA.
        assert ("karpenter.sh/nodepool" in labels) == (r.autoscaler == "karpenter"), r
    taken: dict[str, int] = {}
    for r in removals:
        meta = nodes[r.node]["metadata"]
        assert meta["labels"].get("karpenter.sh/initialized") == "true"
        assert meta["annotations"].get(DND) != "true"
        rules = pools[r.pool]
        assert rules["after"] != "Never"
        if rules["policy"] == "WhenEmpty":
            assert r.rule == "Empty"
        members = [
            n for n in nodes.values()
            if n["metadata"]["labels"].get("karpenter.sh/nodepool") == r.pool
            and n["metadata"]["labels"].get("karpenter.sh/initialized") == "true"
        ]  # fmt: skip
        taken[r.pool] = taken.get(r.pool, 0) + 1
        assert taken[r.pool] <= _allowed(rules["budgets"], len(members), r.rule), (r, rules)
        for p in pods:
            if p["spec"]["nodeName"] != r.node:
                continue
            assert p["metadata"]["annotations"].get(DND) != "true"
            if blocked_pdb["status"]["disruptionsAllowed"] == 0:
                assert p["metadata"]["labels"].get("app") != "app0"
    for p in pods:
        key = (p["metadata"]["namespace"], p["metadata"]["name"])
        daemon = p["metadata"].get("ownerReferences", [{}])[0].get("kind") == "DaemonSet"
        if p["spec"]["nodeName"] not in gone:
            continue
        if daemon:
            assert key not in state.pods  # it goes with its node
            continue
        # Every pod of a removed node runs on a node that is left.
        moved = state.pods[key]
        assert moved.spec.node_name in state.nodes and moved.spec.node_name not in gone
    # Where the pods went, they fit: the Karpenter nodes' cpu, and no device twice.
    for name in state.nodes:
        if name.startswith("pool"):
            held = state.node_pods.get(name) or ()
            assert sum(pod_requests(state.pods[k]).get("cpu", 0) for k in held) <= 16_000
    devices = [
        (r.pool, r.device)
        for claim in state.claims.values()
        if claim.status.allocation is not None
        for r in claim.status.allocation.devices.results
    ]
    assert len(devices) == len(set(devices))
    assert {pool for pool, _ in devices} <= set(state.nodes)
