"""core/v1 kinds the planner reads: Node, Pod, PodTemplate, Namespace (the fields that matter)."""

from __future__ import annotations

import msgspec

from draplan.api.meta import Int32, Int64, KubeStruct, LabelSelector, NonNegativeInt64, ObjectMeta
from draplan.api.quantity import Quantity

ResourceList = dict[str, Quantity]


class NodeSelectorRequirement(KubeStruct, frozen=True):
    key: str
    operator: str
    values: tuple[str, ...] = ()


class NodeSelectorTerm(KubeStruct, frozen=True):
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


class NodeSelector(KubeStruct, frozen=True):
    node_selector_terms: tuple[NodeSelectorTerm, ...] = ()


class Taint(KubeStruct, frozen=True):
    key: str
    effect: str
    value: str = ""
    time_added: str | None = None


class Toleration(KubeStruct, frozen=True):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: Int64 | None = None


class NodeSpec(KubeStruct, frozen=True):
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    provider_id: str = msgspec.field(default="", name="providerID")


class ContainerImage(KubeStruct, frozen=True):
    names: tuple[str, ...] = ()
    size_bytes: Int64 = 0


class NodeCondition(KubeStruct, frozen=True):
    """The parts of a node condition the autoscaler reads (Ready, and since when)."""

    type: str
    status: str = ""
    last_transition_time: str | None = None
    reason: str = ""


class NodeStatus(KubeStruct, frozen=True):
    capacity: ResourceList = {}
    allocatable: ResourceList = {}
    images: tuple[ContainerImage, ...] = ()  # read by ImageLocality
    conditions: tuple[NodeCondition, ...] = ()


class Node(KubeStruct, frozen=True):
    api_version: str = "v1"
    kind: str = "Node"
    metadata: ObjectMeta = ObjectMeta()
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()


class PreferredSchedulingTerm(KubeStruct, frozen=True):
    weight: Int32
    preference: NodeSelectorTerm


class NodeAffinity(KubeStruct, frozen=True):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] = ()


class PodAffinityTerm(KubeStruct, frozen=True):
    """core/v1 PodAffinityTerm. `matchLabelKeys` / `mismatchLabelKeys` (KEP-3633) are merged
    into the selector by the API server when the pod is created; the scheduler reads the
    selector."""

    topology_key: str = ""
    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


class WeightedPodAffinityTerm(KubeStruct, frozen=True):
    weight: Int32
    pod_affinity_term: PodAffinityTerm


class PodAffinity(KubeStruct, frozen=True):
    """Also the shape of PodAntiAffinity."""

    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] = ()
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] = ()


class Affinity(KubeStruct, frozen=True):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(KubeStruct, frozen=True):
    """core/v1 TopologySpreadConstraint (KEP-895; minDomains KEP-3022, node inclusion policies
    KEP-3094, matchLabelKeys KEP-3243). Unset policies mean Honor (affinity) and Ignore
    (taints), unset minDomains 1."""

    max_skew: Int32
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()


class ContainerResourceClaim(KubeStruct, frozen=True):
    name: str
    request: str = ""


class ResourceRequirements(KubeStruct, frozen=True):
    requests: ResourceList = {}
    limits: ResourceList = {}
    claims: tuple[ContainerResourceClaim, ...] = ()


class ContainerPort(KubeStruct, frozen=True):
    container_port: Int32
    name: str = ""
    host_port: Int32 = 0
    protocol: str = ""  # the API server defaults it to TCP
    host_ip: str = msgspec.field(default="", name="hostIP")


class Container(KubeStruct, frozen=True):
    name: str
    image: str = ""
    resources: ResourceRequirements = ResourceRequirements()
    ports: tuple[ContainerPort, ...] = ()
    restart_policy: str = ""  # "Always" on an init container: a sidecar (KEP-753)


class PodResourceClaim(KubeStruct, frozen=True):
    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class WorkloadReference(KubeStruct, frozen=True):
    """Pod spec.workloadRef (scheduling.k8s.io/v1alpha1, Kubernetes 1.35)."""

    name: str
    pod_group: str
    pod_group_replica_key: str = ""


class PodSchedulingGroup(KubeStruct, frozen=True):
    """Pod spec.schedulingGroup (scheduling.k8s.io/v1alpha2, Kubernetes 1.36)."""

    pod_group_name: str


class PodSchedulingGate(KubeStruct, frozen=True):
    """Pod spec.schedulingGates[] (KEP-3521): the pod is not scheduled while any remains."""

    name: str


class EmptyDirVolumeSource(KubeStruct, frozen=True):
    medium: str = ""


class HostPathVolumeSource(KubeStruct, frozen=True):
    path: str = ""


