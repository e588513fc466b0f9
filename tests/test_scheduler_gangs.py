"""Gangs, all or nothing, for every API that expresses them, and topology domains: draplan's
gang placement, the policy of its own profile (kube-scheduler's gangs only the Workload API's:
tests/test_gang_semantics.py).

APIs: Workload scheduling.k8s.io/v1alpha1 (pod spec.workloadRef), v1alpha2 Workload +
PodGroup (pod spec.schedulingGroup), the coscheduling PodGroup (scheduling.x-k8s.io, pod
label), and Kueue's pod-group label with its topology annotations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest

from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.api.scheduling import (
    BasicSchedulingPolicy,
    PodGroupPolicy,
    WorkloadPodGroupV1Alpha1,
    WorkloadSpecV1Alpha1,
    WorkloadV1Alpha1,
)
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler
from draplan.scheduler.gangs import find_gangs
from draplan.scheduler.profile import Profile, draplan_profile
from scheduler_builders import (
    NUMA,
    RACK,
    MakeClaim,
    MakeNode,
    MakePod,
    MakeSlice,
    Run,
    coscheduling_podgroup,
    device_class,
    devices_in_use,
    podgroup_v1alpha2,
    podgroup_v1beta1,
    snapshot,
    workload_v1alpha1,
    workload_v1alpha2,
    workload_v1beta1,
)
from scheduler_builders import schedule as schedule_with


def schedule(objects: Iterable[KubeStruct], profile: Profile | None = None) -> Run:
    """scheduler_builders.schedule under draplan's profile: its gang policy."""
    return schedule_with(objects, profile or draplan_profile())


def gang_scheduler() -> Scheduler:
    return Scheduler(draplan_profile())


KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
KUEUE_GROUP = "kueue.x-k8s.io/pod-group-name"
KUEUE_COUNT = "kueue.x-k8s.io/pod-group-total-count"


# --- one gang description per API --------------------------------------------------------


def _v1alpha1(min_count: int) -> tuple[list[KubeStruct], Callable[[MakePod], MakePod]]:
    return [workload_v1alpha1("wl", "workers", min_count)], lambda p: p.workload_ref(
        "wl", "workers"
    )


def _v1alpha2(min_count: int) -> tuple[list[KubeStruct], Callable[[MakePod], MakePod]]:
    return [podgroup_v1alpha2("pg", min_count=min_count)], lambda p: p.scheduling_group("pg")


def _v1alpha2_template(min_count: int) -> tuple[list[KubeStruct], Callable[[MakePod], MakePod]]:
    objs: list[KubeStruct] = [
        workload_v1alpha2("wl", "tmpl", min_count),
        podgroup_v1alpha2("pg", template=("wl", "tmpl")),
    ]
    return objs, lambda p: p.scheduling_group("pg")


def _v1beta1(min_count: int) -> tuple[list[KubeStruct], Callable[[MakePod], MakePod]]:
    return [podgroup_v1beta1("pg", min_count=min_count)], lambda p: p.scheduling_group("pg")


def _v1beta1_template(min_count: int) -> tuple[list[KubeStruct], Callable[[MakePod], MakePod]]:
    objs: list[KubeStruct] = [
        workload_v1beta1("wl", "tmpl", min_count),
        podgroup_v1beta1("pg", template=("wl", "tmpl")),
    ]
    return objs, lambda p: p.scheduling_group("pg")


def _coscheduling(min_count: int) -> tuple[list[KubeStruct], Callable[[MakePod], MakePod]]:
    return [coscheduling_podgroup("pg", min_count)], lambda p: p.pod_group("pg")


def _kueue(min_count: int) -> tuple[list[KubeStruct], Callable[[MakePod], MakePod]]:
    return [], lambda p: p.label(KUEUE_GROUP, "pg").annotation(KUEUE_COUNT, str(min_count))


APIS = {
    "workload-v1alpha1": _v1alpha1,
    "podgroup-v1alpha2": _v1alpha2,
    "podgroup-v1alpha2-template": _v1alpha2_template,
    "podgroup-v1beta1": _v1beta1,
    "podgroup-v1beta1-template": _v1beta1_template,
    "coscheduling": _coscheduling,
}
API_IDS = list(APIS)


