"""InterPodAffinity's rules as kube-scheduler's interpodaffinity plugin has them: required
affinity and anti-affinity, the running pods' anti-affinity against the incoming pod, the first
pod of a set that selects itself, namespaces and namespace selectors, matchLabelKeys /
mismatchLabelKeys, and the preferred terms' score with hardPodAffinityWeight and the min-max
normalization. Each case is a small cluster written as manifests; the expectations are worked
out by hand from the upstream rules, not taken from draplan's output."""

from __future__ import annotations

from typing import Any

import pytest

from draplan.api.codec import decode
from draplan.api.errors import BadInput
from draplan.api.meta import LabelSelector, LabelSelectorRequirement
from draplan.cluster.labels import EVERYTHING, NOTHING, from_set, selector_of
from draplan.scheduler.framework import Code
from draplan.scheduler.plugins.interpodaffinity import (
    AFFINITY_MISMATCH,
    ANTI_AFFINITY_MISMATCH,
    EXISTING_ANTI_AFFINITY,
    AffinityArgs,
    InterPodAffinity,
    normalize,
)
from topology_builders import (
    HOSTNAME,
    RACK,
    ZONE,
    Scored,
    filter_verdicts,
    namespace,
    node,
    plugin_scores,
    pod,
    preferred,
    required,
    state_of,
    term,
    typed_pod,
)

NODES = [node("a1", "a"), node("a2", "a"), node("b1", "b"), node("c1", "c")]
WEB_SEL = {"app": "web"}


def verdicts(docs: list[dict[str, Any]], incoming: dict[str, Any], **args: Any) -> dict[str, str]:
    """Each node's Filter outcome for `incoming`: "ok" or the reason."""
    plugin = InterPodAffinity(AffinityArgs(**args))
    return filter_verdicts(plugin, state_of(*docs), typed_pod(incoming))


def test_label_selectors_read_as_apimachinery_reads_them() -> None:
    assert not NOTHING.matches({}) and NOTHING.nothing and not NOTHING.empty
    assert EVERYTHING.matches({}) and EVERYTHING.empty
    sel = selector_of(
        LabelSelector(
            match_labels={"app": "web"},
            match_expressions=(
                LabelSelectorRequirement(key="tier", operator="NotIn", values=("batch",)),
                LabelSelectorRequirement(key="gpu", operator="Exists"),
                LabelSelectorRequirement(key="spot", operator="DoesNotExist"),
            ),
        )
    )
    assert sel.matches({"app": "web", "gpu": ""})
    assert not sel.matches({"app": "web", "gpu": "", "tier": "batch"})
    assert not sel.matches({"app": "web"})
    assert not sel.matches({"app": "web", "gpu": "1", "spot": "true"})
    assert selector_of(None) == NOTHING
    assert selector_of(LabelSelector()) == EVERYTHING
    # Selectors that say the same compare equal (they key caches).
    assert from_set({"b": "2", "a": "1"}) == from_set({"a": "1", "b": "2"})


def test_required_affinity_needs_a_matching_pod_in_the_nodes_domain() -> None:
    docs = [*NODES, pod("db", labels={"app": "db"}, on="a1")]
    incoming = pod(
        "web", labels={"app": "web"}, affinity=required("podAffinity", term(ZONE, {"app": "db"}))
    )
    assert verdicts(docs, incoming) == {
        "a1": "ok",
        "a2": "ok",
        "b1": AFFINITY_MISMATCH,
        "c1": AFFINITY_MISMATCH,
    }
    state = state_of(*docs)
    plugin = InterPodAffinity()
    fs = plugin.filter_state(state, typed_pod(incoming))
    assert fs is not None
    status = plugin.filter_node(fs, typed_pod(incoming), state.nodes["b1"])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE  # preemption cannot help


