"""Extended resources backed by DRA (KEP-5004, DRAExtendedResource, GA in 1.37).

A pod asking `nvidia.com/gpu: 2` on a node whose allocatable lacks that resource (no device
plugin) gets the devices through DRA instead: every DeviceClass serves its implicit name
`deviceclass.resource.kubernetes.io/<class>`, and the name in its `spec.extendedResourceName`
too (the newest class wins a name several claim, ties by class name). The scheduler allocates
one claim per pod, with one request per container and resource, named as upstream names them.
"""

from __future__ import annotations

from collections.abc import Collection

from draplan.api.core_v1 import (
    ContainerExtendedResourceRequest,
    Node,
    Pod,
    PodExtendedResourceClaimStatus,
)
from draplan.api.meta import ObjectMeta, OwnerReference
from draplan.api.resource_v1 import (
    DeviceClaim,
    DeviceClass,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
)
from draplan.cluster.podresources import Resources, node_allocatable
from draplan.cluster.state import ClusterState
from draplan.scheduler.claims import MAX_BASE, generated_suffix

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


def _newer(a: DeviceClass, b: DeviceClass) -> bool:
    """Whether `a` wins a name over `b`: created later, or at once and named first."""
    ta, tb = a.metadata.creation_timestamp or "", b.metadata.creation_timestamp or ""
    return a.metadata.name < b.metadata.name if ta == tb else ta > tb


def class_mapping(state: ClusterState) -> dict[str, str]:
    """Extended resource name -> the DeviceClass that serves it."""
    chosen: dict[str, DeviceClass] = {}
    for name in sorted(state.device_classes):
        dc = state.device_classes[name]
        chosen[IMPLICIT_PREFIX + name] = dc
        explicit = dc.spec.extended_resource_name
        if explicit:
            have = chosen.get(explicit)
            if have is None or _newer(dc, have):
                chosen[explicit] = dc
    return {res: dc.metadata.name for res, dc in chosen.items()}


def mapped_requests(pod: Pod, mapping: dict[str, str]) -> set[str]:
    """The pod's extended resources that some DeviceClass serves."""
    return {
        name
        for c in (*pod.spec.init_containers, *pod.spec.containers)
        for name, q in c.resources.requests.items()
        if q.milli_value() > 0 and name in mapping
    }


def needs_dra(node: Node, resource: str) -> bool:
    """No device plugin on the node serves it: DRA does (upstream's allocatable == 0)."""
    return node_allocatable(node).get(resource, 0) <= 0


def node_resource_requests(requests: Resources, served: Collection[str], node: Node) -> Resources:
    """What NodeResourcesFit checks against `node`: the pod's requests but the extended
    resources a DeviceClass serves (`served`) where no device plugin serves them, which
    DynamicResources allocates as devices instead."""
    if not served:
        return requests
    return {k: v for k, v in requests.items() if k not in served or not needs_dra(node, k)}


def _container_requests(pod: Pod) -> list[tuple[str, str, str, int]]:
    """(container, resource, request name, whole count) of each container's requests, named
    `container-<i>-request-<j>` as upstream names the special claim's requests."""
    out = []
    for i, container in enumerate((*pod.spec.init_containers, *pod.spec.containers)):
        names = sorted(container.resources.requests)
        for j, name in enumerate(names):
            count = container.resources.requests[name].milli_value() // 1000
            out.append((container.name, name, f"container-{i}-request-{j}", count))
    return out


def claim_status(pod: Pod, claim: ResourceClaim) -> PodExtendedResourceClaimStatus:
    """The pod's status.extendedResourceClaimStatus for its special `claim`: which request
    serves which container's resource."""
    served = {r.name for r in claim.spec.devices.requests}
    return PodExtendedResourceClaimStatus(
        request_mappings=tuple(
            ContainerExtendedResourceRequest(
                container_name=container, resource_name=resource, request_name=request
            )
            for container, resource, request, _ in _container_requests(pod)
            if request in served
        ),
        resource_claim_name=claim.metadata.name,
    )


def extended_claim(
    pod: Pod, node: Node, mapping: dict[str, str], served: set[str]
) -> ResourceClaim | None:
    """The claim the scheduler allocates for `served` resources on `node`, None if the node's
    device plugins serve them all. Requests are `container-<i>-request-<j>`: i over init
    containers then containers, j the resource's index among the container's sorted requests."""
    wanted = {r for r in served if needs_dra(node, r)}
    if not wanted:
        return None
    requests = []
    for _, name, request, count in _container_requests(pod):
        if name in wanted and count > 0:
            exact = ExactDeviceRequest(device_class_name=mapping[name], count=count)
            requests.append(DeviceRequest(name=request, exactly=exact))
    requests.sort(key=lambda r: r.name)
    owner = OwnerReference(
        api_version="v1", kind="Pod", name=pod.metadata.name, uid=pod.metadata.uid, controller=True
    )
    meta = ObjectMeta(
        # generateName `<pod>-extended-resources-`, its suffix derived from the pod.
        name=f"{pod.metadata.name}-extended-resources-"[: MAX_BASE + 1]
        + generated_suffix(f"{pod.metadata.namespace}/{pod.metadata.name}/extended-resources"),
        namespace=pod.metadata.namespace,
        annotations={CLAIM_ANNOTATION: "true"},
        owner_references=(owner,),
    )
    return ResourceClaim(
        metadata=meta, spec=ResourceClaimSpec(devices=DeviceClaim(requests=tuple(requests)))
    )