def gang(
    api: str, min_count: int, pods: int, template: str = "", cpu: str = "1", prefix: str = "m"
) -> list[KubeStruct]:
    group_objs, member = (APIS | {"kueue": _kueue})[api](min_count)
    out = list(group_objs)
    for i in range(pods):
        pod = member(MakePod().name(f"{prefix}{i}").created(f"2025-01-01T00:00:0{i}Z"))
        if cpu:
            pod.req(cpu=cpu)
        if template:
            pod.template_claim("gpu", template)
        out.append(pod.obj())
    return out


def cpu_nodes(n: int, cpu: str = "1") -> list[KubeStruct]:
    return [MakeNode().name(f"n{i}").capacity(cpu=cpu).obj() for i in range(n)]


def gpu_nodes(n: int, gpus: int, prefix: str = "n", rack: str = "") -> list[KubeStruct]:
    out: list[KubeStruct] = []
    for i in range(n):
        name = f"{prefix}{i}"
        node = MakeNode().name(name)
        if rack:
            node.label(RACK, rack)
        out.append(node.obj())
        out.append(MakeSlice().node(name).gpus(gpus, 1).obj())
    return out


def gang_members(run: Run, prefix: str = "m") -> dict[str, str | None]:
    return {k: v for k, v in run.placements().items() if k.startswith(prefix)}


# --- minCount met / not met / partially fitting ------------------------------------------


@pytest.mark.parametrize("api", [*API_IDS, "kueue"])
def test_gang_min_count_met_all_bound(api: str) -> None:
    run = schedule([*cpu_nodes(4), *gang(api, 3, 3)])
    placed = gang_members(run)
    assert len(placed) == 3
    assert all(placed.values()), placed
    assert len(set(placed.values())) == 3  # one cpu each: three different nodes
    assert all(r.gang for r in run.results)
    assert run.by_name()["m0"].reason is None


@pytest.mark.parametrize("api", API_IDS)
def test_gang_more_members_than_min_count_binds_those_that_fit(api: str) -> None:
    run = schedule([*cpu_nodes(3), *gang(api, 3, 4)])
    placed = gang_members(run)
    assert sum(1 for n in placed.values() if n) == 3
    assert placed["m3"] is None  # the last in queue order
    assert run.reason("m3") == "0/3 nodes are available: 3 Insufficient cpu."


@pytest.mark.parametrize("api", [*API_IDS, "kueue"])
def test_gang_min_count_not_met_none_bound(api: str) -> None:
    objs = [*cpu_nodes(4), *gang(api, 3, 2)]
    state = ClusterState.from_objects(objs)
    before = snapshot(state)
    results = gang_scheduler().run(state)
    assert [r.node for r in results] == [None, None]
    assert snapshot(state) == before
    for r in results:
        assert r.reason is not None
        assert "2 of 3" in r.reason.message, r.reason.message
        assert r.reason.message.startswith("0/4 nodes are available: ")
        assert r.reason.nodes == {"GangIncomplete": 4}


@pytest.mark.parametrize("api", [*API_IDS, "kueue"])
def test_gang_partially_fitting_binds_nothing_and_reserves_nothing(api: str) -> None:
    # Three nodes with 2 GPUs each, one GPU already taken elsewhere; four members each want
    # 2 GPUs: only 2 fit, the gang needs 4.
    objs: list[KubeStruct] = [
        device_class(),
        *gpu_nodes(3, 2),
        MakeClaim().name("taken").gpus(1).allocated("n2", ["gpu-0"]).obj(),
        MakeClaim().name("pair").gpus(2).template(),
        *gang(api, 4, 4, template="pair", cpu=""),
    ]
    state = ClusterState.from_objects(objs)
    before = snapshot(state)
    results = gang_scheduler().run(state)
    assert [r.node for r in results] == [None] * 4
    assert all(r.claims == [] for r in results)
    assert all(not p.spec.node_name for p in state.pods.values())
    assert snapshot(state) == before  # claims, ledgers, pods and requests all unchanged
    assert devices_in_use(state) == [("gpu.example.com", "n2", "gpu-0")]
    reasons = [r.reason.message for r in results if r.reason is not None]
    assert len(reasons) == 4
    fitting = [m for m in reasons if "fit together" in m]
    assert len(fitting) == 2, reasons
    assert all("only 2 of 4" in m and "4 required" in m for m in fitting)


