"""The scheduler's plugins with the semantics of their kube-scheduler namesakes, the reasons an
unschedulable pod gets, scoring, profiles and queue order.

Most cases run the whole scheduler (`Scheduler().run`) on a small cluster and assert where the
pod went or the exact message it got; DynamicResources' Reserve / Unreserve are also called
directly to check that a rollback restores the state exactly.
"""

from __future__ import annotations

import re

import msgspec
import pytest

from draplan.api.core_v1 import NodeSelectorRequirement, PodResourceClaimStatus, PodStatus
from draplan.api.draplan_v1alpha1 import PluginWeight, SchedulerProfile, SchedulerProfileSpec
from draplan.api.errors import BadInput
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.cluster.podresources import pod_requests
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import Scheduler, build_profile
from draplan.scheduler.framework import Code, CycleState, PodInfo
from draplan.scheduler.plugins.dynamicresources import MAX_RESERVED_FOR
from draplan.scheduler.plugins.names import DYNAMIC_RESOURCES
from draplan.scheduler.plugins.nodename import NodeName
from draplan.scheduler.profile import draplan_profile
from scheduler_builders import (
    DRIVER,
    NUMA,
    T0,
    MakeClaim,
    MakeNode,
    MakePod,
    MakeSlice,
    Run,
    consumer,
    device_class,
    devices_in_use,
    priority_class,
    req,
    schedule,
    snapshot,
)

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
GENERATED = re.compile(r"^(?P<base>.*)(?P<suffix>[bcdfghjklmnpqrstvwxz2456789]{5})$")


def one_node(node: KubeStruct, pod: KubeStruct, *extra: KubeStruct) -> Run:
    return schedule([node, pod, *extra])


def assert_placed(run: Run, pod: str, node: str) -> None:
    result = run.by_name()[pod]
    assert result.node == node, result.reason
    assert result.reason is None


def profile_with(*scores: tuple[str, int], disabled: tuple[str, ...] = ()) -> SchedulerProfile:
    return SchedulerProfile(
        metadata=ObjectMeta(name="test"),
        spec=SchedulerProfileSpec(
            score_plugins=tuple(PluginWeight(name=n, weight=w) for n, w in scores),
            disabled_plugins=disabled,
        ),
    )


# --- NodeName ----------------------------------------------------------------------------


def test_nodename_filter_accepts_only_the_named_node() -> None:
    state = ClusterState.from_objects([MakeNode().name("n1").obj(), MakeNode().name("n2").obj()])
    pod = MakePod().name("p").node("n2").obj()
    info = PodInfo(pod, key_of(pod), pod_requests(pod), b"")
    plugin = NodeName()
    assert plugin.filter(state, CycleState(), info, state.nodes["n2"]).ok
    status = plugin.filter(state, CycleState(), info, state.nodes["n1"])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("node(s) didn't match the requested node name",)
    # A pod without spec.nodeName passes everywhere.
    free = MakePod().name("q").obj()
    free_info = PodInfo(free, key_of(free), pod_requests(free), b"")
    assert plugin.filter(state, CycleState(), free_info, state.nodes["n1"]).ok


def test_schedule_pod_with_node_name_goes_to_that_node_even_if_it_scores_lower() -> None:
    # n1 is fuller (MostAllocated prefers it); the pod names n2.
    state = ClusterState.from_objects(
        [
            MakeNode().name("n1").capacity(cpu="4").obj(),
            MakeNode().name("n2").capacity(cpu="4").obj(),
            MakePod().name("busy").req(cpu="3").node("n1").obj(),
        ]
    )
    result = Scheduler().schedule_pod(state, MakePod().name("p").req(cpu="1").node("n2").obj())
    assert result.node == "n2"


def test_run_leaves_bound_pods_alone_and_counts_them() -> None:
    run = schedule(
        [
            MakeNode().name("n1").capacity(cpu="4").obj(),
            MakePod().name("bound").req(cpu="3").node("n1").obj(),
            MakePod().name("p").req(cpu="2").obj(),
        ]
    )
    assert [r.key[1] for r in run.results] == ["p"]
    assert run.reason("p") == "0/1 nodes are available: 1 Insufficient cpu."


# --- NodeUnschedulable -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cordoned", "tolerations", "fits"),
    [
        (False, [], True),
        (True, [], False),
        (True, [(UNSCHEDULABLE_TAINT, "", "NoSchedule", "Exists")], True),
        (True, [(UNSCHEDULABLE_TAINT, "", "", "Exists")], True),  # empty effect: all effects
        (True, [("", "", "", "Exists")], True),  # empty key + Exists tolerates everything
        (True, [(UNSCHEDULABLE_TAINT, "", "NoExecute", "Exists")], False),  # wrong effect
        (True, [("other", "", "NoSchedule", "Exists")], False),  # wrong key
    ],
    ids=[
        "schedulable",
        "cordoned",
        "tolerated",
        "tolerated-any-effect",
        "tolerate-everything",
        "wrong-effect",
        "wrong-key",
    ],
)
def test_node_unschedulable(
    cordoned: bool, tolerations: list[tuple[str, str, str, str]], fits: bool
) -> None:
    node = MakeNode().name("n1")
    if cordoned:
        node.unschedulable()
    pod = MakePod().name("p")
    for key, value, effect, op in tolerations:
        pod.toleration(key, value, effect, operator=op)
    run = one_node(node.obj(), pod.obj())
    if fits:
        assert_placed(run, "p", "n1")
    else:
        assert run.node_of("p") is None
        assert run.reason("p") == "0/1 nodes are available: 1 node(s) were unschedulable."


# --- TaintToleration ---------------------------------------------------------------------

Tol = tuple[str, str, str, str]  # key, value, effect, operator


