"""What a pod asks of a node, as kube-scheduler computes it: the one place draplan does.

The requests are component-helpers' PodRequests (resource/helpers.go): app containers add
up; an init container with `restartPolicy: Always` (a sidecar, KEP-753) adds its requests for
the pod's whole life; a plain init container runs alone beside the sidecars started before
it, so the pod needs the largest of those moments; pod-level requests of cpu, memory and
hugepages (`spec.resources`, KEP-2837, while PodLevelResources is on) replace the containers'
sum for those resources; overhead adds to all. The scores read "non-zero" requests: a
container that sets no cpu or memory request counts 100m and 200Mi (schedutil's defaults)
— for the pod being scheduled always (noderesources' calculatePodResourceRequest), for the
pods on a node only where neither the pod level nor any container sets one (NodeInfo's
getNonMissingContainerRequests). A running pod being resized in place is counted by its spec
(the larger of spec and status that kube-scheduler takes needs containerStatuses, not read).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from draplan.api.core_v1 import Container, Node, Pod
from draplan.api.features import DEFAULT as DEFAULT_FEATURES
from draplan.api.features import FeatureGates
from draplan.api.quantity import Quantity

PODS = "pods"
Resources = dict[str, int]  # resource name -> milli units ("pods" counts 1000 per pod)

POD_LEVEL_GATE = "PodLevelResources"
HUGEPAGES_PREFIX = "hugepages-"

# schedutil.DefaultMilliCPURequest / DefaultMemoryRequest: what scoring assumes for a container
# that requests nothing, so empty pods still spread or pack.
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
NONZERO_CPU = "nonzero:cpu"  # node-ledger keys for the scoring sums (not real resources)
NONZERO_MEMORY = "nonzero:memory"
DEFAULTS = {"cpu": DEFAULT_MILLI_CPU, "memory": DEFAULT_MEMORY * 1000}


def pod_level(name: str) -> bool:
    """IsSupportedPodLevelResource: cpu, memory and hugepages."""
    return name in ("cpu", "memory") or name.startswith(HUGEPAGES_PREFIX)


def _add(total: Resources, requests: Mapping[str, int]) -> None:
    for name, amount in requests.items():
        total[name] = total.get(name, 0) + amount


def _milli(container: Container, defaults: Mapping[str, int]) -> Resources:
    """A container's requests, with `defaults` for those of its resources it leaves unset
    (applyNonMissing: a request set to 0 stays 0)."""
    out = {name: q.milli_value() for name, q in container.resources.requests.items()}
    for name, amount in defaults.items():
        out.setdefault(name, amount)
    return out


def _containers(pod: Pod, defaults: Mapping[str, int]) -> Resources:
    """AggregateContainerRequests."""
    total: Resources = {}
    for container in pod.spec.containers:
        _add(total, _milli(container, defaults))
    sidecars: Resources = {}
    peak: Resources = {}
    for container in pod.spec.init_containers:
        own = _milli(container, defaults)
        if container.restart_policy == "Always":
            _add(total, own)
            _add(sidecars, own)
            moment = sidecars
        else:
            moment = dict(own)
            _add(moment, sidecars)
        for name, amount in moment.items():
            peak[name] = max(peak.get(name, 0), amount)
    for name, amount in peak.items():
        total[name] = max(total.get(name, 0), amount)
    return total


def _requests(pod: Pod, features: FeatureGates, defaults: Mapping[str, int]) -> Resources:
    """PodRequests without the pod count."""
    total = _containers(pod, defaults)
    level = pod.spec.resources
    if POD_LEVEL_GATE in features and level is not None:
        for name, q in level.requests.items():
            if pod_level(name):
                total[name] = q.milli_value()
    _add(total, _quantities(pod.spec.overhead.items()))
    return total


def _quantities(items: Iterable[tuple[str, Quantity]]) -> Resources:
    return {name: q.milli_value() for name, q in items}


def pod_requests(pod: Pod, features: FeatureGates = DEFAULT_FEATURES) -> Resources:
    """What NodeResourcesFit checks a node for, in milli units, and the pod itself."""
    total = _requests(pod, features, {})
    total[PODS] = 1000
    return total


def is_extended(name: str) -> bool:
    """v1helper.IsExtendedResourceName: a domain-qualified name outside kubernetes.io."""
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def extended_devices(pod: Pod, served_by: Mapping[str, int] | None = None) -> int:
    """The devices the pod's extended resources ask for: one per unit, as a device plugin
    advertises one unit per device and KEP-5004 allocates one DRA device per unit. With
    `served_by` (a node's allocatable), only the resources that node's device plugins serve."""
    return sum(
        milli // 1000
        for name, milli in pod_requests(pod).items()
        if is_extended(name) and (served_by is None or served_by.get(name, 0) > 0)
    )


def nonzero_requests(
    pod: Pod, features: FeatureGates = DEFAULT_FEATURES, *, placed: bool = False
) -> Resources:
    """cpu and memory as kube-scheduler's scores see them, in milli units: of the pod being
    scheduled, or (`placed`) of a pod counted in its node's NonZeroRequested."""
    defaults: Mapping[str, int] = DEFAULTS
    level = pod.spec.resources
    if (
        placed
        and POD_LEVEL_GATE in features
        and level is not None
        and any(pod_level(name) for name in level.requests)
    ):
        known = _requests(pod, features, {})
        defaults = {name: v for name, v in DEFAULTS.items() if name not in known}
    total = _requests(pod, features, defaults)
    return {NONZERO_CPU: total.get("cpu", 0), NONZERO_MEMORY: total.get("memory", 0)}


def bound_usage(pod: Pod, features: FeatureGates = DEFAULT_FEATURES) -> Resources:
    """What a bound pod takes from its node: pod_requests and nonzero_requests(placed=True)
    in one map, computed once when every container asks for cpu and memory (no default then
    applies, the non-zero sums are the requests)."""
    total = pod_requests(pod, features)
    every = (*pod.spec.containers, *pod.spec.init_containers)
    if all("cpu" in c.resources.requests and "memory" in c.resources.requests for c in every):
        total[NONZERO_CPU] = total.get("cpu", 0)
        total[NONZERO_MEMORY] = total.get("memory", 0)
    else:
        total.update(nonzero_requests(pod, features, placed=True))
    return total


def node_allocatable(node: Node) -> Resources:
    """status.allocatable, falling back to capacity (as the kubelet reports either)."""
    source = node.status.allocatable or node.status.capacity
    return {name: q.milli_value() for name, q in source.items()}


BIND_ALL = "0.0.0.0"  # DefaultBindAllHostIP

HostPort = tuple[str, str, int]  # (host IP, protocol, port), defaults filled in


def _running(pod: Pod) -> Iterable[Container]:
    """Init containers with restartPolicy Always (sidecars, for the pod's whole life), then
    the app containers: whose host ports the pod holds."""
    for c in pod.spec.init_containers:
        if c.restart_policy == "Always":
            yield c
    yield from pod.spec.containers


def host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """GetHostPorts (pkg/scheduler/util; NodePorts' filter reads them), each port sanitized as
    HostPortInfo does (empty IP: 0.0.0.0, empty protocol: TCP)."""
    spec = pod.spec
    if not spec.init_containers and not any(c.ports for c in spec.containers):
        return ()  # most pods: asked of every pod a node takes
    return tuple(
        (p.host_ip or BIND_ALL, p.protocol or "TCP", p.host_port)
        for c in _running(pod)
        for p in c.ports
        if p.host_port > 0
    )


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