@pytest.mark.parametrize("api", API_IDS)
def test_capacity_left_by_a_failed_gang_serves_later_pods(api: str) -> None:
    # The gang (higher priority) fails; the loner after it still gets the node.
    objs = [*cpu_nodes(1, cpu="2"), *gang(api, 3, 3)]
    objs.append(MakePod().name("loner").req(cpu="2").created("2025-01-02T00:00:00Z").obj())
    run = schedule(objs)
    assert gang_members(run) == {"m0": None, "m1": None, "m2": None}
    assert run.node_of("loner") == "n0"


def test_gang_counts_members_already_bound() -> None:
    objs: list[KubeStruct] = [
        *cpu_nodes(3),
        coscheduling_podgroup("pg", 3),
        MakePod().name("m0").req(cpu="1").pod_group("pg").node("n0").obj(),
        MakePod().name("m1").req(cpu="1").pod_group("pg").node("n1").obj(),
        MakePod().name("m2").req(cpu="1").pod_group("pg").obj(),
    ]
    run = schedule(objs)
    assert run.placements() == {"m2": "n2"}


def test_gang_members_bound_plus_pending_below_min_count() -> None:
    objs: list[KubeStruct] = [
        *cpu_nodes(3),
        coscheduling_podgroup("pg", 4),
        MakePod().name("m0").req(cpu="1").pod_group("pg").node("n0").obj(),
        MakePod().name("m1").req(cpu="1").pod_group("pg").obj(),
    ]
    run = schedule(objs)
    assert run.placements() == {"m1": None}
    assert "2 of 4" in run.reason("m1")


def test_workload_v1alpha1_replica_keys_are_separate_gangs() -> None:
    objs: list[KubeStruct] = [*cpu_nodes(3), workload_v1alpha1("wl", "workers", 2)]
    for replica in ("r0", "r1"):
        for i in range(2):
            objs.append(
                MakePod()
                .name(f"{replica}-{i}")
                .req(cpu="1")
                .workload_ref("wl", "workers", replica_key=replica)
                .obj()
            )
    run = schedule(objs)
    placed = sorted(k for k, v in run.placements().items() if v)
    # Three slots: one replica (2 pods) fits whole, the other cannot have 2 and gets none.
    assert placed == ["r0-0", "r0-1"]
    gangs = find_gangs(run.state)
    assert gangs[("default", "r0-0")].key != gangs[("default", "r1-0")].key


def test_basic_policy_schedules_pods_one_by_one() -> None:
    basic = WorkloadV1Alpha1(
        metadata=ObjectMeta(name="wl", namespace="default"),
        spec=WorkloadSpecV1Alpha1(
            pod_groups=(
                WorkloadPodGroupV1Alpha1(
                    name="workers", policy=PodGroupPolicy(basic=BasicSchedulingPolicy())
                ),
            )
        ),
    )
    objs = [*cpu_nodes(1), basic] + [
        MakePod().name(f"m{i}").req(cpu="1").workload_ref("wl", "workers").obj() for i in range(2)
    ]
    run = schedule(objs)
    assert run.placements() == {"m0": "n0", "m1": None}
    assert run.by_name()["m0"].gang == ""


@pytest.mark.parametrize(
    ("objs", "pod", "message"),
    [
        ([], MakePod().workload_ref("wl", "workers"), "workload default/wl not found"),
        (
            [workload_v1alpha1("wl", "other", 1)],
            MakePod().workload_ref("wl", "workers"),
            "podGroup workers not in workload wl",
        ),
        ([], MakePod().scheduling_group("pg"), "podgroup default/pg not found"),
        ([], MakePod().pod_group("pg"), "podgroup default/pg not found"),
    ],
    ids=["workload", "workload-group", "podgroup-v1alpha2", "coscheduling"],
)
def test_gang_object_missing_pods_wait(objs: list[KubeStruct], pod: MakePod, message: str) -> None:
    run = schedule([*cpu_nodes(2), *objs, pod.name("p").obj()])
    reason = run.by_name()["p"].reason
    assert reason is not None
    assert reason.filtered == f"0/2 nodes are available: {message}."
    assert reason.nodes == {"GangIncomplete": 2}


