"""resource.k8s.io/v1: DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate."""

from __future__ import annotations

from typing import Any

import msgspec

from draplan.api.core_v1 import NodeSelector
from draplan.api.meta import Condition, Int64, KubeStruct, NonNegativeInt64, ObjectMeta
from draplan.api.quantity import Quantity

GROUP_VERSION = "resource.k8s.io/v1"
# Set on claims generated from a template: the pod's spec.resourceClaims entry they serve.
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
# Set on claims generated for a PodGroup (KEP-5729): the group's spec.resourceClaims entry.
PODGROUP_CLAIM_ANNOTATION = "resource.kubernetes.io/podgroup-claim-name"
# The extended resource a DeviceClass stands for when it names none (DRAExtendedResource).
EXTENDED_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"


class CELDeviceSelector(KubeStruct, frozen=True):
    expression: str


class DeviceSelector(KubeStruct, frozen=True):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(KubeStruct, frozen=True):
    driver: str
    parameters: Any = None


class DeviceClassConfiguration(KubeStruct, frozen=True):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(KubeStruct, frozen=True):
    selectors: tuple[DeviceSelector, ...] = ()
    config: tuple[DeviceClassConfiguration, ...] = ()
    extended_resource_name: str = ""


class DeviceClass(KubeStruct, frozen=True):
    api_version: str = GROUP_VERSION
    kind: str = "DeviceClass"
    metadata: ObjectMeta = ObjectMeta()
    spec: DeviceClassSpec = DeviceClassSpec()


# --- ResourceSlice -------------------------------------------------------------------------


class ResourcePool(KubeStruct, frozen=True):
    name: str
    generation: NonNegativeInt64 = 0
    resource_slice_count: Int64 = 0


class DeviceAttribute(KubeStruct, frozen=True):
    """Exactly one of the typed values is set (validated in draplan.api.validation); the
    lists (`ints` ... `versions`) are KEP-5491's, behind DRAListTypeAttributes."""

    int_: int | None = msgspec.field(default=None, name="int")
    bool_: bool | None = msgspec.field(default=None, name="bool")
    string: str | None = None
    version: str | None = None
    ints: tuple[int, ...] | None = None
    bools: tuple[bool, ...] | None = None
    strings: tuple[str, ...] | None = None
    versions: tuple[str, ...] | None = None

    def value(self) -> int | bool | str | tuple[int | bool | str, ...] | None:
        """The one value that is set; a version stays its string here, a list a tuple."""
        for v in (self.int_, self.bool_, self.string, self.version):
            if v is not None:
                return v
        return self.list_value()

    def list_value(self) -> tuple[int | bool | str, ...] | None:
        for values in (self.ints, self.bools, self.strings, self.versions):
            if values is not None:
                return values
        return None

    def type_name(self) -> str:
        """The element type: "int", "bool", "string" or "version", for a list as well."""
        if self.int_ is not None or self.ints is not None:
            return "int"
        if self.bool_ is not None or self.bools is not None:
            return "bool"
        if self.string is not None or self.strings is not None:
            return "string"
        if self.version is not None or self.versions is not None:
            return "version"
        return ""

    def list_field(self) -> str:
        """The name of the list field that is set ("" for a scalar)."""
        for name, values in (
            ("ints", self.ints),
            ("bools", self.bools),
            ("strings", self.strings),
            ("versions", self.versions),
        ):
            if values is not None:
                return name
        return ""


class CapacityRequestPolicyRange(KubeStruct, frozen=True):
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(KubeStruct, frozen=True):
    default: Quantity | None = None
    valid_values: tuple[Quantity, ...] = ()
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(KubeStruct, frozen=True):
    value: Quantity
    request_policy: CapacityRequestPolicy | None = None


class Counter(KubeStruct, frozen=True):
    value: Quantity


class CounterSet(KubeStruct, frozen=True):
    name: str
    counters: dict[str, Counter] = {}


class DeviceCounterConsumption(KubeStruct, frozen=True):
    counter_set: str
    counters: dict[str, Counter] = {}
    # DRADeviceCompatibilityGroups (alpha, 1.37): devices drawing on one counter set are
    # co-allocated only if their groups intersect; no groups goes only with no groups.
    compatibility_groups: tuple[str, ...] = ()


class DeviceTaint(KubeStruct, frozen=True):
    key: str
    effect: str
    value: str = ""
    time_added: str | None = None