@pytest.mark.parametrize(
    ("taints", "tolerations", "fits"),
    [
        ([], [], True),
        ([("k", "v", "NoSchedule")], [], False),
        ([("k", "v", "NoExecute")], [], False),
        ([("k", "v", "PreferNoSchedule")], [], True),
        ([("k", "v", "NoSchedule")], [("k", "v", "NoSchedule", "Equal")], True),
        ([("k", "v", "NoSchedule")], [("k", "v", "NoSchedule", "")], True),  # "" means Equal
        ([("k", "v", "NoSchedule")], [("k", "w", "NoSchedule", "Equal")], False),
        ([("k", "v", "NoSchedule")], [("k", "", "NoSchedule", "Exists")], True),
        ([("k", "v", "NoSchedule")], [("j", "", "NoSchedule", "Exists")], False),
        ([("k", "v", "NoExecute")], [("k", "v", "NoSchedule", "Equal")], False),
        ([("k", "v", "NoExecute")], [("k", "v", "", "Equal")], True),  # "" effect: all
        ([("k", "v", "NoExecute")], [("", "", "", "Exists")], True),
        ([("k", "", "NoSchedule")], [("k", "", "NoSchedule", "Equal")], True),
        (
            [("a", "1", "NoSchedule"), ("b", "2", "NoExecute")],
            [("a", "1", "NoSchedule", "Equal")],
            False,
        ),
        (
            [("a", "1", "NoSchedule"), ("b", "2", "NoExecute")],
            [("a", "1", "NoSchedule", "Equal"), ("b", "", "", "Exists")],
            True,
        ),
        (
            [("a", "1", "PreferNoSchedule"), ("b", "2", "NoSchedule")],
            [("b", "2", "NoSchedule", "Equal")],
            True,
        ),
    ],
    ids=[
        "no-taints",
        "noschedule",
        "noexecute",
        "prefer-ignored",
        "equal",
        "empty-operator-is-equal",
        "equal-wrong-value",
        "exists",
        "exists-wrong-key",
        "wrong-effect",
        "empty-effect-matches",
        "tolerate-everything",
        "empty-value",
        "one-of-two-tolerated",
        "both-tolerated",
        "prefer-plus-tolerated",
    ],
)
def test_taint_toleration(
    taints: list[tuple[str, str, str]], tolerations: list[Tol], fits: bool
) -> None:
    node = MakeNode().name("n1")
    for key, value, effect in taints:
        node.taint(key, value, effect)
    pod = MakePod().name("p")
    for key, value, effect, op in tolerations:
        pod.toleration(key, value, effect, operator=op)
    run = one_node(node.obj(), pod.obj())
    if fits:
        assert_placed(run, "p", "n1")
    else:
        assert run.node_of("p") is None
        assert run.reason("p") == "0/1 nodes are available: 1 node(s) had untolerated taint(s)."


def test_taint_message_names_no_taint() -> None:
    # kubernetes#134740 (1.35, so 1.36 and 1.37): the message no longer names the taint, so
    # nodes with different untolerated taints count as one reason.
    nodes = [
        MakeNode().name("n1").taint("gpu", "only", "NoSchedule").obj(),
        MakeNode().name("n2").taint("habana.ai/gaudi", "", "NoExecute").obj(),
    ]
    run = schedule([*nodes, MakePod().name("p").obj()])
    assert run.reason("p") == "0/2 nodes are available: 2 node(s) had untolerated taint(s)."
    assert run.by_name()["p"].reason.nodes == {  # type: ignore[union-attr]
        "node(s) had untolerated taint(s)": 2
    }


# --- NodeAffinity ------------------------------------------------------------------------

AFFINITY_NODE_LABELS = {"zone": "a", "gen": "5", "arch": "x86"}
R = NodeSelectorRequirement


@pytest.mark.parametrize(
    ("terms", "fits"),
    [
        ([[req("zone", "In", "a", "b")]], True),
        ([[req("zone", "In", "b")]], False),
        ([[req("zone", "NotIn", "b")]], True),
        ([[req("zone", "NotIn", "a")]], False),
        ([[req("missing", "NotIn", "a")]], True),  # NotIn holds for an absent label
        ([[req("zone", "Exists")]], True),
        ([[req("missing", "Exists")]], False),
        ([[req("missing", "DoesNotExist")]], True),
        ([[req("zone", "DoesNotExist")]], False),
        ([[req("gen", "Gt", "4")]], True),
        ([[req("gen", "Gt", "5")]], False),
        ([[req("gen", "Lt", "6")]], True),
        ([[req("gen", "Lt", "5")]], False),
        ([[req("arch", "Gt", "1")]], False),  # not an integer label
        ([[req("missing", "Lt", "9")]], False),
        ([[req("zone", "In", "a"), req("gen", "In", "4")]], False),  # ANDed within a term
        ([[req("zone", "In", "b")], [req("gen", "Exists")]], True),  # terms ORed
        ([[req("zone", "In", "b")], [req("gen", "DoesNotExist")]], False),
    ],
    ids=[
        "in",
        "in-miss",
        "notin",
        "notin-miss",
        "notin-absent",
        "exists",
        "exists-absent",
        "doesnotexist",
        "doesnotexist-present",
        "gt",
        "gt-equal",
        "lt",
        "lt-equal",
        "gt-not-integer",
        "lt-absent",
        "and-within-term",
        "or-between-terms",
        "or-both-false",
    ],
)
def test_node_affinity_required_terms(terms: list[list[R]], fits: bool) -> None:
    node = MakeNode().name("n1")
    for k, v in AFFINITY_NODE_LABELS.items():
        node.label(k, v)
    pod = MakePod().name("p")
    for term in terms:
        pod.affinity_term(*term)
    run = one_node(node.obj(), pod.obj())
    if fits:
        assert_placed(run, "p", "n1")
    else:
        assert run.reason("p") == (
            "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
        )


def test_node_affinity_gt_rejects_non_decimal_label_values() -> None:
    # "1_0" is a valid label value; Go's ParseInt(base 10) fails on it, so Gt never matches.
    node = MakeNode().name("n1").label("gen", "1_0").obj()
    run = one_node(node, MakePod().name("p").affinity_term(req("gen", "Gt", "5")).obj())
    assert run.node_of("p") is None


@pytest.mark.parametrize(
    ("fields", "fits"),
    [
        ([req("metadata.name", "In", "n1")], True),
        ([req("metadata.name", "In", "n2", "n3")], False),
        ([req("metadata.name", "NotIn", "n1")], False),
        ([req("metadata.name", "NotIn", "n2")], True),
    ],
    ids=["in", "in-other", "notin-self", "notin-other"],
)
def test_node_affinity_match_fields_metadata_name(fields: list[R], fits: bool) -> None:
    run = schedule(
        [
            MakeNode().name("n1").obj(),
            MakeNode().name("n2").capacity(cpu="1").obj(),
            # n2 is too small, so only the field decides whether n1 is used
            MakePod().name("p").req(cpu="2").affinity_term(fields=fields).obj(),
        ]
    )
    assert run.node_of("p") == ("n1" if fits else None)


