"""What a pod asks of a node, the way kube-scheduler's NodeResourcesFit computes it."""

from __future__ import annotations

from draplan.api.core_v1 import Node, Pod

PODS = "pods"
Resources = dict[str, int]  # resource name -> milli units ("pods" counts 1000 per pod)


def pod_requests(pod: Pod) -> Resources:
    """max(sum of containers, largest init container) per resource, plus overhead; one pod."""
    total: Resources = {}
    for container in pod.spec.containers:
        for name, q in container.resources.requests.items():
            total[name] = total.get(name, 0) + q.milli_value()
    for container in pod.spec.init_containers:
        for name, q in container.resources.requests.items():
            total[name] = max(total.get(name, 0), q.milli_value())
    for name, q in pod.spec.overhead.items():
        total[name] = total.get(name, 0) + q.milli_value()
    total[PODS] = 1000
    return total


# schedutil.DefaultMilliCPURequest / DefaultMemoryRequest: what scoring assumes for a container
# that requests nothing, so empty pods still spread or pack.
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
NONZERO_CPU = "nonzero:cpu"  # node-ledger keys for the scoring sums (not real resources)
NONZERO_MEMORY = "nonzero:memory"


def nonzero_requests(pod: Pod) -> Resources:
    """cpu and memory as kube-scheduler's scores see them (NonZeroRequested), in milli units."""
    cpu = memory = 0
    for container in pod.spec.containers:
        req = container.resources.requests
        cpu += req["cpu"].milli_value() if "cpu" in req else DEFAULT_MILLI_CPU
        memory += req["memory"].milli_value() if "memory" in req else DEFAULT_MEMORY * 1000
    return {NONZERO_CPU: cpu, NONZERO_MEMORY: memory}


def node_allocatable(node: Node) -> Resources:
    """status.allocatable, falling back to capacity (as the kubelet reports either)."""
    source = node.status.allocatable or node.status.capacity
    return {name: q.milli_value() for name, q in source.items()}


def is_terminal(pod: Pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


def is_gated(pod: Pod) -> bool:
    """spec.schedulingGates is not empty: kube-scheduler keeps the pod out of its active queue
    (the SchedulingGates PreEnqueue plugin, KEP-3521) and Cluster Autoscaler never scales for
    it (its PodScheduled reason is SchedulingGated, not Unschedulable)."""
    return bool(pod.spec.scheduling_gates)


def is_waiting(pod: Pod) -> bool:
    """Waiting to be scheduled: unbound, not finished, not gated."""
    return not pod.spec.node_name and not is_terminal(pod) and not is_gated(pod)
