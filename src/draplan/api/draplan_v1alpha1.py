"""draplan.io/v1alpha1: NodePool, the autoscaler's node template."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from draplan.api.core_v1 import NodeSpec, NodeStatus, Toleration
from draplan.api.meta import Int32, Int64, KubeStruct, ObjectMeta
from draplan.api.resource_v1 import ResourceSliceSpec

NODE_NAME_PLACEHOLDER = "$NODE_NAME"
# A node's own price in dollars per hour, for nodes no NodePool prices (e.g. set by a cost
# exporter). Defined here, below `cluster`, so Node validation can check it.
PRICE_LABEL = "draplan.io/price-per-hour"

# Every number that drives work (jobs, nodes, events, seconds of simulated time) is bounded:
# far above any real cluster or scenario, low enough that a run always ends.
MAX_JOBS = 100_000
# The autoscaler policies a Scenario compares (draplan.sim.engine runs them). legacy:
# draplan's planner on the device-plugin count view; dra: draplan's planner; both place pods
# one by one (kube-scheduler without gang scheduling), so a gang can run in part and its
# devices count as partial-gang GPU-hours; +gang-atomic: gangs placed and scaled whole (the
# 1.37 scheduler's Workload / PodGroup gangs); ca+…: Cluster Autoscaler 1.36's loop with DRA
# (its options, pod by pod on its templates and their ResourceSlices, `autoscaler.ca`) choosing
# by its least-waste or by draplan as its gRPC expander (`--expander=grpc,least-waste`).
DEFAULT_POLICIES = ("legacy", "dra", "dra+gang-atomic")
SCENARIO_POLICIES = (
    "legacy",
    "dra",
    "dra+gang-atomic",
    "ca+least-waste",
    "ca+draplan-expander",
)
MAX_POOL_NODES = 100_000
MAX_SECONDS = 10 * 365 * 86_400  # ten years
Count = Annotated[int, Meta(ge=0, le=MAX_POOL_NODES)]
JobCount = Annotated[int, Meta(ge=0, le=MAX_JOBS)]
Seconds = Annotated[float, Meta(ge=0, le=MAX_SECONDS)]
Delay = Annotated[int, Meta(ge=0, le=MAX_SECONDS)]
PositiveSeconds = Annotated[float, Meta(gt=0, le=MAX_SECONDS)]
# Cluster Autoscaler's --scan-interval is whole seconds; a shorter loop only multiplies ticks.
LoopSeconds = Annotated[float, Meta(ge=1, le=MAX_SECONDS)]
Factor = Annotated[float, Meta(gt=0, le=1e9)]  # rates and time compressions
Weight = Annotated[float, Meta(ge=0, le=1e9)]


class TopologyPlacement(KubeStruct, frozen=True):
    """New nodes fill domains of this label key, at most nodesPerDomain nodes each."""

    key: str  # node label naming the domain, e.g. nvidia.com/gpu.clique
    nodes_per_domain: Count = 0  # nodes per domain value; 0: one domain for the whole pool


class NodeTemplateMeta(KubeStruct, frozen=True):
    """Labels and annotations every new node gets."""

    labels: dict[str, str] = {}  # e.g. node.kubernetes.io/instance-type
    annotations: dict[str, str] = {}


class NodeTemplate(KubeStruct, frozen=True):
    """A v1 Node without a name."""

    metadata: NodeTemplateMeta = NodeTemplateMeta()
    spec: NodeSpec = NodeSpec()  # taints, unschedulable, as a v1 Node's
    status: NodeStatus = NodeStatus()  # allocatable cpu, memory, pods, as a v1 Node's


class NodePoolSpec(KubeStruct, frozen=True):
    """A node group the autoscaler may grow and shrink: what a new node looks like (Node
    template and ResourceSlices, `$NODE_NAME` standing for its name), its limits and price."""

    min_nodes: Count = 0  # scale-down keeps at least this many
    max_nodes: Count = 0  # scale-up adds at most up to this many
    price_per_hour: str = "0"  # dollars per node-hour, a decimal string
    provisioning_delay_seconds: Delay = 0  # from the decision until the node is Ready (simulate)
    priority: Int32 = 0  # for the priority expander: higher is tried first
    topology: tuple[TopologyPlacement, ...] = ()  # domains new nodes fill, e.g. racks
    template: NodeTemplate | None = None  # the new node; or fromNode
    resource_slices: tuple[ResourceSliceSpec, ...] = ()  # the new node's devices ($NODE_NAME)
    from_node: str = ""  # copy an existing node and its slices instead of template


class NodePool(KubeStruct, frozen=True):
    """The autoscaler's node group (Cluster Autoscaler's node group, Karpenter's NodePool)."""

    api_version: str = "draplan.io/v1alpha1"
    kind: str = "NodePool"
    metadata: ObjectMeta = ObjectMeta()
    spec: NodePoolSpec = NodePoolSpec()


class PluginWeight(KubeStruct, frozen=True):
    """A score plugin and its weight."""

    name: str  # LeastAllocated, MostAllocated, TopologyLocality, or a placement policy
    weight: Annotated[int, Meta(ge=0, le=(1 << 31) - 1)] = 1


class SchedulerProfileSpec(KubeStruct, frozen=True):
    """Which score plugins run with which weights; which filter plugins are disabled."""

    score_plugins: tuple[PluginWeight, ...] | None = None  # unset: the defaults
    disabled_plugins: tuple[str, ...] = ()  # filter plugins to skip, by name
    device_order: str = "tight"  # the allocator's device order: tight or first-fit
    filter_timeout_seconds: Annotated[float, Meta(ge=0, le=3600)] = (
        10.0  # the allocator's time budget per node
    )
    preemption_frees_devices: bool = False  # draplan's: preemption frees victims' devices