@pytest.mark.parametrize(
    ("selector", "terms", "fits"),
    [
        ({"zone": "a"}, [], True),
        ({"zone": "b"}, [], False),
        ({"zone": "a", "gen": "5"}, [], True),
        ({"zone": "a", "gen": "6"}, [], False),
        ({"missing": ""}, [], False),
        ({"zone": "a"}, [[req("zone", "In", "b")]], False),  # both must hold
        ({"zone": "a"}, [[req("gen", "In", "5")]], True),
    ],
    ids=["match", "miss", "all-match", "one-miss", "absent", "and-affinity-miss", "and-both"],
)
def test_node_selector(selector: dict[str, str], terms: list[list[R]], fits: bool) -> None:
    node = MakeNode().name("n1")
    for k, v in AFFINITY_NODE_LABELS.items():
        node.label(k, v)
    pod = MakePod().name("p")
    for k, v in selector.items():
        pod.node_selector(k, v)
    for term in terms:
        pod.affinity_term(*term)
    run = one_node(node.obj(), pod.obj())
    assert run.node_of("p") == ("n1" if fits else None)


def test_node_selector_picks_the_matching_node_among_several() -> None:
    run = schedule(
        [
            MakeNode().name("n1").label("zone", "a").obj(),
            MakeNode().name("n2").label("zone", "b").obj(),
            MakeNode().name("n3").obj(),
            MakePod().name("p").node_selector("zone", "b").obj(),
        ]
    )
    assert run.node_of("p") == "n2"


# --- NodeResourcesFit --------------------------------------------------------------------

FIT_NODE = {
    "cpu": "4",
    "memory": "8Gi",
    "pods": "10",
    "ephemeral-storage": "10Gi",
    "hugepages-2Mi": "4Mi",
    "nvidia.com/gpu": "2",
}


@pytest.mark.parametrize(
    ("requests", "reasons"),
    [
        ({"cpu": "4"}, []),
        ({"cpu": "4001m"}, ["Insufficient cpu"]),
        ({"memory": "8Gi"}, []),
        ({"memory": "9Gi"}, ["Insufficient memory"]),
        ({"ephemeral-storage": "10Gi"}, []),
        ({"ephemeral-storage": "11Gi"}, ["Insufficient ephemeral-storage"]),
        ({"hugepages-2Mi": "4Mi"}, []),
        ({"hugepages-2Mi": "6Mi"}, ["Insufficient hugepages-2Mi"]),
        ({"nvidia.com/gpu": "2"}, []),
        ({"nvidia.com/gpu": "3"}, ["Insufficient nvidia.com/gpu"]),
        ({"example.com/fpga": "1"}, ["Insufficient example.com/fpga"]),  # node lacks it
        ({"example.com/fpga": "0"}, []),  # a zero request never fails
        ({"cpu": "5", "memory": "9Gi"}, ["Insufficient cpu", "Insufficient memory"]),
    ],
    ids=[
        "cpu-exact",
        "cpu-over",
        "memory-exact",
        "memory-over",
        "ephemeral-exact",
        "ephemeral-over",
        "hugepages-exact",
        "hugepages-over",
        "gpu-count-exact",
        "gpu-count-over",
        "extended-missing-on-node",
        "extended-zero",
        "cpu-and-memory",
    ],
)
def test_node_resources_fit(requests: dict[str, str], reasons: list[str]) -> None:
    run = one_node(
        MakeNode().name("n1").capacity(FIT_NODE).obj(), MakePod().name("p").req(requests).obj()
    )
    if not reasons:
        assert_placed(run, "p", "n1")
        return
    parts = ", ".join(f"1 {r}" for r in sorted(reasons))
    assert run.reason("p") == f"0/1 nodes are available: {parts}."


def test_resources_sum_over_containers() -> None:
    pod = MakePod().name("p").req(cpu="2").req(cpu="2").req(cpu="1m").obj()
    run = one_node(MakeNode().name("n1").capacity(cpu="4").obj(), pod)
    assert run.reason("p") == "0/1 nodes are available: 1 Insufficient cpu."


@pytest.mark.parametrize(
    ("init_cpu", "fits"),
    [("3", True), ("4", True), ("5", False)],
    ids=["init-below-sum", "init-equal-sum", "init-above-capacity"],
)
def test_init_containers_count_by_the_max_rule(init_cpu: str, fits: bool) -> None:
    # containers 2 + 2 = 4; effective request = max(4, largest init container)
    pod = MakePod().name("p").req(cpu="2").req(cpu="2").init_req(cpu=init_cpu).init_req(cpu="1")
    run = one_node(MakeNode().name("n1").capacity(cpu="4").obj(), pod.obj())
    assert run.node_of("p") == ("n1" if fits else None)
    if fits:
        assert run.state.requested("n1")["cpu"] == 4000


@pytest.mark.parametrize(("overhead", "fits"), [("500m", True), ("1001m", False)])
def test_overhead_adds_to_requests(overhead: str, fits: bool) -> None:
    pod = MakePod().name("p").req(cpu="3").overhead(cpu=overhead).obj()
    run = one_node(MakeNode().name("n1").capacity(cpu="4").obj(), pod)
    assert run.node_of("p") == ("n1" if fits else None)
    if not fits:
        assert run.reason("p") == "0/1 nodes are available: 1 Insufficient cpu."


def test_too_many_pods() -> None:
    run = schedule(
        [
            MakeNode().name("n1").capacity(pods="2").obj(),
            MakePod().name("a").node("n1").obj(),
            MakePod().name("b").node("n1").obj(),
            MakePod().name("p").obj(),  # best effort: only the pod count can stop it
        ]
    )
    assert run.reason("p") == "0/1 nodes are available: 1 Too many pods."
    assert run.by_name()["p"].reason.nodes == {"Too many pods": 1}  # type: ignore[union-attr]


def test_pods_count_fills_up_during_the_run() -> None:
    run = schedule(
        [MakeNode().name("n1").capacity(pods="2").obj()]
        + [MakePod().name(f"p{i}").created(f"2025-01-01T00:00:0{i}Z").obj() for i in range(3)]
    )
    assert run.placements() == {"p0": "n1", "p1": "n1", "p2": None}
    assert run.reason("p2") == "0/1 nodes are available: 1 Too many pods."


def test_bound_pods_count_and_terminal_pods_do_not() -> None:
    done = MakePod().name("done").req(cpu="3").node("n1").obj()
    done = msgspec.structs.replace(done, status=PodStatus(phase="Succeeded"))
    run = schedule(
        [
            MakeNode().name("n1").capacity(cpu="4").obj(),
            MakeNode().name("n2").capacity(cpu="4").obj(),
            MakePod().name("running").req(cpu="3").node("n2").obj(),
            done,
            MakePod().name("p").req(cpu="2").obj(),
        ]
    )
    assert run.node_of("p") == "n1"
    assert [r.key[1] for r in run.results] == ["p"]  # terminal pods are not scheduled either


