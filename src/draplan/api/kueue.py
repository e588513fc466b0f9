"""Kueue's Workload (kueue.x-k8s.io v1beta1 and v1beta2): the admission state of a job that
Kueue holds back with the `kueue.x-k8s.io/admission` scheduling gate (the fields that say
whether, and why not, it is admitted)."""

from __future__ import annotations

from draplan.api.meta import Condition, Int32, KubeStruct, ObjectMeta

GROUP = "kueue.x-k8s.io"


class KueuePodSet(KubeStruct, frozen=True):
    name: str  # defaulted to "main" by the API server
    count: Int32 = 1


class KueueWorkloadSpec(KubeStruct, frozen=True):
    queue_name: str = ""
    pod_sets: tuple[KueuePodSet, ...] = ()
    active: bool | None = None  # nil means true (Kueue's default)


class PodSetAssignment(KubeStruct, frozen=True):
    name: str  # defaulted to "main" by the API server
    flavors: dict[str, str] = {}


class Admission(KubeStruct, frozen=True):
    cluster_queue: str = ""
    pod_set_assignments: tuple[PodSetAssignment, ...] = ()


class KueueWorkloadStatus(KubeStruct, frozen=True):
    admission: Admission | None = None
    conditions: tuple[Condition, ...] = ()


class KueueWorkload(KubeStruct, frozen=True):
    """kueue.x-k8s.io/v1beta2 Workload; v1beta1 has the same shape for these fields."""

    api_version: str = f"{GROUP}/v1beta2"
    kind: str = "Workload"
    metadata: ObjectMeta = ObjectMeta()
    spec: KueueWorkloadSpec = KueueWorkloadSpec()
    status: KueueWorkloadStatus = KueueWorkloadStatus()


class KueueWorkloadV1Beta1(KueueWorkload, frozen=True):
    api_version: str = f"{GROUP}/v1beta1"
