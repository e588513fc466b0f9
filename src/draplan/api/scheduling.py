"""Gang and priority kinds: scheduling.k8s.io Workload/PodGroup/PriorityClass and the
coscheduling PodGroup of scheduler-plugins (scheduling.x-k8s.io)."""

from __future__ import annotations

from draplan.api.meta import Condition, Int32, KubeStruct, ObjectMeta
from draplan.api.quantity import Quantity


class GangSchedulingPolicy(KubeStruct, frozen=True):
    min_count: Int32


class BasicSchedulingPolicy(KubeStruct, frozen=True):
    pass


class PodGroupPolicy(KubeStruct, frozen=True):
    """oneOf basic | gang (v1alpha1 `policy`, v1alpha2 `schedulingPolicy`)."""

    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None


class TypedLocalObjectReference(KubeStruct, frozen=True):
    api_group: str = ""
    kind: str = ""
    name: str = ""


# scheduling.k8s.io/v1alpha1 (Kubernetes 1.35, KEP-4671)


class WorkloadPodGroupV1Alpha1(KubeStruct, frozen=True):
    name: str
    policy: PodGroupPolicy = PodGroupPolicy()


class WorkloadSpecV1Alpha1(KubeStruct, frozen=True):
    controller_ref: TypedLocalObjectReference | None = None
    pod_groups: tuple[WorkloadPodGroupV1Alpha1, ...] = ()


class WorkloadV1Alpha1(KubeStruct, frozen=True):
    api_version: str = "scheduling.k8s.io/v1alpha1"
    kind: str = "Workload"
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadSpecV1Alpha1 = WorkloadSpecV1Alpha1()


# scheduling.k8s.io/v1alpha2 (Kubernetes 1.36, KEP-5832 and KEP-5732)


class TopologyConstraint(KubeStruct, frozen=True):
    key: str


class SchedulingConstraints(KubeStruct, frozen=True):
    topology: tuple[TopologyConstraint, ...] = ()


class PodGroupTemplate(KubeStruct, frozen=True):
    name: str
    scheduling_policy: PodGroupPolicy = PodGroupPolicy()
    scheduling_constraints: SchedulingConstraints | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None


class WorkloadSpecV1Alpha2(KubeStruct, frozen=True):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: tuple[PodGroupTemplate, ...] = ()


class WorkloadV1Alpha2(KubeStruct, frozen=True):
    api_version: str = "scheduling.k8s.io/v1alpha2"
    kind: str = "Workload"
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadSpecV1Alpha2 = WorkloadSpecV1Alpha2()


class WorkloadTemplateReference(KubeStruct, frozen=True):
    workload_name: str
    pod_group_template_name: str


class PodGroupTemplateReference(KubeStruct, frozen=True):
    workload: WorkloadTemplateReference | None = None


class PodGroupSpecV1Alpha2(KubeStruct, frozen=True):
    pod_group_template_ref: PodGroupTemplateReference | None = None
    scheduling_policy: PodGroupPolicy = PodGroupPolicy()
    scheduling_constraints: SchedulingConstraints | None = None


class PodGroupStatusV1Alpha2(KubeStruct, frozen=True):
    conditions: tuple[Condition, ...] = ()


class PodGroupV1Alpha2(KubeStruct, frozen=True):
    api_version: str = "scheduling.k8s.io/v1alpha2"
    kind: str = "PodGroup"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodGroupSpecV1Alpha2 = PodGroupSpecV1Alpha2()
    status: PodGroupStatusV1Alpha2 = PodGroupStatusV1Alpha2()


# scheduling.k8s.io/v1beta1 (Kubernetes 1.37, GenericWorkload gate, beta): the v1alpha2 shapes
# plus PodGroup-level claims (DRAWorkloadResourceClaims), disruptionMode and preemptionPolicy;
# a PodGroup names its template by spec.workloadRef {workloadName, templateName}.


class PodGroupResourceClaim(KubeStruct, frozen=True):
    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class Empty(KubeStruct, frozen=True):
    pass


class DisruptionMode(KubeStruct, frozen=True):
    """oneOf single | all (PodGroup defaults to single)."""

    single: Empty | None = None
    all: Empty | None = None


class PodGroupTemplateV1Beta1(PodGroupTemplate, frozen=True):
    resource_claims: tuple[PodGroupResourceClaim, ...] = ()
    disruption_mode: DisruptionMode | None = None
    preemption_policy: str = ""