def test_extended_resource_counts_are_consumed() -> None:
    run = schedule(
        [MakeNode().name("n1").capacity({"nvidia.com/gpu": "4"}).obj()]
        + [
            MakePod()
            .name(f"p{i}")
            .created(f"2025-01-01T00:00:0{i}Z")
            .req({"nvidia.com/gpu": "2"})
            .obj()
            for i in range(3)
        ]
    )
    assert run.placements() == {"p0": "n1", "p1": "n1", "p2": None}
    assert run.reason("p2") == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."


# --- DynamicResources --------------------------------------------------------------------


def gpu_cluster(*nodes: tuple[str, int, int]) -> list[KubeStruct]:
    """Nodes with (name, GPUs, NUMA groups) and the GPU class."""
    out: list[KubeStruct] = [device_class()]
    for name, gpus, groups in nodes:
        out.append(MakeNode().name(name).obj())
        if gpus:
            out.append(MakeSlice().node(name).gpus(gpus, groups).obj())
    return out


def test_template_claim_is_generated_allocated_and_reserved() -> None:
    run = schedule(
        [
            *gpu_cluster(("n1", 4, 1)),
            MakeClaim().name("two").gpus(2).template(),
            MakePod().name("p").template_claim("gpu", "two").obj(),
        ]
    )
    result = run.by_name()["p"]
    assert result.node == "n1"
    [claim] = result.claims
    m = GENERATED.match(claim.metadata.name)
    assert m is not None and m.group("base") == "p-gpu-", claim.metadata.name
    assert claim.metadata.namespace == "default"
    assert claim.metadata.annotations["resource.kubernetes.io/pod-claim-name"] == "gpu"
    [owner] = claim.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "Pod",
        "p",
        "uid-default-p",
        True,
    )
    alloc = claim.status.allocation
    assert alloc is not None
    assert len(alloc.devices.results) == 2
    assert {r.request for r in alloc.devices.results} == {"gpu"}
    assert [(r.resource, r.name, r.uid) for r in claim.status.reserved_for] == [
        ("pods", "p", "uid-default-p")
    ]
    # The claim is in the state, its devices are in the ledger.
    assert run.state.claims[key_of(claim)] == claim
    assert devices_in_use(run.state) == sorted(
        (r.driver, r.pool, r.device) for r in alloc.devices.results
    )


def test_generated_claim_names_are_deterministic_and_distinct() -> None:
    def names() -> list[str]:
        run = schedule(
            [
                *gpu_cluster(("n1", 4, 1)),
                MakeClaim().name("one").gpus(1).template(),
                MakePod().name("a").template_claim("gpu", "one").obj(),
                MakePod().name("b").template_claim("gpu", "one").obj(),
            ]
        )
        return [c.metadata.name for r in run.results for c in r.claims]

    first = names()
    assert first == names()
    assert len(set(first)) == 2
    assert first[0].startswith("a-gpu-") and first[1].startswith("b-gpu-")


def test_long_generated_claim_names_are_cut_in_proportion() -> None:
    pod_name = "p" * 50
    claim_name = "c" * 20
    run = schedule(
        [
            *gpu_cluster(("n1", 1, 1)),
            MakeClaim().name("one").gpus(1).template(),
            MakePod().name(pod_name).template_claim(claim_name, "one").obj(),
        ]
    )
    [claim] = run.by_name()[pod_name].claims
    name = claim.metadata.name
    # resourceclaim controller: generateName = pod[:len*57/L] + "-" + claim[:len*57/L]
    base_len = len(pod_name) + len(claim_name) + 2
    expected = pod_name[: 50 * 57 // base_len] + "-" + claim_name[: 20 * 57 // base_len]
    m = GENERATED.match(name)
    assert m is not None and m.group("base") == expected, name
    assert len(name) <= 63


def test_claim_named_in_pod_status_is_used_instead_of_a_new_one() -> None:
    pod = MakePod().name("p").template_claim("gpu", "one").obj()
    pod = msgspec.structs.replace(
        pod,
        status=PodStatus(
            resource_claim_statuses=(
                PodResourceClaimStatus(name="gpu", resource_claim_name="made-earlier"),
            )
        ),
    )
    run = schedule(
        [
            *gpu_cluster(("n1", 2, 1)),
            MakeClaim().name("one").gpus(1).template(),
            MakeClaim().name("made-earlier").gpus(2).obj(),
            pod,
        ]
    )
    [claim] = run.by_name()["p"].claims
    assert claim.metadata.name == "made-earlier"
    assert claim.status.allocation is not None
    assert len(claim.status.allocation.devices.results) == 2  # the existing claim's spec
    assert sorted(k[1] for k, _ in run.state.claims.items()) == ["made-earlier"]


def test_named_claim_shared_by_two_pods_lands_them_together() -> None:
    run = schedule(
        [
            *gpu_cluster(("n1", 2, 1), ("n2", 2, 1)),
            MakeClaim().name("shared").gpus(1).obj(),
            MakePod().name("a").claim("gpu", "shared").obj(),
            MakePod().name("b").claim("gpu", "shared").created("2025-01-01T00:00:01Z").obj(),
        ]
    )
    assert run.node_of("a") is not None
    assert run.node_of("a") == run.node_of("b")
    claim = run.state.claims[("default", "shared")]
    assert claim.status.allocation is not None
    assert len(claim.status.allocation.devices.results) == 1  # allocated once
    assert [r.name for r in claim.status.reserved_for] == ["a", "b"]
    assert len(devices_in_use(run.state)) == 1


@pytest.mark.parametrize("where", ["n1", "n2"])
def test_claim_allocated_elsewhere_constrains_the_node(where: str) -> None:
    run = schedule(
        [
            *gpu_cluster(("n1", 2, 1), ("n2", 2, 1)),
            MakeClaim().name("held").gpus(1).allocated(where, ["gpu-0"]).obj(),
            MakeNode().name("n0").obj(),  # no GPUs at all, but first by name
            MakePod().name("p").claim("gpu", "held").obj(),
        ]
    )
    assert run.node_of("p") == where
    claim = run.state.claims[("default", "held")]
    assert [r.name for r in claim.status.reserved_for] == ["p"]
    # Still the same single device: an allocated claim is not allocated again.
    assert devices_in_use(run.state) == [(DRIVER, where, "gpu-0")]


def test_claim_allocated_on_an_unusable_node_gives_the_dra_reason() -> None:
    run = schedule(
        [
            *gpu_cluster(("n1", 2, 1), ("n2", 2, 1)),
            MakeClaim().name("held").gpus(1).allocated("n2", ["gpu-0"]).obj(),
            MakePod().name("p").claim("gpu", "held").node_selector("zone", "x").obj(),
            MakePod().name("q").claim("gpu", "held").req(cpu="1").obj(),
        ]
    )
    # p: both nodes fail NodeAffinity first; q: n1 fails on the claim's node selector.
    assert run.reason("p") == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    )
    assert run.node_of("q") == "n2"
    run2 = schedule(
        [
            *gpu_cluster(("n1", 2, 1)),
            MakeNode().name("n2").capacity(cpu="1").obj(),
            MakeSlice().node("n2").gpus(2).obj(),
            MakeClaim().name("held").gpus(1).allocated("n2", ["gpu-0"]).obj(),
            MakePod().name("q").claim("gpu", "held").req(cpu="2").obj(),
        ]
    )
    assert run2.reason("q") == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 resourceclaim not available on the node."
    )


