"""Writes cluster.yaml: an EKS cluster with on-premises hybrid nodes, as `kubectl get ... -A -o
yaml` dumps it.

Run `python tests/data/hybrid/make_cluster.py` after changing it; tests/test_hybrid.py checks
that cluster.yaml is what this script writes. README.md beside it describes the cluster. The
names, labels, taints and resources are those the real components write: EKS managed node
groups, EKS Hybrid Nodes, Karpenter on AWS with Trainium2 (the Neuron and EFA device plugins,
AWS's network-topology labels), AMD's GPU DRA driver (`gpu.amd.com`), Kueue with Topology
Aware Scheduling, DaemonSets with host ports, a PriorityClass hierarchy.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]
HERE = Path(__file__).parent
NODES: list[Obj] = []
OBJECTS: list[Obj] = []
PODS: list[Obj] = []
CREATED = "2026-11-02T07:30:00Z"
NEURON, EFA = "aws.amazon.com/neuron", "vpc.amazonaws.com/efa"
LAYERS = tuple(f"topology.k8s.aws/network-node-layer-{i}" for i in (1, 2, 3))
ZONE = "topology.kubernetes.io/zone"


def uid(*parts: str) -> str:
    h = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def meta(kind: str, name: str, ns: str = "", **extra: Any) -> Obj:
    out: Obj = {
        "name": name,
        "uid": uid(kind, ns, name),
        "resourceVersion": str(int(hashlib.sha256(name.encode()).hexdigest()[:6], 16)),
        "creationTimestamp": extra.pop("created", CREATED),
    }
    if ns:
        out["namespace"] = ns
    out.update({k: v for k, v in extra.items() if v})
    return out


def add(kind: str, api: str, name: str, ns: str = "", spec: Obj | None = None, **rest: Any) -> Obj:
    obj: Obj = {"apiVersion": api, "kind": kind, "metadata": meta(kind, name, ns, **rest)}
    if spec is not None:
        obj["spec"] = spec
    OBJECTS.append(obj)
    return obj


def node(
    name: str,
    labels: dict[str, str],
    capacity: dict[str, str],
    taints: list[Obj] = (),  # type: ignore[assignment]
    provider: str = "",
    ip: str = "10.0.0.1",
) -> str:
    allocatable = dict(capacity)
    allocatable["cpu"] = f"{int(capacity['cpu']) * 1000 - 90 - int(capacity['cpu']) * 6}m"
    spec: Obj = {"taints": list(taints)} if taints else {}
    if provider:
        spec["providerID"] = provider
    NODES.append(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": meta(
                "Node",
                name,
                labels={
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/hostname": name.split(".")[0],
                    **labels,
                },
                annotations={"alpha.kubernetes.io/provided-node-ip": ip},
            ),
            "spec": spec,
            "status": {
                "addresses": [
                    {"address": ip, "type": "InternalIP"},
                    {"address": name, "type": "Hostname"},
                ],
                "capacity": capacity,
                "allocatable": allocatable,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": "2026-11-03T08:59:40Z",
                        "lastTransitionTime": CREATED,
                    }
                ],
                "nodeInfo": {"kubeletVersion": "v1.37.0-eks-3a1f0c2", "architecture": "amd64"},
            },
        }
    )
    return name


# --- nodes ------------------------------------------------------------------------------------

EKS = {"eks.amazonaws.com/capacityType": "ON_DEMAND"}
SYSTEM = [
    node(
        f"ip-10-20-{i}-{11 + i}.us-east-2.compute.internal",
        {
            **EKS,
            "eks.amazonaws.com/nodegroup": "system",
            "node.kubernetes.io/instance-type": "m7i.2xlarge",
            ZONE: zone,
        },
        {"cpu": "8", "memory": "32304420Ki", "pods": "58"},
        [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}],
        f"aws:///{zone}/i-0{i}a1b2c3d4e5f6a7b",
        f"10.20.{i}.{11 + i}",
    )
    for i, zone in ((1, "us-east-2a"), (2, "us-east-2b"))
]
GENERAL = [
    node(
        f"ip-10-20-{i}-{40 + i}.us-east-2.compute.internal",
        {
            **EKS,
            "eks.amazonaws.com/nodegroup": "general",
            "node.kubernetes.io/instance-type": "m7i.8xlarge",
            ZONE: zone,
        },
        {"cpu": "32", "memory": "130451132Ki", "pods": "234"},
        provider=f"aws:///{zone}/i-0{i}c4d5e6f7a8b9c0d",
        ip=f"10.20.{i}.{40 + i}",
    )
    for i, zone in ((1, "us-east-2a"), (2, "us-east-2b"))
]
TRN2 = [
    node(
        f"ip-10-20-8-{90 + i}.us-east-2.compute.internal",
        {
            "karpenter.sh/nodepool": "trainium",
            "karpenter.sh/capacity-type": "reserved",
            "karpenter.sh/registered": "true",
            "karpenter.sh/initialized": "true",
            "karpenter.k8s.aws/ec2nodeclass": "trainium",
            "node.kubernetes.io/instance-type": "trn2.48xlarge",
            ZONE: "us-east-2b",
            LAYERS[0]: "nn-5b0c1d2e3f4a5b6c7",
            LAYERS[1]: "nn-8d9e0f1a2b3c4d5e6",
            LAYERS[2]: f"nn-1f2e3d4c5b6a7980{i}",
        },
        {
            "cpu": "192",
            "memory": "2113998528Ki",
            "pods": "737",
            NEURON: "16",
            "aws.amazon.com/neuroncore": "128",
            EFA: "16",
        },
        [{"key": NEURON, "value": "present", "effect": "NoSchedule"}],
        f"aws:///us-east-2b/i-0{i}e7f8a9b0c1d2e3f",
        f"10.20.8.{90 + i}",
    )
    for i in (1, 2)
]
HIVES = {
    "mi300x-r07-u12.dc1.helios.internal": "0x5e0b1c",
    "mi300x-r07-u16.dc1.helios.internal": "0x9a7d3f",
}
MI300X = [
    node(
        name,
        {
            "eks.amazonaws.com/compute-type": "hybrid",
            "eks.amazonaws.com/hybrid-credential-provider": "ssm",
            "node.kubernetes.io/instance-type": "SMC-AS-8125GS-TNMR2",
            ZONE: "dc1",
        },
        {"cpu": "192", "memory": "2113998528Ki", "pods": "110"},
        [{"key": "amd.com/gpu", "value": "present", "effect": "NoSchedule"}],
        ip=f"172.16.7.{12 + 4 * i}",
    )
    for i, name in enumerate(HIVES)
]


def amd_slice(host: str) -> None:
    """AMD's GPU DRA driver: one slice per node, eight MI300X GPUs in one xGMI hive, two per
    PCIe root (the OAM baseboard's switches)."""
    devices = []
    for i in range(8):
        bus = 0x0C + 0x20 * i
        devices.append(
            {
                "name": f"gpu-{i}",
                "attributes": {
                    "type": {"string": "amdgpu"},
                    "productName": {"string": "AMD_Instinct_MI300X_OAM"},
                    "family": {"string": "AI"},
                    "cardIndex": {"int": i},
                    "partitionProfile": {"string": "spx_nps1"},
                    "hiveID": {"string": HIVES[host]},
                    "pciAddr": {"string": f"0000:{bus:02x}:00.0"},
                    "driverVersion": {"version": "6.12.12"},
                    "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{(i // 2) * 0x40:02x}"},
                },
                "capacity": {"memory": {"value": "192Gi"}, "computeUnits": {"value": "304"}},
            }
        )
    add(
        "ResourceSlice",
        "resource.k8s.io/v1",
        f"{host.split('.')[0]}-gpu.amd.com-{hashlib.sha256(host.encode()).hexdigest()[:5]}",
        spec={
            "driver": "gpu.amd.com",
            "nodeName": host,
            "pool": {"name": host, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
        ownerReferences=[
            {"apiVersion": "v1", "kind": "Node", "name": host, "uid": uid("Node", "", host)}
        ],
    )


for h in HIVES:
    amd_slice(h)
add(
    "DeviceClass",
    "resource.k8s.io/v1",
    "gpu.amd.com",
    spec={"selectors": [{"cel": {"expression": "device.driver == 'gpu.amd.com'"}}]},
)

# --- namespaces, priorities, node groups, Kueue -----------------------------------------------

for ns in ("kube-system", "monitoring", "ml-train", "ml-serve", "batch", "web", "kueue-system"):
    add("Namespace", "v1", ns, labels={"kubernetes.io/metadata.name": ns})
for name, value, policy in (
    ("system-cluster-critical", 2000000000, "PreemptLowerPriority"),
    ("system-node-critical", 2000001000, "PreemptLowerPriority"),
    ("serving", 200000, "PreemptLowerPriority"),
    ("training-high", 100000, "PreemptLowerPriority"),
    ("batch-low", 100, "PreemptLowerPriority"),
    ("batch-scavenger", 10, "Never"),
):
    obj = add("PriorityClass", "scheduling.k8s.io/v1", name)
    obj.update({"value": value, "preemptionPolicy": policy})
add(
    "NodePool",
    "karpenter.sh/v1",
    "trainium",
    spec={
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "trainium",
                },
                "requirements": [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["trn2.48xlarge"],
                    },
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]},
                ],
                "taints": [{"key": NEURON, "value": "present", "effect": "NoSchedule"}],
            }
        },
        # A capacity block of four instances: two more than run now.
        "limits": {NEURON: "64"},
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m"},
    },
)
add(
    "Topology",
    "kueue.x-k8s.io/v1beta1",
    "aws-network",
    spec={"levels": [{"nodeLabel": k} for k in (*LAYERS, "kubernetes.io/hostname")]},
)
add(
    "ResourceFlavor",
    "kueue.x-k8s.io/v1beta1",
    "trn2",
    spec={
        "nodeLabels": {"node.kubernetes.io/instance-type": "trn2.48xlarge"},
        "topologyName": "aws-network",
    },
)
add(
    "ClusterQueue",
    "kueue.x-k8s.io/v1beta1",
    "training",
    spec={
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", NEURON, EFA],
                "flavors": [
                    {
                        "name": "trn2",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "768"},
                            {"name": "memory", "nominalQuota": "8Ti"},
                            {"name": NEURON, "nominalQuota": "64"},
                            {"name": EFA, "nominalQuota": "64"},
                        ],
                    }
                ],
            }
        ],
    },
)
add(
    "LocalQueue",
    "kueue.x-k8s.io/v1beta1",
    "training",
    "ml-train",
    spec={"clusterQueue": "training"},
)

