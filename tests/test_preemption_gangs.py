"""Gangs and preemption: a gang preempts as a unit or not at all. In 1.37, a PodGroup's pods
preempt together through workload-aware preemption (cluster-wide victims, the PodGroup's
priority, PodGroups of disruptionMode All evicted whole); other gangs (coscheduling, Kueue,
and every gang in 1.36) preempt pod by pod inside the gang's all-or-nothing trial."""

from __future__ import annotations

import msgspec
import pytest

from draplan.api.features import feature_gates
from draplan.api.meta import KubeStruct
from draplan.api.scheduling import DisruptionMode, Empty, PodGroupV1Beta1
from draplan.cluster.state import ClusterState
from draplan.scheduler import PodResult, Scheduler, build_profile
from draplan.scheduler.profile import Profile, draplan_profile
from scheduler_builders import (
    MakeNode,
    MakePod,
    coscheduling_podgroup,
    podgroup_v1alpha2,
    podgroup_v1beta1,
)

GAUDI = "habana.ai/gaudi"


def run(
    objs: list[KubeStruct], version: str = "1.37", profile: Profile | None = None, gates: str = ""
) -> tuple[ClusterState, dict[str, PodResult]]:
    state = ClusterState.from_objects(objs, feature_gates(version, gates))
    results = Scheduler(profile or build_profile(), post_filter=True).run(state)
    return state, {r.key[1]: r for r in results}


def node(name: str, cards: int = 4) -> KubeStruct:
    return MakeNode().name(name).capacity(cpu="96", memory="512Gi", **{GAUDI: cards}).obj()


def worker(name: str, node_name: str, cards: int, priority: int, minute: int) -> MakePod:
    return (
        MakePod()
        .name(name)
        .node(node_name)
        .req(cpu="2", **{GAUDI: cards})
        .priority(priority)
        .started(f"2026-10-01T08:{minute:02d}:00Z")
    )


def with_priority(pg: PodGroupV1Beta1, priority: int, all_at_once: bool = False) -> PodGroupV1Beta1:
    spec = msgspec.structs.replace(
        pg.spec,
        priority=priority,
        disruption_mode=DisruptionMode(all=Empty()) if all_at_once else None,
    )
    return msgspec.structs.replace(pg, spec=spec)


def test_a_coscheduling_gang_preempts_as_a_unit_under_draplans_gang_policy() -> None:
    """Two full nodes of low-priority pods; a 2-pod gang (scheduler-plugins PodGroup) of
    priority 1000, under draplan's profile (which places every group all or nothing): each
    member evicts what it needs on its own node (DefaultPreemption per pod) and both are
    nominated. A 3-pod gang on the same cluster would leave one member without a node: nothing
    is evicted at all. kube-scheduler's default profile runs no Coscheduling: there the 3
    pods preempt one by one, two are nominated and the third pends."""
    base = [
        node("gaudi-0"),
        node("gaudi-1"),
        worker("low-0", "gaudi-0", 4, 10, 0).obj(),
        worker("low-1", "gaudi-1", 4, 10, 1).obj(),
    ]
    gang = [
        MakePod()
        .name(f"train-{i}")
        .req(cpu="4", **{GAUDI: 4})
        .priority(1000)
        .pod_group("train")
        .obj()
        for i in range(3)
    ]
    policy = draplan_profile()
    state, res = run([*base, coscheduling_podgroup("train", 2), *gang[:2]], profile=policy)
    assert {res[f"train-{i}"].nominated for i in range(2)} == {"gaudi-0", "gaudi-1"}
    assert sorted(p.metadata.name for r in res.values() for p in r.victims) == ["low-0", "low-1"]
    assert not any(k[1].startswith("low-") for k in state.pods)

    state, res = run([*base, coscheduling_podgroup("train", 3), *gang], profile=policy)
    assert not any(r.nominated or r.victims for r in res.values())
    assert {k[1] for k in state.pods if k[1].startswith("low-")} == {"low-0", "low-1"}
    message = res["train-0"].reason.message if res["train-0"].reason else ""
    assert "only 2 of 3 pending pods fit together, 3 required" in message

    state, res = run([*base, coscheduling_podgroup("train", 3), *gang])
    assert {res[f"train-{i}"].nominated for i in range(2)} == {"gaudi-0", "gaudi-1"}
    assert not res["train-2"].nominated and res["train-2"].node is None
    assert not any(k[1].startswith("low-") for k in state.pods)


def test_a_podgroup_preempts_cluster_wide_and_evicts_an_all_or_nothing_group_whole() -> None:
    """1.37: a PodGroup of priority 1000 (its pods say nothing of priority: the PodGroup's
    counts) needs 4 cards on each of two nodes. The victims are every lower-priority unit
    in the way: a serving PodGroup of disruptionMode All goes whole (its member on a third
    node too), pods of a Single-mode group go one by one."""
    serve = with_priority(podgroup_v1beta1("serve"), 10, all_at_once=True)
    train = with_priority(podgroup_v1beta1("train", min_count=2), 1000)
    objs = [
        node("gaudi-0"),
        node("gaudi-1"),
        node("gaudi-2"),
        serve,
        train,
        worker("serve-0", "gaudi-0", 4, 10, 0).scheduling_group("serve").obj(),
        worker("serve-1", "gaudi-2", 4, 10, 1).scheduling_group("serve").obj(),
        worker("batch-0", "gaudi-1", 4, 0, 2).obj(),
        *[
            MakePod().name(f"train-{i}").req(cpu="4", **{GAUDI: 4}).scheduling_group("train").obj()
            for i in range(2)
        ],
    ]
    state, res = run(objs)
    nominated = {res[f"train-{i}"].nominated for i in range(2)}
    victims = sorted(p.metadata.name for r in res.values() for p in r.victims)
    assert len(nominated) == 2 and "" not in nominated
    if "gaudi-2" in nominated:  # any two nodes will do; the group went whole either way
        assert "serve-1" in victims
    assert ("serve-0" in victims) == ("serve-1" in victims)  # all or nothing
    for name in victims:
        assert ("default", name) not in state.pods


