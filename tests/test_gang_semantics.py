"""Which groups a scheduler places all or nothing depends on the scheduler modelled.

kube-scheduler gangs only the Workload API's PodGroups, and only where its gang scheduling
runs: the GangScheduling gate (alpha, off) in 1.36, GenericWorkload (whose objects the input
holds) in 1.37. Kueue pod groups (gang-admitted by Kueue, then scheduled pod by pod) and
scheduler-plugins coscheduling PodGroups (ganged only by a scheduler running Coscheduling,
for pods naming it) go pod by pod, each with its own PostFilter. draplan's own profile gangs
every group it recognises, as its named policy. Inputs: Intel Gaudi3 nodes served by the
device plugin (habana.ai/gaudi), beside a control-plane node no member tolerates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.codec import encode
from draplan.api.features import feature_gates
from draplan.api.meta import KubeStruct
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler, build_profile
from draplan.scheduler.gangs import COSCHEDULING, KUEUE, WORKLOAD, find_gangs
from draplan.scheduler.profile import Profile, draplan_profile
from scale_scenarios import write as write_docs
from scheduler_builders import (
    MakeNode,
    MakePod,
    coscheduling_podgroup,
    podgroup_v1alpha2,
    podgroup_v1beta1,
)

GAUDI = "habana.ai/gaudi"
KUEUE_GROUP = "kueue.x-k8s.io/pod-group-name"
KUEUE_COUNT = "kueue.x-k8s.io/pod-group-total-count"
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
RACK = "topology.habana.ai/rack"


def gaudi_node(name: str, rack: str) -> KubeStruct:
    return (
        MakeNode()
        .name(name)
        .label(RACK, rack)
        .capacity(cpu="160", memory="1Ti", **{GAUDI: 8})
        .obj()
    )


def control_plane() -> KubeStruct:
    return (
        MakeNode()
        .name("cp-0")
        .capacity(cpu="8", memory="32Gi", **{GAUDI: 8})
        .taint("node-role.kubernetes.io/control-plane")
        .obj()
    )


def group(api: str, version: str, members: int, min_count: int) -> list[KubeStruct]:
    """A group of `members` trainers (8 cards each: one Gaudi node each) in `api`'s form."""
    objs: list[KubeStruct] = []
    if api == WORKLOAD:
        make = podgroup_v1beta1 if version == "1.37" else podgroup_v1alpha2
        objs.append(make("train", min_count))
    elif api == COSCHEDULING:
        objs.append(coscheduling_podgroup("train", min_count))
    for i in range(members):
        pod = MakePod().name(f"train-{i}").req(cpu="8", **{GAUDI: 8})
        if api == WORKLOAD:
            pod = pod.scheduling_group("train")
        elif api == COSCHEDULING:
            pod = pod.pod_group("train")
        else:
            pod = pod.label(KUEUE_GROUP, "train").annotation(KUEUE_COUNT, str(min_count))
            # TAS's annotation: kube-scheduler never reads it (Kueue turns it into a selector).
            pod = pod.annotation(KUEUE_REQUIRED, RACK)
        objs.append(pod.obj())
    return objs


def kube_gangs_it(api: str, version: str, gate: bool) -> bool:
    return api == WORKLOAD and (version == "1.37" or gate)


def run(objs: list[KubeStruct], version: str, gate: bool, profile: Profile) -> list[str]:
    gates = feature_gates(version, "GangScheduling=true" if gate else "")
    state = ClusterState.from_objects(objs, gates)
    Scheduler(profile, post_filter=True).run(state)
    return sorted(p.metadata.name for p in state.pods.values() if p.spec.node_name)


