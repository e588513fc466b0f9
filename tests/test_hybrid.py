"""Every command on the hybrid cluster (tests/data/hybrid): EKS managed node groups, Karpenter
with Trainium2 (device plugins, AWS network-topology labels), EKS Hybrid Nodes with AMD MI300X
on AMD's DRA driver, Kueue TAS, DaemonSets with host ports, anti-affinity, zone spread and a
PriorityClass hierarchy. The dump is what its generator writes; each command answers."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from conftest import DATA

HERE = DATA / "hybrid"
CLUSTER = str(HERE / "cluster.yaml")
PRICES = str(HERE / "prices.yaml")


def test_the_dump_is_what_its_generator_writes() -> None:
    spec = importlib.util.spec_from_file_location("make_hybrid", HERE / "make_cluster.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render() == Path(CLUSTER).read_text()


@pytest.mark.parametrize(
    "args",
    [
        ("validate",),
        ("schedule", "-o", "wide"),
        ("why", "-o", "wide"),
        ("scale", "--prices", PRICES, "-o", "yaml"),
        ("pools", "-o", "json"),
        ("metrics", "-o", "json"),
        ("snapshot", "--redact"),
        ("migrate", "--check"),
    ],
    ids=lambda a: a[0],
)
def test_each_command_answers(run_cli: Any, args: tuple[str, ...]) -> None:
    result = run_cli(args[0], "-f", CLUSTER, *args[1:])
    assert result.code == 0, result.err
    assert "Traceback" not in result.err


def test_kueue_trainers_preempt_one_by_one_and_nothing_is_added_for_them(run_cli: Any) -> None:
    """The Trainium trainers are a Kueue pod group: Kueue gangs them at admission, then
    kube-scheduler takes each alone, and each preempts the batch pod (priority 100) on one
    existing Trainium node. schedule nominates them there, why says so, and neither the plan
    nor Cluster Autoscaler adds a node for them or reports them as not triggering a
    scale-up (CA leaves a pod waiting for its victims alone); the pool's room goes to the
    scavenger (it may not preempt)."""
    schedule = run_cli("schedule", "-f", CLUSTER, "-o", "json").json()
    by_name = {p["name"]: p for p in schedule["pods"]}
    nominated = {by_name[f"llama-sft-{i}"].get("nominatedNode") for i in range(2)}
    assert len(nominated) == 2 and all(n and n.startswith("ip-10-20-8-") for n in nominated)
    why = {p["pod"]: p for p in run_cli("why", "-f", CLUSTER, "-o", "json").json()["pods"]}
    for i in range(2):
        assert "would preempt 1 pod(s)" in why[f"ml-train/llama-sft-{i}"]["message"]
    scale = run_cli("scale", "-f", CLUSTER, "-o", "json").json()
    [up] = scale["scaleUp"]
    assert (up["pool"], up["add"], up["pods"]) == ("trainium", 1, ["batch/neuron-scavenger"])
    quiet = {p["pod"] for p in scale["notTriggerScaleUp"]}
    quiet |= {p["pod"] for p in scale["clusterAutoscaler"]["notTriggerScaleUp"]}
    assert not any(k.startswith("ml-train/llama-sft") for k in quiet)
    assert not scale["clusterAutoscaler"].get("scaleUp")
    table = run_cli("scale", "-f", CLUSTER).out.splitlines()
    rows = [line.split(None, 2) for line in table if " llama-sft-" in line]
    assert len(rows) == 2 and all(r[2].startswith("nominated to ip-10-20-8-") for r in rows)
    # The nodes they wait on, emptied of their victims, are no removal for Karpenter (its
    # Trainium nodes are initialized): a pending pod is nominated there.
    assert not scale["scaleDown"]
    kept = {k["node"]: k for k in scale["scaleDownKept"]}
    for node in nominated:
        assert (kept[node]["autoscaler"], kept[node]["reason"]) == ("karpenter", "Nominated")


def test_draplans_gang_policy_fills_the_pool_and_names_its_limit(run_cli: Any) -> None:
    """Under --profile draplan every recognised group is placed all or nothing (its policy):
    the Trainium group takes the Karpenter NodePool's last two nodes; the scavenger then
    meets the pool's limit: scale says which pool stopped it, why says PoolLimitReached with
    the NodePool's spec.limits to raise (16 chips a node)."""
    policy = ("-f", CLUSTER, "--profile", "draplan", "-o", "json")
    scale = run_cli("scale", *policy).json()
    [up] = scale["scaleUp"]
    assert (up["pool"], up["add"]) == ("trainium", 2)
    assert sorted(up["pods"]) == ["ml-train/llama-sft-0", "ml-train/llama-sft-1"]
    [entry] = [p for p in scale["pending"] if p["pod"] == "batch/neuron-scavenger"]
    assert "pool trainium: pool max reached at 4" in entry["reason"]["autoscaler"]
    why = {p["pod"]: p for p in run_cli("why", *policy).json()["pods"]}
    verdict = why["batch/neuron-scavenger"]
    assert verdict["category"] == "PoolLimitReached"
    assert verdict["fix"]["object"] == "Karpenter NodePool trainium"
    assert verdict["fix"]["limits"] == {
        "aws.amazon.com/neuron": str(16 * verdict["fix"]["maxNodes"])
    }


def test_zone_spread_counts_the_hybrid_zone(run_cli: Any) -> None:
    """kube-scheduler's PodTopologySpread counts every zone a node carries (nodeTaintsPolicy
    Ignore by default), the tainted hybrid nodes' `dc1` too, where no storefront pod runs: a
    new `general` node (zone us-east-2a) would raise the skew to 3, so neither schedule nor
    scale places the two pending replicas."""
    schedule = run_cli("schedule", "-f", CLUSTER, "-o", "json").json()
    pending = {f"{p['namespace']}/{p['name']}": p for p in schedule["pods"]}
    scale = run_cli("scale", "-f", CLUSTER, "-o", "json").json()
    spread = {p["pod"]: p for p in scale["notTriggerScaleUp"]}
    for name in ("storefront-5d9c8b7f6-n9p2q", "storefront-5d9c8b7f6-r3s4t"):
        assert pending[f"web/{name}"]["node"] is None
        groups = spread[f"web/{name}"]["nodeGroups"]
        assert groups["general"] == "node(s) didn't match pod topology spread constraints"