# --- pods -------------------------------------------------------------------------------------


def pod(
    name: str,
    ns: str,
    containers: list[Obj],
    node_name: str = "",
    owner: tuple[str, str] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    owners = []
    if owner is not None:
        kind, owner_name = owner
        api = "apps/v1" if kind in ("ReplicaSet", "DaemonSet", "StatefulSet") else "batch/v1"
        owners.append(
            {
                "apiVersion": api,
                "kind": kind,
                "name": owner_name,
                "uid": uid(kind, ns, owner_name),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        )
    defaults = [
        {"key": f"node.kubernetes.io/{taint}", "operator": "Exists", "effect": "NoExecute"}
        | {"tolerationSeconds": 300}
        for taint in ("not-ready", "unreachable")
    ]
    body: Obj = {
        "containers": containers,
        "restartPolicy": "Always" if owner is None or owner[0] != "Job" else "Never",
        "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30,
        **spec,
        "tolerations": [*spec.get("tolerations", []), *defaults],
    }
    status: Obj = {"qosClass": "Burstable"}
    if node_name:
        body["nodeName"] = node_name
        status.update({"phase": "Running", "hostIP": "10.0.0.1", "startTime": CREATED})
    else:
        status["phase"] = "Pending"
        if not spec.get("schedulingGates"):
            status["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "lastTransitionTime": "2026-11-03T08:41:07Z",
                }
            ]
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta(
            "Pod",
            name,
            ns,
            labels=labels or {},
            annotations=annotations or {},
            ownerReferences=owners,
            created=CREATED if node_name else "2026-11-03T08:41:05Z",
        ),
        "spec": body,
        "status": status,
    }
    PODS.append(obj)
    return obj


