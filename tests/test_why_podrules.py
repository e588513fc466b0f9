"""`why` for pods kept off nodes with room by rules about other pods: the category, the rule and
the pods that hold it, and a fix that adds a node the rule admits (checked by the scheduler)
without undoing the rule, which the message says is the owner's to relax."""

from __future__ import annotations

from typing import Any

from audit_scenarios import anti_affinity_held, host_port_held, spread_skewed
from draplan.api.codec import decode
from draplan.audit import why
from draplan.cluster.state import ClusterState
from topology_builders import HOSTNAME, ZONE, node, pod, required, term


def load(docs: list[dict[str, Any]]) -> ClusterState:
    return ClusterState.from_objects([decode(d) for d in docs])


def verdict(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = {d.pod[1]: d.to_dict() for d in why(load(docs))}
    return found[name]


def test_anti_affinity_names_the_replica_that_holds_the_node() -> None:
    d = verdict(anti_affinity_held(), "serve-1")
    assert d["category"] == "PodAffinity"
    assert d["message"].startswith(
        "1 node(s) with room for the pod didn't match pod anti-affinity rules, e.g. node-free: "
        "held by default/serve-0 on node-free (app=serve in kubernetes.io/hostname=node-free)"
    )
    assert d["evidence"]["rules"]["node-free"] == [
        {
            "rule": "pod anti-affinity",
            "domain": "kubernetes.io/hostname=node-free",
            "selector": "app=serve",
            "heldBy": ["default/serve-0 on node-free"],
        }
    ]
    # A new node is a new hostname: the rule admits it, and the scheduler agrees (nodes the
    # rule does not hold are tried first).
    assert d["fix"] == {"action": "add nodes", "add": 1, "like": "node-full", "verified": True}


def test_spread_names_the_skew_and_adds_a_node_in_the_emptier_zone() -> None:
    d = verdict(spread_skewed(), "serve-2")
    assert d["category"] == "TopologySpread"
    assert (
        "didn't match pod topology spread constraints, e.g. node-a: 2 matching pod(s) there"
        in (d["message"])
    )
    rule = d["evidence"]["rules"]["node-a"][0]
    assert rule["heldBy"] == ["default/serve-0 on node-a", "default/serve-1 on node-a"]
    assert rule["detail"] == "2 matching pod(s) there, the fewest in a domain 0, maxSkew 1"
    # A node like node-a is in zone a again; one like node-b opens room in zone b.
    assert d["fix"] == {"action": "add nodes", "add": 1, "like": "node-b", "verified": True}


def test_host_port_held_by_another_pod() -> None:
    d = verdict(host_port_held(), "metrics-gpu")
    assert d["category"] == "HostPortConflict"
    assert (
        "didn't have free ports for the requested pod ports, e.g. node-free: held by "
        in (d["message"])
    )
    assert "default/dcgm-exporter on node-free (0.0.0.0:9400/TCP)" in d["message"]


def test_a_daemonset_holding_the_port_comes_with_every_new_node() -> None:
    # The exporter is a DaemonSet's: a new node like node-free runs one too (as Cluster
    # Autoscaler's template node does), so adding nodes cannot help; the message says what
    # would, and that it is the owner's call.
    docs = host_port_held()
    for d in docs:
        if d["metadata"]["name"] == "dcgm-exporter":
            d["metadata"]["ownerReferences"] = [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "dcgm", "controller": True}
            ]
    d = verdict(docs, "metrics-gpu")
    assert d["category"] == "HostPortConflict"
    assert d["fix"] is None
    assert d["message"].endswith(
        "the rule is the pod's owner's choice: free the host port (drop hostPort from one of "
        "the pods) only if the pods need not bind it on the node."
    )


def test_a_running_pods_anti_affinity_is_named_with_the_pod() -> None:
    guard = pod(
        "guard",
        ns="infra",
        labels={"app": "guard"},
        on="a1",
        affinity=required("podAntiAffinity", term(ZONE, {"app": "noisy"}, namespace_selector={})),
    )
    docs = [node("a1", "a"), node("a2", "a"), node("b1", "b", cpu="1"), guard]
    docs.append(pod("noisy", labels={"app": "noisy"}, cpu="4"))
    d = verdict(docs, "noisy")
    assert d["category"] == "PodAffinity"
    assert d["message"].startswith(
        "2 node(s) with room for the pod didn't satisfy existing pods anti-affinity rules, "
        "e.g. a1: held by infra/guard on a1 (app=noisy in topology.kubernetes.io/zone=a)"
    )
    # A copy of a1 or a2 is in zone a too; b1 (too small) has no copy that holds the pod.
    assert d["fix"] is None


def test_affinity_without_a_matching_pod_in_reach() -> None:
    db = pod("db", labels={"app": "db"}, on="b1")
    want = pod(
        "api",
        labels={"app": "api"},
        cpu="4",
        affinity=required("podAffinity", term(HOSTNAME, {"app": "db"})),
    )
    docs = [node("a1", "a"), node("b1", "b", cpu="2"), db, want]
    d = verdict(docs, "api")
    assert d["category"] == "PodAffinity"
    assert "didn't match pod affinity rules, e.g. a1: no matching pod there" in d["message"]
