"""The pre-DRA view (device-plugin world): every accelerator a whole device counted by an
integer per DeviceClass. Planning on this lossy view reproduces today's failure; the real
scheduler then judges the plan."""

from __future__ import annotations

from collections import Counter

import msgspec

from draplan.api.core_v1 import Container, Node, Pod
from draplan.api.draplan_v1alpha1 import NodePool, NodeTemplate, NodeTemplateMeta
from draplan.api.meta import KubeStruct
from draplan.api.quantity import Quantity
from draplan.api.resource_v1 import EXTENDED_RESOURCE_PREFIX as EXTENDED_PREFIX
from draplan.api.resource_v1 import DeviceClass, ResourceClaim
from draplan.api.scheduling import (
    CoschedulingPodGroup,
    PodGroupV1Alpha2,
    PodGroupV1Beta1,
    WorkloadV1Alpha1,
    WorkloadV1Alpha2,
    WorkloadV1Beta1,
)
from draplan.autoscaler.templates import make_node
from draplan.cel import CelError, compile_selector
from draplan.cluster.accelerators import physical_ids
from draplan.cluster.devices import DeviceView, device_views
from draplan.cluster.state import ClusterState
from draplan.scheduler.claims import ClaimNotFound, pod_claims
from draplan.scheduler.gangs import COSCHEDULING_LABEL, KUEUE_GROUP_LABEL

GANG_KINDS = (
    WorkloadV1Alpha1,
    WorkloadV1Alpha2,
    WorkloadV1Beta1,
    PodGroupV1Alpha2,
    PodGroupV1Beta1,
    CoschedulingPodGroup,
)


def _matches(dc: DeviceClass, view: DeviceView) -> bool:
    try:
        return all(
            compile_selector(s.cel.expression).matches(view.cel)
            for s in dc.spec.selectors
            if s.cel is not None
        )
    except CelError:
        return False


def physical_counts(classes: dict[str, DeviceClass], views: list[DeviceView]) -> Counter[str]:
    """Devices per class as a device plugin would count them: a partitionable GPU (its counter
    sets, `accelerators.physical_ids`) counts once however many partitions it could be cut
    into."""
    counts: Counter[str] = Counter()
    ids = physical_ids(views)
    for name, dc in sorted(classes.items()):
        physical = {ids[v] for v in views if _matches(dc, v)}
        if physical:
            counts[name] = len(physical)
    return counts


def _with_extended(node_alloc: dict[str, Quantity], counts: Counter[str]) -> dict[str, Quantity]:
    out = dict(node_alloc)
    for cls, n in counts.items():
        out[EXTENDED_PREFIX + cls] = Quantity.parse(str(n))
    return out


def _node_views(state: ClusterState, node: Node) -> list[DeviceView]:
    return [
        v
        for p in state.pools_for_node(node)
        for v in p.devices
        if v.node_name == node.metadata.name
    ]


def claim_counts(claims: list[ResourceClaim], all_count: dict[str, int]) -> Counter[str]:
    """Whole devices per class a claim would ask a device plugin for."""
    counts: Counter[str] = Counter()
    for claim in claims:
        for req in claim.spec.devices.requests:
            spec = (
                req.exactly
                if req.exactly is not None
                else (req.first_available[0] if req.first_available else None)
            )
            if spec is None:
                continue
            if spec.allocation_mode == "All":
                counts[spec.device_class_name] += all_count.get(spec.device_class_name, 1)
            else:
                counts[spec.device_class_name] += spec.count or 1
    return counts


def _lossy_pod(state: ClusterState, pod: Pod, all_count: dict[str, int]) -> Pod:
    try:
        claims = pod_claims(state, pod)
    except ClaimNotFound:
        claims = []
    counts = claim_counts(claims, all_count)
    extra = {EXTENDED_PREFIX + c: Quantity.parse(str(n)) for c, n in counts.items()}
    containers = list(pod.spec.containers) or [Container(name="main")]
    first = containers[0]
    res = msgspec.structs.replace(
        first.resources, requests={**first.resources.requests, **extra}, claims=()
    )
    containers[0] = msgspec.structs.replace(first, resources=res)
    rest = [
        msgspec.structs.replace(c, resources=msgspec.structs.replace(c.resources, claims=()))
        for c in containers[1:]
    ]
    labels = {
        k: v
        for k, v in pod.metadata.labels.items()
        if k not in (COSCHEDULING_LABEL, KUEUE_GROUP_LABEL)
    }
    spec = msgspec.structs.replace(
        pod.spec,
        containers=(containers[0], *rest),
        resource_claims=(),
        workload_ref=None,
        scheduling_group=None,
    )
    meta = msgspec.structs.replace(pod.metadata, labels=labels)
    return msgspec.structs.replace(
        pod,
        metadata=meta,
        spec=spec,
        status=msgspec.structs.replace(pod.status, resource_claim_statuses=()),
    )


def lossy_pool(state: ClusterState, pool: NodePool) -> NodePool:
    """The NodePool as a device-plugin autoscaler sees it: counts, no slices."""
    sample = make_node(state, pool, "legacy-template", {})
    views = [v for rs in sample.slices for v in device_views(rs)]
    counts = physical_counts(state.device_classes, views)
    alloc = sample.node.status.allocatable or sample.node.status.capacity
    status = msgspec.structs.replace(sample.node.status, allocatable=_with_extended(alloc, counts))
    labels = {
        k: v for k, v in sample.node.metadata.labels.items() if k not in ("kubernetes.io/hostname",)
    }
    template = NodeTemplate(
        metadata=NodeTemplateMeta(labels=labels, annotations=sample.node.metadata.annotations),
        spec=sample.node.spec,
        status=status,
    )
    spec = msgspec.structs.replace(pool.spec, template=template, resource_slices=(), from_node="")
    return msgspec.structs.replace(pool, spec=spec)


def lossy_state(state: ClusterState) -> ClusterState:
    """A new ClusterState in the device-plugin view: no slices, no claims, no gangs."""
    all_count: dict[str, int] = {}
    node_counts: dict[str, Counter[str]] = {}
    for name, node in state.nodes.items():
        node_counts[name] = physical_counts(state.device_classes, _node_views(state, node))
    pools = {name: lossy_pool(state, p) for name, p in state.node_pools.items()}
    for lossy_p in pools.values():
        assert lossy_p.spec.template is not None
        alloc = lossy_p.spec.template.status.allocatable
        for key, q in alloc.items():
            if key.startswith(EXTENDED_PREFIX):
                cls = key[len(EXTENDED_PREFIX) :]
                all_count[cls] = max(all_count.get(cls, 0), q.value())
    for counts in node_counts.values():
        for cls, n in counts.items():
            all_count[cls] = max(all_count.get(cls, 0), n)
    objects: list[KubeStruct] = []
    for name, node in sorted(state.nodes.items()):
        alloc = node.status.allocatable or node.status.capacity
        status = msgspec.structs.replace(
            node.status, allocatable=_with_extended(alloc, node_counts[name])
        )
        objects.append(msgspec.structs.replace(node, status=status))
    for _, pod in sorted(state.pods.items()):
        objects.append(_lossy_pod(state, pod, all_count))
    objects.extend(pools[n] for n in sorted(pools))
    objects.extend(state.device_classes[n] for n in sorted(state.device_classes))
    objects.extend(o for o in state.others if not isinstance(o, GANG_KINDS))
    objects.extend(state.pod_templates[k] for k in sorted(state.pod_templates))
    lossy = ClusterState.from_objects(objects, state.features)
    lossy.namespaces = dict(state.namespaces)
    return lossy
