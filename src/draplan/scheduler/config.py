"""A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) as kube-scheduler reads it:
defaulted as pkg/scheduler/apis/config/v1 defaults.go does (one profile named
default-scheduler when none is given, the profile name defaulted when it is the only one,
scoring resources cpu and memory of weight 1, a resource weight of 0 read as 1) and validated
as validation.go and validation_pluginargs.go do, each error one line with the file, the
object and the field path; then turned into the profiles draplan builds
(scheduler.profile.ProfileSpec), each answering to its schedulerName.

A configuration a ConfigMap holds (as clusters mount kube-scheduler's) is found by the CLI
(cli.profiles); its errors then name the ConfigMap and the data key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from draplan.api import kubescheduler_v1 as v1
from draplan.api.codec import convert
from draplan.api.duration import parse_duration
from draplan.api.errors import BadInput, quote
from draplan.api.validation import SPREAD_ACTIONS, check_label_key
from draplan.scheduler.plugins.interpodaffinity import AffinityArgs
from draplan.scheduler.plugins.noderesources import (
    DEFAULT_RESOURCES,
    STRATEGIES,
    ResourceSpec,
    ScoringStrategy,
)
from draplan.scheduler.plugins.podtopologyspread import SpreadArgs
from draplan.scheduler.preemption_args import PreemptionArgs
from draplan.scheduler.profile import (
    DEFAULT_SCHEDULER,
    EXTENSION_POINTS,
    KNOWN_PLUGINS,
    FitArgs,
    PluginSet,
    Profile,
    ProfileSpec,
    kube_profiles,
)

# The points a configuration may list that draplan has no place for (PreEnqueue and
# QueueSort are scheduler.queue's; Reserve to PostBind only carry out a decision).
OTHER_POINTS = (
    "preEnqueue",
    "queueSort",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)
SHAPE_UTILIZATION = (0, 100)
DEFAULTING_TYPES = ("System", "List")  # PodTopologySpreadArgs.defaultingType
SHAPE_SCORE = (0, 10)


@dataclass(frozen=True)
class SchedulerConfig:
    """The profiles of a configuration and its percentageOfNodesToScore (0: adaptive)."""

    profiles: tuple[ProfileSpec, ...]
    percentage: int = 0

    def profile(self, seed: int = 0, filter_timeout: float | None = None) -> Profile:
        """The profiles built: default-scheduler's (else the first), the others its
        siblings."""
        return kube_profiles(
            self.profiles, percentage=self.percentage, seed=seed, filter_timeout=filter_timeout
        )


def _invalid(value: object, detail: str) -> str:
    shown = quote(value) if isinstance(value, str) else str(value)
    return f"Invalid value: {shown}: {detail}"


def _range(value: int, low: int, high: int, path: str, form: str = "[{}-{}]") -> None:
    if not low <= value <= high:
        raise BadInput(_invalid(value, "not in valid range " + form.format(low, high)), path=path)


def _plugin_set(raw: v1.PluginSet, path: str) -> PluginSet:
    for kind, items in (("enabled", raw.enabled), ("disabled", raw.disabled)):
        for i, plugin in enumerate(items):
            wildcard = kind == "disabled" and plugin.name == "*"
            if plugin.name not in KNOWN_PLUGINS and not wildcard:
                raise BadInput(
                    f"plugin {quote(plugin.name)} does not exist", path=f"{path}.{kind}[{i}].name"
                )
            if plugin.weight is not None and plugin.weight < 0:
                raise BadInput(
                    _invalid(plugin.weight, "must not be negative"),
                    path=f"{path}.{kind}[{i}].weight",
                )
    return PluginSet(
        tuple((p.name, p.weight) for p in raw.enabled),
        frozenset(p.name for p in raw.disabled),
    )


def _resources(
    items: tuple[v1.ResourceSpec, ...], path: str, only_one: bool = False
) -> tuple[ResourceSpec, ...]:
    out = []
    for i, item in enumerate(items):
        weight = item.weight or 1  # SetDefaults: 0 (unset) is 1
        if only_one and weight != 1:
            raise BadInput(
                _invalid(weight, f"resource weight of {item.name} should be 1"),
                path=f"{path}[{i}].weight",
            )
        if not 1 <= weight <= 100:
            raise BadInput(
                _invalid(weight, f"resource weight of {item.name} not in valid range [1, 100]"),
                path=f"{path}[{i}].weight",
            )
        out.append(ResourceSpec(item.name, weight))
    return tuple(out) or DEFAULT_RESOURCES


def _shape(points: tuple[v1.UtilizationShapePoint, ...], path: str) -> tuple[tuple[int, int], ...]:
    if not points:
        raise BadInput("Required value: at least one point must be specified", path=path)
    for i, point in enumerate(points):
        _range(point.utilization, *SHAPE_UTILIZATION, f"{path}[{i}].utilization", "[{}, {}]")
        if i and points[i - 1].utilization >= point.utilization:
            raise BadInput(
                _invalid(
                    point.utilization, "utilization values must be sorted in increasing order"
                ),
                path=f"{path}[{i}].utilization",
            )
        _range(point.score, *SHAPE_SCORE, f"{path}[{i}].score", "[{}, {}]")
    return tuple((p.utilization, p.score) for p in points)


def _fit_args(args: v1.NodeResourcesFitArgs, path: str) -> FitArgs:
    for i, group in enumerate(args.ignored_resource_groups):
        if "/" in group:
            raise BadInput(
                _invalid(group, "resource group name can't contain '/'"),
                path=f"{path}.ignoredResourceGroups[{i}]",
            )
    raw = args.scoring_strategy or v1.ScoringStrategy()
    at = f"{path}.scoringStrategy"
    if raw.type not in STRATEGIES:
        supported = ", ".join(quote(s) for s in STRATEGIES)
        raise BadInput(
            f"Unsupported value: {quote(raw.type)}: supported values: {supported}",
            path=f"{at}.type",
        )
    shape: tuple[tuple[int, int], ...] = ()
    if raw.type == "RequestedToCapacityRatio" or raw.requested_to_capacity_ratio is not None:
        ratio = raw.requested_to_capacity_ratio or v1.RequestedToCapacityRatioParam()
        shape = _shape(ratio.shape, f"{at}.requestedToCapacityRatio.shape")
    strategy = ScoringStrategy(raw.type, _resources(raw.resources, f"{at}.resources"), shape)
    ignored = frozenset(args.ignored_resources)
    return FitArgs(strategy, ignored, frozenset(args.ignored_resource_groups))


def _plugin_args(raw: v1.Args, path: str) -> Any:
    """The typed, validated args draplan's plugin factories take (scheduler.profile)."""
    if isinstance(raw, v1.NodeResourcesFitArgs):
        return _fit_args(raw, path)
    if isinstance(raw, v1.NodeResourcesBalancedAllocationArgs):
        return _resources(raw.resources, f"{path}.resources", only_one=True)
    if isinstance(raw, v1.NodeAffinityArgs):
        return raw.added_affinity
    if isinstance(raw, v1.DynamicResourcesArgs):
        if raw.filter_timeout is None:
            return None
        seconds = parse_duration(raw.filter_timeout, f"{path}.filterTimeout")
        if seconds < 0:
            raise BadInput(
                _invalid(raw.filter_timeout, "must be zero or positive duration"),
                path=f"{path}.filterTimeout",
            )
        return seconds
    if isinstance(raw, v1.InterPodAffinityArgs):
        weight = 1 if raw.hard_pod_affinity_weight is None else raw.hard_pod_affinity_weight
        _range(weight, 0, 100, f"{path}.hardPodAffinityWeight", "[{}, {}]")
        return AffinityArgs(weight, raw.ignore_preferred_terms_of_existing_pods)
    if isinstance(raw, v1.PodTopologySpreadArgs):
        return _spread_args(raw, path)
    if isinstance(raw, v1.DefaultPreemptionArgs):
        percentage = raw.min_candidate_nodes_percentage
        percentage = (
            PreemptionArgs.min_candidate_nodes_percentage if percentage is None else percentage
        )
        absolute = raw.min_candidate_nodes_absolute
        absolute = PreemptionArgs.min_candidate_nodes_absolute if absolute is None else absolute
        at = f"{path}.minCandidateNodesPercentage"
        _range(percentage, 0, 100, at, "[{}, {}]")
        if absolute < 0:
            raise BadInput(
                _invalid(absolute, "not in valid range [0, inf)"),
                path=f"{path}.minCandidateNodesAbsolute",
            )
        if percentage == 0 and absolute == 0:
            detail = "cannot be zero at the same time as minCandidateNodesAbsolute"
            raise BadInput(_invalid(0, detail), path=at)
        return PreemptionArgs(percentage, absolute)
    return raw


