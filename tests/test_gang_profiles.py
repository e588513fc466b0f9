"""Which groups are placed as one, and in one domain, under each scheduler modelled, at each
Kubernetes version and feature-gate setting; and that every consumer of gangs (scale-down,
ProvisioningRequests, derived pools' domains, the waiting-gangs series) follows the same
scheduler rather than draplan's own policy.

The expectation is written from upstream, not from draplan's earlier output:
- kube-scheduler places a Workload PodGroup's pods all or nothing only where its gang scheduling
  runs: 1.37 (GenericWorkload), 1.36 with GangScheduling (pkg/features/kube_features.go);
- it keeps the group in one domain of schedulingConstraints.topology only with
  TopologyAwareWorkloadScheduling, alpha and off in both (schedule_one_podgroup.go:
  podGroupSchedulingAlgorithm);
- it never reads Kueue's podset topology annotations (Kueue's TAS ungater turns them into a
  nodeSelector) and never gangs Kueue or coscheduling pod groups;
- draplan's profile gangs every recognised group, in the domain it asks for.
The clusters are GB200 NVL racks (4 GPUs per tray, racks named by nvidia.com/gpu.clique), Gaudi
nodes and TPU slices, none of them the fixtures'.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from draplan.api.features import feature_gates
from draplan.api.meta import KubeStruct
from draplan.api.scheduling import SchedulingConstraints, TopologyConstraint
from draplan.autoscaler.derived import derive_pools
from draplan.autoscaler.scaledown import plan_scale_down
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler, build_profile
from draplan.scheduler.gangs import KUEUE_GROUP_COUNT, KUEUE_GROUP_LABEL, KUEUE_REQUIRED
from draplan.scheduler.profile import draplan_profile
from draplan.serve.series import waiting_gangs
from scale_scenarios import pod, scenario_gang, write
from scheduler_builders import (
    MakeNode,
    MakePod,
    coscheduling_podgroup,
    podgroup_v1alpha2,
    podgroup_v1beta1,
)

GPU = "nvidia.com/gpu"
GAUDI = "habana.ai/gaudi"
TPU = "google.com/tpu"
CLIQUE = "nvidia.com/gpu.clique"
RACK = "topology.kubernetes.io/rack"
SLICE = "cloud.google.com/gke-tpu-slice"
TAS = "TopologyAwareWorkloadScheduling"

# (version, --feature-gates)
SETTINGS = [
    ("1.37", ""),
    ("1.37", f"{TAS}=true"),
    ("1.36", ""),
    ("1.36", "GangScheduling=true"),
    ("1.36", f"{TAS}=true"),
    ("1.36", f"GangScheduling=true,{TAS}=true"),
]


def upstream(version: str, gates: str, draplan: bool) -> tuple[bool, bool]:
    """(all or nothing, in one domain) for a Workload PodGroup with a gang policy and a
    topology constraint, from upstream's gates (draplan's profile: both, its policy)."""
    if draplan:
        return True, True
    on = {g.partition("=")[0] for g in gates.split(",") if g.endswith("=true")}
    return version == "1.37" or "GangScheduling" in on, TAS in on


def domains(
    prefix: str, key: str, count: int, per: int, labels: dict[str, str], capacity: dict[str, Any]
) -> list[KubeStruct]:
    """`count` domains of `key` (named `<prefix>-<i>`) of `per` nodes each."""
    out: list[KubeStruct] = []
    for d in range(count):
        for n in range(per):
            make = (
                MakeNode().name(f"{prefix}{d}-n{n}").label(key, f"{prefix}-{d}").capacity(capacity)
            )
            for k, v in labels.items():
                make = make.label(k, v)
            out.append(make.obj())
    return out


def gb200_racks(racks: int, trays: int) -> list[KubeStruct]:
    labels = {"node.kubernetes.io/instance-type": "gb200-nvl72"}
    return domains(
        "clique", CLIQUE, racks, trays, labels, {GPU: 4, "cpu": "144", "memory": "960Gi"}
    )


def workload_gang(
    version: str, name: str, pods: int, min_count: int, key: str | None, **req: str | int
) -> list[KubeStruct]:
    """A PodGroup (v1alpha2 in 1.36, v1beta1 in 1.37) and its pods."""
    group: KubeStruct
    if version == "1.36":
        group = podgroup_v1alpha2(name, min_count=min_count, topology_key=key)
    else:
        pg = podgroup_v1beta1(name, min_count=min_count)
        constraints = (
            SchedulingConstraints(topology=(TopologyConstraint(key=key),)) if key else None
        )
        spec = msgspec.structs.replace(pg.spec, scheduling_constraints=constraints)
        group = msgspec.structs.replace(pg, spec=spec)
    members = [
        MakePod().name(f"{name}-{i}").req(req).scheduling_group(name).obj() for i in range(pods)
    ]
    return [group, *members]


def placed(objs: list[KubeStruct], version: str, gates: str, draplan: bool) -> dict[str, str]:
    state = ClusterState.from_objects(objs, feature_gates(version, gates))
    profile = draplan_profile() if draplan else build_profile()
    return {r.key[1]: r.node for r in Scheduler(profile).run(state) if r.node}


@pytest.mark.parametrize(("version", "gates"), SETTINGS)
@pytest.mark.parametrize("draplan", [False, True])
def test_a_rack_constrained_gang_is_held_to_one_rack_only_where_upstream_does(
    version: str, gates: str, draplan: bool
) -> None:
    """Four 4-GPU trainers, minCount 4, asking for one NVL rack; each rack holds two."""
    objs = [*gb200_racks(2, 2), *workload_gang(version, "train", 4, 4, CLIQUE, **{GPU: 4})]
    whole, in_domain = upstream(version, gates, draplan)
    got = placed(objs, version, gates, draplan)
    if not in_domain:
        assert len(got) == 4  # across both racks, gang or not
    elif whole:
        assert got == {}  # no rack holds the gang
    else:
        # One placement (a rack) and no minCount barrier: what fits there binds.
        assert len(got) == 2 and len({n.rsplit("-", 1)[0] for n in got.values()}) == 1


@pytest.mark.parametrize(("version", "gates"), SETTINGS)
@pytest.mark.parametrize("draplan", [False, True])
def test_minimum_count_is_a_barrier_only_where_gang_scheduling_runs(
    version: str, gates: str, draplan: bool
) -> None:
    """Three Gaudi pods of a PodGroup asking for five: held back only by a gang scheduler."""
    nodes = [MakeNode().name(f"gaudi-{i}").capacity({GAUDI: 8}).obj() for i in range(3)]
    objs = [*nodes, *workload_gang(version, "hpu", 3, 5, None, **{GAUDI: 8})]
    whole, _ = upstream(version, gates, draplan)
    assert len(placed(objs, version, gates, draplan)) == (0 if whole else 3)


def kueue_tas_pods(count: int, group: bool) -> list[KubeStruct]:
    """Pods Kueue's TAS has admitted and ungated: the podset annotation still on them, the
    assignment in their nodeSelector (here a whole cluster of one rack label value per node,
    so only the nodeSelector decides), in a Kueue pod group or alone."""
    out: list[KubeStruct] = []
    for i in range(count):
        pod = MakePod().name(f"tpu-{i}").req({TPU: 4}).annotation(KUEUE_REQUIRED, SLICE)
        pod = pod.node_selector("cloud.google.com/gke-tpu-topology", "2x4")
        if group:
            pod = pod.label(KUEUE_GROUP_LABEL, "tpu").annotation(KUEUE_GROUP_COUNT, str(count))
        out.append(pod.obj())
    return out


def tpu_slices(slices: int, hosts: int) -> list[KubeStruct]:
    labels = {"cloud.google.com/gke-tpu-topology": "2x4"}
    return domains("slice", SLICE, slices, hosts, labels, {TPU: 4})


@pytest.mark.parametrize("group", [True, False])
@pytest.mark.parametrize("draplan", [False, True])
def test_kueue_tas_annotations_are_draplans_policy_never_kube_schedulers(
    group: bool, draplan: bool
) -> None:
    """Four TPU pods asking (by annotation) for one slice of two hosts: kube-scheduler reads
    only their nodeSelector and places all four; draplan's profile honours the annotation for
    a Kueue pod group (two fit one slice, and the group of four needs them all)."""
    objs = [*tpu_slices(2, 2), *kueue_tas_pods(4, group)]
    got = placed(objs, "1.37", "", draplan)
    assert len(got) == (0 if draplan and group else 4)


@pytest.mark.parametrize("draplan", [False, True])
def test_a_workload_gang_kueue_projects_takes_no_domain_from_kueues_annotation(
    draplan: bool,
) -> None:
    """A PodGroup Kueue made (its pods still annotated): kube-scheduler gangs it (1.37) but
    reads no domain from the annotation; draplan's profile keeps it in one slice."""
    pods = [
        MakePod()
        .name(f"w-{i}")
        .req({TPU: 4})
        .annotation(KUEUE_REQUIRED, SLICE)
        .scheduling_group("w")
        .obj()
        for i in range(4)
    ]
    objs = [*tpu_slices(2, 2), podgroup_v1beta1("w", min_count=4), *pods]
    assert len(placed(objs, "1.37", "", draplan)) == (0 if draplan else 4)


