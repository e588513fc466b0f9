"""The framework's cycle as kube-scheduler runs it: plugins whose answer reads other nodes
(never cached or shared between identical nodes), NormalizeScore over the nodes scored, the
node tree order, percentageOfNodesToScore and the start of each cycle's search."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.core_v1 import Node
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler, build_profile
from draplan.scheduler.framework import (
    SKIP,
    SUCCESS,
    CycleState,
    NodeScore,
    PodInfo,
    Status,
    default_normalize_score,
    unschedulable,
)
from draplan.scheduler.nodeorder import NodeOrder, num_feasible_to_find, tree_order, zone_key
from scheduler_builders import MakeNode, MakePod

ZONE = "topology.kubernetes.io/zone"


def _zone_pods(state: ClusterState, app: str) -> dict[str, int]:
    """Pods labelled app=<app> per zone, read from the whole state (what makes these toy
    plugins cluster plugins)."""
    count: dict[str, int] = {}
    for pod in state.pods.values():
        node = state.nodes.get(pod.spec.node_name) if pod.spec.node_name else None
        if node is not None and pod.metadata.labels.get("app") == app:
            zone = node.metadata.labels.get(ZONE, "")
            count[zone] = count.get(zone, 0) + 1
    return count


def _count(state: ClusterState, cycle: CycleState, pod: PodInfo, key: str) -> Status:
    """The pre-pass of both toy plugins: SKIP for a pod of no app, else the per-zone count."""
    app = pod.pod.metadata.labels.get("app")
    if app is None:
        return SKIP
    cycle.data[key] = _zone_pods(state, app)
    return SUCCESS


class OnePerZone:
    """Filter: no two pods of one app in a zone (a toy zone anti-affinity)."""

    name = "OnePerZone"
    cluster = True

    def pre_filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo) -> Status:
        return _count(state, cycle, pod, self.name)

    def filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        if cycle.data[self.name].get(node.metadata.labels.get(ZONE, ""), 0):
            return unschedulable("node(s) had a pod of the app in the zone", resolvable=False)
        return SUCCESS


class SpreadByZone:
    """Score: fewer pods of the app in the node's zone is better (normalized, reversed)."""

    name = "SpreadByZone"
    cluster = True

    def pre_score(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, nodes: Sequence[Node]
    ) -> Status:
        return _count(state, cycle, pod, self.name)

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> int:
        count: int = cycle.data[self.name].get(node.metadata.labels.get(ZONE, ""), 0)
        return count

    def normalize_score(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, scores: list[NodeScore]
    ) -> None:
        default_normalize_score(100, True, scores)


class ByIndex:
    """Node-local score: the number in the node's name (n007 scores 7). It reads the name,
    which identical nodes do not share, so it says so (`signature`)."""

    name = "ByIndex"

    def signature(self, state: ClusterState, node: Node) -> str:
        return node.metadata.name

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> int:
        return int(node.metadata.name[1:])


def _zoned(zones: int, per_zone: int, **capacity: str) -> list[Node]:
    return [
        MakeNode().name(f"z{z}-n{i}").label(ZONE, f"z{z}").capacity(**capacity).obj()
        for z in range(zones)
        for i in range(per_zone)
    ]


def test_a_cluster_filter_sees_pods_bound_in_the_same_run() -> None:
    # Six identical nodes share their node-local answers; the zone rule is asked again for
    # every pod, so the third pod of the app finds both zones taken.
    profile = build_profile()
    profile = dataclasses.replace(
        profile, filters=(*profile.filters, OnePerZone()), pre_filters=(OnePerZone(),)
    )
    pods = [MakePod().name(f"web-{i}").label("app", "web").req(cpu="1").obj() for i in range(3)]
    state = ClusterState.from_objects([*_zoned(2, 3), *pods])
    results = {r.key[1]: r for r in Scheduler(profile).run(state)}
    zones = {state.nodes[results[f"web-{i}"].node or ""].metadata.labels[ZONE] for i in (0, 1)}
    assert zones == {"z0", "z1"}
    third = results["web-2"]
    assert third.node is None and third.reason is not None
    assert third.reason.filtered == (
        "0/6 nodes are available: 6 node(s) had a pod of the app in the zone."
    )
    assert not third.monotone  # a cluster filter failed it: placing others may change that
    # A pod the rule does not concern (its PreFilter says SKIP) is placed as before.
    other = MakePod().name("batch").req(cpu="1").obj()
    state.put_pod(other)
    assert Scheduler(profile).schedule_pod(state, other).node is not None