def _spread_args(raw: v1.PodTopologySpreadArgs, path: str) -> SpreadArgs:
    """ValidatePodTopologySpreadArgs on the defaulted args (defaultingType System)."""
    kind = raw.defaulting_type or "System"
    if kind not in DEFAULTING_TYPES:
        supported = ", ".join(quote(s) for s in sorted(DEFAULTING_TYPES))
        raise BadInput(
            f"Unsupported value: {quote(kind)}: supported values: {supported}",
            path=f"{path}.defaultingType",
        )
    if kind == "System" and raw.default_constraints:
        raise BadInput(
            _invalid(kind, "when .defaultConstraints are not empty"), path=f"{path}.defaultingType"
        )
    at = f"{path}.defaultConstraints"
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(raw.default_constraints):
        here = f"{at}[{i}]"
        if c.max_skew <= 0:
            raise BadInput(
                _invalid(c.max_skew, "not in valid range (0, inf)"), path=f"{here}.maxSkew"
            )
        if not c.topology_key:
            raise BadInput("Required value: can not be empty", path=f"{here}.topologyKey")
        check_label_key(c.topology_key, f"{here}.topologyKey")
        if not c.when_unsatisfiable:
            raise BadInput("Required value: can not be empty", path=f"{here}.whenUnsatisfiable")
        if c.when_unsatisfiable not in SPREAD_ACTIONS:
            supported = ", ".join(quote(s) for s in SPREAD_ACTIONS)
            raise BadInput(
                f"Unsupported value: {quote(c.when_unsatisfiable)}: supported values: {supported}",
                path=f"{here}.whenUnsatisfiable",
            )
        if c.label_selector is not None:
            raise BadInput(
                "Forbidden: constraint must not define a selector, as they deduced for each pod",
                path=f"{here}.labelSelector",
            )
        pair = (c.topology_key, c.when_unsatisfiable)
        if pair in seen:
            raise BadInput(f'Duplicate value: "{{{pair[0]}, {pair[1]}}}"', path=here)
        seen.add(pair)
    return SpreadArgs(raw.default_constraints, kind)