@pytest.mark.parametrize(("already", "fits"), [(MAX_RESERVED_FOR - 1, True), (256, False)])
def test_reserved_for_limit(already: int, fits: bool) -> None:
    assert MAX_RESERVED_FOR == 256
    holders = [consumer(f"h{i}") for i in range(already)]
    run = schedule(
        [
            *gpu_cluster(("n1", 2, 1), ("n2", 2, 1)),
            MakeClaim().name("busy").gpus(1).allocated("n1", ["gpu-0"], reserved_for=holders).obj(),
            MakePod().name("p").claim("gpu", "busy").obj(),
        ]
    )
    claim = run.state.claims[("default", "busy")]
    if fits:
        assert run.node_of("p") == "n1"
        assert len(claim.status.reserved_for) == 256
        assert claim.status.reserved_for[-1].name == "p"
    else:
        assert run.node_of("p") is None
        reason = run.by_name()["p"].reason
        assert reason is not None
        assert reason.filtered == "0/2 nodes are available: resourceclaim in use."
        assert reason.nodes == {"PreFilter": 2}
        assert len(claim.status.reserved_for) == 256


def test_reserved_for_full_but_already_reserved_for_this_pod() -> None:
    holders = [consumer(f"h{i}") for i in range(255)] + [consumer("p", "uid-default-p")]
    run = schedule(
        [
            *gpu_cluster(("n1", 2, 1)),
            MakeClaim().name("busy").gpus(1).allocated("n1", ["gpu-0"], reserved_for=holders).obj(),
            MakePod().name("p").claim("gpu", "busy").obj(),
        ]
    )
    assert run.node_of("p") == "n1"
    claim = run.state.claims[("default", "busy")]
    assert len(claim.status.reserved_for) == 256  # not added twice


def test_missing_device_class_is_unresolvable() -> None:
    run = schedule(
        [
            *gpu_cluster(("n1", 2, 1)),
            MakeClaim().name("t").gpus(1, cls="no-such-class").template(),
            MakePod().name("p").template_claim("gpu", "t").obj(),
        ]
    )
    reason = run.by_name()["p"].reason
    assert reason is not None
    assert reason.filtered == (
        "0/1 nodes are available: request gpu: device class no-such-class does not exist."
    )
    assert reason.nodes == {"PreFilter": 1}
    assert sorted(run.state.claims.keys()) == []  # nothing created


def test_allocated_claim_needs_no_device_class() -> None:
    # Upstream PreFilter validates device classes only in the `Allocation == nil` branch: a pod
    # joining a claim that is already allocated does not need the class any more.
    run = schedule(
        [
            *gpu_cluster(("n1", 2, 1)),
            MakeClaim().name("held").gpus(1, cls="deleted-class").allocated("n1", ["gpu-0"]).obj(),
            MakePod().name("p").claim("gpu", "held").obj(),
        ]
    )
    assert run.node_of("p") == "n1"


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        (
            MakePod().name("p").claim("gpu", "nope"),
            'resourceclaim "default/nope" not found',
        ),
        (
            MakePod().name("p").template_claim("gpu", "nope"),
            'resourceclaimtemplate "default/nope" not found',
        ),
    ],
    ids=["claim", "template"],
)
def test_missing_claim_or_template(pod: MakePod, message: str) -> None:
    run = schedule([*gpu_cluster(("n1", 2, 1), ("n2", 2, 1)), pod.obj()])
    reason = run.by_name()["p"].reason
    assert reason is not None
    assert reason.filtered == f"0/2 nodes are available: {message}."
    assert reason.nodes == {"PreFilter": 2}


def test_devices_are_consumed_across_pods() -> None:
    run = schedule(
        [*gpu_cluster(("n1", 4, 1)), MakeClaim().name("two").gpus(2).template()]
        + [
            MakePod()
            .name(f"p{i}")
            .created(f"2025-01-01T00:00:0{i}Z")
            .template_claim("gpu", "two")
            .obj()
            for i in range(3)
        ]
    )
    assert run.placements() == {"p0": "n1", "p1": "n1", "p2": None}
    assert run.reason("p2") == "0/1 nodes are available: 1 cannot allocate all claims."
    used = devices_in_use(run.state)
    assert used == [(DRIVER, "n1", f"gpu-{i}") for i in range(4)]
    allocated = sorted(
        (r.driver, r.pool, r.device)
        for res in run.results
        for c in res.claims
        for r in (c.status.allocation.devices.results if c.status.allocation else ())
    )
    assert allocated == used
    assert all(run.state.exclusive.get(d) == 1 for d in used)


def _cycle(state: ClusterState, pod_name: str, node: str) -> tuple[PodInfo, CycleState]:
    """PreFilter and Filter of DynamicResources for one pod on one node, as the framework
    runs them (Filter's outcome stored under (plugin, node) for Reserve)."""
    dra = build_profile().dra
    pod = state.pods[("default", pod_name)]
    info = PodInfo(pod, key_of(pod), pod_requests(pod), b"")
    cycle = CycleState()
    assert dra.pre_filter(state, cycle, info).ok
    status = dra.filter(state, cycle, info, state.nodes[node])
    assert status.ok, status
    cycle.data[(DYNAMIC_RESOURCES, node)] = status.detail
    return info, cycle