def test_the_first_failure_in_profile_order_is_reported() -> None:
    # The zone rule comes before NodeResourcesFit here: on the node the app already holds,
    # kube-scheduler reports the zone rule even though the node is also too small.
    profile = build_profile()
    filters = list(profile.filters)
    at = [p.name for p in filters].index("NodeResourcesFit")
    filters.insert(at, OnePerZone())
    profile = dataclasses.replace(profile, filters=tuple(filters), pre_filters=(OnePerZone(),))
    nodes = [
        MakeNode().name("a").label(ZONE, "za").capacity(cpu="2").obj(),
        MakeNode().name("b").label(ZONE, "zb").capacity(cpu="2").obj(),
    ]
    running = MakePod().name("web-0").label("app", "web").req(cpu="2").node("a").obj()
    pending = MakePod().name("web-1").label("app", "web").req(cpu="4").obj()
    state = ClusterState.from_objects([*nodes, running, pending])
    (result,) = Scheduler(profile).run(state)
    assert result.reason is not None
    assert result.reason.filtered == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had a pod of the app in the zone."
    )
    _, statuses = Scheduler(profile).evaluate(state, pending)
    assert statuses["a"].plugin == "OnePerZone" and statuses["b"].plugin == "NodeResourcesFit"


def test_a_cluster_score_is_normalized_over_the_nodes_scored() -> None:
    # Bin-packing alone would stack the app in one zone; the spread score (weight 10, reversed
    # normalization) sends each new pod to the zone with fewest of them.
    profile = build_profile()
    profile = dataclasses.replace(profile, scores=(*profile.scores, (SpreadByZone(), 10)))
    pods = [MakePod().name(f"web-{i}").label("app", "web").req(cpu="1").obj() for i in range(6)]
    state = ClusterState.from_objects([*_zoned(3, 2), *pods])
    Scheduler(profile).run(state)
    assert _zone_pods(state, "web") == {"z0": 2, "z1": 2, "z2": 2}


def test_default_normalize_score() -> None:
    scores = [NodeScore("a", 0), NodeScore("b", 3), NodeScore("c", 6)]
    default_normalize_score(100, False, scores)
    assert [s.score for s in scores] == [0, 50, 100]
    reverse = [NodeScore("a", 0), NodeScore("b", 3), NodeScore("c", 6)]
    default_normalize_score(100, True, reverse)
    assert [s.score for s in reverse] == [100, 50, 0]
    zeros = [NodeScore("a", 0), NodeScore("b", 0)]
    default_normalize_score(100, True, zeros)
    assert [s.score for s in zeros] == [100, 100]


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=20000), st.integers(min_value=0, max_value=100))
def test_num_feasible_to_find(nodes: int, percentage: int) -> None:
    found = num_feasible_to_find(percentage, nodes)
    if nodes < 100:
        assert found == nodes
        return
    share = percentage or max(50 - nodes // 125, 5)
    assert found == max(nodes * share // 100, 100)
    assert 100 <= found <= nodes


def test_tree_order_takes_one_node_of_each_zone_in_turn() -> None:
    nodes = {
        n.metadata.name: n
        for n in [
            MakeNode().name("a1").label(ZONE, "x").obj(),
            MakeNode().name("a2").label(ZONE, "x").obj(),
            MakeNode().name("a3").label(ZONE, "x").obj(),
            MakeNode().name("b1").label(ZONE, "y").obj(),
            MakeNode().name("c1").obj(),
            MakeNode().name("c2").obj(),
        ]
    }
    # Zones in the order of their first node by name: x, y, then the zoneless ones.
    assert tree_order(nodes) == ["a1", "b1", "c1", "a2", "c2", "a3"]
    beta = MakeNode().name("d").label("failure-domain.beta.kubernetes.io/zone", "old")
    assert zone_key(beta.label(ZONE, "new").obj()) == ":\x00:old"  # the beta label first


# (operation, node name, zone): add or relabel, remove, fork, revert, commit.
_ORDER_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "put", "remove", "fork", "revert", "commit"]),
        st.sampled_from([f"n{i}" for i in range(12)]),
        st.sampled_from(["", "us-east-1a", "us-east-1b", "eu-west-4c"]),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(steps=_ORDER_STEPS)