def box(name: str, image: str, requests: dict[str, str], ports: list[Obj] = (), **rest: Any) -> Obj:  # type: ignore[assignment]
    limits = {k: v for k, v in requests.items() if "/" in k}
    out: Obj = {"name": name, "image": image, "resources": {"requests": requests}, **rest}
    if limits:
        out["resources"]["limits"] = limits
    if ports:
        out["ports"] = list(ports)
    return out


EVERYTHING = [{"operator": "Exists"}]
ALL_NODES = [*SYSTEM, *GENERAL, *TRN2, *MI300X]
for host in ALL_NODES:
    short = hashlib.sha256(host.encode()).hexdigest()[:5]
    pod(
        f"node-exporter-{short}",
        "monitoring",
        [
            box(
                "node-exporter",
                "quay.io/prometheus/node-exporter:v1.9.1",
                {"cpu": "100m", "memory": "180Mi"},
                [{"containerPort": 9100, "hostPort": 9100, "name": "metrics", "protocol": "TCP"}],
            )
        ],
        host,
        ("DaemonSet", "node-exporter"),
        {"app.kubernetes.io/name": "node-exporter"},
        hostNetwork=True,
        priorityClassName="system-node-critical",
        priority=2000001000,
        tolerations=EVERYTHING,
    )
    if host in TRN2:
        pod(
            f"neuron-device-plugin-{short}",
            "kube-system",
            [
                box(
                    "plugin",
                    "public.ecr.aws/neuron/neuron-device-plugin:2.26.26.0",
                    {"cpu": "50m", "memory": "64Mi"},
                )
            ],
            host,
            ("DaemonSet", "neuron-device-plugin"),
            {"name": "neuron-device-plugin"},
            priorityClassName="system-node-critical",
            priority=2000001000,
            tolerations=EVERYTHING,
        )
        pod(
            f"neuron-monitor-{short}",
            "monitoring",
            [
                box(
                    "neuron-monitor",
                    "public.ecr.aws/neuron/neuron-monitor:1.3.0",
                    {"cpu": "200m", "memory": "256Mi"},
                    [{"containerPort": 8000, "hostPort": 8000, "protocol": "TCP"}],
                )
            ],
            host,
            ("DaemonSet", "neuron-monitor"),
            {"app": "neuron-monitor"},
            tolerations=EVERYTHING,
        )
    if host in MI300X:
        pod(
            f"amd-gpu-dra-driver-kubeletplugin-{short}",
            "kube-system",
            [
                box(
                    "plugin",
                    "docker.io/rocm/k8s-gpu-dra-driver:v0.3.0",
                    {"cpu": "100m", "memory": "128Mi"},
                )
            ],
            host,
            ("DaemonSet", "amd-gpu-dra-driver-kubeletplugin"),
            {"app": "amd-gpu-dra-driver"},
            priorityClassName="system-node-critical",
            priority=2000001000,
            tolerations=EVERYTHING,
        )