class Device(KubeStruct, frozen=True):
    name: str
    attributes: dict[str, DeviceAttribute] = {}
    capacity: dict[str, DeviceCapacity] = {}
    consumes_counters: tuple[DeviceCounterConsumption, ...] = ()
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: tuple[DeviceTaint, ...] = ()
    binds_to_node: bool | None = None
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    allow_multiple_allocations: bool | None = None


class ResourceSliceSpec(KubeStruct, frozen=True):
    driver: str
    pool: ResourcePool
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()
    # 1.37 (DRAPartitionableDevicesType): the string attribute naming each partition's type,
    # read for ResourcePoolStatusRequest's partitionSummary only.
    partition_type_attribute: str | None = None


class ResourceSlice(KubeStruct, frozen=True, kw_only=True):
    api_version: str = GROUP_VERSION
    kind: str = "ResourceSlice"
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceSliceSpec


# --- DeviceTaintRule (KEP-5055; GA in 1.37) -----------------------------------------------


class DeviceTaintSelector(KubeStruct, frozen=True):
    """Every criterion set must match; an empty selector matches every device."""

    driver: str | None = None
    pool: str | None = None
    device: str | None = None

    def selects(self, driver: str, pool: str, device: str) -> bool:
        return (
            (self.driver is None or self.driver == driver)
            and (self.pool is None or self.pool == pool)
            and (self.device is None or self.device == device)
        )


class DeviceTaintRuleSpec(KubeStruct, frozen=True, kw_only=True):
    device_selector: DeviceTaintSelector | None = None  # absent: no device is tainted
    taint: DeviceTaint


class DeviceTaintRuleStatus(KubeStruct, frozen=True):
    conditions: tuple[Condition, ...] = ()


class DeviceTaintRule(KubeStruct, frozen=True, kw_only=True):
    api_version: str = GROUP_VERSION
    kind: str = "DeviceTaintRule"
    metadata: ObjectMeta = ObjectMeta()
    spec: DeviceTaintRuleSpec
    status: DeviceTaintRuleStatus = DeviceTaintRuleStatus()


# --- ResourceClaim -------------------------------------------------------------------------


class DeviceToleration(KubeStruct, frozen=True):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: Int64 | None = None


class CapacityRequirements(KubeStruct, frozen=True):
    requests: dict[str, Quantity] = {}


class ExactDeviceRequest(KubeStruct, frozen=True):
    device_class_name: str = ""
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: str = "ExactCount"
    count: Int64 = 0
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(KubeStruct, frozen=True):
    name: str
    device_class_name: str = ""
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: str = "ExactCount"
    count: Int64 = 0
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None


class DeviceRequest(KubeStruct, frozen=True):
    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()


class DeviceConstraint(KubeStruct, frozen=True):
    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(KubeStruct, frozen=True):
    requests: tuple[str, ...] = ()
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(KubeStruct, frozen=True):
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceClaimConfiguration, ...] = ()


class ResourceClaimSpec(KubeStruct, frozen=True):
    devices: DeviceClaim = DeviceClaim()


class DeviceRequestAllocationResult(KubeStruct, frozen=True):
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, Quantity] = {}


class DeviceAllocationConfiguration(KubeStruct, frozen=True):
    source: str
    requests: tuple[str, ...] = ()
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(KubeStruct, frozen=True):
    results: tuple[DeviceRequestAllocationResult, ...] = ()
    config: tuple[DeviceAllocationConfiguration, ...] = ()


class AllocationResult(KubeStruct, frozen=True):
    devices: DeviceAllocationResult = DeviceAllocationResult()
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(KubeStruct, frozen=True):
    resource: str
    name: str
    uid: str = ""
    api_group: str = ""


class ResourceClaimStatus(KubeStruct, frozen=True):
    allocation: AllocationResult | None = None
    reserved_for: tuple[ResourceClaimConsumerReference, ...] = ()


class ResourceClaim(KubeStruct, frozen=True):
    api_version: str = GROUP_VERSION
    kind: str = "ResourceClaim"
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceClaimSpec = ResourceClaimSpec()
    status: ResourceClaimStatus = ResourceClaimStatus()


class ResourceClaimTemplateSpec(KubeStruct, frozen=True):
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceClaimSpec = ResourceClaimSpec()


class ResourceClaimTemplate(KubeStruct, frozen=True):
    api_version: str = GROUP_VERSION
    kind: str = "ResourceClaimTemplate"
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceClaimTemplateSpec = ResourceClaimTemplateSpec()
