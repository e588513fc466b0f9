"""Which plugins run, in which order, with which weights: data, like kube-scheduler's
default_plugins.go plus a user profile (draplan.io/v1alpha1 SchedulerProfile)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from draplan.allocator import Options
from draplan.api.draplan_v1alpha1 import SchedulerProfile
from draplan.api.errors import BadInput
from draplan.cluster.fragmentation import Workload
from draplan.scheduler.framework import is_cluster
from draplan.scheduler.plugins import names
from draplan.scheduler.plugins.dynamicresources import DynamicResources
from draplan.scheduler.plugins.interpodaffinity import AffinityArgs, InterPodAffinity
from draplan.scheduler.plugins.nodeaffinity import NodeAffinity
from draplan.scheduler.plugins.nodename import NodeName
from draplan.scheduler.plugins.nodeports import NodePorts
from draplan.scheduler.plugins.noderesources import LeastAllocated, MostAllocated, NodeResourcesFit
from draplan.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from draplan.scheduler.plugins.placement import POLICIES, DeviceResource, policy
from draplan.scheduler.plugins.podtopologyspread import PodTopologySpread, SpreadArgs
from draplan.scheduler.plugins.tainttoleration import TaintTolerationPlugin
from draplan.scheduler.plugins.topologylocality import TopologyLocality
from draplan.scheduler.preemption import DefaultPreemption
from draplan.scheduler.preemption_args import PreemptionArgs

# In upstream's order (default_plugins.go): cheap filters first, DynamicResources (the
# allocator) last.
FILTERS = (
    names.NODE_UNSCHEDULABLE,
    names.NODE_NAME,
    names.TAINT_TOLERATION,
    names.NODE_AFFINITY,
    names.NODE_PORTS,
    names.NODE_RESOURCES_FIT,
    names.POD_TOPOLOGY_SPREAD,
    names.INTER_POD_AFFINITY,
    names.DYNAMIC_RESOURCES,
)
# Accelerators are expensive: bin-pack nodes and keep device groups whole by default; spread
# and pod affinity with kube-scheduler's default weights.
DEFAULT_SCORES = (
    (names.TOPOLOGY_LOCALITY, 2),
    (names.MOST_ALLOCATED, 1),
    (names.POD_TOPOLOGY_SPREAD, 2),
    (names.INTER_POD_AFFINITY, 2),
)
SCORES = (
    names.LEAST_ALLOCATED,
    names.MOST_ALLOCATED,
    names.TOPOLOGY_LOCALITY,
    names.POD_TOPOLOGY_SPREAD,
    names.INTER_POD_AFFINITY,
)


TIE_RULES = ("name", "random")


@dataclass(frozen=True)
class Profile:
    """Instantiated plugins: filters in order and (plugin, weight) scores; PreFilter plugins
    besides DynamicResources; PostFilter plugins in order; how ties between the best nodes
    break ("name": the smallest node name, deterministic; "random": uniformly, as
    kube-scheduler's selectHost, seeded); percentageOfNodesToScore (0: kube-scheduler's
    adaptive default; 100: every feasible node is scored); the schedulerName it answers to."""

    filters: tuple[Any, ...]
    scores: tuple[tuple[Any, int], ...]
    dra: DynamicResources
    options: Options
    pre_filters: tuple[Any, ...] = ()
    ties: str = "name"
    seed: int = 0
    policy: str = ""
    post_filters: tuple[Any, ...] = ()
    percentage: int = 100
    name: str = "default-scheduler"

    @cached_property
    def local_filters(self) -> tuple[Any, ...]:
        """The filters whose answer depends on the node alone (framework's note), in order."""
        return tuple(p for p in self.filters if not is_cluster(p))

    @cached_property
    def cluster_filters(self) -> tuple[tuple[int, Any], ...]:
        """The other filters, with their place in the profile's order."""
        return tuple((i, p) for i, p in enumerate(self.filters) if is_cluster(p))

    @cached_property
    def plain_scores(self) -> tuple[tuple[Any, int], ...]:
        """Node-local scores without NormalizeScore: cached per node as a weighted sum."""
        return tuple((p, w) for p, w in self.scores if not is_cluster(p) and not _normalizes(p))

    @cached_property
    def normalized_scores(self) -> tuple[tuple[Any, int], ...]:
        """Node-local scores with NormalizeScore: raw scores cached per node, normalized over
        the nodes scored each cycle."""
        return tuple((p, w) for p, w in self.scores if not is_cluster(p) and _normalizes(p))

    @cached_property
    def cluster_scores(self) -> tuple[tuple[Any, int], ...]:
        """Scores that read other nodes: computed every cycle on the nodes scored."""
        return tuple((p, w) for p, w in self.scores if is_cluster(p))

    @cached_property
    def local_choice(self) -> bool:
        """Whether the best node follows from each node's own cached answer: ties by name,
        every feasible node scored, no score normalized over the others or reading them, no
        filter reading other nodes. Callers that judge a pod against a few changed nodes
        (autoscaler.existing) need this."""
        return (
            self.ties == "name"
            and self.percentage == 100
            and not self.cluster_filters
            and not self.normalized_scores
            and not self.cluster_scores
        )


def _normalizes(plugin: object) -> bool:
    return callable(getattr(plugin, "normalize_score", None))


def build_profile(
    spec: SchedulerProfile | None = None,
    *,
    placement: str | None = None,
    resource: DeviceResource | None = None,
    workload: Workload | None = None,
    seed: int = 0,
    ties: str | None = None,
    affinity: AffinityArgs | None = None,
    spread: SpreadArgs | None = None,
) -> Profile:
    """The default profile, or the user's on top of it. `placement` (one of
    draplan.scheduler.plugins.placement.POLICIES) replaces the score plugins by that policy's,
    measuring `resource`'s devices against `workload` (default: the pods in the state).
    `affinity` and `spread` are InterPodAffinity's and PodTopologySpread's args."""
    if ties is not None and ties not in TIE_RULES:
        raise BadInput(f"unsupported tie rule {ties!r}: {' or '.join(TIE_RULES)}", path="ties")
    if placement is not None and placement not in POLICIES:
        raise BadInput(
            f"unknown placement policy {placement!r}; one of {', '.join(POLICIES)}",
            path="policy",
        )
    s = spec.spec if spec is not None else None
    device_order = s.device_order if s is not None else "tight"
    if device_order not in ("tight", "first-fit"):
        raise BadInput(
            f"unsupported value {device_order!r}: tight or first-fit",
            kind="SchedulerProfile",
            path="spec.deviceOrder",
        )
    timeout = s.filter_timeout_seconds if s is not None else 10.0
    chosen = None
    if placement is not None:
        if resource is None:
            raise BadInput("a placement policy needs the device resource it measures")
        chosen = policy(placement, resource, workload=workload, seed=seed, ties=ties)
    options = Options(
        device_order=device_order,  # type: ignore[arg-type]
        timeout_seconds=timeout,
        prefer=chosen.devices if chosen is not None else None,
    )
    dra = DynamicResources(options)
    table: dict[str, Any] = {
        names.NODE_UNSCHEDULABLE: NodeUnschedulable(),
        names.NODE_NAME: NodeName(),
        names.TAINT_TOLERATION: TaintTolerationPlugin(),
        names.NODE_AFFINITY: NodeAffinity(),
        names.NODE_RESOURCES_FIT: NodeResourcesFit(),
        names.NODE_PORTS: NodePorts(),
        names.POD_TOPOLOGY_SPREAD: PodTopologySpread(spread or SpreadArgs()),
        names.INTER_POD_AFFINITY: InterPodAffinity(affinity or AffinityArgs()),
        names.DYNAMIC_RESOURCES: dra,
        names.LEAST_ALLOCATED: LeastAllocated(),
        names.MOST_ALLOCATED: MostAllocated(),
        names.TOPOLOGY_LOCALITY: TopologyLocality(),
    }
    disabled = set(s.disabled_plugins) if s is not None else set()
    for i, name in enumerate(sorted(disabled)):
        if name not in table and name != names.DEFAULT_PREEMPTION:
            raise BadInput(
                f"unknown plugin {name!r}",
                kind="SchedulerProfile",
                path=f"spec.disabledPlugins[{i}]",
            )
    if names.DYNAMIC_RESOURCES in disabled:
        raise BadInput(
            "DynamicResources cannot be disabled",
            kind="SchedulerProfile",
            path="spec.disabledPlugins",
        )
    weights: tuple[tuple[str, int], ...] = DEFAULT_SCORES
    if s is not None and s.score_plugins is not None:
        weights = tuple((p.name, p.weight) for p in s.score_plugins)
    for i, (name, weight) in enumerate(weights):
        if name not in SCORES:
            raise BadInput(
                f"unknown score plugin {name!r}; one of {', '.join(SCORES)}",
                kind="SchedulerProfile",
                path=f"spec.scorePlugins[{i}].name",
            )
        if weight < 0:
            raise BadInput(
                "weight must not be negative",
                kind="SchedulerProfile",
                path=f"spec.scorePlugins[{i}].weight",
            )
    scores = tuple((table[n], w) for n, w in weights if n not in disabled and w > 0)
    if chosen is not None:
        # The simulator enables exactly one score plugin (weight 1000) and disables the rest.
        scores = ((chosen.score, 1),)
    filters = tuple(table[n] for n in FILTERS if n not in disabled)
    # The PreFilters besides DynamicResources' (the scheduler runs it first), in profile order.
    own = tuple(p for p in filters if p is not dra and callable(getattr(p, "pre_filter", None)))
    # default_plugins.go's PostFilter order: DynamicResources, then DefaultPreemption.
    post_filters: tuple[Any, ...] = (dra,)
    if names.DEFAULT_PREEMPTION not in disabled:
        args = PreemptionArgs(free_devices=s is not None and s.preemption_frees_devices)
        preemption = DefaultPreemption(filters, dra, args, seed, (ties or "name") == "random")
        post_filters = (dra, preemption)
    return Profile(
        filters=filters,
        scores=scores,
        post_filters=post_filters,
        dra=dra,
        options=options,
        pre_filters=(chosen.pre_filters if chosen is not None else ()) + own,
        ties=chosen.ties if chosen is not None else (ties or "name"),
        seed=seed,
        policy=placement or "",
    )