for i, host in enumerate(SYSTEM):
    pod(
        f"coredns-7f8b9c6d5-{('x2k9q', 'm4t7w')[i]}",
        "kube-system",
        [
            box(
                "coredns",
                "602401143452.dkr.ecr.us-east-2.amazonaws.com/eks/coredns:v1.12.4",
                {"cpu": "100m", "memory": "70Mi"},
            )
        ],
        host,
        ("ReplicaSet", "coredns-7f8b9c6d5"),
        {"k8s-app": "kube-dns"},
        priorityClassName="system-cluster-critical",
        priority=2000000000,
        tolerations=[{"key": "CriticalAddonsOnly", "operator": "Exists"}],
    )

NEURON_TOLERATION = [{"key": NEURON, "operator": "Exists", "effect": "NoSchedule"}]
AMD_TOLERATION = [{"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
TRN_IMAGE = "public.ecr.aws/neuron/pytorch-training-neuronx:2.7.0-neuronx-py310-sdk2.26.0"

# Low-priority batch work on the Trainium nodes: what the training gang preempts.
for i, (host, chips) in enumerate(zip(TRN2, ("16", "8"), strict=True)):
    pod(
        f"embed-backfill-{i}-{('q7v2n', 'z8c4r')[i]}",
        "batch",
        [box("embed", TRN_IMAGE, {"cpu": "32", "memory": "256Gi", NEURON: chips})],
        host,
        ("Job", f"embed-backfill-{i}"),
        {"job-name": f"embed-backfill-{i}", "batch.kubernetes.io/job-name": f"embed-backfill-{i}"},
        priorityClassName="batch-low",
        priority=100,
        preemptionPolicy="PreemptLowerPriority",
        tolerations=NEURON_TOLERATION,
    )
TAS = {
    "kueue.x-k8s.io/pod-group-total-count": "2",
    "kueue.x-k8s.io/podset-required-topology": LAYERS[1],
    "kueue.x-k8s.io/workload": "pod-group-llama-sft-8b2c1",
}
for i in range(2):
    pod(
        f"llama-sft-{i}",
        "ml-train",
        [box("trainer", TRN_IMAGE, {"cpu": "160", "memory": "1600Gi", NEURON: "16", EFA: "16"})],
        labels={
            "kueue.x-k8s.io/pod-group-name": "llama-sft",
            "kueue.x-k8s.io/queue-name": "training",
            "kueue.x-k8s.io/managed": "true",
        },
        annotations=TAS,
        priorityClassName="training-high",
        priority=100000,
        preemptionPolicy="PreemptLowerPriority",
        tolerations=NEURON_TOLERATION,
    )
pod(
    "neuron-scavenger",
    "batch",
    [box("embed", TRN_IMAGE, {"cpu": "16", "memory": "128Gi", NEURON: "16"})],
    owner=("Job", "neuron-scavenger"),
    labels={"job-name": "neuron-scavenger"},
    priorityClassName="batch-scavenger",
    priority=10,
    preemptionPolicy="Never",
    tolerations=NEURON_TOLERATION,
)
pod(
    "neuron-smoke",
    "batch",
    [box("smoke", TRN_IMAGE, {"cpu": "2", "memory": "8Gi", NEURON: "1"})],
    owner=("Job", "neuron-smoke"),
    labels={"job-name": "neuron-smoke"},
)
pod(
    "llama-sweep-0",
    "ml-train",
    [box("trainer", TRN_IMAGE, {"cpu": "96", "memory": "800Gi", NEURON: "8"})],
    labels={"kueue.x-k8s.io/queue-name": "training", "kueue.x-k8s.io/managed": "true"},
    priorityClassName="training-high",
    priority=100000,
    tolerations=NEURON_TOLERATION,
    schedulingGates=[{"name": "kueue.x-k8s.io/admission"}],
)


def amd_claim(name: str, ns: str, count: int, host: str = "", first: int = 0) -> Obj:
    spec = {
        "devices": {
            "requests": [
                {"name": "gpus", "exactly": {"deviceClassName": "gpu.amd.com", "count": count}}
            ],
            "constraints": [{"requests": ["gpus"], "matchAttribute": "gpu.amd.com/hiveID"}],
        }
    }
    claim = add("ResourceClaim", "resource.k8s.io/v1", name, ns, spec=spec)
    if host:
        claim["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpus",
                            "driver": "gpu.amd.com",
                            "pool": host,
                            "device": f"gpu-{first + k}",
                        }
                        for k in range(count)
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [host]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [
                {
                    "resource": "pods",
                    "name": claim["metadata"]["name"].rsplit("-gpus", 1)[0],
                    "uid": uid("Pod", ns, claim["metadata"]["name"].rsplit("-gpus", 1)[0]),
                }
            ],
        }
    return claim


ROCM = "docker.io/rocm/vllm:rocm7.0.0_vllm_0.10.2_20251006"
SERVE_LABELS = {"app": "llm-serve", "pod-template-hash": "6c8d7f9b4"}
ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "llm-serve"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}
for i, suffix in enumerate(("h2k8d", "p9x4m", "w7c2t")):
    name = f"llm-serve-6c8d7f9b4-{suffix}"
    host = MI300X[i] if i < 2 else ""
    if host:
        amd_claim(f"{name}-gpus", "ml-serve", 2, host, 0)
    else:
        amd_claim(f"{name}-gpus", "ml-serve", 2)
    p = pod(
        name,
        "ml-serve",
        [box("vllm", ROCM, {"cpu": "24", "memory": "256Gi"})],
        host,
        ("ReplicaSet", "llm-serve-6c8d7f9b4"),
        SERVE_LABELS,
        affinity=ANTI,
        priorityClassName="serving",
        priority=200000,
        tolerations=AMD_TOLERATION,
        resourceClaims=[{"name": "gpus", "resourceClaimName": f"{name}-gpus"}],
    )
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
    if host:
        p["status"]["resourceClaimStatuses"] = [
            {"name": "gpus", "resourceClaimName": f"{name}-gpus"}
        ]
