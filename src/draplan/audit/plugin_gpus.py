"""Accelerators a device plugin serves (`nvidia.com/gpu`, `amd.com/gpu`, `habana.ai/gaudi`,
`aws.amazon.com/neuron`, `google.com/tpu`, ...: `cluster.accelerators.is_accelerator_resource`)
as `draplan metrics` counts them beside the DRA drivers' GPUs.

A node has such accelerators when its status.allocatable lists the resource: the kubelet's
device manager advertises what its plugins registered, one unit per device, and
NodeResourcesFit admits a pod while its requests fit what is left. A resource served by a
DeviceClass (DRA-backed extended resources, KEP-5004) is not in allocatable: its devices are
the DRA drivers' and counted with them, never here too. A unit is in use when the node's pods
request it.

Some plugins advertise one device under several names or in parts: the Neuron device plugin
registers `aws.amazon.com/neurondevice` and, for compatibility, `aws.amazon.com/neuron` for the
same devices, and `aws.amazon.com/neuroncore` for their cores (AWS Neuron documentation,
"Neuron Device Plugin", containers/tutorials/k8s-neuron-device-plugin). Such devices are
counted once, under `neuron`, and the cores pods hold put the devices they fill in use (cores
per device: the node's cores over its devices). Partitions advertised as resources of their
own (`cluster.accelerators.is_partition_resource`: NVIDIA's MIG profiles under the mixed
strategy, `nvidia.com/mig-1g.10gb`; time-sliced replicas renamed `nvidia.com/gpu.shared`) are
counted as partitions only: the GPUs they are cut from are not in allocatable. So are replicas
that time-slicing or MPS leave named `nvidia.com/gpu`: GPU feature discovery labels the node
`<resource>.replicas` with the replicas per device when above 1 (NVIDIA/k8s-device-plugin,
internal/lm/resource.go, `resourceLabeler.replicasLabel`), and allocatable then counts replicas.

Stranded units are `audit.stranded`'s FGD measure with the device plugin's shape: a pod asking
`count` whole devices of one resource, with its CPU and memory. F_n(m) is every free device of
the node when m does not fit what is left of it (too few free devices of its resource, or too
little CPU or memory), else the free devices of other resources (m cannot use them); F_n is the
mean over the typical shapes that could run on the node were it empty, weighted by their pods.
Pods asking partitions are not shapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import ceil

from draplan.api.core_v1 import Node, Pod
from draplan.api.features import FeatureGates
from draplan.audit.stranded import RequestShape, typical
from draplan.cluster.accelerators import is_accelerator_resource, is_partition_resource
from draplan.cluster.podresources import Resources, is_terminal, node_allocatable, pod_requests
from draplan.cluster.state import ClusterState, ObjectKey

MILLI = 1000
NEURON = "aws.amazon.com/neuron"
SAME_DEVICES = {"aws.amazon.com/neurondevice": NEURON}  # another name: the devices of
PARTS_OF = {"aws.amazon.com/neuroncore": NEURON}  # parts: the devices they are cores of

Weighted = Sequence[tuple[RequestShape, float]]


def is_part(resource: str) -> bool:
    return resource in PARTS_OF or is_partition_resource(resource)


def device_resource(resource: str) -> str:
    """The name the devices a resource asks for are counted under."""
    return SAME_DEVICES.get(resource, resource)


@dataclass(frozen=True)
class PluginUnits:
    """What a node's device plugins advertise: devices per resource (aliases merged), and
    partitions per resource."""

    devices: Mapping[str, int]
    parts: Mapping[str, int]

    def __bool__(self) -> bool:
        return bool(self.devices or self.parts)


@dataclass(frozen=True)
class PluginNode:
    """One node's device-plugin accelerators: per resource the devices, those in use (held
    whole or in part) and allocated (in devices); per partition resource its units and those in
    use; the devices stranded, and each resource's shapes' part of them."""

    units: PluginUnits
    in_use: Mapping[str, int]
    allocated: Mapping[str, float]
    parts_used: Mapping[str, int]
    stranded: float
    by_resource: Mapping[str, float]

    def free(self, resource: str) -> int:
        return self.units.devices[resource] - self.in_use[resource]


def replicas(node: Node, resource: str) -> int:
    """The replicas per device a device plugin shares `resource`'s devices into, as GPU
    feature discovery labels them (1: not shared, or not labelled)."""
    value = node.metadata.labels.get(f"{resource}.replicas", "")
    return int(value) if value.isascii() and value.isdigit() else 1


def plugin_units(node: Node) -> PluginUnits:
    """The accelerators the node's device plugins advertise."""
    devices: dict[str, int] = {}
    parts: dict[str, int] = {}
    for name, milli in sorted(node_allocatable(node).items()):
        units = milli // MILLI
        if not is_accelerator_resource(name) or units <= 0:
            continue
        if is_part(name) or replicas(node, name) > 1:
            parts[name] = units
        else:
            got = device_resource(name)
            devices[got] = max(devices.get(got, 0), units)
    return PluginUnits(devices, parts)