def test_node_order_kept_through_the_change_log_equals_the_tree_order(
    steps: list[tuple[str, str, str]],
) -> None:
    """NodeOrder moves only the nodes the change log names (zone lists, a control-plane node
    without a zone among them); at every step it is the tree order of the nodes there are."""
    state = ClusterState()
    order = NodeOrder()
    depth = 0
    for op, name, zone in steps:
        if op == "put":
            node = MakeNode().name(name)
            state.add_node((node.label(ZONE, zone) if zone else node).obj())
        elif op == "remove" and name in state.nodes:
            state.remove_node(name)
        elif op == "fork":
            state.fork()
            depth += 1
        elif op in ("revert", "commit") and depth:
            state.revert() if op == "revert" else state.commit()
            depth -= 1
        order.sync(state)
        assert order.names == tree_order(dict(state.nodes.items()))
        assert order.position == {n: i for i, n in enumerate(order.names)}


def _indexed(count: int) -> list[Node]:
    # One pod per node (pods: 1), so a node once chosen drops out.
    return [MakeNode().name(f"n{i:03d}").capacity(pods="1").obj() for i in range(count)]


def test_only_the_next_feasible_nodes_are_scored_from_where_the_last_cycle_stopped() -> None:
    # 150 nodes: adaptive percentage 50 - 150/125 = 49 %, 73 nodes, at least 100. Each cycle
    # scores the next 100 feasible nodes in order and prefers the highest number among them.
    profile = dataclasses.replace(build_profile(), scores=((ByIndex(), 1),), percentage=0)
    pods = [MakePod().name(f"p{i}").created(f"2026-01-01T00:00:0{i}Z").obj() for i in range(4)]
    state = ClusterState.from_objects([*_indexed(150), *pods])
    placed = [r.node for r in Scheduler(profile).run(state)]
    # From n000: n000-n099 -> n099, 100 nodes looked at. From n100: n100-n149, n000-n049
    # -> n149, 100 looked at. From n050: n050-n148 without n099 and n149, then n000-n001 ->
    # n148, 102 looked at. From n002: n002-n102 without n099 -> n102.
    assert placed == ["n099", "n149", "n148", "n102"]


def test_trial_cycles_in_a_fork_leave_the_search_start_as_it_was() -> None:
    profile = dataclasses.replace(build_profile(), scores=((ByIndex(), 1),), percentage=0)
    pod = MakePod().name("p").obj()
    state = ClusterState.from_objects([*_indexed(150), pod])
    scheduler = Scheduler(profile)
    with state.forked():
        assert scheduler.schedule_pod(state, pod).node == "n099"
    assert scheduler.schedule_pod(state, pod).node == "n099"


@pytest.mark.parametrize("candidates", [["n120", "n005", "n130"], ["n005"]])
def test_candidates_are_tried_as_given_and_leave_the_search_start(candidates: list[str]) -> None:
    profile = dataclasses.replace(build_profile(), scores=((ByIndex(), 1),), percentage=0)
    pod = MakePod().name("p").obj()
    state = ClusterState.from_objects([*_indexed(150), pod])
    result = Scheduler(profile).schedule_pod(state, pod, candidates)
    assert result.node == max(candidates)
    assert not state.search_start.get(profile.name)