class SchedulerProfile(KubeStruct, frozen=True):
    """The scheduler's plugins and weights (`--profile FILE`), as a kube-scheduler profile."""

    api_version: str = "draplan.io/v1alpha1"
    kind: str = "SchedulerProfile"
    metadata: ObjectMeta = ObjectMeta()
    spec: SchedulerProfileSpec = SchedulerProfileSpec()


class SyntheticWorkload(KubeStruct, frozen=True):
    """The synthetic AI mix (draplan.sim.workloads.Mix): training gangs of 8-GPU pods in one
    topology domain, fine-tuning pods with 4 GPUs and a NIC on one PCIe root, inference pods
    on a MIG slice. The device fields name the cluster's DeviceClasses and attributes; the
    defaults are NVIDIA's DRA driver and the dra.net NIC driver, as in the demo cluster."""

    jobs: JobCount = 40  # how many jobs arrive
    arrivals_per_hour: Factor = 30.0  # Poisson arrivals
    training: Weight = 0.25  # relative weight of training gangs
    finetune: Weight = 0.35  # relative weight of fine-tuning pods
    inference: Weight = 0.40  # relative weight of inference pods
    time_compression: Factor = 4.0  # Philly run times are divided by this
    namespace: str = "ml"
    gpu_class: str = "gpu.nvidia.com"  # DeviceClass of whole GPUs
    gpu_driver: str = "gpu.nvidia.com"  # attribute domain of gpuModel and migProfile
    gpu_model: str = "NVIDIA H100"  # training GPUs' productName prefix; "": any GPU
    mig_class: str = "mig.nvidia.com"  # DeviceClass of MIG slices; "": inference on a GPU
    mig_profile: str = "1g.10gb"  # the slices' `profile` attribute; "": any slice
    nic_class: str = "rdma.dra.net"  # DeviceClass of fine-tuning's NIC; "": no NIC
    topology_key: str = "nvidia.com/gpu.clique"  # node label of a gang's domain; "": none
    tolerations: tuple[Toleration, ...] = ()  # on every pod: the taints of nodes it may use


class ScenarioJob(KubeStruct, frozen=True):
    """A job given in YAML: its pods and claim templates (and gang objects) as objects."""

    name: str  # the job's name in results
    arrival_seconds: Seconds  # when its objects are created
    duration_seconds: Seconds  # how long it runs once all its pods run
    workload_class: str = "batch"  # groups pending-time percentiles
    objects: tuple[dict[str, Any], ...] = ()  # Pods, ResourceClaimTemplates, PodGroups, …


class OpenbReplay(KubeStruct, frozen=True):
    """The Alibaba openb trace replayed by creation and deletion times (draplan.sim.replay).
    Times are trace seconds; the window [startSeconds, endSeconds) is shifted to 0 and divided
    by timeCompression. cluster `pools`: one NodePool per node type of the node list (minNodes
    to maxNodes, default the type's count in the list); `static`: the node list itself."""

    trace: str = "default"  # a pod list name (openb_pod_list_<trace>.csv) or a CSV file
    data_dir: str = ""  # holds the CSVs (or openb/); default ../shared/data
    node_list: str = ""  # default <dataDir>/openb_node_list_gpu_node.csv
    start_seconds: Seconds = 0.0  # the window's start, in trace seconds
    end_seconds: Seconds | None = None  # default: the trace's last creation or deletion
    time_compression: Factor = 1.0  # trace seconds per simulated second
    cluster: str = "pools"  # pools (autoscaled, one NodePool per node type) or static
    min_nodes: Count = 0  # per pool
    max_nodes: Count | None = None  # per pool; unset: the type's count in the node list
    provisioning_delay_seconds: Delay = 300  # per pool
    price_per_gpu_hour: Weight | None = None  # unset: each model's price from the shipped table
    namespace: str = "default"  # of the replayed pods


class ScenarioWorkload(KubeStruct, frozen=True):
    """What arrives: any of the three, together."""

    synthetic: SyntheticWorkload | None = None  # the synthetic AI mix
    openb: OpenbReplay | None = None  # the Alibaba openb trace, replayed
    jobs: Annotated[
        tuple[ScenarioJob, ...], Meta(max_length=MAX_JOBS)
    ] = ()  # jobs given as objects


class ScenarioSpec(KubeStruct, frozen=True):
    """The workload and how the runs go."""

    seed: Int64 = 42  # the synthetic mix's random seed (`--seed` overrides)
    policies: tuple[str, ...] = DEFAULT_POLICIES  # autoscaler policies (legacy, dra: pod by pod)
    autoscaler_interval_seconds: LoopSeconds = 10.0  # the autoscaler loop's period
    scale_down_unneeded_seconds: Seconds = 600.0  # a pool's empty node goes after this long
    horizon_seconds: PositiveSeconds | None = None  # stop here; unset: when the work is done
    workload: ScenarioWorkload = ScenarioWorkload()


class Scenario(KubeStruct, frozen=True):
    """A simulation: the workload and settings; the cluster comes from the other objects."""

    api_version: str = "draplan.io/v1alpha1"
    kind: str = "Scenario"
    metadata: ObjectMeta = ObjectMeta()
    spec: ScenarioSpec = ScenarioSpec()
