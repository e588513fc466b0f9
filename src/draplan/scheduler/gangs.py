"""Gangs (all-or-nothing pod groups) and their topology constraints, from every API that
expresses them: Workload v1alpha1 / v1alpha2 / v1beta1 + PodGroup, scheduler-plugins' PodGroup, and
Kueue's pod-group labels and topology annotations; and which of them kube-scheduler itself
places all or nothing (`kube_gangs`)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from draplan.api.core_v1 import Pod
from draplan.api.features import GATES, FeatureGates
from draplan.api.scheduling import (
    CoschedulingPodGroup,
    PodGroupPolicy,
    PodGroupV1Alpha2,
    PodGroupV1Beta1,
    WorkloadV1Alpha1,
    WorkloadV1Alpha2,
    WorkloadV1Beta1,
    template_ref,
)
from draplan.cluster.podsmemo import PodsIndex, PodsMemo
from draplan.cluster.state import ClusterState, ObjectKey, key_of

COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
KUEUE_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_GROUP_COUNT = "kueue.x-k8s.io/pod-group-total-count"
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"

# The API a gang comes from: the Workload API's PodGroups (and a 1.35 Workload's podGroups),
# scheduler-plugins' coscheduling PodGroup, Kueue's plain pod groups.
WORKLOAD = "workload"
COSCHEDULING = "coscheduling"
KUEUE = "kueue"


@dataclass(frozen=True)
class TopologyRule:
    key: str  # node label whose value names the domain
    required: bool


@dataclass(frozen=True)
class Gang:
    """Pods placed in one cycle, all or nothing (at least min_count of them)."""

    key: tuple[str, ...]
    label: str
    min_count: int
    members: tuple[ObjectKey, ...]
    topology: TopologyRule | None = None
    missing: str = ""  # the group object is absent: its pods wait (PreEnqueue upstream)
    api: str = WORKLOAD


def _gang_min(policy: PodGroupPolicy) -> int:
    return policy.gang.min_count if policy.gang is not None else 0


def _kueue_topology(pod: Pod) -> TopologyRule | None:
    ann = pod.metadata.annotations
    if ann.get(KUEUE_REQUIRED):
        return TopologyRule(ann[KUEUE_REQUIRED], True)
    if ann.get(KUEUE_PREFERRED):
        return TopologyRule(ann[KUEUE_PREFERRED], False)
    return None


@dataclass(frozen=True)
class _Group:
    """What one pod says of its group, before a scheduler's view of it."""

    key: tuple[str, ...]
    label: str
    min_count: int  # the gang policy's minCount; 0: no gang policy
    constraint: TopologyRule | None  # the PodGroup's schedulingConstraints.topology
    kueue: TopologyRule | None  # Kueue TAS's podset topology annotations
    missing: str
    api: str


def names_a_group(pod: Pod) -> bool:
    """Whether the pod names a group (a Workload's, a PodGroup, a coscheduling or Kueue pod
    group): only such a pod can be a gang's member."""
    labels = pod.metadata.labels
    return (
        pod.spec.workload_ref is not None
        or pod.spec.scheduling_group is not None
        or bool(labels.get(COSCHEDULING_LABEL))
        or bool(labels.get(KUEUE_GROUP_LABEL))
    )


def _group_of(pod: Pod, index: dict[tuple[str, ...], object]) -> _Group | None:
    if not names_a_group(pod):
        return None
    found = _workload_group(pod, index)
    if found is not None:
        return found
    ns = pod.metadata.namespace
    kueue = _kueue_topology(pod)
    name = pod.metadata.labels.get(COSCHEDULING_LABEL)
    if name:
        key = ("PodGroup/scheduling.x-k8s.io", ns, name)
        label = f"PodGroup {ns}/{name}"
        cpg = index.get(key)
        if not isinstance(cpg, CoschedulingPodGroup):
            return _Group(
                key, label, 0, None, None, f"podgroup {ns}/{name} not found", COSCHEDULING
            )
        return _Group(key, label, cpg.spec.min_member, None, kueue, "", COSCHEDULING)
    name = pod.metadata.labels.get(KUEUE_GROUP_LABEL)
    if name:
        try:
            count = int(pod.metadata.annotations.get(KUEUE_GROUP_COUNT, "0"))
        except ValueError:
            count = 0
        label = f"pod group {ns}/{name}"
        return _Group(("kueue", ns, name), label, count, None, kueue, "", KUEUE)
    return None


