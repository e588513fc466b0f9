"""PodTopologySpread's rules as kube-scheduler's podtopologyspread plugin has them: the
DoNotSchedule filter (skew against the global minimum, minDomains, node inclusion policies,
missing labels, matchLabelKeys), the ScheduleAnyway score and its normalization, and the system
default constraints with the selector of the Services and the controller that select a pod.
Expectations are worked out by hand from the upstream formulas."""

from __future__ import annotations

import math
from typing import Any

import pytest

from draplan.api.codec import decode
from draplan.api.core_v1 import TopologySpreadConstraint
from draplan.api.errors import BadInput
from draplan.cluster.labels import from_set
from draplan.scheduler.framework import Code
from draplan.scheduler.plugins.podtopologyspread import (
    CONSTRAINTS_MISMATCH,
    MISSING_LABEL,
    PodTopologySpread,
    SpreadArgs,
    default_selector,
)
from topology_builders import (
    HOSTNAME,
    RACK,
    ZONE,
    filter_verdicts,
    node,
    plugin_scores,
    pod,
    spread,
    state_of,
    typed_pod,
)

WEB = {"app": "web"}
TAINT = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}


def cluster(*placed: tuple[str, str]) -> list[dict[str, Any]]:
    """Zones a (a1, a2), b (b1), c (c1 tainted, c2 labelled for infra); web pods on nodes."""
    nodes = [
        node("a1", "a"),
        node("a2", "a"),
        node("b1", "b"),
        node("c1", "c", taints=[TAINT]),
        node("c2", "c", labels={"pool": "infra"}),
    ]
    return nodes + [pod(name, labels=WEB, on=where) for name, where in placed]


def verdicts(
    docs: list[dict[str, Any]], incoming: dict[str, Any], args: SpreadArgs | None = None
) -> dict[str, str]:
    plugin = PodTopologySpread(args or SpreadArgs())
    return filter_verdicts(plugin, state_of(*docs), typed_pod(incoming))


def fits(docs: list[dict[str, Any]], incoming: dict[str, Any]) -> set[str]:
    return {n for n, v in verdicts(docs, incoming).items() if v == "ok"}


def test_skew_against_the_global_minimum() -> None:
    docs = cluster(("w0", "a1"), ("w1", "a2"), ("w2", "b1"), ("w3", "c2"))
    # zone counts a 2, b 1, c 1; min 1: a would be 3 - 1 = 2 > 1.
    assert fits(docs, pod("w4", labels=WEB, spread=[spread(ZONE, 1, WEB)])) == {"b1", "c1", "c2"}
    assert fits(docs, pod("w4", labels=WEB, spread=[spread(ZONE, 2, WEB)])) == {
        "a1",
        "a2",
        "b1",
        "c1",
        "c2",
    }
    # A pod the selector does not match does not count itself.
    assert fits(docs, pod("x", labels={"app": "x"}, spread=[spread(ZONE, 1, WEB)])) == {
        "a1",
        "a2",
        "b1",
        "c1",
        "c2",
    }


def test_min_domains_makes_the_minimum_zero_while_domains_are_few() -> None:
    docs = cluster(("w0", "a1"), ("w1", "b1"), ("w2", "c2"))
    # Three zones, each with one pod: min 1, anywhere fits at maxSkew 1.
    assert len(fits(docs, pod("w3", labels=WEB, spread=[spread(ZONE, 1, WEB)]))) == 5
    # minDomains 4 > 3 eligible zones: the minimum is 0, so 1 + 1 - 0 > 1 everywhere.
    incoming = pod("w3", labels=WEB, spread=[spread(ZONE, 1, WEB, minDomains=4)])
    assert set(verdicts(docs, incoming).values()) == {CONSTRAINTS_MISMATCH}


def test_node_affinity_policy() -> None:
    # The pod's required node affinity selects zones a and b.
    docs = cluster(("w0", "a1"), ("w1", "b1"))
    sel = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a", "b"]}]}
                ]
            }
        }
    }
    honor = pod("w2", labels=WEB, affinity=sel, spread=[spread(ZONE, 1, WEB)])
    # Honor (default): zone c is not a domain (its nodes fail the affinity): min 1, so the
    # filter passes everywhere (NodeAffinity is what keeps the pod out of zone c).
    assert fits(docs, honor) == {"a1", "a2", "b1", "c1", "c2"}
    ignore = pod(
        "w2", labels=WEB, affinity=sel, spread=[spread(ZONE, 1, WEB, nodeAffinityPolicy="Ignore")]
    )
    # Ignore: zone c counts, with 0 pods: 1 + 1 - 0 > 1 in a and b.
    assert fits(docs, ignore) == {"c1", "c2"}