def test_required_affinity_all_terms_must_match_one_pod() -> None:
    # podMatchesAllAffinityTerms: a pod counts only if it matches every term.
    docs = [
        *NODES,
        pod("db", labels={"app": "db"}, on="a1"),
        pod("cache", labels={"tier": "cache"}, on="b1"),
    ]
    incoming = pod(
        "web",
        affinity=required("podAffinity", term(ZONE, {"app": "db"}), term(ZONE, {"tier": "cache"})),
    )
    assert set(verdicts(docs, incoming).values()) == {AFFINITY_MISMATCH}


def test_the_first_pod_of_a_self_selecting_set_may_go_anywhere_with_the_key() -> None:
    no_zone = node("edge", labels={RACK: "r1"})
    incoming = pod(
        "web-0", labels={"app": "web"}, affinity=required("podAffinity", term(ZONE, {"app": "web"}))
    )
    assert verdicts([*NODES, no_zone], incoming) == {
        "a1": "ok",
        "a2": "ok",
        "b1": "ok",
        "c1": "ok",
        "edge": AFFINITY_MISMATCH,  # every topology key must be on the node
    }
    # Not if the pod does not match its own term...
    stranger = pod(
        "web-0", labels={"app": "api"}, affinity=required("podAffinity", term(ZONE, {"app": "web"}))
    )
    assert set(verdicts(NODES, stranger).values()) == {AFFINITY_MISMATCH}
    # ... nor once a matching pod runs somewhere: then only its domain.
    docs = [*NODES, pod("web-1", labels={"app": "web"}, on="b1")]
    assert verdicts(docs, incoming) == {
        "a1": AFFINITY_MISMATCH,
        "a2": AFFINITY_MISMATCH,
        "b1": "ok",
        "c1": AFFINITY_MISMATCH,
    }


def one_per_node(name: str) -> dict[str, Any]:
    """A web replica that keeps off nodes with another web replica."""
    return pod(name, labels=WEB_SEL, affinity=required("podAntiAffinity", term(HOSTNAME, WEB_SEL)))


NOT_A1 = {"a1": ANTI_AFFINITY_MISMATCH, "a2": "ok", "b1": "ok", "c1": "ok"}


def test_required_anti_affinity_keeps_replicas_apart() -> None:
    docs = [*NODES, pod("web-0", labels={"app": "web"}, on="a1")]
    assert verdicts(docs, one_per_node("web-1")) == NOT_A1
    by_zone = pod(
        "web-1",
        labels={"app": "web"},
        affinity=required("podAntiAffinity", term(ZONE, {"app": "web"})),
    )
    assert verdicts(docs, by_zone)["a2"] == ANTI_AFFINITY_MISMATCH


def test_a_running_pods_anti_affinity_repels_the_incoming_pod() -> None:
    # Symmetry: the incoming pod has no terms of its own.
    guard = pod(
        "guard",
        labels={"app": "guard"},
        on="b1",
        affinity=required("podAntiAffinity", term(ZONE, {"app": "noisy"})),
    )
    incoming = pod("noisy", labels={"app": "noisy"})
    assert verdicts([*NODES, guard], incoming) == {
        "a1": "ok",
        "a2": "ok",
        "b1": EXISTING_ANTI_AFFINITY,
        "c1": "ok",
    }
    # Its terms select in its own namespace: a pod of another namespace is not repelled.
    other = pod("noisy", ns="batch", labels={"app": "noisy"})
    assert set(verdicts([*NODES, guard], other).values()) == {"ok"}


def test_namespaces_and_namespace_selectors() -> None:
    docs = [
        *NODES,
        namespace("ml", team="ml"),
        namespace("serving", team="web"),
        pod("db", ns="ml", labels={"app": "db"}, on="a1"),
        pod("db", ns="serving", labels={"app": "db"}, on="b1"),
        # No Namespace object for "legacy": it exists (its pod does), named by its label.
        pod("db", ns="legacy", labels={"app": "db"}, on="c1"),
    ]

    def zones(**kw: Any) -> set[str]:
        incoming = pod(
            "web",
            labels={"app": "web"},
            affinity=required("podAffinity", term(ZONE, {"app": "db"}, **kw)),
        )
        return {n for n, v in verdicts(docs, incoming).items() if v == "ok"}

    assert zones() == set()  # own namespace ("default") has no db pod
    assert zones(namespaces=["ml"]) == {"a1", "a2"}
    assert zones(namespace_selector={"matchLabels": {"team": "web"}}) == {"b1"}
    assert zones(namespace_selector={}) == {"a1", "a2", "b1", "c1"}  # every namespace
    assert zones(namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": "legacy"}}) == {
        "c1"
    }
    # namespaces and namespaceSelector together: either.
    assert zones(namespaces=["ml"], namespace_selector={"matchLabels": {"team": "web"}}) == {
        "a1",
        "a2",
        "b1",
    }


