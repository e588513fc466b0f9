"""Gang and priority kinds: scheduling.k8s.io Workload/PodGroup/PriorityClass and the
coscheduling PodGroup of scheduler-plugins (scheduling.x-k8s.io)."""

from __future__ import annotations

from draplan.api.meta import Condition, KubeStruct, ObjectMeta
from draplan.api.quantity import Quantity


class GangSchedulingPolicy(KubeStruct, frozen=True):
    min_count: int


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
    priority: int | None = None


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


# scheduling.x-k8s.io/v1alpha1 (scheduler-plugins coscheduling)


class CoschedulingPodGroupSpec(KubeStruct, frozen=True):
    min_member: int = 0
    min_resources: dict[str, Quantity] = {}
    schedule_timeout_seconds: int | None = None


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
    value: int = 0
    global_default: bool = False
    preemption_policy: str = ""
    description: str = ""