def test_node_taints_policy() -> None:
    docs = [*cluster(("w0", "a1"), ("w1", "b1"), ("w2", "c2"))]
    docs = [d for d in docs if d["metadata"]["name"] != "c2"] + [node("c2", "c", taints=[TAINT])]
    docs = [d for d in docs if d["metadata"]["name"] != "w2"]
    # Zone c has only tainted nodes and no pod.
    ignore = pod("w2", labels=WEB, spread=[spread(ZONE, 1, WEB)])
    assert fits(docs, ignore) == {"c1", "c2"}  # Ignore (default): zone c counts, min 0
    honor = pod("w2", labels=WEB, spread=[spread(ZONE, 1, WEB, nodeTaintsPolicy="Honor")])
    assert len(fits(docs, honor)) == 5  # zone c left out: min 1
    tolerant = pod(
        "w2",
        labels=WEB,
        tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        spread=[spread(ZONE, 1, WEB, nodeTaintsPolicy="Honor")],
    )
    assert fits(docs, tolerant) == {"c1", "c2"}  # tolerated: zone c counts again


def test_a_node_without_the_topology_label_never_fits() -> None:
    docs = [*cluster(), node("edge", labels={RACK: "r1"})]
    state = state_of(*docs)
    plugin = PodTopologySpread()
    p = typed_pod(pod("w0", labels=WEB, spread=[spread(ZONE, 1, WEB)]))
    fs = plugin.filter_state(state, p)
    assert fs is not None
    status = plugin.filter_node(fs, p, state.nodes["edge"])
    assert status.reasons == (MISSING_LABEL,)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_every_topology_key_must_be_on_a_node_for_its_pods_to_count() -> None:
    # Two constraints: a node without the rack label is no domain of either.
    docs = [
        node("a1", "a", labels={RACK: "r1"}),
        node("a2", "a"),  # no rack
        node("b1", "b", labels={RACK: "r2"}),
        pod("w0", labels=WEB, on="a2"),
        pod("w1", labels=WEB, on="a2"),
    ]
    incoming = pod("w2", labels=WEB, spread=[spread(ZONE, 1, WEB), spread(RACK, 1, WEB)])
    # a2's pods are not counted (a2 lacks the rack label): every domain has 0, anywhere
    # with both labels fits.
    assert verdicts(docs, incoming) == {"a1": "ok", "a2": MISSING_LABEL, "b1": "ok"}


def test_match_label_keys_and_terminating_pods() -> None:
    docs = [
        node("a1", "a"),
        node("b1", "b"),
        pod("v1-0", labels={"app": "web", "rev": "1"}, on="a1"),
        pod("v1-1", labels={"app": "web", "rev": "1"}, on="a1"),
        pod("v2-0", labels={"app": "web", "rev": "2"}, on="b1", deleting=True),
    ]
    incoming = pod(
        "v2-1",
        labels={"app": "web", "rev": "2"},
        spread=[spread(ZONE, 1, WEB, matchLabelKeys=["rev"])],
    )
    # Only rev=2 pods count, and the terminating one does not: both zones 0.
    assert fits(docs, incoming) == {"a1", "b1"}
    without = pod("v2-1", labels={"app": "web", "rev": "2"}, spread=[spread(ZONE, 1, WEB)])
    assert fits(docs, without) == {"b1"}


def test_only_the_pods_namespace_counts() -> None:
    docs = [
        node("a1", "a"),
        node("b1", "b"),
        pod("w0", ns="other", labels=WEB, on="a1"),
        pod("w1", ns="other", labels=WEB, on="a1"),
    ]
    assert fits(docs, pod("w2", labels=WEB, spread=[spread(ZONE, 1, WEB)])) == {"a1", "b1"}


def scores(
    docs: list[dict[str, Any]],
    incoming: dict[str, Any],
    feasible: list[str] | None = None,
    args: SpreadArgs | None = None,
) -> dict[str, int]:
    plugin = PodTopologySpread(args or SpreadArgs())
    return plugin_scores(plugin, state_of(*docs), typed_pod(incoming), feasible)


