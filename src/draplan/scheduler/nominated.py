"""The pods nominated to a node, in the filters, as kube-scheduler's
RunFilterPluginsWithNominatedPods counts them (pkg/scheduler/framework/runtime/framework.go):
the filters run first with the node's nominated pods of equal or higher priority added to it
whole (addGENominatedPods: the pod joins the NodeInfo and the PreFilter extensions' AddPod,
so NodePorts, InterPodAffinity and PodTopologySpread see its ports, labels and terms, not
only its requests), then, if every filter passed, without them; the node fits only if both
runs pass, and the first run that fails is its status.

The scheduler sets aside, for a pod's cycle, the nominated pods of lower priority and the
pod itself (Scheduler.schedule_pod): the pods `ClusterState.held` keeps then are the ones to
add. Their requests already count on their node (ClusterState.nominate); this adds the rest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from draplan.api.core_v1 import Node, Pod
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import SUCCESS, CycleState, PodInfo, Status


def rebuilt(plugin: Any) -> bool:
    """Whether a filter's cycle state is built again on a changed state (a cluster plugin
    without PreFilter extensions: InterPodAffinity, PodTopologySpread; their counts are kept
    per node version, so a change costs its node), rather than kept from PreFilter."""
    return bool(
        getattr(plugin, "cluster", False)
        and not hasattr(plugin, "remove_pod")
        and hasattr(plugin, "filter_state")
    )


def run_filters(
    filters: Iterable[Any], state: ClusterState, cycle: CycleState, info: PodInfo, node: Node
) -> Status:
    """The filters on `node` as the state is now, stopping at the first failure."""
    for plugin in filters:
        if plugin.name in cycle.skip_filter:
            continue
        status: Status
        if rebuilt(plugin):
            fs = plugin.filter_state(state, info.pod)
            status = SUCCESS if fs is None else plugin.filter_node(fs, info.pod, node)
        else:
            status = plugin.filter(state, cycle, info, node)
        if not status.ok:
            return status if status.plugin == plugin.name else status.with_plugin(plugin.name)
    return SUCCESS


def nominees(state: ClusterState) -> bool:
    """Whether some pod waits on a nominated node for this cycle."""
    return next(iter(state.held.items()), None) is not None


def nominated_to(state: ClusterState, node: str) -> list[Pod]:
    return [state.pods[k] for k, held in state.held.items() if held == node]


def with_nominated(
    filters: Iterable[Any], state: ClusterState, cycle: CycleState, info: PodInfo, node: Node
) -> Status:
    """The first run: the filters with the pods nominated to `node` bound to it (in a fork of
    the state, reverted); SUCCESS when none is."""
    name = node.metadata.name
    pods = nominated_to(state, name)
    if not pods:
        return SUCCESS
    with state.forked():
        for pod in pods:
            state.bind_pod(pod, name)
        return run_filters(filters, state, cycle, info, state.nodes[name])