class CompositeGangSchedulingPolicy(KubeStruct, frozen=True):
    min_group_count: Int32


class CompositePodGroupPolicy(KubeStruct, frozen=True):
    basic: Empty | None = None
    gang: CompositeGangSchedulingPolicy | None = None


class CompositePodGroupTemplate(KubeStruct, frozen=True):
    """CompositePodGroup gate (alpha in 1.37): a tree of pod group templates. Read so that
    such Workloads load; its groups are scheduled by their own PodGroups."""

    name: str
    scheduling_policy: CompositePodGroupPolicy = CompositePodGroupPolicy()
    scheduling_constraints: SchedulingConstraints | None = None
    pod_group_templates: tuple[PodGroupTemplateV1Beta1, ...] = ()
    composite_pod_group_templates: tuple[CompositePodGroupTemplate, ...] = ()


class WorkloadSpecV1Beta1(KubeStruct, frozen=True):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: tuple[PodGroupTemplateV1Beta1, ...] = ()
    composite_pod_group_templates: tuple[CompositePodGroupTemplate, ...] = ()


class WorkloadV1Beta1(KubeStruct, frozen=True):
    api_version: str = "scheduling.k8s.io/v1beta1"
    kind: str = "Workload"
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadSpecV1Beta1 = WorkloadSpecV1Beta1()


class WorkloadReferenceV1Beta1(KubeStruct, frozen=True):
    workload_name: str
    template_name: str


class PodGroupSpecV1Beta1(KubeStruct, frozen=True):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReferenceV1Beta1 | None = None
    scheduling_policy: PodGroupPolicy = PodGroupPolicy()
    scheduling_constraints: SchedulingConstraints | None = None
    resource_claims: tuple[PodGroupResourceClaim, ...] = ()
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str = ""


class PodGroupResourceClaimStatus(KubeStruct, frozen=True):
    name: str
    resource_claim_name: str | None = None


class PodGroupStatusV1Beta1(KubeStruct, frozen=True):
    conditions: tuple[Condition, ...] = ()
    resource_claim_statuses: tuple[PodGroupResourceClaimStatus, ...] = ()


class PodGroupV1Beta1(KubeStruct, frozen=True):
    api_version: str = "scheduling.k8s.io/v1beta1"
    kind: str = "PodGroup"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodGroupSpecV1Beta1 = PodGroupSpecV1Beta1()
    status: PodGroupStatusV1Beta1 = PodGroupStatusV1Beta1()


class WorkloadV1Alpha3(WorkloadV1Beta1, frozen=True):
    """scheduling.k8s.io/v1alpha3: v1beta1's shape, served by 1.37 releases before the beta
    (k8s.io/api v0.37.0-beta.0) and still by clusters that enable the alpha version."""

    api_version: str = "scheduling.k8s.io/v1alpha3"


class PodGroupV1Alpha3(PodGroupV1Beta1, frozen=True):
    api_version: str = "scheduling.k8s.io/v1alpha3"


def template_ref(pod_group: PodGroupV1Alpha2 | PodGroupV1Beta1) -> tuple[str, str] | None:
    """(workload name, template name) a PodGroup was made from, in either version."""
    if isinstance(pod_group, PodGroupV1Beta1):
        ref = pod_group.spec.workload_ref
        return (ref.workload_name, ref.template_name) if ref is not None else None
    tref = pod_group.spec.pod_group_template_ref
    if tref is None or tref.workload is None:
        return None
    return tref.workload.workload_name, tref.workload.pod_group_template_name


# scheduling.x-k8s.io/v1alpha1 (scheduler-plugins coscheduling)


class CoschedulingPodGroupSpec(KubeStruct, frozen=True):
    min_member: Int32 = 0
    min_resources: dict[str, Quantity] = {}
    schedule_timeout_seconds: Int32 | None = None


class CoschedulingPodGroup(KubeStruct, frozen=True):
    api_version: str = "scheduling.x-k8s.io/v1alpha1"
    kind: str = "PodGroup"
    metadata: ObjectMeta = ObjectMeta()
    spec: CoschedulingPodGroupSpec = CoschedulingPodGroupSpec()


# scheduling.k8s.io/v1


class PriorityClass(KubeStruct, frozen=True):
    api_version: str = "scheduling.k8s.io/v1"
    kind: str = "PriorityClass"
    metadata: ObjectMeta = ObjectMeta()
    value: Int32 = 0
    global_default: bool = False
    preemption_policy: str = ""
    description: str = ""
