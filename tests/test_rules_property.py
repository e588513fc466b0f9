"""kube-scheduler's rules, all at once, on generated clusters (tests/rules_clusters.py: H100,
Gaudi3 and TPU hosts with NUMA / PCIe-root attributes, CPU workers, control-plane and system
nodes; running pods of several priorities holding devices, with anti-affinity and budgets;
pending pods with pod (anti-)affinity, topology spread, host ports, priorities and DRA claims).

The scheduler runs as `schedule` runs it (the default profile, preemption on); an independent
checker (tests/placement_rules.py, tests/dra_rules.py: plain dicts, upstream's rules, no draplan
code) replays its answers in order:
- a bound pod passes every filter of the default profile on the state at its bind, the pods
  nominated to its node of equal or higher priority included, and its devices are an
  allocation of its claim (and pass the allocator's own validator);
- a pod left unbound has no node where every filter passes;
- it preempts exactly when DefaultPreemption has a candidate: its victims are of lower
  priority, are the ones SelectVictimsOnNode picks on the nominated node (the pod then fits
  there), and no candidate ranks strictly better by pickOneNodeForPreemption's criteria.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from draplan.allocator.validate import validate_allocation
from draplan.api.codec import decode
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import PodResult, Scheduler, build_profile
from placement_rules import Cluster
from rules_clusters import cluster

EXAMPLES = 80


def _results(r: PodResult) -> list[tuple[str, tuple[str, str, str]]]:
    out = []
    for claim in r.claims:
        alloc = claim.status.allocation
        assert alloc is not None, (r.key, claim.metadata.name)
        out += [(x.request, (x.driver, x.pool, x.device)) for x in alloc.devices.results]
    return out


def _names(pods: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods]


def check_run(seed: int) -> None:
    docs = cluster(seed)
    state = ClusterState.from_objects([decode(d) for d in docs])
    results = Scheduler(build_profile(), post_filter=True).run(state)
    by_key = {
        (d["metadata"]["namespace"], d["metadata"]["name"]): d for d in docs if d["kind"] == "Pod"
    }
    rules = Cluster(docs)
    for r in results:
        pod = by_key[r.key]
        where = (seed, r.key)
        if r.node:
            event("bound")
            assert rules.failures(pod, r.node) == [], (*where, r.node)
            allocated = _results(r)
            if allocated:
                event("bound with devices")
                assert rules.devices.check(pod, r.node, allocated) == [], (*where, r.node)
                assert validate_allocation(state, state.nodes[r.node], r.claims) == [], where
                rules.devices.allocate(pod, allocated)
            rules.place(pod, r.node)
            continue
        assert rules.feasible(pod) == [], (*where, r.reason.message if r.reason else "")
        found = rules.candidates(pod)
        if not r.nominated:
            event("unschedulable")
            assert found == {}, (*where, sorted(found), r.reason.message if r.reason else "")
            continue
        event("preempts")
        victims = [by_key[key_of(v)] for v in r.victims]
        mine = rules.priority(pod)
        assert all(rules.priority(v) < mine for v in victims), where
        assert r.nominated in found, (*where, r.nominated, sorted(found))
        expected, broken = found[r.nominated]
        assert _names(victims) == _names(expected), (*where, r.nominated)
        best = min(rules.rank(*f) for f in found.values())
        assert rules.rank(expected, broken) == best, (*where, r.nominated, found)
        if broken:
            event("preempts breaking a budget")
        rules.preempt(pod, r.nominated, victims)


@settings(max_examples=EXAMPLES, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_every_answer_obeys_the_plugins_rules(seed: int) -> None:
    check_run(seed)
