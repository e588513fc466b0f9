"""resource.k8s.io/v1alpha3 ResourcePoolStatusRequest (KEP-5677, DRAResourcePoolStatus): a
one-time count of a driver's pools by kube-controller-manager, read so draplan's own pool
metrics can be set beside it. Field names as in k8s.io/api/resource/v1alpha3 (1.37)."""

from __future__ import annotations

from draplan.api.meta import Condition, KubeStruct, ObjectMeta
from draplan.api.quantity import Quantity

GROUP_VERSION = "resource.k8s.io/v1alpha3"
LIMIT_DEFAULT = 100  # ResourcePoolStatusRequestLimitDefault
LIMIT_MAX = 1000  # ResourcePoolStatusRequestLimitMax


class ResourcePoolStatusRequestSpec(KubeStruct, frozen=True):
    driver: str = ""
    pool_name: str | None = None
    limit: int | None = None
    # A slice's own partitionTypeAttribute wins; this names one for slices that declare none.
    default_partition_type_attribute: str | None = None


class PartitionTypeStatus(KubeStruct, frozen=True):
    attribute: str = ""
    type: str = ""
    # Required upstream; optional here so a zero the server sent is written back as a zero.
    total: int | None = None
    allocatable: int | None = None  # more devices of this type the free counters still hold


class ShareableCapacityStatus(KubeStruct, frozen=True):
    name: str = ""
    total: Quantity | None = None
    consumed: Quantity | None = None
    available: Quantity | None = None


class ShareableSummaryStatus(KubeStruct, frozen=True):
    fully_available_devices: int | None = None
    partially_available_devices: int | None = None
    capacity: tuple[ShareableCapacityStatus, ...] = ()


class PoolStatus(KubeStruct, frozen=True):
    """One pool; the counts are unset when `validationError` says the pool is incomplete."""

    driver: str = ""
    pool_name: str = ""
    generation: int = 0
    resource_slice_count: int | None = None
    total_devices: int | None = None
    allocated_devices: int | None = None
    available_devices: int | None = None
    unavailable_devices: int | None = None
    node_name: str | None = None
    validation_error: str | None = None
    partition_summary: tuple[PartitionTypeStatus, ...] = ()
    shareable_summary: ShareableSummaryStatus | None = None


class ResourcePoolStatusRequestStatus(KubeStruct, frozen=True):
    pool_count: int = 0
    pools: tuple[PoolStatus, ...] = ()
    conditions: tuple[Condition, ...] = ()


class ResourcePoolStatusRequest(KubeStruct, frozen=True):
    api_version: str = GROUP_VERSION
    kind: str = "ResourcePoolStatusRequest"
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourcePoolStatusRequestSpec = ResourcePoolStatusRequestSpec()
    status: ResourcePoolStatusRequestStatus | None = None  # set once the controller answered