def _workload_group(pod: Pod, index: dict[tuple[str, ...], object]) -> _Group | None:
    ref = pod.spec.workload_ref
    sg = pod.spec.scheduling_group
    if ref is None and sg is None:
        return None  # most pods: nothing more to read
    ns = pod.metadata.namespace
    key: tuple[str, ...]
    kueue = _kueue_topology(pod)
    if ref is not None:
        key = ("Workload/v1alpha1", ns, ref.name, ref.pod_group, ref.pod_group_replica_key)
        label = f"Workload {ns}/{ref.name} podGroup {ref.pod_group}"
        wl = index.get(("Workload/v1alpha1", ns, ref.name))
        if not isinstance(wl, WorkloadV1Alpha1):
            missing = f"workload {ns}/{ref.name} not found"
            return _Group(key, label, 0, None, None, missing, WORKLOAD)
        group = next((g for g in wl.spec.pod_groups if g.name == ref.pod_group), None)
        if group is None:
            missing = f"podGroup {ref.pod_group} not in workload {ref.name}"
            return _Group(key, label, 0, None, None, missing, WORKLOAD)
        return _Group(key, label, _gang_min(group.policy), None, kueue, "", WORKLOAD)
    assert sg is not None  # one of the two, by the test above
    key = ("PodGroup", ns, sg.pod_group_name)
    label = f"PodGroup {ns}/{sg.pod_group_name}"
    pg = index.get(key)
    if not isinstance(pg, PodGroupV1Alpha2 | PodGroupV1Beta1):
        missing = f"podgroup {ns}/{sg.pod_group_name} not found"
        return _Group(key, label, 0, None, None, missing, WORKLOAD)
    policy, constraints = pg.spec.scheduling_policy, pg.spec.scheduling_constraints
    made_from = template_ref(pg)
    wl = index.get(("Workload", ns, made_from[0])) if made_from is not None else None
    if made_from is not None and isinstance(wl, WorkloadV1Alpha2 | WorkloadV1Beta1):
        tmpl = next((t for t in wl.spec.pod_group_templates if t.name == made_from[1]), None)
        if tmpl is not None:
            if policy.gang is None and policy.basic is None:
                policy = tmpl.scheduling_policy
            constraints = constraints or tmpl.scheduling_constraints
    topo = None
    if constraints is not None and constraints.topology:
        topo = TopologyRule(constraints.topology[0].key, True)
    return _Group(key, label, _gang_min(policy), topo, kueue, "", WORKLOAD)


def topology_constraints_on(features: FeatureGates) -> bool:
    """Whether kube-scheduler keeps a PodGroup inside the one domain its
    schedulingConstraints.topology names: only with TopologyAwareWorkloadScheduling, alpha and
    off in 1.36 and 1.37 (pkg/features/kube_features.go). With it on, the pod group cycle tries
    one placement per domain (pkg/scheduler/schedule_one_podgroup.go:
    podGroupSchedulingAlgorithm, podGroupSchedulingPlacementAlgorithm; the domains from
    pkg/scheduler/framework/plugins/topologyaware: TopologyPlacement.GeneratePlacements); with
    it off the cycle runs its default algorithm, which reads no constraint, and the API server
    drops the field from new PodGroups and Workloads (pkg/registry/scheduling/podgroup/
    strategy.go: PrepareForCreate, dropDisabledPodGroupFields)."""
    return "TopologyAwareWorkloadScheduling" in features


def find_gangs(state: ClusterState) -> dict[ObjectKey, Gang]:
    """Every pod that belongs to a gang (or a topology-constrained pod set), by pod key: every
    group draplan recognises, each in the domain its PodGroup's topology constraint or Kueue's
    topology annotations ask for (draplan's own gang policy, `--profile draplan`)."""
    return dict(_GANGS(state))


def _groups_of(state: ClusterState) -> Callable[[Pod], _Group | None]:
    """A pod's group, as the state's Workloads and PodGroups say."""
    index: dict[tuple[str, ...], object] = {}
    for obj in state.others:
        ns, name = key_of(obj)
        if isinstance(obj, WorkloadV1Alpha1):
            index[("Workload/v1alpha1", ns, name)] = obj
        elif isinstance(obj, WorkloadV1Alpha2 | WorkloadV1Beta1):
            # One resource served in two versions: a cluster holds one object per name.
            index[("Workload", ns, name)] = obj
        elif isinstance(obj, PodGroupV1Alpha2 | PodGroupV1Beta1):
            index[("PodGroup", ns, name)] = obj
        elif isinstance(obj, CoschedulingPodGroup):
            index[("PodGroup/scheduling.x-k8s.io", ns, name)] = obj
    return lambda pod: _group_of(pod, index)


# Each pod's group, looked at again only for the pods changed (`PodsIndex`).
_GROUPS = PodsIndex(_groups_of)


