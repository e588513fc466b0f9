"""Cluster Autoscaler 1.36 with DRA (its options found pod by pod on its templates with their
ResourceSlices; least-waste weighing cpu and memory only) against draplan as CA's gRPC expander,
on pods that need 4 GPUs on one PCIe root (tests/data/expander)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from draplan.autoscaler import Autoscaler
from draplan.autoscaler.ca import CAOption, ca_options, least_waste, wasted_score
from draplan.cluster.state import ClusterState
from draplan.grpcplugin import Candidate, Judge, ca_chooser
from draplan.scheduler import Scheduler, build_profile
from draplan.sim.compare import compare
from draplan.sim.scenario import build_input
from draplan.sources import load_objects

DATA = Path(__file__).parent / "data" / "expander"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _state() -> ClusterState:
    return ClusterState.from_objects(load_objects([str(DATA / "shape.yaml")]))


def test_ca_with_dra_rejects_the_wrong_shape_least_waste_picks_the_dearer_group() -> None:
    state = _state()
    options = {o.pool.metadata.name: o for o in ca_options(state, NOW)}
    # CA's own DRA simulation on the groups' templates: flat8 hosts no pod (no four GPUs on
    # one root), the pcie4 groups one pod a node.
    assert {n: o.node_count for n, o in options.items()} == {"pcie4": 2, "pcie4-premium": 2}
    # least-waste: (1 - 60/192) + (1 - 480/1536) for pcie4; (1 - 60/96) + (1 - 480/768) for
    # pcie4-premium, whose cpu and memory the pods use more of.
    assert wasted_score(state, options["pcie4"]) == pytest.approx(1.375)
    assert wasted_score(state, options["pcie4-premium"]) == pytest.approx(0.75)
    ca_pick = least_waste(state, list(options.values()))
    assert ca_pick is not None and ca_pick.pool.metadata.name == "pcie4-premium"
    judge = Judge(Scheduler(build_profile()))
    flat8 = CAOption(state.node_pools["flat8"], 2, options["pcie4"].pods)
    answer = judge.answer(
        state,
        [
            Candidate(o.pool.metadata.name, o.node_count, tuple(state.pods[k] for k in o.pods))
            for o in [flat8, *options.values()]
        ],
    )
    # draplan: the cheaper of the two that host the pods, alone.
    assert [v.candidate.group_id for v in answer.best()] == ["pcie4"]
    [dropped] = answer.dropped
    assert dropped.candidate.group_id == "flat8" and "cannot allocate all claims" in dropped.reason


def test_cluster_autoscaler_loop_with_each_expander() -> None:
    """CA adds the option its expander picks; the real scheduler then places what fits."""
    state = _state()
    plan = Autoscaler(gangs=False, ca_choose=least_waste).plan(state, NOW, explain=False)
    [option] = plan.scale_up
    assert option.pool.metadata.name == "pcie4-premium" and len(option.nodes) == 2
    assert option.pods == [("default", "train-0"), ("default", "train-1")]
    assert plan.wasted == [] and plan.pending == []

    state = _state()
    judge = Judge(Scheduler(build_profile()))
    plan = Autoscaler(gangs=False, ca_choose=ca_chooser(judge)).plan(state, NOW, explain=False)
    [option] = plan.scale_up
    assert option.pool.metadata.name == "pcie4" and len(option.nodes) == 2
    assert option.pods == [("default", "train-0"), ("default", "train-1")]
    assert plan.wasted == [] and plan.pending == []


def test_an_empty_answer_scales_nothing_an_error_leaves_least_waste_all_options() -> None:
    """grpc_client.go: an empty answer is no option (CA scales nothing that loop); an error
    returns every option to the next expander."""
    state = _state()
    chooser = ca_chooser(Judge(Scheduler(build_profile())))
    pending = tuple(sorted(state.pods))
    flat_only = [CAOption(state.node_pools["flat8"], 2, pending)]
    assert chooser(state, flat_only) is None
    # A group draplan has no view of (its pool is unknown to the judge's state): not judged.
    del state.node_pools["flat8"]
    pick = chooser(state, flat_only)
    assert pick is not None and pick.pool.metadata.name == "flat8"


def test_simulate_shows_the_difference_over_time() -> None:
    sim = build_input(load_objects([str(DATA / "shape-sim.yaml")]))
    by_policy = {r.policy: r.totals for r in compare(sim)}
    assert set(by_policy) == {"ca+least-waste", "ca+draplan-expander"}
    ca, draplan = by_policy["ca+least-waste"], by_policy["ca+draplan-expander"]
    # CA with DRA never grows flat8: every job starts under both; least-waste pays for the
    # premium group's nodes, draplan for pcie4's.
    assert ca["jobsStarted"] == draplan["jobsStarted"] == len(sim.jobs) == 8
    assert ca["wastedNodes"] == draplan["wastedNodes"]
    assert ca["nodesAdded"] == draplan["nodesAdded"]
    assert ca["cost"] == pytest.approx(draplan["cost"] * 12 / 9)
