"""Stranded accelerator capacity in a simulation: the FGD fragmentation measure
(`draplan.cluster.fragmentation`, as the audit metrics and the FGD score use it) against the
typical request shapes of the whole simulated workload, as the FGD paper measures a trace.

Per node and measured device class, F_n(M) is the free capacity the typical shapes could not
use; it is turned into device-equivalents (a node's F_n times its devices over its total
capacity), so shared GPUs (capacity `gpuMilli`) and whole GPUs add up as GPUs. A class is
measured when a pod of the workload asks for it and its devices (on the nodes and the NodePool
templates) are accelerators without counter sets: FGD has no model of partitions that share
counters (MIG), so their capacity is not called stranded. Classes are taken to select disjoint
devices, as those of the demo and of openb do. As in the audit metrics, pods that ask nothing
of a class are left out of its shapes: the FGD paper keeps CPU-only pods in M, which counts
every free GPU as a fragment for them; here that capacity is idle, not stranded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from draplan.api.core_v1 import Node, Pod
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.api.resource_v1 import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
)
from draplan.autoscaler.templates import NodeNamer, add_new_node, make_node
from draplan.cluster.devices import DeviceView
from draplan.cluster.fragmentation import (
    DeviceKinds,
    FragmentationCache,
    Shape,
    Workload,
    node_devices,
    node_stranding,
    pod_shape,
)
from draplan.cluster.state import ClusterState, key_of
from draplan.sim.workloads import Job

# Drivers named for their accelerator, as DRA drivers are (gpu.nvidia.com, gpu.amd.com,
# gpu.intel.com, tpu.google.com, ...): their devices are what the simulation counts as GPUs.
# NICs and other devices of a node are not.
ACCELERATOR_PREFIXES = ("gpu.", "tpu.", "neuron.", "gaudi.")


def is_accelerator(driver: str) -> bool:
    return driver.startswith(ACCELERATOR_PREFIXES)


@dataclass(frozen=True)
class _Measured:
    device_class: DeviceClass
    unit: str  # the shared capacity measured; "" = whole devices
    measure: FragmentationCache


def _pod_claims(pod: Pod, objects: dict[tuple[str, str, str], KubeStruct]) -> list[ResourceClaim]:
    """The claims a pod names or will get from its templates (among `objects`)."""
    ns = pod.metadata.namespace
    out = []
    for ref in pod.spec.resource_claims:
        if ref.resource_claim_name is not None:
            claim = objects.get(("ResourceClaim", ns, ref.resource_claim_name))
            if isinstance(claim, ResourceClaim):
                out.append(claim)
        elif ref.resource_claim_template_name is not None:
            tmpl = objects.get(("ResourceClaimTemplate", ns, ref.resource_claim_template_name))
            if isinstance(tmpl, ResourceClaimTemplate):
                out.append(ResourceClaim(metadata=ObjectMeta(namespace=ns), spec=tmpl.spec.spec))
    return out


def _class_views(state: ClusterState) -> dict[str, list[DeviceView]]:
    """Per device class, the devices of every node and of one template node per NodePool."""
    out: dict[str, list[DeviceView]] = {}
    with state.forked():
        for _, pool in sorted(state.node_pools.items()):
            name, labels = NodeNamer(state, pool).next()
            add_new_node(state, make_node(state, pool, name, labels))
        for cname, dc in sorted(state.device_classes.items()):
            out[cname] = [
                view
                for _, node in sorted(state.nodes.items())
                for view, _ in node_devices(state, node, dc, "")
            ]
    return out


class StrandedMeter:
    """Stranded device-equivalents of one node under the current ledgers."""

    def __init__(self, state: ClusterState, jobs: Sequence[Job]) -> None:
        objects: dict[tuple[str, str, str], KubeStruct] = {}
        for (ns, name), claim in state.claims.items():
            objects[("ResourceClaim", ns, name)] = claim
        for (ns, name), tmpl in state.claim_templates.items():
            objects[("ResourceClaimTemplate", ns, name)] = tmpl
        pods: list[Pod] = []
        for job in jobs:
            for obj in job.objects:
                if isinstance(obj, Pod):
                    pods.append(obj)
                elif isinstance(obj, (ResourceClaim, ResourceClaimTemplate)):
                    objects[(obj.kind, *key_of(obj))] = obj
        claims = [(pod, _pod_claims(pod, objects)) for pod in pods]
        self.classes: list[_Measured] = []
        for cname, views in _class_views(state).items():
            if not views or any(not is_accelerator(v.driver) or v.consumes for v in views):
                continue
            unit = min((c for v in views if v.multi for c in v.capacity), default="")
            kinds = DeviceKinds(views)
            shapes: list[Shape] = []
            for pod, pod_claims in claims:
                if not pod_claims:
                    continue
                shape = pod_shape(pod, pod_claims, device_class=cname, capacity=unit, kinds=kinds)
                if shape is not None and shape.device_count:
                    shapes.append(shape)
            if shapes:
                measure = FragmentationCache(Workload.typical(shapes))
                self.classes.append(_Measured(state.device_classes[cname], unit, measure))

    def node(self, state: ClusterState, node: Node) -> float:
        """The node's stranded capacity, in devices."""
        if not self.classes:
            return 0.0
        out = 0.0
        for m in self.classes:
            measured = node_stranding(state, node, m.device_class, m.unit, m.measure)
            if measured is not None:
                out += measured.fragmentation * len(measured.devices) / measured.units
        return out
