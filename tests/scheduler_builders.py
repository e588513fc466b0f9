"""Fluent builders for scheduler tests, in the style of kube-scheduler's
`st.MakePod().Name("p").Req(...).Obj()` (pkg/scheduler/testing/wrappers.go).

Every builder returns typed draplan.api values; `schedule()` runs the scheduler on them and
`snapshot()` captures the ledgers so a test can compare the state before and after.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from draplan.api.core_v1 import (
    Affinity,
    Container,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeSpec,
    NodeStatus,
    Pod,
    PodCondition,
    PodResourceClaim,
    PodSchedulingGroup,
    PodSpec,
    PodStatus,
    ResourceRequirements,
    Taint,
    Toleration,
    WorkloadReference,
)
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.api.quantity import Quantity
from draplan.api.resource_v1 import (
    AllocationResult,
    CELDeviceSelector,
    Device,
    DeviceAllocationResult,
    DeviceAttribute,
    DeviceClaim,
    DeviceClass,
    DeviceClassSpec,
    DeviceConstraint,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSelector,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimSpec,
    ResourceClaimStatus,
    ResourceClaimTemplate,
    ResourceClaimTemplateSpec,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from draplan.api.scheduling import (
    CoschedulingPodGroup,
    CoschedulingPodGroupSpec,
    DisruptionMode,
    Empty,
    GangSchedulingPolicy,
    PodGroupPolicy,
    PodGroupSpecV1Alpha2,
    PodGroupSpecV1Beta1,
    PodGroupTemplate,
    PodGroupTemplateReference,
    PodGroupTemplateV1Beta1,
    PodGroupV1Alpha2,
    PodGroupV1Beta1,
    PriorityClass,
    SchedulingConstraints,
    TopologyConstraint,
    WorkloadPodGroupV1Alpha1,
    WorkloadReferenceV1Beta1,
    WorkloadSpecV1Alpha1,
    WorkloadSpecV1Alpha2,
    WorkloadSpecV1Beta1,
    WorkloadTemplateReference,
    WorkloadV1Alpha1,
    WorkloadV1Alpha2,
    WorkloadV1Beta1,
)
from draplan.cluster.state import ClusterState
from draplan.scheduler import FitReason, PodResult, Scheduler, build_profile
from draplan.scheduler.profile import Profile

DRIVER = "gpu.example.com"
GPU_CLASS = "gpu.example.com"
NUMA = f"{DRIVER}/numa"
NS = "default"
T0 = "2025-01-01T00:00:00Z"
RACK = "example.com/rack"


def q(value: str | int) -> Quantity:
    return Quantity.parse(value)


def resources(values: Mapping[str, str | int]) -> dict[str, Quantity]:
    return {k: q(v) for k, v in values.items()}


# --- nodes -------------------------------------------------------------------------------


class MakeNode:
    """MakeNode().name("n1").capacity(cpu="4").label("zone", "a").taint("k", "v").obj()"""

    def __init__(self) -> None:
        self._name = ""
        self._labels: dict[str, str] = {}
        self._alloc: dict[str, str | int] = {"cpu": "32", "memory": "256Gi", "pods": "110"}
        self._taints: list[Taint] = []
        self._unschedulable = False

    def name(self, name: str) -> MakeNode:
        self._name = name
        return self

    def label(self, key: str, value: str) -> MakeNode:
        self._labels[key] = value
        return self

    def capacity(self, values: Mapping[str, str | int] | None = None, **kw: str | int) -> MakeNode:
        """Allocatable resources (merged over the defaults: 32 cpu, 256Gi, 110 pods)."""
        self._alloc.update(values or {})
        self._alloc.update(kw)
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> MakeNode:
        self._taints.append(Taint(key=key, value=value, effect=effect))
        return self

    def unschedulable(self) -> MakeNode:
        self._unschedulable = True
        return self

    def obj(self) -> Node:
        return Node(
            metadata=ObjectMeta(name=self._name, labels=dict(self._labels)),
            spec=NodeSpec(unschedulable=self._unschedulable, taints=tuple(self._taints)),
            status=NodeStatus(capacity=resources(self._alloc), allocatable=resources(self._alloc)),
        )


# --- pods --------------------------------------------------------------------------------


class MakePod:
    """MakePod().name("p").req(cpu="1").toleration("k").template_claim("gpu", "tmpl").obj()"""

    def __init__(self) -> None:
        self._name = ""
        self._ns = NS
        self._uid = ""
        self._created = T0
        self._labels: dict[str, str] = {}
        self._annotations: dict[str, str] = {}
        self._containers: list[Container] = []
        self._init: list[Container] = []
        self._overhead: dict[str, Quantity] = {}
        self._node_name = ""
        self._selector: dict[str, str] = {}
        self._terms: list[NodeSelectorTerm] = []
        self._tolerations: list[Toleration] = []
        self._claims: list[PodResourceClaim] = []
        self._priority: int | None = None
        self._priority_class = ""
        self._workload_ref: WorkloadReference | None = None
        self._group: PodSchedulingGroup | None = None
        self._preemption_policy = ""
        self._started: str | None = None
        self._nominated = ""
        self._deleting: str | None = None
        self._conditions: list[PodCondition] = []

    def name(self, name: str) -> MakePod:
        self._name = name
        return self

    def namespace(self, ns: str) -> MakePod:
        self._ns = ns
        return self

    def uid(self, uid: str) -> MakePod:
        self._uid = uid
        return self

    def created(self, ts: str) -> MakePod:
        self._created = ts
        return self

    def label(self, key: str, value: str) -> MakePod:
        self._labels[key] = value
        return self

    def annotation(self, key: str, value: str) -> MakePod:
        self._annotations[key] = value
        return self

    def req(self, values: Mapping[str, str | int] | None = None, **kw: str | int) -> MakePod:
        """Add a container with these requests."""
        reqs = {**(values or {}), **kw}
        self._containers.append(
            Container(
                name=f"c{len(self._containers)}",
                resources=ResourceRequirements(requests=resources(reqs)),
            )
        )
        return self

    def init_req(self, values: Mapping[str, str | int] | None = None, **kw: str | int) -> MakePod:
        reqs = {**(values or {}), **kw}
        self._init.append(
            Container(
                name=f"init{len(self._init)}",
                resources=ResourceRequirements(requests=resources(reqs)),
            )
        )
        return self

    def overhead(self, values: Mapping[str, str | int] | None = None, **kw: str | int) -> MakePod:
        self._overhead.update(resources({**(values or {}), **kw}))
        return self

    def node(self, node_name: str) -> MakePod:
        self._node_name = node_name
        return self

    def node_selector(self, key: str, value: str) -> MakePod:
        self._selector[key] = value
        return self

    def affinity_term(
        self,
        *exprs: NodeSelectorRequirement,
        fields: Iterable[NodeSelectorRequirement] = (),
    ) -> MakePod:
        """Add one required node affinity term (terms are ORed, requirements ANDed)."""
        self._terms.append(
            NodeSelectorTerm(match_expressions=tuple(exprs), match_fields=tuple(fields))
        )
        return self

    def toleration(
        self, key: str = "", value: str = "", effect: str = "", operator: str = "Equal"
    ) -> MakePod:
        self._tolerations.append(Toleration(key=key, operator=operator, value=value, effect=effect))
        return self

    def claim(self, name: str, claim_name: str) -> MakePod:
        self._claims.append(PodResourceClaim(name=name, resource_claim_name=claim_name))
        return self

    def template_claim(self, name: str, template: str) -> MakePod:
        self._claims.append(PodResourceClaim(name=name, resource_claim_template_name=template))
        return self

    def priority(self, value: int) -> MakePod:
        self._priority = value
        return self

    def priority_class(self, name: str) -> MakePod:
        self._priority_class = name
        return self

    def preemption_policy(self, policy: str) -> MakePod:
        self._preemption_policy = policy
        return self

    def started(self, ts: str) -> MakePod:
        """status.startTime (when the kubelet started the pod)."""
        self._started = ts
        return self

    def nominated(self, node: str) -> MakePod:
        """status.nominatedNodeName (a pod that preempted and waits for its node)."""
        self._nominated = node
        return self

    def preempted(self, ts: str = T0) -> MakePod:
        """Being deleted by preemption: deletionTimestamp and the DisruptionTarget condition
        the scheduler sets (reason PreemptionByScheduler)."""
        self._deleting = ts
        self._conditions.append(
            PodCondition(type="DisruptionTarget", status="True", reason="PreemptionByScheduler")
        )
        return self

    def workload_ref(self, name: str, pod_group: str, replica_key: str = "") -> MakePod:
        self._workload_ref = WorkloadReference(
            name=name, pod_group=pod_group, pod_group_replica_key=replica_key
        )
        return self

    def scheduling_group(self, pod_group: str) -> MakePod:
        self._group = PodSchedulingGroup(pod_group_name=pod_group)
        return self

    def pod_group(self, name: str) -> MakePod:
        """The coscheduling plugin's pod label."""
        return self.label("scheduling.x-k8s.io/pod-group", name)

    def obj(self) -> Pod:
        affinity = None
        if self._terms:
            affinity = Affinity(
                node_affinity=NodeAffinity(
                    required_during_scheduling_ignored_during_execution=NodeSelector(
                        node_selector_terms=tuple(self._terms)
                    )
                )
            )
        containers = self._containers or [Container(name="c0")]
        return Pod(
            metadata=ObjectMeta(
                name=self._name,
                namespace=self._ns,
                uid=self._uid or f"uid-{self._ns}-{self._name}",
                creation_timestamp=self._created,
                labels=dict(self._labels),
                annotations=dict(self._annotations),
                deletion_timestamp=self._deleting,
            ),
            status=PodStatus(
                conditions=tuple(self._conditions),
                nominated_node_name=self._nominated,
                start_time=self._started,
            ),
            spec=PodSpec(
                node_name=self._node_name,
                node_selector=dict(self._selector),
                affinity=affinity,
                tolerations=tuple(self._tolerations),
                containers=tuple(containers),
                init_containers=tuple(self._init),
                overhead=dict(self._overhead),
                resource_claims=tuple(self._claims),
                priority=self._priority,
                priority_class_name=self._priority_class,
                workload_ref=self._workload_ref,
                scheduling_group=self._group,
                preemption_policy=self._preemption_policy,
            ),
        )