def test_reserve_writes_and_unreserve_rolls_back_exactly() -> None:
    state = ClusterState.from_objects(
        [
            *gpu_cluster(("n1", 4, 1)),
            MakeClaim().name("pending").gpus(1).obj(),
            MakeClaim()
            .name("held")
            .gpus(1)
            .allocated("n1", ["gpu-3"], reserved_for=[consumer("other")])
            .obj(),
            MakeClaim().name("two").gpus(2).template(),
            MakePod()
            .name("p")
            .claim("a", "pending")
            .claim("b", "held")
            .template_claim("c", "two")
            .obj(),
        ]
    )
    dra = build_profile().dra
    info, cycle = _cycle(state, "p", "n1")
    before = snapshot(state)
    assert devices_in_use(state) == [(DRIVER, "n1", "gpu-3")]

    assert dra.reserve(state, cycle, info, state.nodes["n1"]).ok
    pending = state.claims[("default", "pending")]
    held = state.claims[("default", "held")]
    generated = [c for k, c in state.claims.items() if k[1].startswith("p-c-")]
    assert len(generated) == 1
    assert pending.status.allocation is not None
    assert [r.name for r in pending.status.reserved_for] == ["p"]
    assert [r.name for r in held.status.reserved_for] == ["other", "p"]
    assert generated[0].status.allocation is not None
    assert [r.name for r in generated[0].status.reserved_for] == ["p"]
    assert len(devices_in_use(state)) == 4  # 1 held + 1 pending + 2 generated
    assert snapshot(state) != before

    dra.unreserve(state, cycle, info, state.nodes["n1"])
    assert snapshot(state) == before
    assert ("default", generated[0].metadata.name) not in state.claims
    assert state.claims[("default", "pending")].status.allocation is None
    assert devices_in_use(state) == [(DRIVER, "n1", "gpu-3")]


def test_unreserve_after_a_second_pod_reserved_keeps_the_other_pod() -> None:
    # Two pods share a pending claim: the first reserves (allocating it); the second reserves
    # too; rolling back the second leaves exactly the first pod's state.
    state = ClusterState.from_objects(
        [
            *gpu_cluster(("n1", 2, 1)),
            MakeClaim().name("shared").gpus(1).obj(),
            MakePod().name("a").claim("gpu", "shared").obj(),
            MakePod().name("b").claim("gpu", "shared").obj(),
        ]
    )
    dra = build_profile().dra
    info_a, cycle_a = _cycle(state, "a", "n1")
    assert dra.reserve(state, cycle_a, info_a, state.nodes["n1"]).ok
    after_a = snapshot(state)
    info_b, cycle_b = _cycle(state, "b", "n1")
    assert dra.reserve(state, cycle_b, info_b, state.nodes["n1"]).ok
    assert [r.name for r in state.claims[("default", "shared")].status.reserved_for] == ["a", "b"]
    dra.unreserve(state, cycle_b, info_b, state.nodes["n1"])
    assert snapshot(state) == after_a


def test_allocation_node_selector_names_the_node() -> None:
    run = schedule(
        [
            *gpu_cluster(("n1", 2, 1)),
            MakeClaim().name("one").gpus(1).template(),
            MakePod().name("p").template_claim("gpu", "one").obj(),
        ]
    )
    [claim] = run.by_name()["p"].claims
    alloc = claim.status.allocation
    assert alloc is not None and alloc.node_selector is not None
    [term] = alloc.node_selector.node_selector_terms
    assert [(r.key, r.operator, r.values) for r in term.match_fields] == [
        ("metadata.name", "In", ("n1",))
    ]


def test_pod_without_claims_skips_dra_on_nodes_without_devices() -> None:
    run = schedule([MakeNode().name("n1").obj(), MakePod().name("p").obj()])
    assert_placed(run, "p", "n1")
    assert run.by_name()["p"].claims == []


# --- scores ------------------------------------------------------------------------------


def scored_cluster() -> list[KubeStruct]:
    """n1 half full (2 of 4 cpu), n2 empty; names favour n1 on ties, so use n2 for spread."""
    return [
        MakeNode().name("n1").capacity(cpu="4", memory="8Gi").obj(),
        MakeNode().name("n2").capacity(cpu="4", memory="8Gi").obj(),
        MakePod().name("busy").req(cpu="2", memory="4Gi").node("n1").obj(),
        MakePod().name("p").req(cpu="1", memory="1Gi").obj(),
    ]


def test_default_profile_spreads_onto_the_emptier_node() -> None:
    # kube-scheduler's default: NodeResourcesFit LeastAllocated and BalancedAllocation.
    assert schedule(scored_cluster()).node_of("p") == "n2"


def test_draplan_profile_bin_packs_onto_the_fuller_node() -> None:
    assert schedule(scored_cluster(), draplan_profile()).node_of("p") == "n1"


def test_most_allocated_bin_packs() -> None:
    profile = build_profile(profile_with(("MostAllocated", 1)))
    assert schedule(scored_cluster(), profile).node_of("p") == "n1"


def test_least_allocated_spreads() -> None:
    profile = build_profile(profile_with(("LeastAllocated", 1)))
    assert schedule(scored_cluster(), profile).node_of("p") == "n2"


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        ("MostAllocated", {"n1": 4, "n2": 0}),
        ("LeastAllocated", {"n1": 2, "n2": 2}),
    ],
)
def test_many_pods_pack_or_spread(score: str, expected: dict[str, int]) -> None:
    objs: list[KubeStruct] = [
        MakeNode().name("n1").capacity(cpu="4", memory="8Gi").obj(),
        MakeNode().name("n2").capacity(cpu="4", memory="8Gi").obj(),
    ]
    objs += [
        MakePod().name(f"p{i}").created(f"2025-01-01T00:00:0{i}Z").req(cpu="1").obj()
        for i in range(4)
    ]
    run = schedule(objs, build_profile(profile_with((score, 1))))
    counts = {"n1": 0, "n2": 0}
    for node in run.placements().values():
        assert node is not None
        counts[node] += 1
    assert counts == expected


def test_most_allocated_counts_best_effort_pods_by_non_zero_defaults() -> None:
    # Upstream: n2 carries one best-effort pod (counted as 100m / 200Mi), so MostAllocated
    # scores n2 higher; with raw requests both nodes are empty and the name tie picks n1.
    objs: list[KubeStruct] = [
        MakeNode().name("n1").capacity(cpu="1", memory="1Gi").obj(),
        MakeNode().name("n2").capacity(cpu="1", memory="1Gi").obj(),
        MakePod().name("besteffort").node("n2").obj(),
        MakePod().name("p").obj(),
    ]
    run = schedule(objs, build_profile(profile_with(("MostAllocated", 1))))
    assert run.node_of("p") == "n2"


def test_draplan_profile_ties_go_to_the_smallest_node_name() -> None:
    run = schedule(
        [MakeNode().name(n).obj() for n in ("n3", "n1", "n2")] + [MakePod().name("p").obj()],
        draplan_profile(),
    )
    assert run.node_of("p") == "n1"