def _profile(raw: v1.KubeSchedulerProfile, path: str, only: bool) -> ProfileSpec:
    name = raw.scheduler_name
    if name is None and only:
        name = DEFAULT_SCHEDULER  # SetDefaults: the only profile is the default scheduler
    if not name:
        raise BadInput("Required value", path=f"{path}.schedulerName")
    if raw.percentage_of_nodes_to_score is not None:
        _range(raw.percentage_of_nodes_to_score, 0, 100, f"{path}.percentageOfNodesToScore")
    plugins: dict[str, PluginSet] = {}
    if raw.plugins is not None:
        for point in ("multiPoint", *EXTENSION_POINTS, *OTHER_POINTS):
            field = _snake(point)
            plugins[point] = _plugin_set(getattr(raw.plugins, field), f"{path}.plugins.{point}")
    args: dict[str, Any] = {}
    seen: dict[str, int] = {}
    for i, config in enumerate(raw.plugin_config):
        at = f"{path}.pluginConfig[{i}]"
        if config.name in seen:
            raise BadInput(f"Duplicate value: {quote(config.name)}", path=at)
        seen[config.name] = i
        kind = v1.ARGS.get(config.name)
        if kind is None:
            continue
        given = config.args.get("kind")
        if given not in (None, "", kind.__name__):
            raise BadInput(_invalid(given, "has to match plugin args"), path=f"{at}.args")
        try:
            typed = convert(config.args, kind)
        except BadInput as err:
            inner = err.path.lstrip(".")
            raise BadInput(
                err.message, path=f"{at}.args" + (f".{inner}" if inner else "")
            ) from None
        args[config.name] = _plugin_args(typed, f"{at}.args")
    return ProfileSpec(name, plugins, args, raw.percentage_of_nodes_to_score)