def test_schedule_anyway_scores_fewer_matching_pods_higher() -> None:
    docs = [
        node("n1", "a"),
        node("n2", "a"),
        node("n3", "b"),
        pod("w0", labels=WEB, on="n1"),
        pod("w1", labels=WEB, on="n1"),
        pod("w2", labels=WEB, on="n2"),
    ]
    hostname = pod("w3", labels=WEB, spread=[spread(HOSTNAME, 1, WEB, when="ScheduleAnyway")])
    # Weight log(3 + 2); raw n1 2w -> 3, n2 1w -> 2, n3 0; normalized 100 * (3 + 0 - s) / 3.
    w = math.log(5)
    assert round(2 * w) == 3 and round(w) == 2
    assert scores(docs, hostname) == {"n1": 0, "n2": 33, "n3": 100}
    zone = pod("w3", labels=WEB, spread=[spread(ZONE, 2, WEB, when="ScheduleAnyway")])
    # Two zone values among the nodes: weight log(4); a has 3 pods: 3 * 1.386 + 1 = 5.16 -> 5;
    # b: 0 + 1 = 1; normalized 100 * (5 + 1 - s) / 5.
    assert scores(docs, zone) == {"n1": 20, "n2": 20, "n3": 100}
    # Only the feasible nodes count for the weight (log 4) and the normalization: raw n1 2.77
    # -> 3, n2 1.39 -> 1; 100 * (3 + 1 - s) / 3.
    assert scores(docs, hostname, ["n1", "n2"]) == {"n1": 33, "n2": 100}


def test_score_ignores_nodes_without_every_key_of_a_pods_own_constraints() -> None:
    docs = [node("n1", "a"), node("n2", labels={RACK: "r"}), pod("w0", labels=WEB, on="n1")]
    incoming = pod("w1", labels=WEB, spread=[spread(ZONE, 1, WEB, when="ScheduleAnyway")])
    # n2 has no zone: ignored, scored 0. n1 alone: raw 1 * log(3) = 1.1 -> 1, max 1, min 1:
    # 100 * (1 + 1 - 1) / 1 = 100.
    assert scores(docs, incoming) == {"n1": 100, "n2": 0}


def rs(name: str, match: dict[str, str], ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": {"matchLabels": match}},
    }


def service(name: str, selector: dict[str, str] | None, ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": selector} if selector is not None else {},
    }


def test_default_selector_from_services_and_the_controller() -> None:
    labels = {"app": "web", "pod-template-hash": "abc", "tier": "front"}
    docs = [
        rs("web-abc", {"app": "web", "pod-template-hash": "abc"}),
        service("web", {"app": "web"}),
        service("front", {"tier": "front"}),
        service("headless", None),  # no selector: selects nothing
        service("other-ns", {"app": "web"}, ns="other"),
        service("api", {"app": "api"}),  # does not select the pod
        {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "metadata": {"name": "legacy", "namespace": "default"},
            "spec": {"template": {"metadata": {"labels": {"app": "legacy"}}}},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}},
        },
    ]
    state = state_of(*docs)
    owned = typed_pod(pod("web-abc-1", labels=labels, owner=("apps/v1", "ReplicaSet", "web-abc")))
    assert default_selector(state, owned) == from_set(labels)
    bare = typed_pod(pod("x", labels={"app": "web"}))
    assert default_selector(state, bare) == from_set({"app": "web"})
    # A controller the input does not have adds nothing; a DaemonSet is not one of the kinds.
    lost = typed_pod(pod("y", labels={"app": "z"}, owner=("apps/v1", "ReplicaSet", "gone")))
    assert default_selector(state, lost).empty
    daemon = typed_pod(pod("d", labels={"app": "d"}, owner=("apps/v1", "DaemonSet", "agent")))
    assert default_selector(state, daemon).empty
    # A ReplicationController's selector defaults to its template's labels.
    rc_pod = typed_pod(
        pod("l", labels={"app": "legacy"}, owner=("v1", "ReplicationController", "legacy"))
    )
    assert default_selector(state, rc_pod) == from_set({"app": "legacy"})
    sts_pod = typed_pod(pod("db-0", labels={"app": "db"}, owner=("apps/v1", "StatefulSet", "db")))
    assert default_selector(state, sts_pod) == from_set({"app": "db"})