@pytest.mark.parametrize("busy", ["n1", "n2"])
def test_topology_locality_prefers_an_already_used_numa_group(busy: str) -> None:
    run = schedule(
        [
            *gpu_cluster(("n1", 8, 2), ("n2", 8, 2)),
            MakeClaim().name("existing").gpus(1).allocated(busy, ["gpu-0"]).obj(),
            MakeClaim().name("pair").gpus(2).match_attribute(NUMA).template(),
            MakePod().name("p").template_claim("gpu", "pair").obj(),
        ],
        draplan_profile(),
    )
    assert run.node_of("p") == busy
    [claim] = run.by_name()["p"].claims
    assert claim.status.allocation is not None
    chosen = sorted(r.device for r in claim.status.allocation.devices.results)
    # gpu-0..3 are NUMA 0, where gpu-0 is already in use
    assert all(int(d.split("-")[1]) < 4 for d in chosen), chosen
    assert "gpu-0" not in chosen


def test_topology_locality_alone_decides_against_most_allocated() -> None:
    # n1 is fuller in cpu (MostAllocated prefers it) but none of its GPUs is in use; n2 has
    # NUMA group 0 started, so TopologyLocality (weight 2 by default) prefers n2.
    objs = [
        *gpu_cluster(("n1", 8, 2), ("n2", 8, 2)),
        MakePod().name("busy").req(cpu="1").node("n1").obj(),
        MakeClaim().name("existing").gpus(1).allocated("n2", ["gpu-0"]).obj(),
        MakeClaim().name("pair").gpus(2).match_attribute(NUMA).template(),
        MakePod().name("p").template_claim("gpu", "pair").obj(),
    ]
    assert schedule(objs).node_of("p") == "n2"
    only_pack = build_profile(profile_with(("MostAllocated", 1)))
    assert schedule(objs, only_pack).node_of("p") == "n1"


# --- profiles ----------------------------------------------------------------------------


def test_build_profile_rejects_unknown_plugins() -> None:
    with pytest.raises(BadInput, match="unknown plugin 'Nope'"):
        build_profile(profile_with(disabled=("Nope",)))
    with pytest.raises(BadInput, match="unknown score plugin 'Nope'"):
        build_profile(profile_with(("Nope", 1)))
    with pytest.raises(BadInput, match="cannot be disabled"):
        build_profile(profile_with(disabled=("DynamicResources",)))


def test_disabled_filter_is_not_applied() -> None:
    objs = [
        MakeNode().name("n1").taint("k", "v").obj(),
        MakePod().name("p").obj(),
    ]
    assert schedule(objs).node_of("p") is None
    profile = build_profile(profile_with(("MostAllocated", 1), disabled=("TaintToleration",)))
    assert schedule(objs, profile).node_of("p") == "n1"


# --- reasons -----------------------------------------------------------------------------


def test_reasons_histogram_counts_each_reason() -> None:
    run = schedule(
        [
            MakeNode().name("n1").unschedulable().obj(),
            MakeNode().name("n2").taint("k", "v").obj(),
            MakeNode().name("n3").capacity(cpu="1").obj(),
            MakePod().name("p").req(cpu="2").obj(),
        ]
    )
    reason = run.by_name()["p"].reason
    assert reason is not None
    assert reason.filtered == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "1 node(s) had untolerated taint(s), 1 node(s) were unschedulable."
    )
    assert reason.nodes == {
        "Insufficient cpu": 1,
        "node(s) had untolerated taint(s)": 1,
        "node(s) were unschedulable": 1,
    }
    assert reason.evidence == {}


def test_reasons_histogram_is_sorted_like_kube_scheduler() -> None:
    run = schedule(
        [
            MakeNode().name("n1").unschedulable().obj(),
            MakeNode().name("n2").capacity(cpu="1").obj(),
            MakeNode().name("n3").capacity(cpu="1").obj(),
            MakePod().name("p").req(cpu="2").obj(),
        ]
    )
    assert run.reason("p") == (
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu."
    )


def test_dra_reasons_count_by_allocator_code_with_evidence() -> None:
    run = schedule(
        [
            *gpu_cluster(("n1", 1, 1), ("n2", 2, 2), ("n3", 4, 1)),
            MakeNode().name("n4").capacity(cpu="1").obj(),
            MakeClaim().name("pair").gpus(2).match_attribute(NUMA).template(),
            MakePod().name("p").req(cpu="2").template_claim("gpu", "pair").obj(),
            # n3 holds 4 GPUs but 3 are taken
            MakeClaim().name("taken").gpus(3).allocated("n3", ["gpu-0", "gpu-1", "gpu-2"]).obj(),
        ]
    )
    reason = run.by_name()["p"].reason
    assert reason is not None
    assert reason.filtered == (
        "0/4 nodes are available: 1 Insufficient cpu, 3 cannot allocate all claims."
    )
    assert reason.nodes == {
        "ConstraintUnsatisfiable": 1,
        "Insufficient cpu": 1,
        "InsufficientDevices": 2,
    }
    allocator = reason.evidence["allocator"]
    assert sorted(allocator) == ["n1", "n2", "n3"]
    assert allocator["n1"]["code"] == "InsufficientDevices"
    assert allocator["n2"]["code"] == "ConstraintUnsatisfiable"
    assert allocator["n3"]["code"] == "InsufficientDevices"
    assert all(isinstance(e["message"], str) and e["message"] for e in allocator.values())
    assert reason.to_dict()["evidence"] == reason.evidence


def test_prefilter_reason_replaces_the_histogram() -> None:
    run = schedule(
        [
            MakeNode().name("n1").obj(),
            MakeNode().name("n2").obj(),
            MakePod().name("p").claim("gpu", "absent").obj(),
        ]
    )
    reason = run.by_name()["p"].reason
    assert reason is not None
    assert reason.message.startswith("0/2 nodes are available: ")
    assert "Insufficient" not in reason.message
    assert reason.nodes == {"PreFilter": 2}


def test_no_nodes() -> None:
    """schedulePod's ErrNoNodesAvailable: no plugin runs, DynamicResources' PostFilter
    included (the pod's claim is not even looked up)."""
    run = schedule([MakePod().name("p").claim("gpu", "absent").obj()])
    assert run.reason("p") == "no nodes available to schedule pods"


# --- queue order -------------------------------------------------------------------------


def one_slot() -> KubeStruct:
    return MakeNode().name("n1").capacity(cpu="1").obj()


def test_higher_priority_first() -> None:
    run = schedule(
        [
            one_slot(),
            MakePod().name("low").req(cpu="1").priority(0).created(T0).obj(),
            MakePod().name("high").req(cpu="1").priority(100).created("2025-01-02T00:00:00Z").obj(),
        ]
    )
    assert run.placements() == {"high": "n1", "low": None}
    assert [r.key[1] for r in run.results] == ["high", "low"]


