"""autoscaling.x-k8s.io/v1 ProvisioningRequest (Cluster Autoscaler's CRD)."""

from __future__ import annotations

from draplan.api.meta import Condition, Int32, KubeStruct, ObjectMeta

CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
BEST_EFFORT_ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"


class PodTemplateRef(KubeStruct, frozen=True):
    name: str


class PodSet(KubeStruct, frozen=True):
    pod_template_ref: PodTemplateRef
    count: Int32


class ProvisioningRequestSpec(KubeStruct, frozen=True):
    pod_sets: tuple[PodSet, ...] = ()
    provisioning_class_name: str = ""
    parameters: dict[str, str] = {}


class ProvisioningRequestStatus(KubeStruct, frozen=True):
    conditions: tuple[Condition, ...] = ()
    provisioning_class_details: dict[str, str] = {}


class ProvisioningRequest(KubeStruct, frozen=True):
    api_version: str = "autoscaling.x-k8s.io/v1"
    kind: str = "ProvisioningRequest"
    metadata: ObjectMeta = ObjectMeta()
    spec: ProvisioningRequestSpec = ProvisioningRequestSpec()
    status: ProvisioningRequestStatus = ProvisioningRequestStatus()