def test_podgroup_v1alpha2_own_policy_wins_over_template() -> None:
    objs: list[KubeStruct] = [
        *cpu_nodes(4),
        workload_v1alpha2("wl", "tmpl", 4),
        podgroup_v1alpha2("pg", min_count=2, template=("wl", "tmpl")),
    ]
    objs += [MakePod().name(f"m{i}").req(cpu="1").scheduling_group("pg").obj() for i in range(2)]
    run = schedule(objs)
    assert all(run.placements().values())


def test_gang_is_placed_at_its_first_members_queue_position() -> None:
    # Two cpu slots. The gang's first member is the oldest pod; the loner was created
    # between the gang members and would take a slot if members were queued one by one.
    objs: list[KubeStruct] = [
        *cpu_nodes(2),
        coscheduling_podgroup("pg", 2),
        MakePod().name("m0").req(cpu="1").pod_group("pg").created("2025-01-01T00:00:00Z").obj(),
        MakePod().name("loner").req(cpu="1").created("2025-01-01T00:00:01Z").obj(),
        MakePod().name("m1").req(cpu="1").pod_group("pg").created("2025-01-01T00:00:02Z").obj(),
    ]
    run = schedule(objs)
    assert run.node_of("m0") and run.node_of("m1")
    assert run.node_of("loner") is None


def test_two_gangs_compete_the_first_wins_whole() -> None:
    objs: list[KubeStruct] = [
        *cpu_nodes(3),
        coscheduling_podgroup("a", 2),
        coscheduling_podgroup("b", 2),
    ]
    for g, t in (("a", 0), ("b", 1)):
        for i in range(2):
            objs.append(
                MakePod()
                .name(f"{g}{i}")
                .req(cpu="1")
                .pod_group(g)
                .created(f"2025-01-01T00:00:0{t}Z")
                .obj()
            )
    run = schedule(objs)
    assert sorted(k for k, v in run.placements().items() if v) == ["a0", "a1"]
    assert "1 of 2" in run.reason("b0") or "Insufficient cpu" in run.reason("b0")
    assert len(set(run.placements().values()) - {None}) == 2


# --- topology domains --------------------------------------------------------------------


def racks(layout: dict[str, tuple[int, int]]) -> list[KubeStruct]:
    """{rack: (nodes, GPUs per node)}; node names are <rack>-<i>."""
    out: list[KubeStruct] = [device_class()]
    for rack, (nodes, gpus) in layout.items():
        out += gpu_nodes(nodes, gpus, prefix=f"{rack}-", rack=rack)
    return out


def topology_gang(
    how: str, key: str, min_count: int, pods: int, gpus: int, prefix: str = "m"
) -> list[KubeStruct]:
    """Members asking `gpus` GPUs each; the topology rule set through `how`."""
    out: list[KubeStruct] = [MakeClaim().name("t").gpus(gpus).template()]
    if how == "v1alpha2-podgroup":
        out.append(podgroup_v1alpha2("pg", min_count=min_count, topology_key=key))
    elif how == "v1alpha2-template":
        out.append(workload_v1alpha2("wl", "tmpl", min_count, topology_key=key))
        out.append(podgroup_v1alpha2("pg", template=("wl", "tmpl")))
    elif how in ("kueue-required", "kueue-preferred", "coscheduling-kueue-required"):
        if how.startswith("coscheduling"):
            out.append(coscheduling_podgroup("pg", min_count))
    elif how == "v1alpha1-kueue-required":
        out.append(workload_v1alpha1("wl", "workers", min_count))
    else:
        raise AssertionError(how)
    for i in range(pods):
        pod = MakePod().name(f"{prefix}{i}").created(f"2025-01-01T00:00:0{i}Z")
        pod.template_claim("gpu", "t")
        if how.startswith("v1alpha2"):
            pod.scheduling_group("pg")
        elif how.startswith("coscheduling"):
            pod.pod_group("pg").annotation(KUEUE_REQUIRED, key)
        elif how.startswith("v1alpha1"):
            pod.workload_ref("wl", "workers").annotation(KUEUE_REQUIRED, key)
        else:
            pod.label(KUEUE_GROUP, "pg").annotation(KUEUE_COUNT, str(min_count))
            pod.annotation(KUEUE_REQUIRED if how == "kueue-required" else KUEUE_PREFERRED, key)
        out.append(pod.obj())
    return out