def test_priority_class_value_counts() -> None:
    run = schedule(
        [
            one_slot(),
            priority_class("urgent", 1000),
            MakePod().name("plain").req(cpu="1").priority(10).obj(),
            MakePod().name("classy").req(cpu="1").priority_class("urgent").obj(),
        ]
    )
    assert run.placements() == {"classy": "n1", "plain": None}


def test_global_default_priority_class_applies_to_pods_without_one() -> None:
    run = schedule(
        [
            one_slot(),
            priority_class("normal", 50, global_default=True),
            priority_class("batch", 10),
            MakePod().name("a-batch").req(cpu="1").priority_class("batch").obj(),
            MakePod().name("b-default").req(cpu="1").obj(),
        ]
    )
    # Without the default the names would decide (a-batch first).
    assert run.placements() == {"b-default": "n1", "a-batch": None}


def test_spec_priority_wins_over_class_name() -> None:
    run = schedule(
        [
            one_slot(),
            priority_class("urgent", 1000),
            MakePod().name("a").req(cpu="1").priority_class("urgent").priority(1).obj(),
            MakePod().name("b").req(cpu="1").priority(5).obj(),
        ]
    )
    assert run.placements() == {"b": "n1", "a": None}


def test_equal_priority_goes_by_creation_time() -> None:
    run = schedule(
        [
            one_slot(),
            MakePod().name("a-late").req(cpu="1").created("2025-01-01T00:00:05Z").obj(),
            MakePod().name("z-early").req(cpu="1").created("2025-01-01T00:00:01Z").obj(),
        ]
    )
    assert run.placements() == {"z-early": "n1", "a-late": None}


def test_queue_order_of_results() -> None:
    run = schedule(
        [
            MakeNode().name("n1").obj(),
            priority_class("hi", 100),
            MakePod().name("d").created("2025-01-01T00:00:02Z").obj(),
            MakePod().name("c").created("2025-01-01T00:00:01Z").obj(),
            MakePod().name("b").priority_class("hi").created("2025-01-01T00:00:09Z").obj(),
            MakePod().name("a").created("2025-01-01T00:00:02Z").obj(),
        ]
    )
    assert [r.key[1] for r in run.results] == ["b", "c", "a", "d"]


def test_allocator_evidence_names_the_pods_own_claims() -> None:
    objs: list[KubeStruct] = [
        *gpu_cluster(("n1", 2, 1), ("n2", 1, 1)),
        MakeClaim().name("t").gpus(2).template(),
    ]
    objs += [
        MakePod().name(f"p{i}").created(f"2025-01-01T00:00:0{i}Z").template_claim("gpu", "t").obj()
        for i in range(2)
    ]
    run = schedule(objs)
    assert run.node_of("p0") == "n1"
    reason = run.by_name()["p1"].reason
    assert reason is not None
    for node, evidence in reason.evidence["allocator"].items():
        claims = {r["claim"] for r in evidence["requests"]}
        # Generated claims are named by the pod's claim entry, never another pod's claim.
        assert claims == {"pod claim 'gpu'"}, (node, claims)
        assert "p0" not in reason.message
        assert "p0-gpu-" not in evidence["message"], (node, evidence["message"])


# --- nodes are not permanent (the autoscaler's use) ---------------------------------------


def test_one_scheduler_follows_nodes_added_and_reverted() -> None:
    state = ClusterState.from_objects(
        [
            device_class(),
            MakeNode().name("n1").capacity(cpu="1").obj(),
            MakeClaim().name("one").gpus(1).template(),
            MakePod().name("p").req(cpu="2").template_claim("gpu", "one").obj(),
        ]
    )
    scheduler = Scheduler()
    pod = state.pods[("default", "p")]
    first = scheduler.schedule_pod(state, pod)
    assert first.node is None
    assert first.reason is not None
    assert first.reason.filtered == "0/1 nodes are available: 1 Insufficient cpu."

    with state.forked():  # a simulated node, then thrown away
        state.add_node(MakeNode().name("sim-1").capacity(cpu="4").obj())
        state.add_slice(MakeSlice().node("sim-1").gpus(2).obj())
        placed = scheduler.schedule_pod(state, pod)
        assert placed.node == "sim-1"
        assert len(devices_in_use(state)) == 1
    assert "sim-1" not in state.nodes
    assert devices_in_use(state) == []
    assert not state.pods[("default", "p")].spec.node_name

    again = scheduler.schedule_pod(state, pod)
    assert again.node is None
    assert again.reason is not None
    assert again.reason.filtered == "0/1 nodes are available: 1 Insufficient cpu."

    state.add_node(MakeNode().name("n2").capacity(cpu="4").obj())
    state.add_slice(MakeSlice().node("n2").gpus(1).obj())
    assert scheduler.schedule_pod(state, pod).node == "n2"
    state.remove_node("n2")
    other = MakePod().name("q").req(cpu="2").template_claim("gpu", "one").obj()
    result = scheduler.schedule_pod(state, other)
    assert result.node is None


def test_a_node_without_the_model_stays_out_until_its_devices_change() -> None:
    """No device of n1 matches the claim's model: the node is passed over while it only gets
    fuller (the answer is kept), and becomes a candidate once its slice is republished with
    devices that match."""
    h100 = 'device.attributes["gpu.example.com"].model == "h100"'
    state = ClusterState.from_objects(
        [
            device_class(),
            MakeNode().name("n1").capacity(cpu="8").obj(),
            MakeSlice().node("n1").gpus(2).model("t4").obj(),
            MakeClaim().name("h100").gpus(1, cel=h100).template(),
            MakeClaim().name("any").gpus(1).template(),
            MakePod().name("p").req(cpu="1").template_claim("gpu", "h100").obj(),
            MakePod().name("filler").req(cpu="1").template_claim("gpu", "any").obj(),
            MakePod().name("q").req(cpu="1").template_claim("gpu", "h100").obj(),
        ]
    )
    scheduler = Scheduler()
    unfit = "0/1 nodes are available: 1 cannot allocate all claims."
    first = scheduler.schedule_pod(state, state.pods[("default", "p")])
    assert first.reason is not None and first.reason.filtered == unfit
    assert scheduler.schedule_pod(state, state.pods[("default", "filler")]).node == "n1"
    again = scheduler.schedule_pod(state, state.pods[("default", "q")])
    assert again.node is None
    assert again.reason is not None and again.reason.filtered == unfit
    state.add_slice(MakeSlice().node("n1").gpus(2).model("h100").obj())
    assert scheduler.schedule_pod(state, state.pods[("default", "q")]).node == "n1"