# A pod's ask of device-plugin devices, kept while the pod object is the same: its shape,
# with the resource's device name (None: no shape).
Asks = dict[ObjectKey, tuple[Pod, RequestShape | None]]


def plugin_shapes(
    state: ClusterState, units: Mapping[str, PluginUnits], kept: Asks | None = None
) -> tuple[Weighted, Asks]:
    """The typical shapes (`stranded.typical`) of the pods asking whole devices of one
    accelerator resource and no other: running pods on a node whose device plugin serves it
    (`units` by node), and pending pods where some node's does (elsewhere a DeviceClass serves
    it, or nothing does yet); and each pod's ask, for `kept` at the next call."""
    kept = kept or {}
    served = {r for u in units.values() for r in u.devices}
    asks: Asks = {}
    shapes: list[RequestShape] = []
    pending: set[RequestShape] = set()
    for key, pod in state.pods.items():
        if is_terminal(pod):
            continue
        seen = kept.get(key)
        shape = (
            seen[1] if seen is not None and seen[0] is pod else plugin_shape(pod, state.features)
        )
        asks[key] = (pod, shape)
        if shape is None:
            continue
        if pod.spec.node_name:
            here = units.get(pod.spec.node_name)
            if here is None or shape.device_class not in here.devices:
                continue  # served there by a DeviceClass: a DRA shape
        elif shape.device_class not in served:
            continue
        shapes.append(shape)
        if not pod.spec.node_name:
            pending.add(shape)
    return typical(shapes, pending), asks


def plugin_shape(pod: Pod, features: FeatureGates) -> RequestShape | None:
    """The pod's ask of whole devices of one device-plugin resource (None: not such an ask)."""
    requests = pod_requests(pod, features)
    asked = [(r, m) for r, m in requests.items() if m > 0 and is_accelerator_resource(r)]
    if len(asked) != 1 or is_part(asked[0][0]):
        return None
    resource, milli = device_resource(asked[0][0]), asked[0][1]
    cpu, memory = requests.get("cpu", 0), requests.get("memory", 0)
    return RequestShape(cpu, memory, resource, ceil(milli / MILLI))


Held = tuple[dict[str, int], dict[str, float], dict[str, int]]


def held(units: PluginUnits, requested: Resources) -> Held:
    """Per device resource the devices in use and allocated (in devices: a device whose
    cores are partly held adds its part), and per partition resource the units in use (the
    cores of devices held whole among them)."""
    whole: dict[str, float] = {}
    for name, milli in requested.items():
        if device_resource(name) in units.devices and not is_part(name):
            got = device_resource(name)
            whole[got] = whole.get(got, 0.0) + milli / MILLI
    cores: dict[str, float] = {}
    parts_used: dict[str, int] = {}
    for name, n in units.parts.items():
        held = requested.get(name, 0) / MILLI
        device = PARTS_OF.get(name)
        if device is not None and units.devices.get(device):
            per_device = n / units.devices[device]
            cores[device] = held / per_device
            held += whole.get(device, 0.0) * per_device
        parts_used[name] = min(n, ceil(held))
    in_use, allocated = {}, {}
    for name, n in units.devices.items():
        taken = whole.get(name, 0.0)
        in_use[name] = min(n, ceil(taken) + ceil(cores.get(name, 0.0)))
        allocated[name] = min(float(n), taken + cores.get(name, 0.0))
    return in_use, allocated, parts_used


def measure(state: ClusterState, node: Node, units: PluginUnits, shapes: Weighted) -> PluginNode:
    """The node's device-plugin accelerators (`units`: `plugin_units`) and what of them is
    stranded for `shapes`."""
    requested = state.requested(node.metadata.name)
    in_use, allocated, parts_used = held(units, requested)
    free = {r: n - in_use[r] for r, n in units.devices.items()}
    idle = sum(free.values())
    allocatable = node_allocatable(node)
    cpu, memory = allocatable.get("cpu", 0), allocatable.get("memory", 0)
    spare_cpu = cpu - requested.get("cpu", 0)
    spare_memory = memory - requested.get("memory", 0)
    weight = 0.0
    parts: dict[str, float] = {}
    for shape, w in shapes:
        resource = shape.device_class
        if units.devices.get(resource, 0) < shape.device_count:
            continue  # never runs here
        if shape.cpu_milli > cpu or shape.memory > memory:
            continue
        weight += w
        fits = (
            free[resource] >= shape.device_count
            and shape.cpu_milli <= spare_cpu
            and shape.memory <= spare_memory
        )
        lost = idle - free[resource] if fits else idle
        parts[resource] = parts.get(resource, 0.0) + w * lost
    by_resource = {r: p / weight for r, p in sorted(parts.items())} if weight else {}
    return PluginNode(units, in_use, allocated, parts_used, sum(by_resource.values()), by_resource)