def test_existing_terms_with_a_namespace_selector_read_the_incoming_namespace_labels() -> None:
    guard = pod(
        "guard",
        ns="ml",
        labels={"app": "guard"},
        on="a1",
        affinity=required(
            "podAntiAffinity",
            term(HOSTNAME, {"app": "noisy"}, namespace_selector={"matchLabels": {"tier": "batch"}}),
        ),
    )
    docs = [*NODES, namespace("ml"), namespace("jobs", tier="batch"), guard]
    assert (
        verdicts(docs, pod("noisy", ns="jobs", labels={"app": "noisy"}))["a1"]
        == EXISTING_ANTI_AFFINITY
    )
    assert verdicts(docs, pod("noisy", ns="ml", labels={"app": "noisy"}))["a1"] == "ok"


def test_match_and_mismatch_label_keys_merge_into_the_selector() -> None:
    # One replica per node among pods of the same version (matchLabelKeys), and never beside
    # another tenant (mismatchLabelKeys).
    docs = [
        *NODES,
        pod("v1-0", labels={"app": "web", "version": "v1", "tenant": "x"}, on="a1"),
        pod("v2-0", labels={"app": "web", "version": "v2", "tenant": "x"}, on="a2"),
        pod("other", labels={"app": "web", "version": "v3", "tenant": "y"}, on="b1"),
    ]
    incoming = pod(
        "v2-1",
        labels={"app": "web", "version": "v2", "tenant": "x"},
        affinity={
            **required(
                "podAntiAffinity",
                term(HOSTNAME, {"app": "web"}, matchLabelKeys=["version"]),
                term(HOSTNAME, {"app": "web"}, mismatchLabelKeys=["tenant"]),
            )
        },
    )
    assert verdicts(docs, incoming) == {
        "a1": "ok",  # a v1 pod: another version
        "a2": ANTI_AFFINITY_MISMATCH,  # same version
        "b1": ANTI_AFFINITY_MISMATCH,  # another tenant
        "c1": "ok",
    }


def test_terminating_pods_still_count_and_finished_pods_do_not() -> None:
    docs = [
        *NODES,
        pod("old", labels={"app": "web"}, on="a1", deleting=True),
        {**pod("done", labels={"app": "web"}, on="b1"), "status": {"phase": "Succeeded"}},
    ]
    assert verdicts(docs, one_per_node("web")) == NOT_A1


def test_no_terms_and_no_running_anti_affinity_skips_the_plugin() -> None:
    state = state_of(*NODES, pod("db", labels={"app": "db"}, on="a1"))
    assert InterPodAffinity().filter_state(state, typed_pod(pod("web"))) is None
    assert InterPodAffinity().score_state(state, typed_pod(pod("web"))) is None


def scores(docs: list[dict[str, Any]], incoming: dict[str, Any], **args: Any) -> dict[str, int]:
    """Score then NormalizeScore over every node."""
    plugin = InterPodAffinity(AffinityArgs(**args))
    return plugin_scores(plugin, state_of(*docs), typed_pod(incoming))