@pytest.mark.parametrize("gate", [True, False])
def test_a_podgroup_with_a_topology_constraint_preempts_only_without_the_topology_gate(
    gate: bool,
) -> None:
    """1.37's PodGroupPostFilter does not support topology constraints yet; without
    TopologyAwareWorkloadScheduling the API server keeps no constraint, so the group preempts
    like any other."""
    from draplan.api.scheduling import SchedulingConstraints, TopologyConstraint

    train = with_priority(podgroup_v1beta1("train", min_count=2), 1000)
    constraints = SchedulingConstraints(topology=(TopologyConstraint(key="rack"),))
    train = msgspec.structs.replace(
        train, spec=msgspec.structs.replace(train.spec, scheduling_constraints=constraints)
    )
    objs = [
        MakeNode().name("gaudi-0").label("rack", "r0").capacity(**{GAUDI: 8}).obj(),
        worker("low-0", "gaudi-0", 8, 0, 0).obj(),
        train,
        *[
            MakePod().name(f"train-{i}").req(**{GAUDI: 4}).scheduling_group("train").obj()
            for i in range(2)
        ],
    ]
    _, res = run(objs, gates=f"TopologyAwareWorkloadScheduling={str(gate).lower()}")
    reason = res["train-0"].reason
    if gate:
        assert reason is not None and not res["train-0"].nominated
        assert reason.message.endswith(
            " pod group preemption: not supported with topology constraints"
        )
    else:
        assert {res[f"train-{i}"].nominated for i in range(2)} == {"gaudi-0"}


def _trainers() -> list[KubeStruct]:
    """A 1.36 PodGroup of two 4-card trainers of priority 1000, minCount 2."""
    pods = [
        MakePod().name(f"train-{i}").req(**{GAUDI: 4}).priority(1000).scheduling_group("train")
        for i in range(2)
    ]
    return [podgroup_v1alpha2("train", min_count=2), *(p.obj() for p in pods)]


def test_in_1_36_a_podgroup_gang_preempts_pod_by_pod() -> None:
    """1.36 (WorkloadAwarePreemption alpha, off): a v1alpha2 PodGroup's members run
    DefaultPreemption each, at their own priority, inside the gang's trial."""
    objs = [
        node("gaudi-0"),
        node("gaudi-1"),
        worker("low-0", "gaudi-0", 4, 10, 0).obj(),
        worker("low-1", "gaudi-1", 4, 10, 1).obj(),
        *_trainers(),
    ]
    _, res = run(objs, version="1.36")
    assert {res[f"train-{i}"].nominated for i in range(2)} == {"gaudi-0", "gaudi-1"}


@pytest.mark.parametrize("gang", [True, False])
def test_a_member_that_fits_waits_at_the_gangs_permit_while_another_preempts(gang: bool) -> None:
    """1.36 with GangScheduling: two Gaudi trainers, one fitting a free node, the other only
    by preempting. Permit holds the first (assumed, not bound) until minCount members are
    placed, so neither binds in this cycle; without the gate the first binds."""
    objs = [
        node("gaudi-0"),
        node("gaudi-1"),
        worker("low-0", "gaudi-0", 4, 10, 0).obj(),
        *_trainers(),
    ]
    state, res = run(objs, version="1.36", gates=f"GangScheduling={str(gang).lower()}")
    placed = {k: (r.node, r.nominated) for k, r in res.items() if k.startswith("train")}
    fits, preempts = sorted(placed, key=lambda k: placed[k][1] == "gaudi-0")
    assert placed[preempts] == (None, "gaudi-0")
    assert [v.metadata.name for v in res[preempts].victims] == ["low-0"]
    if gang:
        assert placed[fits] == (None, "gaudi-1")
        assert res[fits].reason is not None and "waiting for 2 pods" in res[fits].reason.message
        assert not state.pods[("default", fits)].spec.node_name
    else:
        assert placed[fits] == ("gaudi-1", "")


@pytest.mark.parametrize("gate", [True, False])
def test_with_the_topology_gate_a_podgroup_member_never_preempts_alone(gate: bool) -> None:
    """1.36, no GangScheduling: the trainers go pod by pod, but with
    TopologyAwareWorkloadScheduling DefaultPreemption finds a pod of a PodGroup ineligible
    (its group's placements would each preempt)."""
    objs = [node("gaudi-0"), worker("low-0", "gaudi-0", 4, 10, 0).obj(), *_trainers()]
    _, res = run(objs, version="1.36", gates=f"TopologyAwareWorkloadScheduling={str(gate).lower()}")
    nominated = {res[f"train-{i}"].nominated for i in range(2)}
    if gate:
        assert nominated == {""}
        reason = res["train-0"].reason
        assert reason is not None and reason.message.endswith(
            "preemption: not eligible due to placement-based pod group scheduling limitation."
        )
    else:
        assert nominated == {"gaudi-0", ""}
