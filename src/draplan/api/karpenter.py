"""karpenter.sh/v1 NodePool and NodeClaim: the fields a pool is derived from and a plan is
written as (Karpenter's `pkg/apis/v1/nodepool.go`, `nodeclaim.go`)."""

from __future__ import annotations

from draplan.api.core_v1 import ResourceList, Taint
from draplan.api.meta import Condition, KubeStruct, ObjectMeta

NODEPOOL_LABEL = "karpenter.sh/nodepool"  # on every node and NodeClaim Karpenter launches
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
# NodeSelectorRequirementWithMinValues' operators, as the CRD's enum lists them.
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
WHEN_EMPTY, WHEN_UNDERUTILIZED = "WhenEmpty", "WhenEmptyOrUnderutilized"
CONSOLIDATION_POLICIES = (WHEN_EMPTY, WHEN_UNDERUTILIZED)
# DisruptionReason: what a Budget's `reasons` may name.
DISRUPTION_REASONS = ("Underutilized", "Empty", "Drifted")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class Requirement(KubeStruct, frozen=True):
    """A node selector requirement with Karpenter's minValues."""

    key: str
    operator: str
    values: tuple[str, ...] = ()
    min_values: int | None = None


class NodeClassReference(KubeStruct, frozen=True):
    group: str = ""
    kind: str = ""
    name: str = ""


class NodeClaimTemplateMeta(KubeStruct, frozen=True):
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class NodeClaimTemplateSpec(KubeStruct, frozen=True):
    requirements: tuple[Requirement, ...] = ()
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    node_class_ref: NodeClassReference | None = None
    expire_after: str = ""
    termination_grace_period: str = ""


class NodeClaimTemplate(KubeStruct, frozen=True):
    metadata: NodeClaimTemplateMeta = NodeClaimTemplateMeta()
    spec: NodeClaimTemplateSpec = NodeClaimTemplateSpec()


class Budget(KubeStruct, frozen=True):
    nodes: str = "10%"
    schedule: str = ""
    duration: str = ""
    reasons: tuple[str, ...] = ()


class Disruption(KubeStruct, frozen=True):
    consolidation_policy: str = ""
    consolidate_after: str = ""
    budgets: tuple[Budget, ...] = ()


class NodePoolSpec(KubeStruct, frozen=True):
    template: NodeClaimTemplate = NodeClaimTemplate()
    disruption: Disruption = Disruption()
    limits: ResourceList = {}  # the pool's nodes' capacity summed may not exceed these
    weight: int | None = None  # 1-100: higher pools are tried first


class NodePoolStatus(KubeStruct, frozen=True):
    resources: ResourceList = {}  # the capacity its nodes hold now


class KarpenterNodePool(KubeStruct, frozen=True):
    api_version: str = "karpenter.sh/v1"
    kind: str = "NodePool"
    metadata: ObjectMeta = ObjectMeta()
    spec: NodePoolSpec = NodePoolSpec()
    status: NodePoolStatus = NodePoolStatus()


class NodeClaimResources(KubeStruct, frozen=True):
    requests: ResourceList = {}


class NodeClaimSpec(KubeStruct, frozen=True):
    requirements: tuple[Requirement, ...] = ()
    resources: NodeClaimResources = NodeClaimResources()
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    node_class_ref: NodeClassReference = NodeClassReference()
    expire_after: str = ""
    termination_grace_period: str = ""


class NodeClaimStatus(KubeStruct, frozen=True):
    """What disruption reads: the node it became, its conditions (Initialized,
    Consolidatable, InstanceTerminating) and when a pod last bound to or left it."""

    node_name: str = ""
    provider_id: str = ""
    conditions: tuple[Condition, ...] = ()
    last_pod_event_time: str | None = None


class NodeClaim(KubeStruct, frozen=True):
    api_version: str = "karpenter.sh/v1"
    kind: str = "NodeClaim"
    metadata: ObjectMeta = ObjectMeta()
    spec: NodeClaimSpec = NodeClaimSpec()
    status: NodeClaimStatus = NodeClaimStatus()
