"""kubescheduler.config.k8s.io/v1: KubeSchedulerConfiguration and the plugin args draplan
reads (k8s.io/kube-scheduler/config/v1 types.go, types_pluginargs.go), decoded strictly as
kube-scheduler decodes its configuration: an unknown field is an error. Fields that change no
answer draplan gives (leader election, client connection, backoffs, extenders) are read as
they are written and otherwise left alone."""

from __future__ import annotations

from typing import Any

from draplan.api.core_v1 import NodeAffinity, TopologySpreadConstraint
from draplan.api.meta import Int32, Int64, KubeStruct

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"


class Strict(KubeStruct, frozen=True, forbid_unknown_fields=True):
    """A configuration value: unknown fields are refused (kube-scheduler's strict decoding)."""


class Plugin(Strict, frozen=True):
    name: str
    weight: Int32 | None = None


class PluginSet(Strict, frozen=True):
    enabled: tuple[Plugin, ...] = ()
    disabled: tuple[Plugin, ...] = ()


class Plugins(Strict, frozen=True):
    pre_enqueue: PluginSet = PluginSet()
    queue_sort: PluginSet = PluginSet()
    pre_filter: PluginSet = PluginSet()
    filter: PluginSet = PluginSet()
    post_filter: PluginSet = PluginSet()
    pre_score: PluginSet = PluginSet()
    score: PluginSet = PluginSet()
    reserve: PluginSet = PluginSet()
    permit: PluginSet = PluginSet()
    pre_bind: PluginSet = PluginSet()
    bind: PluginSet = PluginSet()
    post_bind: PluginSet = PluginSet()
    multi_point: PluginSet = PluginSet()


class PluginConfig(Strict, frozen=True):
    name: str
    args: dict[str, Any] = {}


class KubeSchedulerProfile(Strict, frozen=True):
    scheduler_name: str | None = None
    percentage_of_nodes_to_score: Int32 | None = None
    plugins: Plugins | None = None
    plugin_config: tuple[PluginConfig, ...] = ()


class KubeSchedulerConfiguration(Strict, frozen=True):
    api_version: str = API_VERSION
    kind: str = KIND
    parallelism: Int32 = 16
    leader_election: dict[str, Any] = {}
    client_connection: dict[str, Any] = {}
    enable_profiling: bool | None = None
    enable_contention_profiling: bool | None = None
    percentage_of_nodes_to_score: Int32 | None = None
    pod_initial_backoff_seconds: Int64 = 1
    pod_max_backoff_seconds: Int64 = 10
    profiles: tuple[KubeSchedulerProfile, ...] = ()
    extenders: tuple[dict[str, Any], ...] = ()
    delay_cache_until_active: bool = False


# --- plugin args ---------------------------------------------------------------------------


class ResourceSpec(Strict, frozen=True):
    name: str
    weight: Int64 = 0


class UtilizationShapePoint(Strict, frozen=True):
    utilization: Int32
    score: Int32


class RequestedToCapacityRatioParam(Strict, frozen=True):
    shape: tuple[UtilizationShapePoint, ...] = ()


class ScoringStrategy(Strict, frozen=True):
    type: str = "LeastAllocated"
    resources: tuple[ResourceSpec, ...] = ()
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None


class Args(Strict, frozen=True):
    """Plugin args may name their own kind."""

    api_version: str = ""
    kind: str = ""


class NodeResourcesFitArgs(Args, frozen=True):
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy | None = None


class NodeResourcesBalancedAllocationArgs(Args, frozen=True):
    resources: tuple[ResourceSpec, ...] = ()


class NodeAffinityArgs(Args, frozen=True):
    added_affinity: NodeAffinity | None = None


class DynamicResourcesArgs(Args, frozen=True):
    filter_timeout: str | None = None  # a metav1.Duration ("10s")
    binding_timeout: str | None = None


class InterPodAffinityArgs(Args, frozen=True):
    hard_pod_affinity_weight: Int32 | None = None
    ignore_preferred_terms_of_existing_pods: bool = False


class PodTopologySpreadArgs(Args, frozen=True):
    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = ""


class DefaultPreemptionArgs(Args, frozen=True):
    min_candidate_nodes_percentage: Int32 | None = None
    min_candidate_nodes_absolute: Int32 | None = None


class VolumeBindingArgs(Args, frozen=True):
    bind_timeout_seconds: Int64 | None = None
    shape: tuple[UtilizationShapePoint, ...] = ()


# The args kind of each plugin that takes args (a pluginConfig of another plugin is kept
# unread, as kube-scheduler keeps it for out-of-tree plugins).
ARGS: dict[str, type[Args]] = {
    "NodeResourcesFit": NodeResourcesFitArgs,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs,
    "NodeAffinity": NodeAffinityArgs,
    "DynamicResources": DynamicResourcesArgs,
    "InterPodAffinity": InterPodAffinityArgs,
    "PodTopologySpread": PodTopologySpreadArgs,
    "DefaultPreemption": DefaultPreemptionArgs,
    "VolumeBinding": VolumeBindingArgs,
}