REQUIRED = [
    "v1alpha2-podgroup",
    "v1alpha2-template",
    "kueue-required",
    "coscheduling-kueue-required",
    "v1alpha1-kueue-required",
]


def rack_of(node: str | None) -> str:
    assert node is not None
    return node.split("-")[0]


@pytest.mark.parametrize("how", REQUIRED)
def test_required_topology_one_rack_best_fit_by_devices(how: str) -> None:
    # Rack a: 2 nodes x 8 GPUs; rack b: 2 nodes x 4 GPUs. Same cpu everywhere, so only the
    # devices make b the tighter fit (and a comes first by name).
    objs = [*racks({"a": (2, 8), "b": (2, 4)}), *topology_gang(how, RACK, 2, 2, gpus=4)]
    run = schedule(objs)
    placed = gang_members(run)
    assert all(placed.values()), run.results
    assert {rack_of(n) for n in placed.values()} == {"b"}


@pytest.mark.parametrize("how", REQUIRED)
def test_required_topology_devices_in_use_count(how: str) -> None:
    # Both racks have 2 x 4 GPUs, but b has 2 GPUs taken on each node: for pods of 2 GPUs b
    # is the tighter fit; for pods of 4 GPUs only a fits.
    layout = {"a": (2, 4), "b": (2, 4)}
    taken = [
        MakeClaim().name(f"taken-{n}").gpus(2).allocated(n, ["gpu-0", "gpu-1"]).obj()
        for n in ("b-0", "b-1")
    ]
    small = schedule([*racks(layout), *taken, *topology_gang(how, RACK, 2, 2, gpus=2)])
    assert {rack_of(n) for n in gang_members(small).values()} == {"b"}
    big = schedule([*racks(layout), *taken, *topology_gang(how, RACK, 2, 2, gpus=4)])
    assert {rack_of(n) for n in gang_members(big).values()} == {"a"}


@pytest.mark.parametrize("how", REQUIRED)
def test_required_topology_no_rack_big_enough_binds_nothing(how: str) -> None:
    # 3 pods x 4 GPUs = 12; each rack has 8, the cluster 16.
    objs = [*racks({"a": (2, 4), "b": (2, 4)}), *topology_gang(how, RACK, 3, 3, gpus=4)]
    state = ClusterState.from_objects(objs)
    before = snapshot(state)
    results = gang_scheduler().run(state)
    assert [r.node for r in results] == [None] * 3
    assert snapshot(state) == before
    for r in results:
        assert r.reason is not None
        assert f"no single {RACK} domain" in r.reason.message, r.reason.message
        assert r.reason.nodes == {"TopologyUnsatisfiable": 4}


def test_without_topology_the_same_gang_spreads_over_racks() -> None:
    objs: list[KubeStruct] = [
        *racks({"a": (2, 4), "b": (2, 4)}),
        coscheduling_podgroup("pg", 3),
        MakeClaim().name("t").gpus(4).template(),
    ]
    objs += [
        MakePod().name(f"m{i}").pod_group("pg").template_claim("gpu", "t").obj() for i in range(3)
    ]
    run = schedule(objs)
    assert all(gang_members(run).values())
    assert {rack_of(n) for n in gang_members(run).values()} == {"a", "b"}


def test_required_topology_nodes_without_the_label_are_never_used() -> None:
    objs = [
        *racks({"a": (1, 4)}),
        *gpu_nodes(2, 8, prefix="unlabelled-"),
        *topology_gang("kueue-required", RACK, 2, 2, gpus=4),
    ]
    run = schedule(objs)
    assert gang_members(run) == {"m0": None, "m1": None}