def _snake(point: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in point)


def parse_config(doc: Mapping[str, Any]) -> SchedulerConfig:
    """Read, default and validate a configuration (BadInput with the field path, without the
    file: the caller adds it)."""
    try:
        raw = msgspec.convert(doc, v1.KubeSchedulerConfiguration)
    except msgspec.ValidationError:
        raw = convert(doc, v1.KubeSchedulerConfiguration)  # worded with the field path
    if raw.parallelism <= 0:
        raise BadInput(
            _invalid(raw.parallelism, "should be an integer value greater than zero"),
            path="parallelism",
        )
    if raw.percentage_of_nodes_to_score is not None:
        _range(raw.percentage_of_nodes_to_score, 0, 100, "percentageOfNodesToScore")
    if raw.pod_initial_backoff_seconds <= 0:
        raise BadInput(
            _invalid(raw.pod_initial_backoff_seconds, "must be greater than 0"),
            path="podInitialBackoffSeconds",
        )
    if raw.pod_max_backoff_seconds < raw.pod_initial_backoff_seconds:
        raise BadInput(
            _invalid(
                raw.pod_max_backoff_seconds,
                "must be greater than or equal to PodInitialBackoffSeconds",
            ),
            path="podMaxBackoffSeconds",
        )
    profiles_raw = raw.profiles or (v1.KubeSchedulerProfile(),)
    profiles: list[ProfileSpec] = []
    names: dict[str, int] = {}
    for i, entry in enumerate(profiles_raw):
        spec = _profile(entry, f"profiles[{i}]", len(profiles_raw) == 1)
        if spec.scheduler_name in names:
            raise BadInput(
                f'Duplicate value: "profiles[{names[spec.scheduler_name]}].schedulerName"',
                path=f"profiles[{i}].schedulerName",
            )
        names[spec.scheduler_name] = i
        profiles.append(spec)
    _common_queue_sort(profiles_raw)
    return SchedulerConfig(tuple(profiles), raw.percentage_of_nodes_to_score or 0)


def _common_queue_sort(profiles: tuple[v1.KubeSchedulerProfile, ...]) -> None:
    """validateCommonQueueSort: every profile sorts the one queue the same way."""
    first = profiles[0].plugins.queue_sort if profiles[0].plugins else v1.PluginSet()
    for i, profile in enumerate(profiles[1:], 1):
        sort = profile.plugins.queue_sort if profile.plugins else v1.PluginSet()
        if sort != first:
            raise BadInput(
                "Invalid value: has to match for all profiles",
                path=f"profiles[{i}].plugins.queueSort",
            )


def scheduler_config(doc: Mapping[str, Any], source: str, holder: str = "") -> SchedulerConfig:
    """`parse_config` with the file (and, for a configuration a ConfigMap holds, the
    ConfigMap's name and data key) in its errors."""
    if doc.get("kind") != v1.KIND or doc.get("apiVersion") != v1.API_VERSION:
        raise BadInput(
            f"expected apiVersion {v1.API_VERSION} kind {v1.KIND} (or a ConfigMap holding one), "
            f"got {quote(str(doc.get('apiVersion', '')))} {quote(str(doc.get('kind', '')))}",
            source=source,
            path="kind",
        )
    try:
        return parse_config(doc)
    except BadInput as err:
        if holder:
            kind, name, key = holder.split("/", 2)
            raise err.located(
                source=source, kind=kind, name=name, path_prefix=f"data[{key}]"
            ) from None
        raise err.located(source=source, kind=v1.KIND) from None