# A low-priority ROCm sweep holds four GPUs of the second node's hive.
amd_claim("rocm-sweep-gpus", "batch", 4, MI300X[1], 2)
sweep = pod(
    "rocm-sweep",
    "batch",
    [box("sweep", ROCM, {"cpu": "32", "memory": "256Gi"})],
    MI300X[1],
    ("Job", "rocm-sweep"),
    {"job-name": "rocm-sweep"},
    priorityClassName="batch-low",
    priority=100,
    tolerations=AMD_TOLERATION,
    resourceClaims=[{"name": "gpus", "resourceClaimName": "rocm-sweep-gpus"}],
)
sweep["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
sweep["status"]["resourceClaimStatuses"] = [
    {"name": "gpus", "resourceClaimName": "rocm-sweep-gpus"}
]
amd_claim("mi300x-finetune-gpus", "ml-train", 8)
tune = pod(
    "mi300x-finetune",
    "ml-train",
    [box("trainer", ROCM, {"cpu": "96", "memory": "1Ti"})],
    priorityClassName="training-high",
    priority=100000,
    tolerations=AMD_TOLERATION,
    resourceClaims=[{"name": "gpus", "resourceClaimName": "mi300x-finetune-gpus"}],
)
tune["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]

# Web replicas spread over zones; a debug pod that wants node-exporter's host port.
WEB = {"app": "storefront", "pod-template-hash": "5d9c8b7f6"}
SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "storefront"}},
        "matchLabelKeys": ["pod-template-hash"],
    }
]
for i, suffix in enumerate(("a1b2c", "d3e4f", "g5h6j", "k7l8m", "n9p2q", "r3s4t")):
    pod(
        f"storefront-5d9c8b7f6-{suffix}",
        "web",
        [box("web", "ghcr.io/helios/storefront:4.18.2", {"cpu": "14", "memory": "24Gi"})],
        GENERAL[i % 2] if i < 4 else "",
        ("ReplicaSet", "storefront-5d9c8b7f6"),
        WEB,
        topologySpreadConstraints=SPREAD,
    )
