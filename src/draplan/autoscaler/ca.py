"""Cluster Autoscaler's own scale-up, as draplan models it: the options its node groups offer
and its least-waste expander, so that draplan's choice can be put beside CA's.

CA simulates pod by pod on its node-group templates, in the device-plugin count view here
(`legacy.lossy_state`: no slices, no claims, no gangs), and each node group becomes an option:
the pods one group would take and how many of its nodes that needs. Its `least-waste`
expander (cluster-autoscaler/expander/waste) scores an option by the unused fraction of cpu
plus that of memory on the option's new nodes, from the pods' container requests and the
template node's resources: devices do not count. Ties go to the smallest group name here (CA
picks one at random)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from draplan.api.draplan_v1alpha1 import NodePool
from draplan.autoscaler.legacy import lossy_state
from draplan.autoscaler.options import Limits
from draplan.autoscaler.scaleup import ScaleUpPlanner, pending_pods
from draplan.autoscaler.templates import make_node
from draplan.cluster.podresources import node_allocatable
from draplan.cluster.state import ClusterState, ObjectKey
from draplan.scheduler import Scheduler, build_profile


@dataclass(frozen=True)
class CAOption:
    """One node group's scale-up option: `node_count` new nodes of `pool` for `pods`."""

    pool: NodePool
    node_count: int
    pods: tuple[ObjectKey, ...]


def ca_options(state: ClusterState, limits: Limits | None = None) -> list[CAOption]:
    """Each NodePool's option for the pending pods, simulated pod by pod in the count view
    after the pods that fit existing nodes there are set aside (CA's filter_out_schedulable)."""
    lossy = lossy_state(state)
    scheduler = Scheduler(build_profile(), gangs=False)
    if lossy.nodes:
        scheduler.run(lossy)
    pending = pending_pods(lossy)
    if not pending:
        return []
    planner = ScaleUpPlanner(scheduler, list(lossy.node_pools.values()), limits)
    out = []
    for pool in planner.pools:
        option = planner.simulate(lossy, pool, pending)
        if option is not None:
            name = pool.metadata.name
            out.append(CAOption(state.node_pools[name], len(option.nodes), tuple(option.pods)))
    return out


def wasted_score(state: ClusterState, option: CAOption) -> float:
    """CA's least-waste score of an option: unused cpu fraction plus unused memory fraction."""
    cpu = memory = 0
    for key in option.pods:
        for c in state.pods[key].spec.containers:
            cpu += c.resources.requests["cpu"].milli_value() if "cpu" in c.resources.requests else 0
            if "memory" in c.resources.requests:
                memory += c.resources.requests["memory"].value()
    template = make_node(state, option.pool, f"{option.pool.metadata.name}-template", {}).node
    node = node_allocatable(template)
    avail_cpu = node.get("cpu", 0) * option.node_count
    avail_memory = node.get("memory", 0) // 1000 * option.node_count
    wasted = 0.0
    for avail, used in ((avail_cpu, cpu), (avail_memory, memory)):
        wasted += (avail - used) / avail if avail else 0.0
    return wasted


def least_waste(state: ClusterState, options: Sequence[CAOption]) -> CAOption | None:
    """CA's least-waste pick (ties: the smallest group name)."""
    if not options:
        return None
    return min(options, key=lambda o: (wasted_score(state, o), o.pool.metadata.name))
