"""`why`, `schedule`, `scale`, `serve`'s answers (`/v1/why`, the plan, `/metrics`) and
`simulate`'s first autoscaler pass agree, pod by pod, on clusters unlike the other fixtures
(issue 26): each pending pod's category against what schedule did with it and what scale
plans for it.

The rules (each a statement about what the commands mean, not about earlier output):
- Schedulable: schedule binds it, to the node why names; scale has it fit an existing node.
- SchedulingGated: schedule leaves it gated; scale lists it gated.
- WaitingForScaleUp: scale adds nodes of the pool why names for it, as many as why says.
- every other category: schedule leaves it unschedulable with the very message scale's
  pending entry carries (kube-scheduler's "0/N nodes are available" over the nodes that
  exist), and the nodes counted there are why's evidence; PoolLimitReached names a pool
  scale says stops at its limit; NoPoolCanFit and NoMatchingDevice: scale adds nothing and
  says no pool can host it.
- serve: /v1/why's categories are why's, draplan_pending_pods counts them, and the plan
  adds per pool what scale adds.
- simulate: its first autoscaler pass (dra+gang-atomic, draplan's placement) adds, pool by
  pool, what `scale --profile draplan` adds.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import DATA
from draplan.cluster.state import ClusterState
from draplan.serve.answers import Auditor
from draplan.sim.engine import SimConfig, Simulation
from draplan.sources.files import load_files
from draplan.sources.prices import load_prices

CLUSTERS = {
    name: (DATA / name / "cluster.yaml", DATA / name / "prices.yaml")
    for name in ("multivendor", "hybrid")
}

NO_POOL = ("NoPoolCanFit", "NoMatchingDevice")


def _json(run_cli: Any, *args: str) -> dict[str, Any]:
    result = run_cli(*args)
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
    doc: dict[str, Any] = json.loads(result.out)
    return doc


@pytest.fixture(scope="module", params=sorted(CLUSTERS))
def cluster(request: pytest.FixtureRequest) -> tuple[Path, Path]:
    return CLUSTERS[request.param]


def _answers(run_cli: Any, cluster: tuple[Path, Path]) -> dict[str, dict[str, Any]]:
    path, prices = str(cluster[0]), str(cluster[1])
    return {
        "why": _json(run_cli, "why", "-f", path, "--prices", prices, "-o", "json"),
        "schedule": _json(run_cli, "schedule", "-f", path, "-o", "json"),
        "scale": _json(run_cli, "scale", "-f", path, "--prices", prices, "-o", "json"),
    }


def test_why_schedule_and_scale_agree_on_every_pending_pod(
    run_cli: Any, cluster: tuple[Path, Path]
) -> None:
    docs = _answers(run_cli, cluster)
    nodes = len(_state(cluster[0]).nodes)
    why = {p["pod"]: p for p in docs["why"]["pods"]}
    placed = {f"{p['namespace']}/{p['name']}": p for p in docs["schedule"]["pods"]}
    scale = docs["scale"]
    adds = {pod: up for up in scale["scaleUp"] for pod in up["pods"]}
    fits = set(scale["fitExisting"])
    pending = {p["pod"]: p for p in scale["pending"]}
    gated = {p["pod"] for p in scale["gated"]}
    assert set(why) == set(placed) == set(adds) | fits | set(pending) | gated
    checked: Counter[str] = Counter()
    for pod, verdict in sorted(why.items()):
        category, sched = verdict["category"], placed[pod]
        context = f"{pod}: why {category}, schedule {sched}, scale "
        if category == "Schedulable" and "nominatedNode" in verdict["evidence"]:
            # By preemption: nominated where why says, and not scaled for (CA leaves a pod
            # waiting for its victims alone).
            assert sched["nominatedNode"] == verdict["evidence"]["nominatedNode"], context
            assert pod not in adds and pod not in fits, context
            assert "waits for its victims" in pending[pod]["reason"]["autoscaler"], context
        elif category == "Schedulable":
            assert sched["node"] == verdict["evidence"]["node"], context
            assert pod in fits, context + "does not fit it on an existing node"
        elif category == "SchedulingGated":
            assert sched["node"] is None and sched["reason"] is None, context
            assert pod in gated, context + "does not list it gated"
        else:
            assert sched["node"] is None, context
            assert pod not in fits and pod not in gated, context
            if category == "WaitingForScaleUp":
                up = adds.get(pod)
                assert up is not None, context + "adds nothing for it"
                assert verdict["fix"]["pool"] == up["pool"], context + str(up)
            else:
                assert pod not in adds, context + str(adds.get(pod))
                entry = pending[pod]
                # The same FailedScheduling words: kube-scheduler's over the nodes that exist.
                assert entry["reason"]["message"] == sched["reason"]["message"], context
                assert sched["reason"]["message"].startswith(f"0/{nodes} nodes"), context
                if "PodGroup" not in sched["reason"]["message"]:
                    # A gang's reason is the group's; why's counts are then one member's alone.
                    assert verdict["evidence"].get("nodes", {}) in ({}, sched["reason"]["nodes"])
                said = entry["reason"].get("autoscaler", "")
                if category == "PoolLimitReached":
                    pool = verdict["fix"]["pool"]
                    named = (f"domain of {pool}", f"pool {pool}", f"nodes of {pool};")
                    assert any(n in said for n in named), context + said
                    assert "max reached" in said, context + said
                elif category in NO_POOL:
                    assert said.startswith("no NodePool"), context + said
        checked[category] += 1
    assert sum(checked.values()) == len(why) > checked["SchedulingGated"]


def _state(path: Path) -> ClusterState:
    return ClusterState.from_objects([o for o, _ in load_files([str(path)], notify=None)])


def test_serve_answers_agree_with_why_and_scale(run_cli: Any, cluster: tuple[Path, Path]) -> None:
    docs = _answers(run_cli, cluster)
    answers = Auditor(prices=load_prices(str(cluster[1]))).audit(_state(cluster[0]), 1)
    served = json.loads(answers.bodies["why"])
    assert {p["pod"]: p["category"] for p in served["pods"]} == {
        p["pod"]: p["category"] for p in docs["why"]["pods"]
    }
    [pending] = [f for f in answers.series if f.name == "draplan_pending_pods"]
    by_category: Counter[str] = Counter()
    for (category, _), count in pending.samples:
        by_category[category] += int(count)
    assert dict(by_category) == docs["why"]["summary"]
    plan = json.loads(answers.bodies["plan"])
    assert Counter({u["pool"]: u["add"] for u in plan["scaleUp"]}) == Counter(
        {u["pool"]: u["add"] for u in docs["scale"]["scaleUp"]}
    )
    [planned] = [f for f in answers.series if f.name == "draplan_scaleup_nodes_planned"]
    assert {labels[0]: n for labels, n in planned.samples if n} == {
        u["pool"]: u["add"] for u in docs["scale"]["scaleUp"]
    }


def test_simulate_first_pass_adds_what_scale_adds(run_cli: Any, cluster: tuple[Path, Path]) -> None:
    path, prices = cluster
    scale = _json(
        run_cli,
        "scale",
        "-f",
        str(path),
        "--prices",
        str(prices),
        "--profile",
        "draplan",
        "-o",
        "json",
    )
    objects = [o for o, _ in load_files([str(path)], notify=None)]
    sim = Simulation(objects, [], SimConfig(prices=load_prices(str(prices))))
    sim._tick()
    added = Counter(pool for _, pool, _ in sim.upcoming.values())
    assert added == Counter({u["pool"]: u["add"] for u in scale["scaleUp"]})


def test_no_pool_verdict_quotes_the_filters_not_the_postfilter(
    run_cli: Any, cluster: tuple[Path, Path]
) -> None:
    """What a pool's empty node lacks is the filters' answer; DynamicResources' and
    preemption's PostFilter words belong to kube-scheduler's message on the cluster, which
    `schedule` shows, not to a NodePool's template."""
    why = _answers(run_cli, cluster)["why"]
    verdicts = [p for p in why["pods"] if p["category"] == "NoPoolCanFit"]
    assert verdicts
    for p in verdicts:
        for words in ("no new claims to deallocate", "still not schedulable", "preemption:"):
            assert words not in p["message"], p