def test_preferred_affinity_and_anti_affinity_scores() -> None:
    docs = [
        *NODES,
        pod("db", labels={"app": "db"}, on="a1"),
        pod("batch", labels={"app": "batch"}, on="b1"),
    ]
    incoming = pod(
        "web",
        affinity={
            **preferred("podAffinity", (80, term(ZONE, {"app": "db"}))),
            **preferred("podAntiAffinity", (20, term(ZONE, {"app": "batch"}))),
        },
    )
    # Raw: zone a +80, zone b -20, zone c 0; min-max over -20..80.
    assert scores(docs, incoming) == {"a1": 100, "a2": 100, "b1": 0, "c1": 20}


def test_running_pods_terms_score_the_incoming_pod() -> None:
    # A running pod's required affinity term that selects the incoming pod adds
    # hardPodAffinityWeight; its preferred terms add or take their weights.
    docs = [
        *NODES,
        pod(
            "client",
            labels={"app": "client"},
            on="a1",
            affinity=required("podAffinity", term(ZONE, {"app": "api"})),
        ),
        pod(
            "loner",
            labels={"app": "loner"},
            on="b1",
            affinity=preferred("podAntiAffinity", (7, term(HOSTNAME, {"app": "api"}))),
        ),
    ]
    incoming = pod("api", labels={"app": "api"})
    # Raw: a1, a2 +5 (weight 5); b1 -7; c1 0 -> min-max over -7..5 = 12.
    assert scores(docs, incoming, hard_pod_affinity_weight=5) == {
        "a1": 100,
        "a2": 100,
        "b1": 0,
        "c1": int(100.0 * (7 / 12)),
    }
    # Weight 0 leaves the required term out.
    assert scores(docs, incoming, hard_pod_affinity_weight=0) == {
        "a1": 100,
        "a2": 100,
        "b1": 0,
        "c1": 100,
    }
    # ignorePreferredTermsOfExistingPods: a pod without preferred terms skips scoring.
    assert scores(docs, incoming, ignore_preferred_terms_of_existing_pods=True) == {}


def test_normalize_truncates_as_go() -> None:
    out = [Scored("x", -5), Scored("y", 0), Scored("z", 10)]
    normalize(out)
    assert [s.score for s in out] == [0, 33, 100]
    same = [Scored("x", 4), Scored("y", 4)]
    normalize(same)
    assert [s.score for s in same] == [0, 0]


@pytest.mark.parametrize("kind", ["podAffinity", "podAntiAffinity"])
def test_a_node_without_labels_adds_nothing_to_the_score(kind: str) -> None:
    bare = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}}
    docs = [*NODES, bare, pod("db", labels={"app": "db"}, on="bare")]
    incoming = pod("web", affinity=preferred(kind, (50, term(HOSTNAME, {"app": "db"}))))
    assert scores(docs, incoming) == {}  # processExistingPod skips it: nothing to score


@pytest.mark.parametrize(
    ("affinity", "path", "message"),
    [
        (
            required("podAffinity", term("", WEB_SEL)),
            "podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
            "can not be empty",
        ),
        (
            required("podAffinity", term("bad key!", WEB_SEL)),
            "podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
            "invalid key",
        ),
        (
            preferred("podAntiAffinity", (0, term(ZONE, WEB_SEL))),
            "podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
            "range 1-100",
        ),
        (
            required("podAffinity", term(ZONE, WEB_SEL, namespaces=["Not_A_Label"])),
            "podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces[0]",
            "DNS label",
        ),
        (
            required("podAffinity", term(ZONE, None, matchLabelKeys=["v"])),
            "podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys",
            "labelSelector is not set",
        ),
        (
            required(
                "podAffinity", term(ZONE, WEB_SEL, matchLabelKeys=["v"], mismatchLabelKeys=["v"])
            ),
            "podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys",
            "exists in both",
        ),
        (
            required(
                "podAntiAffinity",
                term(ZONE, WEB_SEL, namespace_selector={"matchLabels": {"team": "a b"}}),
            ),
            "podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector.matchLabels[team]",
            "invalid value",
        ),
    ],
)
def test_bad_affinity(affinity: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(BadInput) as err:
        decode(pod("p", affinity=affinity))
    assert err.value.path == f"spec.affinity.{path}"
    assert message in err.value.message