def _find_gangs(state: ClusterState, kube: bool) -> dict[ObjectKey, Gang]:
    gang_on = kube_gangs_on(state.features)
    topology_on = topology_constraints_on(state.features)
    groups: dict[tuple[str, ...], list[ObjectKey]] = {}
    info: dict[tuple[str, ...], tuple[str, int, TopologyRule | None, str, str]] = {}
    # In pod name order; only the pods of some group are sorted.
    for pkey, found in sorted(_GROUPS(state).items(), key=lambda kg: kg[0]):
        # kube-scheduler gangs only the Workload API's groups: the other labels are not read.
        if kube and found.api != WORKLOAD:
            continue
        if kube:
            # kube-scheduler: minCount only where its gang scheduling runs, the domain only
            # with the topology gate, never Kueue's annotations (Kueue's TAS ungater turns
            # them into each pod's nodeSelector, which is all kube-scheduler reads).
            min_count = found.min_count if gang_on else 0
            topo = found.constraint if topology_on else None
            missing = found.missing if gang_on else ""
        else:
            min_count, topo, missing = (
                found.min_count,
                found.constraint or found.kueue,
                found.missing,
            )
        gkey = found.key
        groups.setdefault(gkey, []).append(pkey)
        if gkey not in info or (info[gkey][2] is None and topo is not None):
            info[gkey] = (found.label, min_count, topo, missing, found.api)
    out: dict[ObjectKey, Gang] = {}
    for gkey, keys in groups.items():
        label, min_count, topo, missing, api = info[gkey]
        if min_count <= 0 and topo is None and not missing:
            continue  # a basic policy: pods schedule one by one
        gang = Gang(gkey, label, max(min_count, 1), tuple(keys), topo, missing, api)
        for pkey in keys:
            out[pkey] = gang
    return out


_GANGS = PodsMemo(lambda state: _find_gangs(state, kube=False))


def kube_gangs_on(features: FeatureGates) -> bool:
    """Whether kube-scheduler's default profile gangs the Workload API's PodGroups: its
    GangScheduling plugin (pkg/scheduler/framework/plugins/gangscheduling: PreEnqueue until
    minCount pods exist, Permit as the barrier; KEP-4671) runs only with its gate on, alpha and
    off in 1.35 and 1.36 (pkg/features/kube_features.go: GangScheduling, GenericWorkload its
    prerequisite). In 1.37 the gate is folded into GenericWorkload (the workload scheduling
    cycle, pkg/scheduler/schedule_one_podgroup.go: scheduleOnePodGroup), without which no
    Workload or PodGroup object exists: a 1.37 input holding them has it on."""
    return "GangScheduling" in features or features.version not in GATES["GangScheduling"].specs


def kube_gangs(state: ClusterState) -> dict[ObjectKey, Gang]:
    """The groups kube-scheduler itself places as one, by pod key: the Workload API's, all or
    nothing where `kube_gangs_on`, inside one domain where `topology_constraints_on`. Never
    Kueue's pod groups: Kueue gangs at admission (its pod integration,
    pkg/controller/jobs/pod/pod_controller.go, holds every pod of the group by the
    kueue.x-k8s.io/admission scheduling gate until the Workload is admitted, and TAS writes the
    assigned domain into each pod's nodeSelector before lifting kueue.x-k8s.io/topology,
    pkg/controller/tas/topology_ungater.go), then kube-scheduler takes each pod alone, with
    its own PostFilter, reading the nodeSelector and never the podset topology annotations; a
    group Kueue projects onto a native PodGroup (pod/was.go, WASPodGroups) sets
    spec.schedulingGroup and is a Workload group here. Never a coscheduling PodGroup: only a
    scheduler-plugins scheduler runs Coscheduling, for pods whose schedulerName names it, and
    no kube-scheduler profile draplan reads does."""
    return dict(_KUBE_GANGS(state))


_KUBE_GANGS = PodsMemo(lambda state: _find_gangs(state, kube=True))


def gangs_under(state: ClusterState, kube: bool) -> dict[ObjectKey, Gang]:
    """The gangs of the scheduler modelled: kube-scheduler's (`kube_gangs`) under one of its
    profiles, every recognised group (`find_gangs`) under draplan's."""
    return kube_gangs(state) if kube else find_gangs(state)


def pinned_domains(
    state: ClusterState, gang: Gang, skip: Collection[ObjectKey] = ()
) -> list[str] | None:
    """The topology domains of the gang's members already running (those not in `skip`), in
    member order: the rest must join them. None when no member runs (or the gang has no
    topology); a list without the domain of a member whose node lacks the label, so it can be
    empty (pinned, yet to no domain)."""
    if gang.topology is None:
        return None
    key = gang.topology.key
    running = False
    out: list[str] = []
    for member in gang.members:
        pod = state.pods.get(member)
        if member in skip or pod is None or not pod.spec.node_name:
            continue
        running = True
        node = state.nodes.get(pod.spec.node_name)
        if node is not None and key in node.metadata.labels:
            out.append(node.metadata.labels[key])
    return out if running else None
