"""Every placement the scheduler makes on generated clusters (other vendors' accelerators,
control-plane and system nodes, DaemonSets with host ports, zones and racks, pods with pod
affinity and anti-affinity, spread constraints, priorities, DRA claims) obeys InterPodAffinity's,
PodTopologySpread's and NodePorts' filters as an independent checker (tests/placement_rules.py)
states them, against the pods placed before it in the order the scheduler placed them; and a
pod without claims left pending has no node where every filter passes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.codec import decode
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler
from placement_rules import Cluster
from topology_clusters import cluster


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_every_placement_obeys_the_rules(seed: int) -> None:
    docs = cluster(seed)
    state = ClusterState.from_objects([decode(d) for d in docs])
    results = Scheduler().run(state)
    by_name = {
        (d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
        for d in docs
        if d["kind"] == "Pod"
    }
    checker = Cluster(docs)
    for r in results:
        pod = by_name[r.key]
        if r.node:
            assert checker.violations(pod, r.node) == [], (seed, r.key, r.node)
            checker.place(pod, r.node)
        elif not pod["spec"].get("resourceClaims"):
            open_nodes = [
                n
                for n in checker.nodes
                if not checker.violations(pod, n) and not checker.local_violations(pod, n)
            ]
            assert open_nodes == [], (seed, r.key, r.reason.message if r.reason else "")
