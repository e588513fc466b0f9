"""NodePorts: a pod's host ports must be free on the node (pkg/scheduler/framework/plugins/
nodeports/node_ports.go, the host ports as pkg/scheduler/util's GetHostPorts lists them and
framework.HostPortInfo's CheckConflict compares them)."""

from __future__ import annotations

from collections.abc import Iterable

from draplan.api.core_v1 import Node, Pod
from draplan.cluster.podresources import BIND_ALL, HostPort, host_ports
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import SKIP, SUCCESS, CycleState, PodInfo, Status, unschedulable

NAME = "NodePorts"
REASON = "node(s) didn't have free ports for the requested pod ports"


def conflicts(used: Iterable[HostPort], wanted: HostPort) -> bool:
    """HostPortInfo.CheckConflict: the same protocol and port, where the wanted IP binds every
    IP, or the used one does, or both are the same IP."""
    ip, protocol, port = wanted
    return any(
        u_port == port and u_protocol == protocol and (ip == BIND_ALL or u_ip in (BIND_ALL, ip))
        for u_ip, u_protocol, u_port in used
    )


def used_ports(state: ClusterState, node_name: str) -> list[HostPort]:
    """NodeInfo.UsedPorts: every host port of the pods the node holds."""
    pods = state.pods
    return [hp for key in state.port_pods.get(node_name) or () for hp in host_ports(pods[key])]


class NodePorts:
    name = NAME

    def pre_filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo) -> Status:
        ports = host_ports(pod.pod)
        if not ports:
            return SKIP
        cycle.data[NAME] = ports
        return SUCCESS

    def filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        wanted = cycle.data.get(NAME)
        if not wanted:
            return SUCCESS
        used = used_ports(state, node.metadata.name)
        if any(conflicts(used, w) for w in wanted):
            return unschedulable(REASON)
        return SUCCESS

    def pod_shape(self, state: ClusterState, pod: Pod) -> object:
        """The pod's host ports (not in the scheduler's shape)."""
        return host_ports(pod)

    def signature(self, state: ClusterState, node: Node) -> object:
        """What the filter reads of a node beyond its Node object and requests: its pods'
        host ports (nodes that differ only there are not alike)."""
        return tuple(sorted(used_ports(state, node.metadata.name)))