@settings(max_examples=40, deadline=None)
@given(
    api=st.sampled_from([WORKLOAD, COSCHEDULING, KUEUE]),
    version=st.sampled_from(["1.36", "1.37"]),
    gate=st.booleans(),
    kube=st.booleans(),
    members=st.integers(2, 4),
    nodes=st.integers(0, 4),
    racks=st.integers(1, 2),
)
def test_only_the_groups_the_modelled_scheduler_gangs_are_all_or_nothing(
    api: str, version: str, gate: bool, kube: bool, members: int, nodes: int, racks: int
) -> None:
    gate = gate and version == "1.36"  # GangScheduling is a gate of its own only in 1.36
    objs = [control_plane(), *(gaudi_node(f"gaudi-{i}", f"r{i % racks}") for i in range(nodes))]
    objs += group(api, version, members, members)
    profile = build_profile() if kube else draplan_profile()
    bound = run(objs, version, gate, profile)
    ganged = kube_gangs_it(api, version, gate) if kube else True
    if not ganged:
        # Pod by pod: every member that has a free node gets one.
        assert len(bound) == min(nodes, members)
    elif kube or api != KUEUE:
        assert bound == ([] if nodes < members else [f"train-{i}" for i in range(members)])
    else:
        # draplan's policy keeps a Kueue group inside its required rack.
        biggest = max((nodes + racks - 1 - r) // racks for r in range(racks)) if nodes else 0
        fits = biggest >= members
        assert bound == ([f"train-{i}" for i in range(members)] if fits else [])


@settings(max_examples=20, deadline=None)
@given(
    api=st.sampled_from([WORKLOAD, COSCHEDULING, KUEUE]), version=st.sampled_from(["1.36", "1.37"])
)
def test_gangs_of_is_the_rule(api: str, version: str) -> None:
    """`Scheduler.gangs_of`: every recognised group under draplan's profile, the rule's
    under kube-scheduler's (the gate turned on at 1.36 adds the Workload API's)."""
    objs = [control_plane(), *group(api, version, 3, 3)]
    for gate in [False, True] if version == "1.36" else [False]:
        gates = feature_gates(version, "GangScheduling=true" if gate else "")
        state = ClusterState.from_objects(objs, gates)
        every = find_gangs(state)
        assert {g.api for g in every.values()} == {api}
        assert Scheduler(draplan_profile()).gangs_of(state) == every
        kube = Scheduler(build_profile()).gangs_of(state)
        assert kube == (every if kube_gangs_it(api, version, gate) else {})


def test_a_coscheduling_group_preempts_pod_by_pod_unless_its_pods_name_another_scheduler() -> None:
    """Three trainers of priority 1000 in a coscheduling PodGroup (minMember 3) and two Gaudi
    nodes full of priority-10 pods: kube-scheduler preempts for two of them, one by one, and
    the third pends. Pods naming a scheduler-plugins scheduler are not kube-scheduler's."""
    low = [
        MakePod().name(f"low-{i}").node(f"gaudi-{i}").req(cpu="2", **{GAUDI: 8}).priority(10)
        for i in range(2)
    ]
    base = [control_plane(), gaudi_node("gaudi-0", "r0"), gaudi_node("gaudi-1", "r0")]
    base += [p.obj() for p in low]
    trainers = [
        MakePod().name(f"train-{i}").req(cpu="8", **{GAUDI: 8}).priority(1000).pod_group("train")
        for i in range(3)
    ]
    objs = [*base, coscheduling_podgroup("train", 3), *(t.obj() for t in trainers)]
    state = ClusterState.from_objects(objs, feature_gates("1.37"))
    results = {r.key[1]: r for r in Scheduler(build_profile(), post_filter=True).run(state)}
    assert {results[f"train-{i}"].nominated for i in range(2)} == {"gaudi-0", "gaudi-1"}
    assert not results["train-2"].nominated and results["train-2"].node is None
    assert "gang" not in (results["train-2"].reason.message if results["train-2"].reason else "")

    named = [
        msgspec.structs.replace(
            t.obj(),
            spec=msgspec.structs.replace(
                t.obj().spec, scheduler_name="scheduler-plugins-scheduler"
            ),
        )
        for t in trainers
    ]
    state = ClusterState.from_objects([*base, coscheduling_podgroup("train", 3), *named])
    assert Scheduler(build_profile(), post_filter=True).run(state) == []


def write(tmp_path: Path, objs: list[KubeStruct]) -> str:
    return write_docs(tmp_path, [encode(o) for o in objs])


def test_why_and_scale_follow_the_scheduler_modelled(tmp_path: Path, run_cli: Any) -> None:
    """A coscheduling PodGroup of minMember 3 with 2 trainers created, on one free Gaudi node
    beside a full one: kube-scheduler binds one trainer and leaves the other waiting for a node
    (why: not GangIncomplete; scale adds a Gaudi node for it alone when a pool can), while
    draplan's profile holds both for the missing member (GangIncomplete)."""
    objs = [control_plane(), gaudi_node("gaudi-0", "r0")]
    objs += group(COSCHEDULING, "1.37", 2, 3)
    path = write(tmp_path, objs)

    def verdicts(*flags: str) -> dict[str, str]:
        result = run_cli("why", "-f", path, "-o", "json", *flags)
        assert result.code == 0, result.err
        return {p["pod"]: p["category"] for p in result.json()["pods"]}

    kube = verdicts()
    assert "GangIncomplete" not in kube.values()
    schedule = run_cli("schedule", "-f", path, "-o", "json").json()
    assert sum(1 for p in schedule["pods"] if p["node"] == "gaudi-0") == 1
    policy = verdicts("--profile", "draplan")
    assert set(policy.values()) == {"GangIncomplete"}


def test_a_workload_podgroup_is_a_gang_in_137_and_with_the_136_gate(
    tmp_path: Path, run_cli: Any
) -> None:
    """Two trainers of a gang PodGroup (minCount 2), one free Gaudi node: 1.37 binds neither
    (GenericWorkload: the gang waits whole); 1.36 binds one (GangScheduling alpha, off), and
    with --feature-gates GangScheduling=true none."""
    objs = [control_plane(), gaudi_node("gaudi-0", "r0")]

    def bound(version: str, *flags: str) -> int:
        pods = group(WORKLOAD, version, 2, 2)
        path = write(tmp_path, [*objs, *pods])
        result = run_cli(
            "schedule", "-f", path, "-o", "json", "--kubernetes-version", version, *flags
        )
        assert result.code == 0, result.err
        return sum(1 for p in result.json()["pods"] if p["node"])

    assert bound("1.37") == 0
    assert bound("1.36") == 1
    assert bound("1.36", "--feature-gates", "GangScheduling=true") == 0
