"""DefaultPreemption beside InterPodAffinity and PodTopologySpread: a victim whose removal ends
an anti-affinity conflict or lowers a domain's skew makes room, as upstream's PreFilter
extensions (RemovePod / AddPod) let it; the trial's filter state is built again from the trial
state here, and these cases fail if it were the stale one of the attempt's PreFilter."""

from __future__ import annotations

from typing import Any

from draplan.scheduler import PodResult, Scheduler, build_profile
from topology_builders import HOSTNAME, ZONE, node, pod, required, spread, state_of, term


def with_priority(doc: dict[str, Any], priority: int, started: str = "") -> dict[str, Any]:
    doc["spec"]["priority"] = priority
    if started:
        doc["status"]["startTime"] = started
    return doc


def run(*docs: dict[str, Any]) -> dict[str, PodResult]:
    state = state_of(*docs)
    return {r.key[1]: r for r in Scheduler(build_profile(), post_filter=True).run(state)}


def test_an_anti_affinity_conflict_is_ended_by_preempting_the_lower_priority_pod() -> None:
    """The incoming pod wants no app=web pod on its host. web-old (priority 0) runs on n1,
    web-new (priority 2000) on n2: only n1's conflict can be ended, by evicting web-old."""
    anti = required("podAntiAffinity", term(HOSTNAME, {"app": "web"}))
    res = run(
        node("n1"),
        node("n2"),
        with_priority(pod("web-old", labels={"app": "web"}, on="n1"), 0),
        with_priority(pod("web-new", labels={"app": "web"}, on="n2"), 2000),
        with_priority(pod("web-x", labels={"app": "web"}, affinity=anti), 1000),
    )
    got = res["web-x"]
    assert got.node is None and got.nominated == "n1"
    assert [p.metadata.name for p in got.victims] == ["web-old"]
    assert got.reason is not None and got.reason.message == (
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
    )


def test_a_running_pods_anti_affinity_is_ended_by_preempting_it() -> None:
    """guard (priority 0) on n1 keeps app=batch pods off its host; batch (priority 500) asks
    for more cpu than n2 has: evicting guard is the only way in."""
    anti = required("podAntiAffinity", term(HOSTNAME, {"app": "batch"}))
    res = run(
        node("n1", cpu="8"),
        node("n2", cpu="2"),
        with_priority(pod("guard", affinity=anti, on="n1"), 0),
        with_priority(pod("batch", labels={"app": "batch"}, cpu="4"), 500),
    )
    got = res["batch"]
    assert got.nominated == "n1" and [p.metadata.name for p in got.victims] == ["guard"]


def test_a_skew_is_lowered_by_the_fewest_victims_and_the_older_pod_is_reprieved() -> None:
    """maxSkew 1 over zones: zone a holds two matching pods of priority 0, zone b one of
    priority 2000 on a full node. Placing the pod in zone a needs a's count down to 1: both
    come off, the older (more important) goes back, the newer is the one victim."""
    match = {"app": "shard"}
    res = run(
        node("a-1", "a"),
        node("b-1", "b", cpu="1"),
        with_priority(pod("old", labels=match, on="a-1"), 0, "2026-01-01T00:00:00Z"),
        with_priority(pod("new", labels=match, on="a-1"), 0, "2026-01-02T00:00:00Z"),
        with_priority(pod("pinned", labels=match, on="b-1"), 2000),
        with_priority(pod("shard", labels=match, spread=[spread(ZONE, 1, match)]), 1000),
    )
    got = res["shard"]
    assert got.nominated == "a-1" and [p.metadata.name for p in got.victims] == ["new"]
    assert got.reason is not None and got.reason.message == (
        "0/2 nodes are available: 1 Insufficient cpu, "
        "1 node(s) didn't match pod topology spread constraints."
    )


def test_affinity_a_victim_alone_satisfies_is_unresolvable() -> None:
    """Required pod affinity to app=db, which only the lower-priority db pod on the full n1
    satisfies: cpu is the filters' reason there, but with every victim off the affinity
    fails, so no set of victims works and preemption says why."""
    aff = required("podAffinity", term(HOSTNAME, {"app": "db"}))
    res = run(
        node("n1", cpu="2"),
        with_priority(pod("db", labels={"app": "db"}, on="n1", cpu="2"), 0),
        with_priority(pod("client", affinity=aff, cpu="1"), 1000),
    )
    got = res["client"]
    assert got.node is None and not got.nominated
    assert got.reason is not None and got.reason.message.endswith(
        "preemption: 0/1 nodes are available: 1 node(s) didn't match pod affinity rules."
    )