def test_system_defaults_spread_a_deployments_pods_by_hostname_and_zone() -> None:
    labels = {"app": "web", "pod-template-hash": "abc"}
    owner = ("apps/v1", "ReplicaSet", "web-abc")
    docs = [
        rs("web-abc", labels),
        node("n1", "a"),
        node("n2", "a"),
        node("n3", "b"),
        node("n4"),  # no zone: still spread by hostname (system defaults)
        pod("w0", labels=labels, owner=owner, on="n1"),
        pod("w1", labels=labels, owner=owner, on="n1"),
        pod("w2", labels=labels, owner=owner, on="n3"),
    ]
    incoming = pod("w3", labels=labels, owner=owner)
    state = state_of(*docs)
    plugin = PodTopologySpread()
    p = typed_pod(incoming)
    assert plugin.filter_state(state, p) is None  # the defaults are ScheduleAnyway only
    # hostname: 4 nodes, weight log 6; zone: values a, b and "" (n4 has none), weight log 5.
    wh, wz = math.log(6), math.log(5)
    raw = {
        "n1": round(2 * wh + 2 + 2 * wz + 4),
        "n2": round(0 + 2 + 2 * wz + 4),
        "n3": round(wh + 2 + wz + 4),
        "n4": (0 + 2),  # no zone label: the zone constraint adds nothing
    }
    high, low = max(raw.values()), min(raw.values())
    assert scores(docs, incoming) == {n: 100 * (high + low - s) // high for n, s in raw.items()}
    # Without a controller or Service that selects it, a pod gets no default constraint.
    assert scores(docs, pod("lone", labels={"app": "lone"})) == {}


def test_list_defaulting_uses_the_given_constraints() -> None:
    labels = {"app": "web"}
    args = SpreadArgs(
        default_constraints=(
            TopologySpreadConstraint(
                max_skew=1, topology_key=ZONE, when_unsatisfiable="DoNotSchedule"
            ),
        ),
        defaulting_type="List",
    )
    docs = [
        service("web", labels),
        node("a1", "a"),
        node("b1", "b"),
        pod("w0", labels=labels, on="a1"),
    ]
    assert verdicts(docs, pod("w1", labels=labels), args) == {
        "a1": CONSTRAINTS_MISMATCH,
        "b1": "ok",
    }
    # A pod with constraints of its own gets none of the defaults.
    own = pod("w1", labels=labels, spread=[spread(HOSTNAME, 5, labels, when="ScheduleAnyway")])
    assert verdicts(docs, own, args) == {"a1": "ok", "b1": "ok"}


def test_bad_args() -> None:
    with pytest.raises(BadInput, match="defaultConstraints must be empty"):
        SpreadArgs(
            default_constraints=(
                TopologySpreadConstraint(
                    max_skew=1, topology_key=ZONE, when_unsatisfiable="DoNotSchedule"
                ),
            )
        )
    with pytest.raises(BadInput, match="System or List"):
        SpreadArgs(defaulting_type="Cluster")


@pytest.mark.parametrize(
    ("constraint", "path", "message"),
    [
        (spread(ZONE, 0, WEB), "maxSkew", "must be greater than zero"),
        (spread("", 1, WEB), "topologyKey", "can not be empty"),
        (spread(ZONE, 1, WEB, when="Sometimes"), "whenUnsatisfiable", "unsupported value"),
        (spread(ZONE, 1, WEB, minDomains=0), "minDomains", "must be greater than 0"),
        (
            spread(ZONE, 1, WEB, when="ScheduleAnyway", minDomains=2),
            "minDomains",
            "whenUnsatisfiable=DoNotSchedule",
        ),
        (spread(ZONE, 1, WEB, nodeAffinityPolicy="Maybe"), "nodeAffinityPolicy", "unsupported"),
        (spread(ZONE, 1, WEB, nodeTaintsPolicy="honor"), "nodeTaintsPolicy", "unsupported"),
        (
            spread(ZONE, 1, None, matchLabelKeys=["rev"]),
            "matchLabelKeys",
            "labelSelector is not set",
        ),
        (
            {
                **spread(ZONE, 1),
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]},
            },
            "labelSelector.matchExpressions[0].values",
            "must be non-empty",
        ),
        (
            {
                **spread(ZONE, 1),
                "labelSelector": {
                    "matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]
                },
            },
            "labelSelector.matchExpressions[0].operator",
            'unsupported value "Gt"',
        ),
    ],
)
def test_bad_constraints(constraint: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(BadInput) as err:
        decode(pod("p", spread=[constraint]))
    assert err.value.path == f"spec.topologySpreadConstraints[0].{path}"
    assert message in err.value.message


def test_duplicate_constraints_and_bad_selectors_of_other_kinds() -> None:
    with pytest.raises(BadInput, match="duplicate value"):
        decode(pod("p", spread=[spread(ZONE, 1, WEB), spread(ZONE, 2, WEB)]))
    with pytest.raises(BadInput) as err:
        decode(rs("web", {}))
    assert (err.value.kind, err.value.path) == ("ReplicaSet", "spec.selector")
    with pytest.raises(BadInput) as err:
        decode(service("web", {"app": "bad value!"}))
    assert err.value.path == "spec.selector[app]"
