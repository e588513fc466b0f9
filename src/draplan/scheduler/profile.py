"""Which plugins run, in which order, with which weights.

- kube-scheduler's default profile at the modelled version (`default_plugins`, as
  pkg/scheduler/apis/config/v1/default_plugins.go lists them: every plugin in one MultiPoint
  set, DynamicResources inserted before DefaultPreemption with weight 2, KEP-4816) with the
  defaulted plugin args (v1 defaults.go), first-fit device order as upstream's allocator, ties
  drawn at random, the adaptive percentageOfNodesToScore — `build_profile()`;
- a KubeSchedulerConfiguration profile on top of it (scheduler.config): MultiPoint and
  per-extension-point sets merged as mergePluginSet and the framework's MultiPoint expansion
  do, plugin args, percentageOfNodesToScore — `kube_profile(spec)`;
- draplan's own placement, the named profile `draplan`: topology-aware `tight` device order,
  TopologyLocality ×2 + MostAllocated ×1 (bin-packing), ties by name, every feasible node
  scored — `draplan_profile()`; a draplan.io/v1alpha1 SchedulerProfile file changes it
  (`draplan_profile(spec)`); a placement policy of the FGD paper replaces its scores
  (`build_profile(placement=...)`, for `bench openb`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from draplan.allocator import Options
from draplan.api.core_v1 import NodeAffinity as NodeAffinitySpec
from draplan.api.draplan_v1alpha1 import SchedulerProfile
from draplan.api.errors import BadInput
from draplan.cluster.fragmentation import Workload
from draplan.scheduler.framework import is_cluster
from draplan.scheduler.plugins import names
from draplan.scheduler.plugins.dynamicresources import DynamicResources
from draplan.scheduler.plugins.imagelocality import ImageLocality
from draplan.scheduler.plugins.interpodaffinity import AffinityArgs, InterPodAffinity
from draplan.scheduler.plugins.nodeaffinity import NodeAffinity
from draplan.scheduler.plugins.nodename import NodeName
from draplan.scheduler.plugins.nodeports import NodePorts
from draplan.scheduler.plugins.noderesources import (
    DEFAULT_RESOURCES,
    LeastAllocated,
    MostAllocated,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    ScoringStrategy,
)
from draplan.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from draplan.scheduler.plugins.placement import POLICIES, DeviceResource, policy
from draplan.scheduler.plugins.podtopologyspread import PodTopologySpread, SpreadArgs
from draplan.scheduler.plugins.tainttoleration import TaintToleration
from draplan.scheduler.plugins.topologylocality import TopologyLocality
from draplan.scheduler.preemption import DefaultPreemption
from draplan.scheduler.preemption_args import PreemptionArgs

DEFAULT_SCHEDULER = "default-scheduler"  # v1.DefaultSchedulerName
DRAPLAN_PROFILE = "draplan"
TIE_RULES = ("name", "random")
# DynamicResourcesArgs.filterTimeout's default (DynamicResourcesFilterTimeoutDefault).
FILTER_TIMEOUT_SECONDS = 10.0

# default_plugins.go at 1.36 and 1.37: the MultiPoint set in order, with weights for the
# score plugins (None: the framework's weight 1 if the plugin scores).
DEFAULT_PLUGINS: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    (names.NODE_UNSCHEDULABLE, None),
    (names.NODE_NAME, None),
    (names.TAINT_TOLERATION, 3),
    (names.NODE_AFFINITY, 2),
    (names.NODE_PORTS, None),
    (names.NODE_RESOURCES_FIT, 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    (names.POD_TOPOLOGY_SPREAD, 2),
    (names.INTER_POD_AFFINITY, 2),
    (names.DYNAMIC_RESOURCES, 2),
    (names.DEFAULT_PREEMPTION, None),
    (names.BALANCED_ALLOCATION, 1),
    (names.IMAGE_LOCALITY, 1),
    (names.DEFAULT_BINDER, None),
)
# In-tree plugins a configuration may name that draplan does not run: the queue's
# (SchedulingGates, PrioritySort: scheduler.queue does their work), volumes (no volumes are
# read: their filters pass and VolumeBinding scores 0 without them), binding, and the
# alpha ones whose gates are off by default.
NOT_RUN = frozenset(
    {
        "SchedulingGates",
        "PrioritySort",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        names.DEFAULT_BINDER,
        "NodeDeclaredFeatures",
        "GangScheduling",
        "TopologyPlacementGenerator",
        "PodGroupPodsCount",
    }
)

EXTENSION_POINTS = ("preFilter", "filter", "postFilter", "preScore", "score")
_METHODS = {
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
}


@dataclass(frozen=True)
class PluginSet:
    """v1.PluginSet: enabled plugins in order (with weights) and disabled names ("*": all)."""

    enabled: tuple[tuple[str, int | None], ...] = ()
    disabled: frozenset[str] = frozenset()


@dataclass(frozen=True)
class FitArgs:
    """NodeResourcesFitArgs, defaulted."""

    strategy: ScoringStrategy = field(default_factory=ScoringStrategy)
    ignored_resources: frozenset[str] = frozenset()
    ignored_groups: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ProfileSpec:
    """A KubeSchedulerProfile as scheduler.config read it: the plugin sets by extension point
    ("multiPoint" and EXTENSION_POINTS), each plugin's args (typed; absent: defaults), and
    percentageOfNodesToScore (None: the configuration's)."""

    scheduler_name: str = DEFAULT_SCHEDULER
    plugins: Mapping[str, PluginSet] = field(default_factory=dict)
    args: Mapping[str, Any] = field(default_factory=dict)
    percentage: int | None = None


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
    name: str = DEFAULT_SCHEDULER
    kube: bool = False  # a kube-scheduler profile (else draplan's placement)
    # The configuration's other profiles (core.Scheduler schedules each pod by the profile
    # its spec.schedulerName names).
    siblings: tuple[Profile, ...] = ()

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


def _options(device_order: str, timeout: float) -> Options:
    # filterTimeout 0 switches the timeout off.
    seconds = timeout if timeout > 0 else float("inf")
    return Options(device_order=device_order, timeout_seconds=seconds)  # type: ignore[arg-type]


# --- kube-scheduler's profiles -------------------------------------------------------------

Factory = Callable[[Any, DynamicResources], Any]


def _fit(args: Any, dra: DynamicResources) -> Any:
    fit = args if isinstance(args, FitArgs) else FitArgs()
    return NodeResourcesFit(fit.strategy, fit.ignored_resources, fit.ignored_groups)


def _balanced(args: Any, dra: DynamicResources) -> Any:
    return NodeResourcesBalancedAllocation(args or DEFAULT_RESOURCES)


def _affinity(args: Any, dra: DynamicResources) -> Any:
    return NodeAffinity(args if isinstance(args, NodeAffinitySpec) else None)


def _spread(args: Any, dra: DynamicResources) -> Any:
    return PodTopologySpread(args if isinstance(args, SpreadArgs) else SpreadArgs())


def _inter_pod(args: Any, dra: DynamicResources) -> Any:
    return InterPodAffinity(args if isinstance(args, AffinityArgs) else AffinityArgs())


# The plugins draplan runs, by name: each factory gets the plugin's args (None: defaults).
FACTORIES: dict[str, Factory] = {
    names.NODE_UNSCHEDULABLE: lambda args, dra: NodeUnschedulable(),
    names.NODE_NAME: lambda args, dra: NodeName(),
    names.TAINT_TOLERATION: lambda args, dra: TaintToleration(),
    names.NODE_AFFINITY: _affinity,
    names.NODE_RESOURCES_FIT: _fit,
    names.DYNAMIC_RESOURCES: lambda args, dra: dra,
    names.BALANCED_ALLOCATION: _balanced,
    names.IMAGE_LOCALITY: lambda args, dra: ImageLocality(),
    names.NODE_PORTS: lambda args, dra: NodePorts(),
    names.POD_TOPOLOGY_SPREAD: _spread,
    names.INTER_POD_AFFINITY: _inter_pod,
}
KNOWN_PLUGINS = frozenset({n for n, _ in DEFAULT_PLUGINS}) | NOT_RUN | FACTORIES.keys()


def merge_plugin_set(defaults: PluginSet, custom: PluginSet) -> PluginSet:
    """mergePluginSet: the defaults not disabled (none with "*"), each replaced in place by a
    custom entry of its name, then the other custom entries in order."""
    replaced: set[int] = set()
    custom_index = {name: i for i, (name, _) in enumerate(custom.enabled)}
    enabled: list[tuple[str, int | None]] = []
    if "*" not in custom.disabled:
        for name, weight in defaults.enabled:
            if name in custom.disabled:
                continue
            if name in custom_index:
                i = custom_index[name]
                replaced.add(i)
                enabled.append(custom.enabled[i])
            else:
                enabled.append((name, weight))
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(tuple(enabled), defaults.disabled | custom.disabled)


def _points(spec: ProfileSpec) -> dict[str, list[tuple[str, int | None]]]:
    """Each extension point's plugins in order, as the framework expands MultiPoint: those a
    point enables itself first, then the MultiPoint ones it does not disable (none with
    "*"); a point's own weight wins over MultiPoint's."""
    multi = merge_plugin_set(
        PluginSet(DEFAULT_PLUGINS), spec.plugins.get("multiPoint", PluginSet())
    )
    out: dict[str, list[tuple[str, int | None]]] = {}
    for point in EXTENSION_POINTS:
        own = spec.plugins.get(point, PluginSet())
        listed = [*own.enabled]
        seen = {name for name, _ in listed}
        if "*" not in own.disabled:
            listed += [
                (name, weight)
                for name, weight in multi.enabled
                if name not in own.disabled and name not in seen
            ]
        out[point] = listed
    return out


def kube_profiles(
    specs: tuple[ProfileSpec, ...],
    *,
    percentage: int = 0,
    seed: int = 0,
    filter_timeout: float | None = None,
) -> Profile:
    """The profiles of a configuration: the one of default-scheduler (else the first), the
    others as its siblings."""
    made = [
        kube_profile(s, percentage=percentage, seed=seed, filter_timeout=filter_timeout)
        for s in specs
    ]
    first = next((p for p in made if p.name == DEFAULT_SCHEDULER), made[0])
    rest = tuple(p for p in made if p is not first)
    return dataclasses.replace(first, siblings=rest)


def kube_profile(
    spec: ProfileSpec | None = None,
    *,
    percentage: int = 0,
    seed: int = 0,
    filter_timeout: float | None = None,
) -> Profile:
    """The profile kube-scheduler builds from `spec` (None: the default profile), the
    configuration's percentageOfNodesToScore beside it; `filter_timeout` overrides
    DynamicResourcesArgs.filterTimeout."""
    spec = spec or ProfileSpec()
    timeout = spec.args.get(names.DYNAMIC_RESOURCES)
    if filter_timeout is not None:
        timeout = filter_timeout
    options = _options("first-fit", FILTER_TIMEOUT_SECONDS if timeout is None else timeout)
    dra = DynamicResources(options)
    made: dict[str, Any] = {}

    def plugin(name: str) -> Any:
        if name not in made:
            factory = FACTORIES.get(name)
            made[name] = factory(spec.args.get(name), dra) if factory is not None else None
        return made[name]

    points = _points(spec)
    by_point: dict[str, list[tuple[Any, int]]] = {}
    for point, listed in points.items():
        method = _METHODS[point]
        chosen = []
        for name, weight in listed:
            instance = plugin(name)
            if instance is not None and callable(getattr(instance, method, None)):
                chosen.append((instance, weight or 1))
        by_point[point] = chosen
    filters = tuple(p for p, _ in by_point["filter"])
    if dra not in filters:
        raise BadInput("DynamicResources cannot be disabled", path="plugins.filter")
    post_filters: list[Any] = []
    for name, _ in points["postFilter"]:
        if name == names.DEFAULT_PREEMPTION:
            # Its dry run runs the profile's filters, so it is made once they are.
            args = spec.args.get(name)
            args = args if isinstance(args, PreemptionArgs) else PreemptionArgs()
            post_filters.append(DefaultPreemption(filters, dra, args, seed, random_ties=True))
        elif callable(getattr(plugin(name), "post_filter", None)):
            post_filters.append(plugin(name))
    return Profile(
        filters=filters,
        scores=tuple(by_point["score"]),
        dra=dra,
        options=options,
        pre_filters=tuple(p for p, _ in by_point["preFilter"] if p is not dra),
        ties="random",
        seed=seed,
        post_filters=tuple(post_filters),
        percentage=spec.percentage if spec.percentage is not None else percentage,
        name=spec.scheduler_name,
        kube=True,
    )


# --- draplan's own profile ---------------------------------------------------------------

# Accelerators are expensive: bin-pack nodes and keep device groups whole.
DRAPLAN_FILTERS = (
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
# Spread and pod affinity with kube-scheduler's default weights.
DRAPLAN_SCORES = (
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


def draplan_profile(
    spec: SchedulerProfile | None = None,
    *,
    placement: str | None = None,
    resource: DeviceResource | None = None,
    workload: Workload | None = None,
    seed: int = 0,
    ties: str | None = None,
    affinity: AffinityArgs | None = None,
    spread: SpreadArgs | None = None,
    filter_timeout: float | None = None,
) -> Profile:
    """draplan's placement, or a SchedulerProfile's changes to it. `placement` (one of
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
    # A SchedulerProfile's filterTimeoutSeconds is the allocator's own budget (0: none at
    # all); `filter_timeout` is DynamicResourcesArgs.filterTimeout's (0: no limit).
    timeout = s.filter_timeout_seconds if s is not None else FILTER_TIMEOUT_SECONDS
    if filter_timeout is not None:
        timeout = filter_timeout if filter_timeout > 0 else float("inf")
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
        names.TAINT_TOLERATION: TaintToleration(),
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
    weights: tuple[tuple[str, int], ...] = DRAPLAN_SCORES
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
    filters = tuple(table[n] for n in DRAPLAN_FILTERS if n not in disabled)
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
        pre_filters=tuple(
            p
            for p in (*(chosen.pre_filters if chosen is not None else ()), *filters)
            if p is not dra and callable(getattr(p, "pre_filter", None))
        ),
        ties=chosen.ties if chosen is not None else (ties or "name"),
        seed=seed,
        policy=placement or "",
    )


def build_profile(
    spec: SchedulerProfile | None = None,
    *,
    placement: str | None = None,
    resource: DeviceResource | None = None,
    workload: Workload | None = None,
    seed: int = 0,
    ties: str | None = None,
) -> Profile:
    """kube-scheduler's default profile; with a SchedulerProfile or a placement policy,
    draplan's profile so changed (`draplan_profile`)."""
    if spec is None and placement is None and ties is None:
        return kube_profile(seed=seed)
    return draplan_profile(
        spec, placement=placement, resource=resource, workload=workload, seed=seed, ties=ties
    )