class Volume(KubeStruct, frozen=True):
    """The volume's name and whether it is node-local (the sources draplan reads)."""

    name: str
    host_path: HostPathVolumeSource | None = None
    empty_dir: EmptyDirVolumeSource | None = None


class PodSpec(KubeStruct, frozen=True):
    node_name: str = ""
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: ResourceList = {}
    resources: ResourceRequirements | None = None  # pod-level resources (KEP-2837)
    resource_claims: tuple[PodResourceClaim, ...] = ()
    priority: Int32 | None = None
    priority_class_name: str = ""
    scheduler_name: str = ""
    workload_ref: WorkloadReference | None = None
    scheduling_group: PodSchedulingGroup | None = None
    scheduling_gates: tuple[PodSchedulingGate, ...] = ()
    # PreemptLowerPriority or Never; priority admission copies it from the PriorityClass.
    preemption_policy: str = ""
    # Read by Cluster Autoscaler's scale-down: local storage, terminal and terminating pods.
    volumes: tuple[Volume, ...] = ()
    restart_policy: str = ""
    termination_grace_period_seconds: Int64 | None = None


class PodResourceClaimStatus(KubeStruct, frozen=True):
    name: str
    resource_claim_name: str | None = None


class PodCondition(KubeStruct, frozen=True):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_probe_time: str | None = None
    last_transition_time: str | None = None
    observed_generation: NonNegativeInt64 = 0


class ContainerExtendedResourceRequest(KubeStruct, frozen=True):
    """Which request of the extended-resource claim serves a container's resource."""

    container_name: str
    resource_name: str
    request_name: str


class PodExtendedResourceClaimStatus(KubeStruct, frozen=True):
    """Pod status.extendedResourceClaimStatus (KEP-5004): the claim kube-scheduler made for the
    pod's extended resources backed by DRA, and which request serves which container."""

    request_mappings: tuple[ContainerExtendedResourceRequest, ...] = ()
    resource_claim_name: str = ""


class PodStatus(KubeStruct, frozen=True):
    phase: str = ""
    conditions: tuple[PodCondition, ...] = ()
    nominated_node_name: str = ""
    start_time: str | None = None
    resource_claim_statuses: tuple[PodResourceClaimStatus, ...] = ()
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class Pod(KubeStruct, frozen=True):
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()


class PodTemplateSpec(KubeStruct, frozen=True):
    metadata: ObjectMeta = ObjectMeta()
    spec: PodSpec = PodSpec()


class PodTemplate(KubeStruct, frozen=True):
    api_version: str = "v1"
    kind: str = "PodTemplate"
    metadata: ObjectMeta = ObjectMeta()
    template: PodTemplateSpec = PodTemplateSpec()


class Namespace(KubeStruct, frozen=True):
    api_version: str = "v1"
    kind: str = "Namespace"
    metadata: ObjectMeta = ObjectMeta()


class ServiceSpec(KubeStruct, frozen=True):
    selector: dict[str, str] = {}


class Service(KubeStruct, frozen=True):
    """Read for its selector: the pods it selects get PodTopologySpread's default constraints
    (helper.DefaultSelector)."""

    api_version: str = "v1"
    kind: str = "Service"
    metadata: ObjectMeta = ObjectMeta()
    spec: ServiceSpec = ServiceSpec()


class LabelsOnly(KubeStruct, frozen=True):
    """A pod template of which only the labels are read."""

    metadata: ObjectMeta = ObjectMeta()


class ReplicationControllerSpec(KubeStruct, frozen=True):
    selector: dict[str, str] = {}
    template: LabelsOnly | None = None


class ReplicationController(KubeStruct, frozen=True):
    """Read for its selector (defaulted by the API server to the template's labels)."""

    api_version: str = "v1"
    kind: str = "ReplicationController"
    metadata: ObjectMeta = ObjectMeta()
    spec: ReplicationControllerSpec = ReplicationControllerSpec()

    @property
    def selector(self) -> dict[str, str]:
        template = self.spec.template
        return self.spec.selector or (template.metadata.labels if template else {})


class ConfigMap(KubeStruct, frozen=True):
    """Read only to find NodePools kept in a cluster (see draplan.sources.nodepools)."""

    api_version: str = "v1"
    kind: str = "ConfigMap"
    metadata: ObjectMeta = ObjectMeta()
    data: dict[str, str] = {}
    binary_data: dict[str, str] = {}
    immutable: bool | None = None


class ObjectReference(KubeStruct, frozen=True):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    namespace: str = ""
    uid: str = ""


class Binding(KubeStruct, frozen=True):
    """What the scheduler posts to bind a pod to a node (pods/binding)."""

    api_version: str = "v1"
    kind: str = "Binding"
    metadata: ObjectMeta = ObjectMeta()
    target: ObjectReference = ObjectReference()
