"""A node's shape: what makes two nodes the same kind of machine to an autoscaler.

Two nodes are of one shape when both name an instance type and the types are equal, or, when
either does not, when they offer the same cpu, memory and whole devices per DeviceClass (the
count a device plugin would advertise: a partitionable GPU counts once). Device attributes
are left out on purpose: drivers publish per-device identifiers (uuid, PCI address) that
differ between identical machines.
"""

from __future__ import annotations

from dataclasses import dataclass

from draplan.api.core_v1 import Node
from draplan.autoscaler.legacy import physical_counts
from draplan.cluster.podresources import node_allocatable
from draplan.cluster.state import ClusterState

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


@dataclass(frozen=True)
class NodeShape:
    instance_type: str
    inventory: tuple[tuple[str, int], ...]

    def matches(self, other: NodeShape) -> bool:
        if self.instance_type and other.instance_type:
            return self.instance_type == other.instance_type
        return self.inventory == other.inventory


def node_shape(state: ClusterState, node: Node) -> NodeShape:
    name = node.metadata.name
    alloc = node_allocatable(node)
    views = [v for p in state.pools_for_node(node) for v in p.devices if v.node_name == name]
    devices = physical_counts(state.device_classes, views)
    inventory = (
        ("cpu", alloc.get("cpu", 0)),
        ("memory", alloc.get("memory", 0)),
        *sorted(devices.items()),
    )
    return NodeShape(node.metadata.labels.get(INSTANCE_TYPE_LABEL, ""), inventory)
