"""Stranded GPUs in a simulation: `draplan.audit.stranded`, the measure `draplan metrics` uses,
against the typical request shapes of the whole simulated workload (the pods the cluster starts
with and those of every job), as the FGD paper measures a trace. On a state whose pods have
those typical shapes, the simulator and `draplan metrics` give the same stranded GPUs. The
accelerators device plugins serve are measured as `draplan metrics` measures them
(`draplan.audit.plugin_gpus`), against the typical device-plugin shapes of that workload.
"""

from __future__ import annotations

from collections.abc import Sequence

from draplan.api.core_v1 import Node, Pod
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.api.resource_v1 import ResourceClaim, ResourceClaimTemplate
from draplan.audit.plugin_gpus import PluginNode, measure, plugin_shape, plugin_units
from draplan.audit.stranded import (
    NodeStranded,
    RequestShape,
    accelerator_classes,
    pod_shape,
    typical,
)
from draplan.audit.stranded import StrandedMeter as Meter
from draplan.autoscaler.templates import NewNode, NodeNamer, make_node
from draplan.cluster.devices import DeviceView, device_views
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState, key_of
from draplan.sim.workloads import Job


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


def _templates(state: ClusterState) -> list[NewNode]:
    """One template node per NodePool."""
    out = []
    for _, pool in sorted(state.node_pools.items()):
        name, labels = NodeNamer(state, pool).next()
        out.append(make_node(state, pool, name, labels))
    return out


def _views(state: ClusterState, templates: list[NewNode]) -> list[DeviceView]:
    """The devices of every slice and of the template nodes."""
    out = [view for name in sorted(state.slices.keys()) for view in state.slice_devices(name)]
    for new in templates:
        for rs in new.slices:
            out.extend(device_views(rs))
    return out


def _plugin_shapes(
    state: ClusterState, pods: list[Pod], templates: list[NewNode]
) -> list[RequestShape]:
    """The device-plugin shapes of `pods`: of a bound pod where its node's device plugin serves
    the resource (elsewhere a DeviceClass does), of another where some node's or template's
    does."""
    units = {name: plugin_units(node) for name, node in state.nodes.items()}
    served = {r for u in units.values() for r in u.devices}
    served.update(r for new in templates for r in plugin_units(new.node).devices)
    shapes = []
    for pod in pods:
        shape = plugin_shape(pod, state.features)
        if shape is None:
            continue
        here = units.get(pod.spec.node_name) if pod.spec.node_name else None
        if shape.device_class in (here.devices if here is not None else served):
            shapes.append(shape)
    return shapes


class StrandedMeter:
    """A node's GPUs, their free fractions and its stranded GPUs under the current ledgers."""

    def __init__(self, state: ClusterState, jobs: Sequence[Job]) -> None:
        objects: dict[tuple[str, str, str], KubeStruct] = {}
        for (ns, name), claim in state.claims.items():
            objects[("ResourceClaim", ns, name)] = claim
        for (ns, name), tmpl in state.claim_templates.items():
            objects[("ResourceClaimTemplate", ns, name)] = tmpl
        pods = [pod for _, pod in sorted(state.pods.items()) if not is_terminal(pod)]
        for job in jobs:
            for obj in job.objects:
                if isinstance(obj, Pod):
                    pods.append(obj)
                elif isinstance(obj, (ResourceClaim, ResourceClaimTemplate)):
                    objects[(obj.kind, *key_of(obj))] = obj
        templates = _templates(state)
        classes = accelerator_classes(state.device_classes, _views(state, templates))
        shapes = []
        for pod in pods:
            shape = pod_shape(pod, _pod_claims(pod, objects), classes)
            if shape is not None:
                shapes.append(shape)
        self.meter = Meter(classes, typical(shapes))
        self.plugin_shapes = tuple(typical(_plugin_shapes(state, pods, templates)))

    def node(self, state: ClusterState, node: Node) -> NodeStranded:
        return self.meter.node(state, node)

    def plugins(self, state: ClusterState, node: Node) -> PluginNode | None:
        """The node's device-plugin accelerators (None: it has none)."""
        units = plugin_units(node)
        return measure(state, node, units, self.plugin_shapes) if units else None
