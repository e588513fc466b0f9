"""The inputs preemption reads: PodDisruptionBudgets (policy/v1), metav1 label selectors, the
preemption fields of Pods, and NodeResourcesFit's resolvable / unresolvable failures."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.codec import decode
from draplan.api.meta import LabelSelector, LabelSelectorRequirement
from draplan.api.policy_v1 import PodDisruptionBudget
from draplan.cluster.labels import selector_of
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler, build_profile
from draplan.scheduler.framework import Code
from scheduler_builders import MakeNode, MakePod

KEYS = ("app", "tier", "team")
VALUES = ("a", "b", "c")


def _requirement() -> st.SearchStrategy[LabelSelectorRequirement]:
    return st.one_of(
        st.builds(
            LabelSelectorRequirement,
            key=st.sampled_from(KEYS),
            operator=st.sampled_from(("In", "NotIn")),
            values=st.lists(st.sampled_from(VALUES), min_size=1, max_size=2).map(tuple),
        ),
        st.builds(
            LabelSelectorRequirement,
            key=st.sampled_from(KEYS),
            operator=st.sampled_from(("Exists", "DoesNotExist")),
        ),
    )


def _holds(req: LabelSelectorRequirement, labels: dict[str, str]) -> bool:
    """labels.Requirement.Matches, written from its documentation: NotIn and DoesNotExist
    are satisfied by a missing key."""
    value = labels.get(req.key)
    return {
        "In": value is not None and value in req.values,
        "NotIn": value is None or value not in req.values,
        "Exists": value is not None,
        "DoesNotExist": value is None,
    }[req.operator]


@settings(max_examples=150, deadline=None)
@given(
    match=st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2),
    exprs=st.lists(_requirement(), max_size=3),
    labels=st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3),
)
def test_label_selector_is_the_conjunction_of_its_requirements(
    match: dict[str, str], exprs: list[LabelSelectorRequirement], labels: dict[str, str]
) -> None:
    sel = selector_of(LabelSelector(match_labels=match, match_expressions=tuple(exprs)))
    want = all(labels.get(k) == v for k, v in match.items()) and all(
        _holds(r, labels) for r in exprs
    )
    assert sel.matches(labels) is want
    assert sel.empty is (not match and not exprs)


def test_pdb_decodes_int_or_percent_and_keeps_an_absent_status_apart() -> None:
    doc: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "llm-serving", "namespace": "inference"},
        "spec": {"minAvailable": "80%", "selector": {"matchLabels": {"app": "llm"}}},
    }
    pdb = decode(doc)
    assert isinstance(pdb, PodDisruptionBudget)
    assert pdb.spec.min_available == "80%" and pdb.status is None
    doc["spec"] = {"maxUnavailable": 1}
    doc["status"] = {"disruptionsAllowed": 0, "disruptedPods": {"llm-0": "2026-05-01T10:00:00Z"}}
    pdb = decode(doc)
    assert isinstance(pdb, PodDisruptionBudget) and pdb.spec.max_unavailable == 1
    assert pdb.status is not None and pdb.status.disrupted_pods == {"llm-0": "2026-05-01T10:00:00Z"}


def test_a_request_larger_than_the_node_is_unresolvable_a_fuller_node_is_not() -> None:
    """fit.go's InsufficientResource.Unresolvable: more than the node's allocatable can never
    fit whatever preemption removes; more than what is free can."""
    nodes = [
        MakeNode().name("gaudi-0").capacity(cpu="16", **{"habana.ai/gaudi": "8"}).obj(),
        MakeNode().name("cpu-0").capacity(cpu="64").obj(),
    ]
    busy = MakePod().name("busy").node("gaudi-0").req(cpu="12").obj()
    pod = MakePod().name("train").req(cpu="8", **{"habana.ai/gaudi": "4"}).obj()
    state = ClusterState.from_objects([*nodes, busy, pod])
    _, statuses = Scheduler(build_profile()).evaluate(state, pod)
    assert statuses["gaudi-0"].code == Code.UNSCHEDULABLE
    assert statuses["gaudi-0"].reasons == ("Insufficient cpu",)
    assert statuses["cpu-0"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert statuses["cpu-0"].reasons == ("Insufficient habana.ai/gaudi",)


def test_the_built_in_system_classes_resolve_without_a_priority_class_object() -> None:
    """kube-apiserver creates system-node-critical and system-cluster-critical itself, so a
    control-plane pod naming one outranks every user class although the dump lists neither."""
    from draplan.scheduler.queue import priority_of, priority_table
    from scheduler_builders import priority_class

    proxy = MakePod().name("kube-proxy").priority_class("system-node-critical").obj()
    dns = MakePod().name("coredns").priority_class("system-cluster-critical").obj()
    job = MakePod().name("train").priority_class("top").obj()
    state = ClusterState.from_objects([proxy, dns, job, priority_class("top", 1_000_000_000)])
    classes, default = priority_table(state)
    assert [priority_of(p, classes, default) for p in (proxy, dns, job)] == [
        2_000_001_000,
        2_000_000_000,
        1_000_000_000,
    ]