pod(
    "exporter-debug",
    "monitoring",
    [
        box(
            "node-exporter",
            "quay.io/prometheus/node-exporter:v1.9.1",
            {"cpu": "100m", "memory": "64Mi"},
            [{"containerPort": 9100, "hostPort": 9100, "protocol": "TCP"}],
        )
    ],
    nodeSelector={"eks.amazonaws.com/nodegroup": "general"},
)
for ns, labels, replicas in (("web", WEB, 6), ("ml-serve", SERVE_LABELS, 3)):
    add(
        "ReplicaSet",
        "apps/v1",
        f"{labels['app']}-{labels['pod-template-hash']}",
        ns,
        spec={
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}},
        },
    )


def render() -> str:
    """The dump's text: a `kind: List` with keys sorted, as kubectl writes it."""
    items = [*NODES, *OBJECTS, *PODS]
    order = {"Node": 0, "Namespace": 1}
    items.sort(
        key=lambda o: (
            order.get(o["kind"], 2),
            o["kind"],
            o["metadata"].get("namespace", ""),
            o["metadata"]["name"],
        )
    )
    dump = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    return yaml.dump(
        dump, Dumper=NoAliases, sort_keys=True, default_flow_style=False, width=1 << 16
    )


class NoAliases(yaml.SafeDumper):
    """kubectl writes no anchors: a value shared by two objects is written twice."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


if __name__ == "__main__":
    (HERE / "cluster.yaml").write_text(render())