def test_required_topology_members_already_running_pin_the_rack() -> None:
    objs: list[KubeStruct] = [
        *racks({"a": (2, 4), "b": (2, 8)}),
        MakeClaim().name("t").gpus(4).template(),
        podgroup_v1alpha2("pg", min_count=2, topology_key=RACK),
        MakePod().name("m0").scheduling_group("pg").node("b-0").obj(),
        MakePod().name("m1").scheduling_group("pg").template_claim("gpu", "t").obj(),
    ]
    run = schedule(objs)
    # Rack a is the tighter fit for one 4-GPU pod, but m0 already runs in b.
    assert rack_of(run.node_of("m1")) == "b"


def test_preferred_topology_uses_the_tightest_single_rack_when_one_fits() -> None:
    objs = [
        *racks({"a": (2, 8), "b": (2, 4), "c": (1, 4)}),
        *topology_gang("kueue-preferred", RACK, 2, 2, gpus=4),
    ]
    run = schedule(objs)
    assert {rack_of(n) for n in gang_members(run).values()} == {"b"}


def test_preferred_topology_falls_back_to_as_few_racks_as_possible() -> None:
    # No rack holds 3 x 4 GPUs. Node names make the plain scheduler (ties by name) put the
    # pods in three racks: a-0 (rack z), b-0 (rack y), c-0 / c-1 (rack x).
    objs: list[KubeStruct] = [device_class()]
    for name, rack in (("a-0", "z"), ("b-0", "y"), ("c-0", "x"), ("c-1", "x")):
        objs.append(MakeNode().name(name).label(RACK, rack).obj())
        objs.append(MakeSlice().node(name).gpus(4).obj())
    objs += topology_gang("kueue-preferred", RACK, 3, 3, gpus=4)
    run = schedule(objs)
    placed = gang_members(run)
    assert all(placed.values()), run.results
    rack_by_node = {"a-0": "z", "b-0": "y", "c-0": "x", "c-1": "x"}
    used = {rack_by_node[n] for n in placed.values() if n}
    assert len(used) == 2
    assert "x" in used  # the only rack that holds two of them


def test_preferred_topology_that_cannot_fit_at_all_binds_nothing() -> None:
    objs = [
        *racks({"a": (1, 4), "b": (1, 4)}),
        *topology_gang("kueue-preferred", RACK, 3, 3, gpus=4),
    ]
    state = ClusterState.from_objects(objs)
    before = snapshot(state)
    results = gang_scheduler().run(state)
    assert [r.node for r in results] == [None] * 3
    assert snapshot(state) == before


def test_topology_with_numa_constrained_devices() -> None:
    # 2 GPUs per pod from one NUMA node; rack a has 4-GPU nodes split in 2 NUMA groups, rack b
    # 4-GPU nodes in one group but 3 already used: b cannot host a NUMA pair at all.
    objs: list[KubeStruct] = [device_class()]
    for name, rack in (("a-0", "a"), ("b-0", "b"), ("b-1", "b")):
        objs.append(MakeNode().name(name).label(RACK, rack).obj())
    objs.append(MakeSlice().node("a-0").gpus(4, 2).obj())
    objs.append(MakeSlice().node("b-0").gpus(4, 4).obj())  # each GPU its own NUMA node
    objs.append(MakeSlice().node("b-1").gpus(4, 4).obj())
    objs.append(MakeClaim().name("t").gpus(2).match_attribute(NUMA).template())
    objs.append(podgroup_v1alpha2("pg", min_count=2, topology_key=RACK))
    objs += [
        MakePod().name(f"m{i}").scheduling_group("pg").template_claim("gpu", "t").obj()
        for i in range(2)
    ]
    run = schedule(objs)
    assert gang_members(run) == {"m0": "a-0", "m1": "a-0"}


def test_preferred_topology_reason_counts_every_node_tried() -> None:
    objs: list[KubeStruct] = [
        MakeNode().name(n).label(RACK, r).capacity(cpu="1").obj()
        for n, r in (("n0", "r0"), ("n1", "r0"), ("n2", "r1"))
    ]
    objs += [
        coscheduling_podgroup("pg", 1),
        MakePod().name("m0").req(cpu="2").pod_group("pg").annotation(KUEUE_PREFERRED, RACK).obj(),
    ]
    run = schedule(objs)
    assert run.node_of("m0") is None
    # Got: "0/1 nodes are available: 1 Insufficient cpu." (rack r1 only)
    assert run.reason("m0") == "0/3 nodes are available: 3 Insufficient cpu."