# --- the gangs' consumers ------------------------------------------------------------------


NOW = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def _gaudi_cluster() -> list[KubeStruct]:
    """Two Gaudi nodes of one node group: g-0 runs both members of a 1.37 gang and little
    else (2 of 8 cards), g-1 has room for them (2 of 8 used)."""
    group = {"eks.amazonaws.com/nodegroup": "gaudi"}
    nodes = []
    for i in range(2):
        make = MakeNode().name(f"g-{i}").capacity({GAUDI: 8, "cpu": "96", "memory": "1Ti"})
        for k, v in group.items():
            make = make.label(k, v)
        nodes.append(make.obj())
    members = [
        MakePod().name(f"pair-{i}").req({GAUDI: 1}).scheduling_group("pair").node("g-0").obj()
        for i in range(2)
    ]
    other = [MakePod().name(f"solo-{i}").req({GAUDI: 1}).node("g-1").obj() for i in range(2)]
    return [*nodes, podgroup_v1beta1("pair", min_count=2), *members, *other]


def _replicated(objs: list[KubeStruct]) -> list[KubeStruct]:
    """Every pod owned by a ReplicaSet (Cluster Autoscaler drains only replicated pods)."""
    from draplan.api.meta import OwnerReference

    out: list[KubeStruct] = []
    for obj in objs:
        if getattr(obj, "kind", "") == "Pod":
            ref = OwnerReference(
                api_version="apps/v1", kind="ReplicaSet", name="rs", uid="rs", controller=True
            )
            meta = msgspec.structs.replace(obj.metadata, owner_references=(ref,))  # type: ignore[attr-defined]
            obj = msgspec.structs.replace(obj, metadata=meta)
        out.append(obj)
    return out


