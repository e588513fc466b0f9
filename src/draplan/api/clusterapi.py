"""cluster.x-k8s.io MachineDeployment and MachinePool: Cluster Autoscaler's node groups on its
clusterapi provider, with the annotations that size them and describe a node from zero
(kubernetes/autoscaler `cluster-autoscaler/cloudprovider/clusterapi/README.md`,
`clusterapi_utils.go`, `clusterapi_unstructured.go`)."""

from __future__ import annotations

import msgspec

from draplan.api.core_v1 import Taint
from draplan.api.meta import KubeStruct, ObjectMeta

MIN_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
MAX_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
# Scale-from-zero capacity annotations; cpu and memory are the minimum CA needs.
CAPACITY = "capacity.cluster-autoscaler.kubernetes.io/"
CPU = CAPACITY + "cpu"
MEMORY = CAPACITY + "memory"
EPHEMERAL_DISK = CAPACITY + "ephemeral-disk"
GPU_TYPE = CAPACITY + "gpu-type"
GPU_COUNT = CAPACITY + "gpu-count"
MAX_PODS = CAPACITY + "maxPods"
LABELS = CAPACITY + "labels"  # "k1=v1,k2=v2"
TAINTS = CAPACITY + "taints"  # "k1=v1:NoSchedule,k2=v2:NoExecute"
DRA_DRIVER = CAPACITY + "dra-driver"  # gpu-count devices of this driver, type=gpu
DEFAULT_MAX_PODS = 110  # CA's default when maxPods is not annotated
# What CAPI writes on a node it made: the kind and name of the Machine's owner.
OWNER_KIND = "cluster.x-k8s.io/owner-kind"
OWNER_NAME = "cluster.x-k8s.io/owner-name"


class MachineTemplateMeta(KubeStruct, frozen=True):
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class MachineSpec(KubeStruct, frozen=True):
    taints: tuple[Taint, ...] = ()  # CAPI 1.12+ (MachineTaintPropagation)


class MachineTemplateSpec(KubeStruct, frozen=True):
    metadata: MachineTemplateMeta = MachineTemplateMeta()
    spec: MachineSpec = MachineSpec()


class ScalableSpec(KubeStruct, frozen=True):
    cluster_name: str = ""
    replicas: int | None = None
    template: MachineTemplateSpec = MachineTemplateSpec()
    # MachinePool only: the provider IDs of its instances, as the nodes' spec.providerID.
    provider_id_list: tuple[str, ...] = msgspec.field(default=(), name="providerIDList")


class MachineDeployment(KubeStruct, frozen=True):
    api_version: str = "cluster.x-k8s.io/v1beta2"
    kind: str = "MachineDeployment"
    metadata: ObjectMeta = ObjectMeta()
    spec: ScalableSpec = ScalableSpec()


class MachinePool(KubeStruct, frozen=True):
    api_version: str = "cluster.x-k8s.io/v1beta2"
    kind: str = "MachinePool"
    metadata: ObjectMeta = ObjectMeta()
    spec: ScalableSpec = ScalableSpec()


ScalableResource = MachineDeployment | MachinePool


def parse_labels(text: str) -> dict[str, str]:
    """The labels annotation, "k1=v1,k2=v2"; CA skips an item without "=" (as here)."""
    out: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def parse_taint(text: str) -> Taint | None:
    """One item of the taints annotation, "key=value:Effect" or "key:Effect"; None if it is
    not one (CA logs and skips such an item)."""
    head, sep, effect = text.strip().rpartition(":")
    if not sep or not head:
        return None
    key, _, value = head.partition("=")
    return Taint(key=key, value=value, effect=effect)


def scalable_taints(resource: ScalableResource) -> tuple[Taint, ...]:
    """spec.template.spec.taints, then the annotation's taints, an annotation taint replacing
    the one of the same key and effect (as `unstructuredScalableResource.Taints`)."""
    taints = list(resource.spec.template.spec.taints)
    for item in resource.metadata.annotations.get(TAINTS, "").split(","):
        taint = parse_taint(item) if item.strip() else None
        if taint is None:
            continue
        same = [i for i, t in enumerate(taints) if (t.key, t.effect) == (taint.key, taint.effect)]
        if same:
            taints[same[0]] = taint
        else:
            taints.append(taint)
    return tuple(taints)


def node_group_id(resource: ScalableResource) -> str:
    """The id Cluster Autoscaler's clusterapi provider gives the group: `<Kind>/<namespace>/
    <name>` (`clusterapi_unstructured.go`, `unstructuredScalableResource.ID`)."""
    meta = resource.metadata
    return f"{resource.kind}/{meta.namespace}/{meta.name}"
