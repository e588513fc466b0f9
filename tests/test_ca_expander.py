"""Issue 17, point 4: Cluster Autoscaler's least-waste (cpu and memory only, its options found
pod by pod on the count view) against draplan as CA's gRPC expander, on pods that need 4 GPUs
on one PCIe root (tests/data/expander)."""

from __future__ import annotations

from pathlib import Path

import pytest

from draplan.autoscaler import Autoscaler
from draplan.autoscaler.ca import ca_options, least_waste, wasted_score
from draplan.cluster.state import ClusterState
from draplan.grpcplugin import Candidate, Judge, ca_chooser
from draplan.scheduler import Scheduler, build_profile
from draplan.sim.compare import compare
from draplan.sim.scenario import build_input
from draplan.sources import load_objects

DATA = Path(__file__).parent / "data" / "expander"


def _state() -> ClusterState:
    return ClusterState.from_objects(load_objects([str(DATA / "shape.yaml")]))


def test_least_waste_picks_the_wrong_shape_draplan_the_right_one() -> None:
    state = _state()
    options = {o.pool.metadata.name: o for o in ca_options(state)}
    # Pod by pod on counts, every group hosts both pods: 8 or 4 GPUs, one pod's cpu a node.
    assert {n: o.node_count for n, o in options.items()} == {
        "flat8": 2,
        "pcie4": 2,
        "pcie4-premium": 2,
    }
    # CA's score: (1 - 60/64) + (1 - 480Gi/512Gi) for flat8; (1 - 60/192) + (1 - 480/1536)
    # for the pcie4 groups, whose cpu and memory the pods use less of.
    assert wasted_score(state, options["flat8"]) == pytest.approx(0.125)
    assert wasted_score(state, options["pcie4"]) == pytest.approx(1.375)
    ca_pick = least_waste(state, list(options.values()))
    assert ca_pick is not None and ca_pick.pool.metadata.name == "flat8"
    judge = Judge(Scheduler(build_profile()))
    answer = judge.answer(
        state,
        [
            Candidate(n, o.node_count, tuple(state.pods[k] for k in o.pods))
            for n, o in sorted(options.items())
        ],
    )
    assert [v.candidate.group_id for v in answer.kept] == ["pcie4", "pcie4-premium"]
    [dropped] = answer.dropped
    assert dropped.candidate.group_id == "flat8" and "cannot allocate all claims" in dropped.reason


def test_cluster_autoscaler_loop_with_each_expander() -> None:
    """CA adds the option its expander picks; the real scheduler then places what fits."""
    state = _state()
    plan = Autoscaler(gangs=False, ca_choose=least_waste).plan(state, explain=False)
    [option] = plan.scale_up
    assert option.pool.metadata.name == "flat8" and len(option.nodes) == 2
    assert option.pods == [] and len(plan.wasted) == 2
    assert len(plan.pending) == 2

    state = _state()
    judge = Judge(Scheduler(build_profile()))
    plan = Autoscaler(gangs=False, ca_choose=ca_chooser(judge)).plan(state, explain=False)
    [option] = plan.scale_up
    assert option.pool.metadata.name == "pcie4" and len(option.nodes) == 2
    assert option.pods == [("default", "train-0"), ("default", "train-1")]
    assert plan.wasted == [] and plan.pending == []


def test_an_empty_answer_scales_nothing_an_error_leaves_least_waste_all_options() -> None:
    """grpc_client.go: an empty answer is no option (CA scales nothing that loop); an error
    returns every option to the next expander."""
    state = _state()
    chooser = ca_chooser(Judge(Scheduler(build_profile())))
    flat_only = [o for o in ca_options(state) if o.pool.metadata.name == "flat8"]
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
    # least-waste keeps growing flat8, whose nodes no pod can use; draplan grows pcie4.
    assert ca["jobsStarted"] == 0 and draplan["jobsStarted"] == len(sim.jobs) == 8
    assert ca["nodesAdded"] > draplan["nodesAdded"]
    assert ca["wastedNodes"] == ca["nodesAdded"]