@pytest.mark.parametrize("draplan", [False, True])
def test_scale_down_drains_a_gang_member_as_cluster_autoscaler_does(draplan: bool) -> None:
    state = ClusterState.from_objects(_replicated(_gaudi_cluster()), feature_gates("1.37"))
    state.node_pools.update(derive_pools(state, kube=not draplan).pools)
    profile = draplan_profile() if draplan else build_profile()
    down = plan_scale_down(state, Scheduler(profile), NOW)
    kept = {k.node: k.reason for k in down.kept}
    removed = [r.node for r in down.removals]
    if draplan:
        assert kept["g-0"] == "GangMember"
    else:  # CA's rules have none for gangs: g-0's pods move to g-1 (one node must stay)
        assert removed == ["g-0"]


def test_derived_pools_carry_the_domains_of_the_modelled_schedulers_gangs() -> None:
    """A rack label is a derived pool's topology only if the modelled scheduler keeps a gang
    in one rack: draplan's profile, or kube-scheduler with TopologyAwareWorkloadScheduling."""
    nodes = [
        MakeNode()
        .name(f"gb-{i}")
        .label(RACK, f"rack-{i // 2}")
        .label("eks.amazonaws.com/nodegroup", "gb200")
        .capacity({GPU: 4})
        .obj()
        for i in range(4)
    ]
    objs = [*nodes, *workload_gang("1.37", "t", 2, 2, RACK, **{GPU: 4})]

    def keys(gates: str, kube: bool) -> list[str]:
        state = ClusterState.from_objects(objs, feature_gates("1.37", gates))
        pool = derive_pools(state, kube=kube).pools["gb200"]
        return [t.key for t in pool.spec.topology]

    assert keys("", kube=True) == []
    assert keys(f"{TAS}=true", kube=True) == [RACK]
    assert keys("", kube=False) == [RACK]


