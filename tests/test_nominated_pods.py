"""Pods nominated by preemption count on their node whole for the pods of equal or lower
priority scheduled after them, as kube-scheduler's RunFilterPluginsWithNominatedPods adds them
(addGENominatedPods: NodeInfo and the PreFilter extensions' AddPod): their required
anti-affinity and their labels (pod affinity, topology spread), not only their requests. Found
by tests/test_rules_property.py; Gaudi3 hosts in zones here."""

from __future__ import annotations

from typing import Any

from draplan.api.core_v1 import Pod
from draplan.scheduler import PodResult, Scheduler, build_profile
from draplan.scheduler.plugins.interpodaffinity import InterPodAffinity
from draplan.scheduler.plugins.podtopologyspread import PodTopologySpread
from topology_builders import HOSTNAME, ZONE, node, pod, required, spread, state_of, term, typed_pod

GAUDI = {"node.kubernetes.io/instance-type": "gaudi3"}


def _prio(doc: dict[str, Any], priority: int) -> dict[str, Any]:
    doc["spec"]["priority"] = priority
    return doc


def _run(*docs: dict[str, Any]) -> dict[str, PodResult]:
    state = state_of(*docs)
    return {r.key[1]: r for r in Scheduler(build_profile(), post_filter=True).run(state)}


def _cluster() -> list[dict[str, Any]]:
    """g1 (zone a) runs a priority-0 filler on all its cpu; g2 (zone b) a priority-5000 pod
    no one can preempt. A priority-1000 trainer that asks 3 of g1's 4 cpus preempts the filler
    and waits nominated on g1, leaving 1 cpu there."""
    return [
        node("g1", "a", labels=GAUDI, cpu="4"),
        node("g2", "b", labels=GAUDI, cpu="4"),
        _prio(pod("filler", on="g1", cpu="4"), 0),
        _prio(pod("system", on="g2", cpu="4"), 5000),
    ]


def test_a_nominated_pod_breaks_the_anti_affinity_of_a_pod_after_it() -> None:
    """eval keeps app=train pods off its host: g1, where the trainer waits nominated, is out
    (g2 is full and no pod there is of lower priority)."""
    anti = required("podAntiAffinity", term(HOSTNAME, {"app": "train"}))
    res = _run(
        *_cluster(),
        _prio(pod("trainer", labels={"app": "train"}, cpu="3"), 1000),
        _prio(pod("eval", labels={"app": "eval"}, affinity=anti, cpu="1"), 500),
    )
    assert res["trainer"].nominated == "g1"
    got = res["eval"]
    assert got.node is None and not got.nominated and got.reason is not None
    assert got.reason.message.startswith(
        "0/2 nodes are available: 1 Insufficient cpu, "
        "1 node(s) didn't match pod anti-affinity rules."
    ), got.reason.message


def test_a_pod_inter_pod_affinity_skips_does_not_see_a_nominated_pods_terms() -> None:
    """The trainer's own anti-affinity against eval binds no pod yet: eval has no required
    terms and no running pod's anti-affinity selects it, so InterPodAffinity's PreFilter says
    Skip and neither of RunFilterPluginsWithNominatedPods' runs asks it (the framework skips
    a skipped plugin's AddPod too): eval takes g1's last cpu beside the nominated trainer."""
    anti = required("podAntiAffinity", term(HOSTNAME, {"app": "eval"}))
    res = _run(
        *_cluster(),
        _prio(pod("trainer", labels={"app": "train"}, affinity=anti, cpu="3"), 1000),
        _prio(pod("eval", labels={"app": "eval"}, cpu="1"), 500),
    )
    assert res["trainer"].nominated == "g1" and res["eval"].node == "g1"


def test_a_nominated_pod_counts_in_its_domains_skew() -> None:
    """rank-1 spreads over zones with rank-0 (maxSkew 1): with rank-0 nominated to g1 in zone
    a, g1 would make zone a 2 against zone b's 0."""
    ranks = [spread(ZONE, 1, {"app": "ranks"})]
    res = _run(
        *_cluster(),
        _prio(pod("rank-0", labels={"app": "ranks"}, spread=ranks, cpu="3"), 1000),
        _prio(pod("rank-1", labels={"app": "ranks"}, spread=ranks, cpu="1"), 1000),
    )
    assert res["rank-0"].nominated == "g1"
    got = res["rank-1"]
    assert got.node is None and got.reason is not None
    assert "1 node(s) didn't match pod topology spread constraints" in got.reason.message


def _verdicts(plugin: Any, fs: Any, p: Pod, state: Any) -> list[bool]:
    return [plugin.filter_node(fs, p, n).ok for _, n in sorted(state.nodes.items())]


def test_a_cycles_filter_state_stays_as_its_prefilter_saw_the_cluster() -> None:
    """The plugins keep their counts current as the state changes; the filter state a cycle
    took at PreFilter must not move with a fork (the nominated pods bound to try a node, a
    preemption's trial) nor stay moved after it is reverted."""
    anti = required("podAntiAffinity", term(ZONE, {"app": "x"}))
    ranks = [spread(ZONE, 1, {"app": "x"})]
    state = state_of(
        node("g1", "a", labels=GAUDI),
        node("g2", "b", labels=GAUDI),
        pod("guard", on="g1", affinity=anti),
        pod("x-0", labels={"app": "x"}, on="g2"),
        pod("x-1", labels={"app": "x"}, on="g2"),
    )
    incoming = typed_pod(pod("x-2", labels={"app": "x"}, spread=ranks))
    for plugin in (InterPodAffinity(), PodTopologySpread()):
        fs = plugin.filter_state(state, incoming)
        before = _verdicts(plugin, fs, incoming, state)
        with state.forked():
            state.unbind_pod(state.pods[("default", "guard")])
            for name in ("x-0", "x-1"):
                state.unbind_pod(state.pods[("default", name)])
            assert plugin.filter_state(state, incoming) is not None or plugin.name
        assert _verdicts(plugin, fs, incoming, state) == before, plugin.name
        assert _verdicts(plugin, plugin.filter_state(state, incoming), incoming, state) == before