def req(key: str, operator: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key=key, operator=operator, values=tuple(values))


# --- DRA objects -------------------------------------------------------------------------


def device_class(name: str = GPU_CLASS, driver: str = DRIVER) -> DeviceClass:
    return DeviceClass(
        metadata=ObjectMeta(name=name),
        spec=DeviceClassSpec(
            selectors=(
                DeviceSelector(cel=CELDeviceSelector(expression=f'device.driver == "{driver}"')),
            )
        ),
    )


class MakeSlice:
    """MakeSlice().node("n1").gpus(8, numa_groups=2).obj(): one node-local pool of GPUs, each
    with `numa` (int), `model` and a `resource.kubernetes.io/pcieRoot` attribute."""

    def __init__(self) -> None:
        self._node = ""
        self._driver = DRIVER
        self._count = 0
        self._groups = 1
        self._model = "a100"
        self._pool = ""

    def node(self, name: str) -> MakeSlice:
        self._node = name
        return self

    def driver(self, driver: str) -> MakeSlice:
        self._driver = driver
        return self

    def pool(self, name: str) -> MakeSlice:
        self._pool = name
        return self

    def gpus(self, count: int, numa_groups: int = 1) -> MakeSlice:
        self._count = count
        self._groups = numa_groups
        return self

    def model(self, model: str) -> MakeSlice:
        self._model = model
        return self

    def obj(self) -> ResourceSlice:
        per_group = max(1, self._count // self._groups)
        devices = tuple(
            Device(
                name=f"gpu-{i}",
                attributes={
                    "numa": DeviceAttribute(int_=i // per_group),
                    "model": DeviceAttribute(string=self._model),
                    "resource.kubernetes.io/pcieRoot": DeviceAttribute(
                        string=f"pci-{i // per_group}"
                    ),
                },
            )
            for i in range(self._count)
        )
        pool = self._pool or self._node
        return ResourceSlice(
            metadata=ObjectMeta(name=f"{pool}-{self._driver}"),
            spec=ResourceSliceSpec(
                driver=self._driver,
                pool=ResourcePool(name=pool, generation=1, resource_slice_count=1),
                node_name=self._node,
                devices=devices,
            ),
        )


class MakeClaim:
    """MakeClaim().name("c").gpus(2).match_attribute(NUMA).obj() / .template()"""

    def __init__(self) -> None:
        self._name = ""
        self._ns = NS
        self._requests: list[DeviceRequest] = []
        self._constraints: list[DeviceConstraint] = []
        self._status = ResourceClaimStatus()

    def name(self, name: str) -> MakeClaim:
        self._name = name
        return self

    def namespace(self, ns: str) -> MakeClaim:
        self._ns = ns
        return self

    def gpus(
        self, count: int = 1, request: str = "gpu", cls: str = GPU_CLASS, cel: str = ""
    ) -> MakeClaim:
        selectors = (DeviceSelector(cel=CELDeviceSelector(expression=cel)),) if cel else ()
        self._requests.append(
            DeviceRequest(
                name=request,
                exactly=ExactDeviceRequest(device_class_name=cls, count=count, selectors=selectors),
            )
        )
        return self

    def match_attribute(self, attr: str = NUMA) -> MakeClaim:
        self._constraints.append(DeviceConstraint(match_attribute=attr))
        return self

    def allocated(
        self,
        node: str,
        devices: Iterable[str],
        request: str = "gpu",
        pool: str = "",
        reserved_for: Iterable[ResourceClaimConsumerReference] = (),
    ) -> MakeClaim:
        """Already allocated on `node` (nodeSelector on metadata.name, as the allocator sets)."""
        results = tuple(
            DeviceRequestAllocationResult(
                request=request, driver=DRIVER, pool=pool or node, device=d
            )
            for d in devices
        )
        self._status = ResourceClaimStatus(
            allocation=AllocationResult(
                devices=DeviceAllocationResult(results=results),
                node_selector=NodeSelector(
                    node_selector_terms=(
                        NodeSelectorTerm(match_fields=(req("metadata.name", "In", node),)),
                    )
                ),
            ),
            reserved_for=tuple(reserved_for),
        )
        return self

    def _spec(self) -> ResourceClaimSpec:
        return ResourceClaimSpec(
            devices=DeviceClaim(
                requests=tuple(self._requests), constraints=tuple(self._constraints)
            )
        )

    def obj(self) -> ResourceClaim:
        return ResourceClaim(
            metadata=ObjectMeta(name=self._name, namespace=self._ns),
            spec=self._spec(),
            status=self._status,
        )

    def template(self) -> ResourceClaimTemplate:
        return ResourceClaimTemplate(
            metadata=ObjectMeta(name=self._name, namespace=self._ns),
            spec=ResourceClaimTemplateSpec(spec=self._spec()),
        )


def consumer(name: str, uid: str = "") -> ResourceClaimConsumerReference:
    return ResourceClaimConsumerReference(resource="pods", name=name, uid=uid or f"uid-{name}")


# --- gangs and priorities ----------------------------------------------------------------


def workload_v1alpha1(name: str, group: str, min_count: int, ns: str = NS) -> WorkloadV1Alpha1:
    return WorkloadV1Alpha1(
        metadata=ObjectMeta(name=name, namespace=ns),
        spec=WorkloadSpecV1Alpha1(
            pod_groups=(
                WorkloadPodGroupV1Alpha1(
                    name=group,
                    policy=PodGroupPolicy(gang=GangSchedulingPolicy(min_count=min_count)),
                ),
            )
        ),
    )


def _constraints(topology_key: str | None) -> SchedulingConstraints | None:
    if topology_key is None:
        return None
    return SchedulingConstraints(topology=(TopologyConstraint(key=topology_key),))


def workload_v1alpha2(
    name: str, template: str, min_count: int, topology_key: str | None = None, ns: str = NS
) -> WorkloadV1Alpha2:
    return WorkloadV1Alpha2(
        metadata=ObjectMeta(name=name, namespace=ns),
        spec=WorkloadSpecV1Alpha2(
            pod_group_templates=(
                PodGroupTemplate(
                    name=template,
                    scheduling_policy=PodGroupPolicy(
                        gang=GangSchedulingPolicy(min_count=min_count)
                    ),
                    scheduling_constraints=_constraints(topology_key),
                ),
            )
        ),
    )


def podgroup_v1alpha2(
    name: str,
    min_count: int | None = None,
    template: tuple[str, str] | None = None,
    topology_key: str | None = None,
    ns: str = NS,
) -> PodGroupV1Alpha2:
    """A v1alpha2 PodGroup: its own gang policy (min_count), or a Workload template's."""
    ref = None
    if template is not None:
        ref = PodGroupTemplateReference(
            workload=WorkloadTemplateReference(
                workload_name=template[0], pod_group_template_name=template[1]
            )
        )
    policy = (
        PodGroupPolicy(gang=GangSchedulingPolicy(min_count=min_count))
        if min_count is not None
        else PodGroupPolicy()
    )
    return PodGroupV1Alpha2(
        metadata=ObjectMeta(name=name, namespace=ns),
        spec=PodGroupSpecV1Alpha2(
            pod_group_template_ref=ref,
            scheduling_policy=policy,
            scheduling_constraints=_constraints(topology_key),
        ),
    )


def workload_v1beta1(name: str, template: str, min_count: int, ns: str = NS) -> WorkloadV1Beta1:
    return WorkloadV1Beta1(
        metadata=ObjectMeta(name=name, namespace=ns),
        spec=WorkloadSpecV1Beta1(
            pod_group_templates=(
                PodGroupTemplateV1Beta1(
                    name=template,
                    scheduling_policy=PodGroupPolicy(
                        gang=GangSchedulingPolicy(min_count=min_count)
                    ),
                    disruption_mode=DisruptionMode(all=Empty()),
                ),
            )
        ),
    )


def podgroup_v1beta1(
    name: str, min_count: int | None = None, template: tuple[str, str] | None = None, ns: str = NS
) -> PodGroupV1Beta1:
    """A v1beta1 PodGroup: its own gang policy (min_count), or a Workload template's."""
    ref = (
        WorkloadReferenceV1Beta1(workload_name=template[0], template_name=template[1])
        if template
        else None
    )
    policy = (
        PodGroupPolicy(gang=GangSchedulingPolicy(min_count=min_count))
        if min_count is not None
        else PodGroupPolicy()
    )
    return PodGroupV1Beta1(
        metadata=ObjectMeta(name=name, namespace=ns),
        spec=PodGroupSpecV1Beta1(workload_ref=ref, scheduling_policy=policy),
    )


def coscheduling_podgroup(name: str, min_member: int, ns: str = NS) -> CoschedulingPodGroup:
    return CoschedulingPodGroup(
        metadata=ObjectMeta(name=name, namespace=ns),
        spec=CoschedulingPodGroupSpec(min_member=min_member),
    )


def priority_class(name: str, value: int, global_default: bool = False) -> PriorityClass:
    return PriorityClass(metadata=ObjectMeta(name=name), value=value, global_default=global_default)


# --- running -----------------------------------------------------------------------------


@dataclass
class Run:
    state: ClusterState
    results: list[PodResult]

    def by_name(self) -> dict[str, PodResult]:
        return {r.key[1]: r for r in self.results}

    def node_of(self, pod: str) -> str | None:
        return self.by_name()[pod].node

    def placements(self) -> dict[str, str | None]:
        return {r.key[1]: r.node for r in self.results}

    def reason(self, pod: str) -> str:
        """The FailedScheduling message as the filters left it (PostFilter's words aside:
        `message`)."""
        return self._reason(pod).filtered

    def message(self, pod: str) -> str:
        return self._reason(pod).message

    def _reason(self, pod: str) -> FitReason:
        r = self.by_name()[pod].reason
        assert r is not None, f"{pod} has no reason (node {self.by_name()[pod].node})"
        return r


def schedule(objects: Iterable[KubeStruct], profile: Profile | None = None) -> Run:
    state = ClusterState.from_objects(list(objects))
    results = Scheduler(profile or build_profile()).run(state)
    return Run(state, results)


def snapshot(state: ClusterState) -> dict[str, Any]:
    """Everything a placement changes: pods' nodes, claims, device / counter ledgers, and the
    per-node requested resources."""
    return {
        "pods": sorted((k, p.spec.node_name) for k, p in state.pods.items()),
        "claims": sorted((k, c) for k, c in state.claims.items()),
        "exclusive": sorted(state.exclusive.items()),
        "shared": sorted(state.shared.items()),
        "counters": sorted(state.counters.items()),
        "requested": sorted(
            (n, sorted(r.items())) for n, r in state.node_requested.items() if any(r.values())
        ),
    }


def devices_in_use(state: ClusterState) -> list[tuple[str, str, str]]:
    return sorted(state.exclusive.keys())