def test_waiting_gangs_are_the_modelled_schedulers() -> None:
    """A pending Kueue pod group and a pending coscheduling PodGroup are gangs only under
    draplan's profile; a 1.37 PodGroup under both."""
    objs: list[KubeStruct] = [
        *kueue_tas_pods(2, group=True),
        coscheduling_podgroup("co", 2),
        *[
            MakePod().name(f"co-{i}").label("scheduling.x-k8s.io/pod-group", "co").obj()
            for i in range(2)
        ],
        *workload_gang("1.37", "wl", 2, 2, None),
    ]
    state = ClusterState.from_objects(objs, feature_gates("1.37"))
    assert sorted(waiting_gangs(state, kube=True)) == ["PodGroup default/wl"]
    assert sorted(waiting_gangs(state, kube=False)) == [
        "PodGroup default/co",
        "PodGroup default/wl",
        "pod group default/tpu",
    ]


@pytest.mark.parametrize("api", ["workload", "kueue"])
@pytest.mark.parametrize("draplan", [False, True])
def test_one_atomic_provisioning_request_per_gang_of_the_modelled_scheduler(
    run_cli: Any, tmp_path: Path, api: str, draplan: bool
) -> None:
    """A gang of four 8-GPU pods and one more pod of the pool: Cluster Autoscaler provisions a
    best-effort-atomic request all or none, so a request is a gang only where the scheduler
    places the gang whole (a 1.37 PodGroup always; a Kueue pod group under draplan's profile),
    else its pods join the pool's request."""
    objs = [*scenario_gang(per_domain=8, api=api), pod("solo", "eight-gpus")]
    flags = ["--profile", "draplan"] if draplan else []
    out = run_cli("scale", "-f", write(tmp_path, objs), *flags, "-o", "yaml", "--target", "ca")
    assert out.code == 0, out.err
    docs = [d for d in yaml.safe_load_all(out.out) if d is not None]
    requests = {
        d["metadata"]["name"]: sum(s["count"] for s in d["spec"]["podSets"])
        for d in docs
        if d["kind"] == "ProvisioningRequest"
    }
    if api == "workload" or draplan:
        assert sorted(requests.values()) == [1, 4] and requests.get("train") == 4
    else:
        assert list(requests.values()) == [5]


@pytest.mark.parametrize("draplan", [False, True])
def test_the_domain_a_gang_goes_to_is_the_modelled_schedulers_choice(draplan: bool) -> None:
    """Three 4-GPU trainers, minCount 2, in one NVL rack: the small rack holds two, the large
    one three. kube-scheduler (with TopologyAwareWorkloadScheduling) scores placements by the
    pods they place (PodGroupPodsCount) and takes the large rack; draplan's profile takes the
    best fit, the small one."""
    tray = {GPU: 4, "cpu": "144", "memory": "960Gi"}
    objs = [*domains("small", CLIQUE, 1, 2, {}, tray), *domains("large", CLIQUE, 1, 3, {}, tray)]
    objs += workload_gang("1.37", "train", 3, 2, CLIQUE, **{GPU: 4})
    got = placed(objs, "1.37", f"{TAS}=true", draplan)
    racks = {node.rsplit("-", 1)[0] for node in got.values()}
    assert (len(got), racks) == ((2, {"small0"}) if draplan else (3, {"large0"}))
