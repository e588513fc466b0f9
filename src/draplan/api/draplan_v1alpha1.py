"""draplan.io/v1alpha1: NodePool, the autoscaler's node template."""

from __future__ import annotations

from typing import Any

from draplan.api.core_v1 import NodeSpec, NodeStatus
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.api.resource_v1 import ResourceSliceSpec

NODE_NAME_PLACEHOLDER = "$NODE_NAME"


class TopologyPlacement(KubeStruct, frozen=True):
    """New nodes fill domains of this label key, at most nodesPerDomain nodes each."""

    key: str
    nodes_per_domain: int = 0


class NodeTemplateMeta(KubeStruct, frozen=True):
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class NodeTemplate(KubeStruct, frozen=True):
    """A v1 Node without a name."""

    metadata: NodeTemplateMeta = NodeTemplateMeta()
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()


class NodePoolSpec(KubeStruct, frozen=True):
    min_nodes: int = 0
    max_nodes: int = 0
    price_per_hour: str = "0"
    provisioning_delay_seconds: int = 0
    priority: int = 0
    topology: tuple[TopologyPlacement, ...] = ()
    template: NodeTemplate | None = None
    resource_slices: tuple[ResourceSliceSpec, ...] = ()
    from_node: str = ""


class NodePool(KubeStruct, frozen=True):
    api_version: str = "draplan.io/v1alpha1"
    kind: str = "NodePool"
    metadata: ObjectMeta = ObjectMeta()
    spec: NodePoolSpec = NodePoolSpec()


class PluginWeight(KubeStruct, frozen=True):
    name: str
    weight: int = 1


class SchedulerProfileSpec(KubeStruct, frozen=True):
    """Which score plugins run with which weights; which filter plugins are disabled."""

    score_plugins: tuple[PluginWeight, ...] | None = None
    disabled_plugins: tuple[str, ...] = ()
    device_order: str = "tight"
    filter_timeout_seconds: float = 10.0


class SchedulerProfile(KubeStruct, frozen=True):
    api_version: str = "draplan.io/v1alpha1"
    kind: str = "SchedulerProfile"
    metadata: ObjectMeta = ObjectMeta()
    spec: SchedulerProfileSpec = SchedulerProfileSpec()


class SyntheticWorkload(KubeStruct, frozen=True):
    """The synthetic AI mix (draplan.sim.workloads.Mix)."""

    jobs: int = 40
    arrivals_per_hour: float = 30.0
    training: float = 0.25
    finetune: float = 0.35
    inference: float = 0.40
    time_compression: float = 4.0
    namespace: str = "ml"


class ScenarioJob(KubeStruct, frozen=True):
    """A job given in YAML: its pods and claim templates (and gang objects) as objects."""

    name: str
    arrival_seconds: float
    duration_seconds: float
    workload_class: str = "batch"
    objects: tuple[dict[str, Any], ...] = ()


class OpenbReplay(KubeStruct, frozen=True):
    """The Alibaba openb trace replayed by creation and deletion times (draplan.sim.replay).
    Times are trace seconds; the window [startSeconds, endSeconds) is shifted to 0 and divided
    by timeCompression. cluster `pools`: one NodePool per node type of the node list (minNodes
    to maxNodes, default the type's count in the list); `static`: the node list itself."""

    trace: str = "default"  # a pod list name (openb_pod_list_<trace>.csv) or a CSV file
    data_dir: str = ""  # holds the CSVs (or openb/); default ../shared/data
    node_list: str = ""  # default <dataDir>/openb_node_list_gpu_node.csv
    start_seconds: float = 0.0
    end_seconds: float | None = None  # default: the trace's last creation or deletion
    time_compression: float = 1.0
    cluster: str = "pools"
    min_nodes: int = 0
    max_nodes: int | None = None
    provisioning_delay_seconds: int = 300
    price_per_gpu_hour: float = 0.0
    namespace: str = "default"


class ScenarioWorkload(KubeStruct, frozen=True):
    synthetic: SyntheticWorkload | None = None
    openb: OpenbReplay | None = None
    jobs: tuple[ScenarioJob, ...] = ()


class ScenarioSpec(KubeStruct, frozen=True):
    seed: int = 42
    policies: tuple[str, ...] = ("legacy", "dra", "dra+gang-atomic")
    autoscaler_interval_seconds: float = 10.0
    scale_down_unneeded_seconds: float = 600.0
    horizon_seconds: float | None = None
    workload: ScenarioWorkload = ScenarioWorkload()


class Scenario(KubeStruct, frozen=True):
    """A simulation: the workload and settings; the cluster comes from the other objects."""

    api_version: str = "draplan.io/v1alpha1"
    kind: str = "Scenario"
    metadata: ObjectMeta = ObjectMeta()
    spec: ScenarioSpec = ScenarioSpec()
