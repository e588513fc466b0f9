"""Builders for clusters whose nodes Karpenter owns (karpenter.sh/v1 NodePools, NodeClaims,
initialized nodes with DaemonSets), beside Cluster Autoscaler's EKS node groups and a
control-plane node: plain manifests, as `kubectl get -o yaml` writes them."""

from __future__ import annotations

from typing import Any

from draplan.api.codec import decode
from draplan.autoscaler import Autoscaler, Plan
from draplan.autoscaler.derived import derive_pools
from draplan.cluster.state import ClusterState
from scale_scenarios import allocated_claim, resource_slice

T0 = "2026-05-01T10:00:00Z"  # when the pods were created and bound
NOW = "2026-05-01T12:00:00Z"  # the newest time in the input: the plan's now
NEURON = "aws.amazon.com/neuron"
GB200_DRIVER = "gpu.nvidia.com"
INITIALIZED = {"karpenter.sh/initialized": "true", "karpenter.sh/registered": "true"}


def karpenter_pool(
    name: str,
    policy: str = "WhenEmptyOrUnderutilized",
    after: str = "30s",
    budgets: list[dict[str, Any]] | None = None,
    expire: str | None = None,
    weight: int | None = None,
) -> dict[str, Any]:
    disruption: dict[str, Any] = {"consolidationPolicy": policy, "consolidateAfter": after}
    if budgets is not None:
        disruption["budgets"] = budgets
    spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name},
        "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
        ],
    }
    if expire is not None:
        spec["expireAfter"] = expire
    doc: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {"spec": spec}, "disruption": disruption},
    }
    if weight is not None:
        doc["spec"]["weight"] = weight
    return doc


def karpenter_node(
    name: str,
    pool: str,
    cpu: str = "192",
    memory: str = "2048Gi",
    extended: dict[str, str] | None = None,
    initialized: bool = True,
    annotations: dict[str, str] | None = None,
    instance: str = "trn2.48xlarge",
    capacity: str = "on-demand",
) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110", **(extended or {})}
    labels = {
        "kubernetes.io/hostname": name,
        "karpenter.sh/nodepool": pool,
        "karpenter.sh/capacity-type": capacity,
        "node.kubernetes.io/instance-type": instance,
        **(INITIALIZED if initialized else {"karpenter.sh/registered": "true"}),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": annotations or {},
            "creationTimestamp": "2026-04-30T08:00:00Z",
        },
        "spec": {"providerID": f"aws:///us-east-2a/i-{name}"},
        "status": {
            "capacity": dict(alloc),
            "allocatable": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": T0}],
        },
    }


def node_claim(node: str, pool: str, last_pod_event: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {
        "nodeName": node,
        "providerID": f"aws:///us-east-2a/i-{node}",
        "conditions": [{"type": "Initialized", "status": "True", "lastTransitionTime": T0}],
    }
    if last_pod_event is not None:
        status["lastPodEventTime"] = last_pod_event
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": f"{pool}-{node}",
            "labels": {"karpenter.sh/nodepool": pool},
            "creationTimestamp": "2026-04-30T08:00:00Z",
        },
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": pool}
        },
        "status": status,
    }


def eks_node(name: str, group: str, cpu: str = "32", memory: str = "128Gi") -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "eks.amazonaws.com/nodegroup": group},
        },
        "status": {"capacity": dict(alloc), "allocatable": dict(alloc)},
    }


def control_plane(name: str = "cp-0") -> dict[str, Any]:
    """A control-plane node that (wrongly) carries Karpenter's label too."""
    doc = eks_node(name, "unused")
    doc["metadata"]["labels"] = {
        "kubernetes.io/hostname": name,
        "node-role.kubernetes.io/control-plane": "",
        "karpenter.sh/nodepool": "trainium",
    }
    doc["spec"] = {
        "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    }
    return doc


def pod(
    name: str,
    node: str | None,
    cpu: str = "1",
    owner: str | None = "ReplicaSet",
    ns: str = "ml",
    neuron: int = 0,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    tolerate: bool = False,
    created: str = T0,
    claim: str | None = None,
    selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "uid": f"uid-{name}",
        "creationTimestamp": created,
        "annotations": annotations or {},
        "labels": labels or {},
    }
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner,
                "name": f"{name}-{owner.lower()}",
                "uid": f"uid-{name}-owner",
                "controller": True,
            }
        ]
    requests: dict[str, str] = {"cpu": cpu, "memory": "4Gi"}
    if neuron:
        requests[NEURON] = str(neuron)
    container: dict[str, Any] = {"name": "c", "resources": {"requests": requests}}
    spec: dict[str, Any] = {"containers": [container]}
    if neuron:
        container["resources"]["limits"] = {NEURON: str(neuron)}
    if tolerate:
        spec["tolerations"] = [{"operator": "Exists"}]
    if selector:
        spec["nodeSelector"] = selector
    if claim:
        container["resources"]["claims"] = [{"name": "gpu"}]
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    status: dict[str, Any] = {"phase": "Pending"}
    if node:
        spec["nodeName"] = node
        status = {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": T0}],
        }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def daemon_pods(node: str) -> list[dict[str, Any]]:
    """The DaemonSet pods every node runs (node-exporter; the Neuron device plugin)."""
    return [
        pod(f"node-exporter-{node}", node, cpu="100m", owner="DaemonSet", ns="monitoring"),
        pod(f"neuron-plugin-{node}", node, cpu="100m", owner="DaemonSet", ns="kube-system"),
    ]


def clock() -> dict[str, Any]:
    """A finished pod whose creation is the input's newest time: the plan's now."""
    doc = pod("clock", None, created=NOW)
    doc["status"] = {"phase": "Succeeded"}
    return doc


def gb200_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": GB200_DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{GB200_DRIVER}'"}}]},
    }


def gb200_slice(node: str, gpus: int = 4) -> dict[str, Any]:
    """A GB200 node's four Blackwell GPUs (one NVLink domain), as NVIDIA's DRA driver says."""
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {"productName": {"string": "NVIDIA GB200"}, "index": {"int": i}},
            "capacity": {"memory": {"value": "186Gi"}},
        }
        for i in range(gpus)
    ]
    return resource_slice(node, devices, GB200_DRIVER)


def gb200_claim(
    name: str, node: str, devices: list[str], user: str, ns: str = "ml"
) -> dict[str, Any]:
    """A claim allocated on `node`'s GPUs for pod `user`: the allocation pins the pod there."""
    return allocated_claim(name, node, devices, [user], GB200_DRIVER, driver=GB200_DRIVER, ns=ns)


def state_of(objs: list[dict[str, Any]], prices: dict[str, str] | None = None) -> ClusterState:
    """The cluster with pools derived from its node groups, as `draplan scale` derives them
    (`prices`: --prices, by pool or instance type)."""
    state = ClusterState.from_objects(decode(o) for o in objs)
    state.node_pools.update(derive_pools(state, prices).pools)
    return state


def plan_of(
    objs: list[dict[str, Any]], prices: dict[str, str] | None = None
) -> tuple[Plan, ClusterState]:
    """The plan, and the state it leaves (its removals made, the pods moved)."""
    state = state_of(objs, prices)
    return Autoscaler().plan(state), state
