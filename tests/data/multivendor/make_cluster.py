"""Writes cluster.yaml: the multi-vendor cluster as `kubectl get ... -A -o yaml` dumps it.

Run `python tests/data/multivendor/make_cluster.py` after changing it; tests/test_multivendor.py
checks that cluster.yaml is what this script writes. README.md beside it describes the cluster.
Names, labels, annotations, driver names and attributes are those the real components write:
kubeadm / Cluster API (Metal3) nodes, Karpenter on AWS, GKE TPU node pools, NVIDIA's DRA
driver (split ResourceSlices: one of counter sets, one per GPU with the GPU and its MIG
partitions), Intel's Gaudi DRA driver, GKE's TPU device plugin and DRA driver.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]
HERE = Path(__file__).parent
NOW = "2026-10-14T09:00:00Z"
RNG = random.Random(1337)
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's rand.String alphabet

CLUSTER = "atlas"
CAPI_NS = "atlas-capi"


def suffix(n: int = 5) -> str:
    return "".join(RNG.choice(ALPHABET) for _ in range(n))


def uid(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(parts)))


def rv() -> str:
    return str(RNG.randint(100_000, 999_999))


def ts(day: int, hour: int, minute: int = 0) -> str:
    return f"2026-10-{day:02d}T{hour:02d}:{minute:02d}:00Z"


def meta(
    name: str,
    namespace: str = "",
    *,
    created: str = ts(1, 8),
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owner: Obj | None = None,
    generate_name: str = "",
    generation: int | None = None,
    kind: str = "",
) -> Obj:
    m: Obj = {"name": name, "uid": uid(kind, namespace, name), "resourceVersion": rv()}
    m["creationTimestamp"] = created
    if namespace:
        m["namespace"] = namespace
    if labels:
        m["labels"] = labels
    if annotations:
        m["annotations"] = annotations
    if owner:
        m["ownerReferences"] = [owner]
    if generate_name:
        m["generateName"] = generate_name
    if generation is not None:
        m["generation"] = generation
    return m


def owner_ref(obj: Obj, *, block: bool = True) -> Obj:
    ref = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
    }
    if block:
        ref["blockOwnerDeletion"] = True
    return ref


# --------------------------------------------------------------------------- nodes

NODES: list[Obj] = []
NODE_IP: dict[str, str] = {}


def node_conditions() -> list[Obj]:
    beat = ts(14, 8, 58)
    return [
        {
            "type": t,
            "status": "False",
            "reason": r,
            "message": msg,
            "lastHeartbeatTime": beat,
            "lastTransitionTime": ts(1, 8, 5),
        }
        for t, r, msg in (
            (
                "MemoryPressure",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        )
    ] + [
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": beat,
            "lastTransitionTime": ts(1, 8, 6),
        }
    ]


def add_node(
    name: str,
    ip: str,
    *,
    labels: dict[str, str],
    annotations: dict[str, str],
    provider_id: str,
    capacity: dict[str, str],
    allocatable: dict[str, str],
    taints: list[Obj] | None = None,
    arch: str = "amd64",
    os_image: str = "Ubuntu 24.04.3 LTS",
    kernel: str = "6.8.0-85-generic",
    addresses: list[Obj] | None = None,
    created: str = ts(1, 8),
) -> Obj:
    NODE_IP[name] = ip
    labels = {
        "beta.kubernetes.io/arch": arch,
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "kubernetes.io/hostname": name.split(".")[0] if "compute.internal" in name else name,
        "kubernetes.io/os": "linux",
        **labels,
    }
    notes = {
        "alpha.kubernetes.io/provided-node-ip": ip,
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        **annotations,
    }
    spec: Obj = {"providerID": provider_id}
    if taints:
        spec["taints"] = taints
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta(name, created=created, labels=labels, annotations=notes, kind="Node"),
        "spec": spec,
        "status": {
            "addresses": addresses
            or [{"address": ip, "type": "InternalIP"}, {"address": name, "type": "Hostname"}],
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": node_conditions(),
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": arch,
                "bootID": uid("boot", name),
                "containerRuntimeVersion": "containerd://2.1.4",
                "kernelVersion": kernel,
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.37.1",
                "machineID": hashlib.md5(name.encode()).hexdigest(),
                "operatingSystem": "linux",
                "osImage": os_image,
                "systemUUID": uid("system", name).upper(),
            },
        },
    }
    NODES.append(node)
    return node


def capi_annotations(machine: str, owner_kind: str, owner_name: str) -> dict[str, str]:
    return {
        "cluster.x-k8s.io/cluster-name": CLUSTER,
        "cluster.x-k8s.io/cluster-namespace": CAPI_NS,
        "cluster.x-k8s.io/machine": machine,
        "cluster.x-k8s.io/owner-kind": owner_kind,
        "cluster.x-k8s.io/owner-name": owner_name,
        "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///var/run/containerd/containerd.sock",
    }


def metal3_node(
    name: str,
    ip: str,
    owner_kind: str,
    owner_name: str,
    *,
    labels: dict[str, str],
    capacity: dict[str, str],
    allocatable: dict[str, str],
    taints: list[Obj] | None = None,
) -> Obj:
    host = f"{name}-bmh"
    return add_node(
        name,
        ip,
        labels={"metal3.io/uuid": uid("bmh", name), **labels},
        annotations=capi_annotations(name, owner_kind, owner_name),
        provider_id=f"metal3://{CAPI_NS}/{host}/{name}",
        capacity=capacity,
        allocatable=allocatable,
        taints=taints,
    )


CP = "atlas-cp-x7v2q"
metal3_node(
    CP,
    "10.20.0.11",
    "KubeadmControlPlane",
    "atlas-cp",
    labels={
        "node-role.kubernetes.io/control-plane": "",
        "node.kubernetes.io/exclude-from-external-load-balancers": "",
    },
    capacity={
        "cpu": "16",
        "ephemeral-storage": "479079112Ki",
        "memory": "65544484Ki",
        "pods": "110",
    },
    allocatable={
        "cpu": "16",
        "ephemeral-storage": "441518398716",
        "memory": "65442084Ki",
        "pods": "110",
    },
    taints=[{"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}],
)

SYSTEM_MS = "atlas-system-6d8f9b7c5"
SYSTEM = [f"{SYSTEM_MS}-4kx2m", f"{SYSTEM_MS}-p9w7t"]
for i, name in enumerate(SYSTEM):
    metal3_node(
        name,
        f"10.20.1.{21 + i}",
        "MachineSet",
        SYSTEM_MS,
        labels={
            "node-role.kubernetes.io/infra": "",
            "node.atlas.io/pool": "system",
            # Cluster API propagates a MachineDeployment's node.cluster.x-k8s.io labels.
            "node.cluster.x-k8s.io/pool": "system",
        },
        capacity={
            "cpu": "32",
            "ephemeral-storage": "959218776Ki",
            "memory": "131600236Ki",
            "pods": "110",
        },
        allocatable={
            "cpu": "31500m",
            "ephemeral-storage": "884016460386",
            "memory": "129400172Ki",
            "pods": "110",
        },
        taints=[{"effect": "NoSchedule", "key": "CriticalAddonsOnly", "value": "true"}],
    )

CPU_MS = "atlas-cpu-5f7d8c9b6"
CPU_NODE = f"{CPU_MS}-zt8rn"
metal3_node(
    CPU_NODE,
    "10.20.2.31",
    "MachineSet",
    CPU_MS,
    labels={"node.atlas.io/pool": "cpu", "node.cluster.x-k8s.io/pool": "cpu"},
    capacity={
        "cpu": "64",
        "ephemeral-storage": "1918437552Ki",
        "memory": "263727676Ki",
        "pods": "110",
    },
    allocatable={
        "cpu": "63500m",
        "ephemeral-storage": "1768033124761",
        "memory": "261527612Ki",
        "pods": "110",
    },
)

GAUDI_MS = "atlas-gaudi3-7c9f5b8d4"
GAUDI = [f"{GAUDI_MS}-h2xnv", f"{GAUDI_MS}-q8mzc"]
GAUDI_TAINT = {"effect": "NoSchedule", "key": "habana.ai/gaudi", "value": "present"}
GAUDI_LABELS = {
    "node.atlas.io/pool": "gaudi3",
    "node.cluster.x-k8s.io/pool": "gaudi3",
    "intel.feature.node.kubernetes.io/gaudi": "true",
    "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel",
}
for i, name in enumerate(GAUDI):
    metal3_node(
        name,
        f"10.20.3.{41 + i}",
        "MachineSet",
        GAUDI_MS,
        labels=GAUDI_LABELS,
        capacity={
            "cpu": "192",
            "ephemeral-storage": "3750614624Ki",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "9800Mi",
            "memory": "2113384728Ki",
            "pods": "110",
        },
        allocatable={
            "cpu": "190",
            "ephemeral-storage": "3456549463398",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "9800Mi",
            "memory": "2101035800Ki",
            "pods": "110",
        },
        taints=[GAUDI_TAINT],
    )

GB200 = [
    ("ip-10-42-17-203.us-west-2.compute.internal", "10.42.17.203", "i-0a1b2c3d4e5f60718"),
    ("ip-10-42-18-77.us-west-2.compute.internal", "10.42.18.77", "i-0f9e8d7c6b5a40321"),
]
GB200_NAMES = [n for n, _, _ in GB200]
GB200_TAINT = {"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}
for name, ip, instance in GB200:
    add_node(
        name,
        ip,
        arch="arm64",
        os_image="Amazon Linux 2023.9.20251008",
        kernel="6.12.46-66.118.amzn2023.aarch64",
        labels={
            "karpenter.sh/nodepool": "gb200",
            "karpenter.sh/capacity-type": "reserved",
            "karpenter.sh/initialized": "true",
            "karpenter.sh/registered": "true",
            "karpenter.k8s.aws/ec2nodeclass": "gb200",
            "karpenter.k8s.aws/instance-category": "p",
            "karpenter.k8s.aws/instance-family": "p6e-gb200",
            "karpenter.k8s.aws/instance-generation": "6",
            "karpenter.k8s.aws/instance-gpu-count": "4",
            "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
            "karpenter.k8s.aws/instance-gpu-name": "gb200",
            "karpenter.k8s.aws/instance-size": "36xlarge",
            "node.kubernetes.io/instance-type": "p6e-gb200.36xlarge",
            "beta.kubernetes.io/instance-type": "p6e-gb200.36xlarge",
            "topology.kubernetes.io/region": "us-west-2",
            "topology.kubernetes.io/zone": "us-west-2b",
            "topology.k8s.aws/zone-id": "usw2-az2",
            "topology.k8s.aws/capacity-block-id": "cr-0123456789abcdef0",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.clique": "8c2d3b41-59f0-4b7a-b3a2-d1e7f0c4a9b2.32766",
            "k8s.io/cloud-provider-aws": "6d0a9c0f5e3b8a7c2d1e4f6a8b9c0d1e",
        },
        annotations={
            "karpenter.sh/nodepool-hash": "6821555240594823858",
            "karpenter.sh/nodepool-hash-version": "v3",
            "karpenter.k8s.aws/ec2nodeclass-hash": "15616957348189460630",
            "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4",
            "csi.volume.kubernetes.io/nodeid": f'{{"ebs.csi.aws.com":"{instance}"}}',
        },
        provider_id=f"aws:///us-west-2b/{instance}",
        capacity={
            "cpu": "144",
            "ephemeral-storage": "1073730540Ki",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "hugepages-32Mi": "0",
            "hugepages-64Ki": "0",
            "memory": "1006352384Ki",
            "pods": "737",
            "vpc.amazonaws.com/efa": "8",
        },
        allocatable={
            "cpu": "143890m",
            "ephemeral-storage": "988473698099",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "hugepages-32Mi": "0",
            "hugepages-64Ki": "0",
            "memory": "993424896Ki",
            "pods": "737",
            "vpc.amazonaws.com/efa": "8",
        },
        taints=[GB200_TAINT],
        addresses=[
            {"address": ip, "type": "InternalIP"},
            {"address": name, "type": "InternalDNS"},
            {"address": name, "type": "Hostname"},
        ],
        created=ts(6, 14, 12),
    )

TPU_TAINT = {"effect": "NoSchedule", "key": "google.com/tpu", "value": "present"}


def gke_node(
    name: str, ip: str, pool: str, machine: str, extra: dict[str, str], alloc: dict[str, str]
) -> Obj:
    labels = {
        "cloud.google.com/gke-nodepool": pool,
        "cloud.google.com/gke-boot-disk": "hyperdisk-balanced",
        "cloud.google.com/gke-container-runtime": "containerd",
        "cloud.google.com/gke-cpu-scaling-level": machine.rsplit("-", 1)[-1],
        "cloud.google.com/gke-logging-variant": "DEFAULT",
        "cloud.google.com/gke-max-pods-per-node": "110",
        "cloud.google.com/gke-os-distribution": "cos",
        "cloud.google.com/gke-provisioning": "standard",
        "cloud.google.com/gke-stack-type": "IPV4",
        "cloud.google.com/machine-family": machine.split("-")[0],
        "cloud.google.com/private-node": "false",
        "failure-domain.beta.kubernetes.io/region": "us-east5",
        "failure-domain.beta.kubernetes.io/zone": "us-east5-b",
        "node.kubernetes.io/instance-type": machine,
        "beta.kubernetes.io/instance-type": machine,
        "topology.gke.io/zone": "us-east5-b",
        "topology.kubernetes.io/region": "us-east5",
        "topology.kubernetes.io/zone": "us-east5-b",
        **extra,
    }
    node_labels = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if "gke" in k)
    return add_node(
        name,
        ip,
        os_image="Container-Optimized OS from Google",
        kernel="6.6.97+",
        labels=labels,
        annotations={
            "container.googleapis.com/instance_id": str(int(uid("gce", name)[:8], 16) * 7919),
            "csi.volume.kubernetes.io/nodeid": (
                '{"pd.csi.storage.gke.io":"projects/atlas-ml-prod/zones/us-east5-b/instances/'
                + name
                + '"}'
            ),
            "node.gke.io/last-applied-node-labels": node_labels,
            "node.gke.io/last-applied-node-taints": "google.com/tpu=present:NoSchedule",
        },
        provider_id=f"gce://atlas-ml-prod/us-east5-b/{name}",
        capacity={**alloc, "ephemeral-storage": "98831908Ki", "pods": "110"},
        allocatable={
            **alloc,
            "cpu": str(int(alloc["cpu"]) - 1),
            "ephemeral-storage": "47060071478",
            "pods": "110",
        },
        taints=[TPU_TAINT],
        addresses=[
            {"address": ip, "type": "InternalIP"},
            {
                "address": f"34.162.{ip.split('.')[2]}.{int(ip.split('.')[3]) + 100}",
                "type": "ExternalIP",
            },
            {"address": name, "type": "Hostname"},
        ],
        created=ts(9, 17, 40),
    )


V6E_POOLS = {"tpu-v6e-a": "5d1c2b3a", "tpu-v6e-b": "9e0f1a2b"}
V6E: dict[str, list[str]] = {}
for p, (pool, h) in enumerate(V6E_POOLS.items()):
    V6E[pool] = []
    for i in range(4):
        name = f"gke-{CLUSTER}-{pool}-{h}-{suffix(4)}"
        V6E[pool].append(name)
        gke_node(
            name,
            f"10.128.{p}.{10 + i}",
            pool,
            "ct6e-standard-4t",
            {
                "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                "cloud.google.com/gke-tpu-topology": "4x4",
                "cloud.google.com/gke-placement-group": f"{pool}-placement",
                "cloud.google.com/gke-accelerator-count": "4",
            },
            {"cpu": "180", "google.com/tpu": "4", "memory": "738197504Ki"},
        )

V5E = f"gke-{CLUSTER}-tpu-v5e-dra-4c7d8e9f-{suffix(4)}"
gke_node(
    V5E,
    "10.128.2.10",
    "tpu-v5e-dra",
    "ct5lp-hightpu-8t",
    {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
        "cloud.google.com/gke-tpu-dra-driver": "true",
    },
    {"cpu": "224", "memory": "393216000Ki"},
)

# --------------------------------------------------------------------------- DRA

OBJECTS: list[Obj] = []


def add(obj: Obj) -> Obj:
    OBJECTS.append(obj)
    return obj


def device_class(name: str, expression: str, extended: str = "") -> Obj:
    spec: Obj = {"selectors": [{"cel": {"expression": expression}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return add(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": meta(
                name,
                generation=1,
                labels={"app.kubernetes.io/managed-by": "Helm"},
                created=ts(1, 9),
                kind="DeviceClass",
            ),
            "spec": spec,
        }
    )


device_class(
    "gpu.nvidia.com",
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "nvidia.com/gpu",
)
device_class(
    "mig.nvidia.com",
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
)
device_class("gaudi.intel.com", "device.driver == 'gaudi.intel.com'")
device_class("tpu.google.com", "device.driver == 'tpu.google.com'", "google.com/tpu")


def slice_obj(node: str, driver: str, spec: Obj, generation: int = 1) -> Obj:
    node_obj = next(n for n in NODES if n["metadata"]["name"] == node)
    prefix = f"{node}-{driver}-"
    name = prefix + suffix()
    return add(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": meta(
                name,
                generate_name=prefix,
                generation=generation,
                owner=owner_ref(node_obj, block=False),
                created=node_obj["metadata"]["creationTimestamp"].replace(":00Z", ":40Z"),
                kind="ResourceSlice",
            ),
            "spec": {"driver": driver, "nodeName": node, **spec},
        }
    )


# Intel Gaudi3 (HLS-Gaudi3 baseboard): 8 OAM cards, two per PCIe switch, four per socket.
GAUDI_PCI = ["19", "1a", "4d", "4e", "99", "9a", "cb", "cc"]
GAUDI_ROOT = ["15", "15", "4a", "4a", "97", "97", "c9", "c9"]
UNHEALTHY = (GAUDI[1], 5)


def gaudi_name(i: int) -> str:
    return f"0000-{GAUDI_PCI[i]}-00-0-0x1060"


for node in GAUDI:
    devices = []
    for i in range(8):
        devices.append(
            {
                "name": gaudi_name(i),
                "attributes": {
                    "healthy": {"bool": (node, i) != UNHEALTHY},
                    "model": {"string": "Gaudi3"},
                    "pciRoot": {"string": GAUDI_ROOT[i]},
                    "serial": {"string": f"HTL3A{RNG.randint(1000000, 9999999)}"},
                    "resource.kubernetes.io/numaNode": {"int": i // 4},
                    "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{GAUDI_ROOT[i]}"},
                },
            }
        )
    slice_obj(
        node,
        "gaudi.intel.com",
        {"pool": {"generation": 1, "name": node, "resourceSliceCount": 1}, "devices": devices},
    )

# NVIDIA GB200 (p6e-gb200.36xlarge: 4 Blackwell GPUs), DynamicMIG with split slices:
# one slice of counter sets (gpu-<minor>-counter-set), then one slice per GPU.
MIG = {  # profile: (GI profile id, placements, SMs, copy engines, decoders, jpeg, memory)
    "1g.23gb": (19, list(range(7)), 1, 18, 1, 1, 1, "23Gi"),
    "2g.47gb": (14, [0, 2, 4], 2, 36, 2, 2, 2, "47Gi"),
    "3g.93gb": (9, [0, 4], 4, 72, 4, 3, 3, "93Gi"),
}
GPU_COMMON = {
    "architecture": {"string": "Blackwell"},
    "brand": {"string": "Nvidia"},
    "cudaComputeCapability": {"version": "10.0.0"},
    "cudaDriverVersion": {"version": "13.0.0"},
    "driverVersion": {"version": "580.95.5"},
    "productName": {"string": "NVIDIA GB200"},
}
FULL = {
    "multiprocessors": "152",
    "copyEngines": "18",
    "decoders": "7",
    "jpegEngines": "7",
    "ofaEngines": "1",
    "memory": "189Gi",
}


def dns(name: str) -> str:
    return "".join("-" + c.lower() if c.isupper() else c for c in name)


def mig_counters(caps: dict[str, str], start: int, size: int) -> dict[str, Obj]:
    out = {dns(k): {"value": v} for k, v in caps.items()}
    out.update({f"memory-slice-{i}": {"value": "1"} for i in range(start, start + size)})
    return out


GPU_UUID: dict[tuple[str, int], str] = {}
for node in GB200_NAMES:
    counter_sets = []
    per_gpu = []
    for g in range(4):
        gpu_uuid = "GPU-" + uid("gpu", node, str(g))
        GPU_UUID[(node, g)] = gpu_uuid
        bus = f"000{8 + g}:06:00.0" if g < 2 else f"001{8 + g}:06:00.0"
        root = {"resource.kubernetes.io/pcieRoot": {"string": f"pci{bus[:4]}:00"}}
        counter_set = f"gpu-{g}-counter-set"
        counter_sets.append({"name": counter_set, "counters": mig_counters(FULL, 0, 8)})
        devices = [
            {
                "name": f"gpu-{g}",
                "attributes": {
                    "type": {"string": "gpu"},
                    "uuid": {"string": gpu_uuid},
                    "pcieBusID": {"string": bus},
                    "addressingMode": {"string": "ATS"},
                    **GPU_COMMON,
                    **root,
                },
                "capacity": {k: {"value": v} for k, v in FULL.items()},
                "consumesCounters": [
                    {"counterSet": counter_set, "counters": mig_counters(FULL, 0, 8)}
                ],
            }
        ]
        for profile, (pid, places, size, sms, ce, dec, jpeg, mem) in MIG.items():
            caps = {
                "multiprocessors": str(sms),
                "copyEngines": str(ce),
                "decoders": str(dec),
                "encoders": "0",
                "jpegEngines": str(jpeg),
                "ofaEngines": "0",
                "memory": mem,
            }
            for start in places:
                devices.append(
                    {
                        "name": f"gpu-{g}-mig-{profile.replace('.', '')}-{pid}-{start}",
                        "attributes": {
                            "type": {"string": "mig"},
                            "parentUUID": {"string": gpu_uuid},
                            "profile": {"string": profile},
                            "addressingMode": {"string": "ATS"},
                            "resource.kubernetes.io/pciBusID": {"string": bus},
                            **GPU_COMMON,
                            **root,
                        },
                        "capacity": {
                            **{k: {"value": v} for k, v in caps.items()},
                            **{
                                f"memorySlice{i}": {"value": "1"}
                                for i in range(start, start + size)
                            },
                        },
                        "consumesCounters": [
                            {
                                "counterSet": counter_set,
                                "counters": mig_counters(
                                    {k: v for k, v in caps.items() if k != "encoders"}, start, size
                                ),
                            }
                        ],
                    }
                )
        per_gpu.append(devices)
    pool = {"generation": 1, "name": node, "resourceSliceCount": 5}
    slice_obj(node, "gpu.nvidia.com", {"pool": pool, "sharedCounters": counter_sets})
    for devices in per_gpu:
        slice_obj(node, "gpu.nvidia.com", {"pool": pool, "devices": devices})

# GKE TPU DRA driver on the v5e host: 8 chips in a 2x4 topology, four per NUMA node.
tpu_devices = []
for c in range(8):
    tpu_devices.append(
        {
            "name": f"tpu-{c}",
            "attributes": {
                "type": {"string": "tpu"},
                "tpuType": {"string": "v5litepod"},
                "topology": {"string": "2x4"},
                "coords": {"string": f"{c % 2},{c // 2},0"},
                "resource.kubernetes.io/numaNode": {"int": c // 4},
                "resource.kubernetes.io/pcieRoot": {
                    "string": f"pci0000:{0x10 + 0x20 * (c // 2):02x}"
                },
            },
            "capacity": {"hbm": {"value": "16Gi"}},
        }
    )
slice_obj(
    V5E,
    "tpu.google.com",
    {"pool": {"generation": 1, "name": V5E, "resourceSliceCount": 1}, "devices": tpu_devices},
)

add(
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": meta(
            "gaudi3-q8mzc-card5-rma",
            generation=1,
            created=ts(13, 22, 14),
            labels={"atlas.io/ticket": "HW-4471"},
            kind="DeviceTaintRule",
        ),
        "spec": {
            "deviceSelector": {
                "driver": "gaudi.intel.com",
                "pool": GAUDI[1],
                "device": gaudi_name(5),
            },
            "taint": {
                "effect": "NoSchedule",
                "key": "gaudi.intel.com/unhealthy",
                "value": "hbm-ecc",
                "timeAdded": ts(13, 22, 14),
            },
        },
        "status": {
            "conditions": [
                {
                    "type": "EvictionInProgress",
                    "status": "False",
                    "reason": "NotEvicting",
                    "message": "no pods need to be evicted",
                    "lastTransitionTime": ts(13, 22, 14),
                    "observedGeneration": 1,
                }
            ]
        },
    }
)

# --------------------------------------------------------------------------- workloads

NAMESPACES = [
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "monitoring",
    "karpenter",
    "kueue-system",
    "nvidia-dra-driver-gpu",
    "intel-gaudi",
    "research",
    "inference",
    "tpu-jobs",
    "batch",
    CAPI_NS,
]
for ns in NAMESPACES:
    add(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": meta(ns, labels={"kubernetes.io/metadata.name": ns}, kind="Namespace"),
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
    )

for pc, value, desc in (
    ("training-high", 100000, "Production training jobs."),
    ("inference-critical", 200000, "Customer-facing inference."),
    ("batch-low", -10, "Best-effort batch work; preempted first."),
):
    add(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": meta(pc, generation=1, kind="PriorityClass"),
            "value": value,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": desc,
        }
    )

DEFAULT_TOLERATIONS = [
    {
        "effect": "NoExecute",
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "tolerationSeconds": 300,
    },
    {
        "effect": "NoExecute",
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "tolerationSeconds": 300,
    },
]


def container(
    name: str, image: str, requests: dict[str, str], limits: dict[str, str] | None = None, **kw: Any
) -> Obj:
    res: Obj = {"requests": requests}
    if limits:
        res["limits"] = limits
    res.update(kw.pop("resources", {}))
    c: Obj = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": res,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    c.update(kw)
    return c


def pod_spec(containers: list[Obj], **kw: Any) -> Obj:
    spec: Obj = {
        "containers": containers,
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
    }
    spec.update(kw)
    spec["serviceAccount"] = spec["serviceAccountName"]  # the deprecated alias, kept equal
    spec["tolerations"] = [*kw.get("tolerations", []), *DEFAULT_TOLERATIONS]
    return spec


def qos(spec: Obj) -> str:
    cs = spec["containers"]
    if all(c["resources"].get("limits") == c["resources"].get("requests") for c in cs):
        return "Guaranteed"
    return "Burstable"


POD_IP = iter(f"10.244.{a}.{b}" for a in range(40, 250) for b in range(2, 250, 3))


def running_status(spec: Obj, node: str, started: str) -> Obj:
    ip = next(POD_IP)
    host = NODE_IP[node]
    return {
        "phase": "Running",
        "conditions": [
            {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": started}
            for t in (
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            )
        ],
        "containerStatuses": [
            {
                "name": c["name"],
                "image": c["image"],
                "imageID": c["image"].split(":")[0]
                + "@sha256:"
                + hashlib.sha256(c["image"].encode()).hexdigest(),
                "containerID": "containerd://"
                + hashlib.sha256((node + c["name"] + started).encode()).hexdigest(),
                "ready": True,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": started}},
            }
            for c in spec["containers"]
        ],
        "hostIP": host,
        "hostIPs": [{"ip": host}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "qosClass": qos(spec),
        "startTime": started,
    }


def pending_status(spec: Obj, message: str, since: str) -> Obj:
    return {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": since,
                "reason": "Unschedulable",
                "message": message,
            }
        ],
        "qosClass": qos(spec),
    }


def gated_status(spec: Obj, since: str) -> Obj:
    return {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": since,
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }
        ],
        "qosClass": qos(spec),
    }


PODS: list[Obj] = []


def add_pod(
    name: str,
    namespace: str,
    spec: Obj,
    *,
    owner: Obj | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    node: str = "",
    created: str = ts(14, 7),
    status: Obj | None = None,
    generate_name: str = "",
) -> Obj:
    if node:
        spec = {**spec, "nodeName": node}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta(
            name,
            namespace,
            created=created,
            labels=labels,
            annotations=annotations,
            owner=owner,
            generate_name=generate_name,
            kind="Pod",
        ),
        "spec": spec,
        "status": status
        if status is not None
        else (
            running_status(spec, node, created.replace(":00Z", ":31Z"))
            if node
            else pending_status(spec, "0/17 nodes are available", created.replace(":00Z", ":02Z"))
        ),
    }
    PODS.append(pod)
    return pod


def claim_template(
    name: str, namespace: str, requests: list[Obj], constraints: list[Obj] | None = None
) -> Obj:
    devices: Obj = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return add(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": meta(name, namespace, created=ts(2, 10), kind="ResourceClaimTemplate"),
            "spec": {"spec": {"devices": devices}},
        }
    )


def exactly(name: str, cls: str, count: int = 1, cel: str = "", mode: str = "ExactCount") -> Obj:
    ex: Obj = {"deviceClassName": cls, "allocationMode": mode}
    if mode == "ExactCount":
        ex["count"] = count
    if cel:
        ex["selectors"] = [{"cel": {"expression": cel}}]
    return {"name": name, "exactly": ex}


def tolerate(taint: Obj) -> Obj:
    return {"effect": taint["effect"], "key": taint["key"], "operator": "Exists"}


def allocated_claim(
    name: str,
    namespace: str,
    requests: list[Obj],
    results: list[tuple[str, str, str, str]],
    node: str,
    reserved: list[Obj],
    *,
    owner: Obj | None = None,
    annotations: dict[str, str] | None = None,
    generate_name: str = "",
    constraints: list[Obj] | None = None,
) -> Obj:
    devices: Obj = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return add(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                **meta(
                    name,
                    namespace,
                    created=ts(14, 6),
                    owner=owner,
                    annotations=annotations,
                    generate_name=generate_name,
                    kind="ResourceClaim",
                ),
                "finalizers": ["resource.kubernetes.io/delete-protection"],
            },
            "spec": {"devices": devices},
            "status": {
                "allocation": {
                    "allocationTimestamp": ts(14, 6, 1),
                    "devices": {
                        "results": [
                            {"request": r, "driver": d, "pool": p, "device": dev}
                            for r, d, p, dev in results
                        ]
                    },
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": [node]}
                                ]
                            }
                        ]
                    },
                },
                "reservedFor": reserved,
            },
        }
    )


def reserved(pod: Obj) -> Obj:
    return {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}


def with_claims(
    pod: Obj, template_claims: dict[str, str], results: dict[str, list[tuple[str, str, str, str]]]
) -> None:
    """For a running pod: the claims generated from its templates, allocated as `results`."""
    statuses = []
    ns = pod["metadata"]["namespace"]
    for claim_name, template in template_claims.items():
        tpl = next(
            o
            for o in OBJECTS
            if o["kind"] == "ResourceClaimTemplate"
            and o["metadata"]["name"] == template
            and o["metadata"]["namespace"] == ns
        )
        devices = tpl["spec"]["spec"]["devices"]
        prefix = f"{pod['metadata']['name']}-{claim_name}-"
        generated = prefix + suffix()
        allocated_claim(
            generated,
            ns,
            devices["requests"],
            results[claim_name],
            pod["spec"]["nodeName"],
            [reserved(pod)],
            owner=owner_ref(pod),
            annotations={"resource.kubernetes.io/pod-claim-name": claim_name},
            generate_name=prefix,
            constraints=devices.get("constraints"),
        )
        statuses.append({"name": claim_name, "resourceClaimName": generated})
    pod["status"]["resourceClaimStatuses"] = statuses


def dra_spec(
    name: str, image: str, requests: dict[str, str], claims: dict[str, str], **kw: Any
) -> Obj:
    """A pod spec of one container that uses `claims` (pod claim name -> template)."""
    return pod_spec(
        [container(name, image, requests, resources={"claims": uses(list(claims))})],
        resourceClaims=claims_of(claims),
        **kw,
    )


def claims_of(templates: dict[str, str]) -> list[Obj]:
    return [{"name": c, "resourceClaimTemplateName": t} for c, t in templates.items()]


def uses(names: list[str]) -> list[Obj]:
    return [{"name": n} for n in names]


# ---- controllers


def workload_obj(
    api: str,
    kind: str,
    name: str,
    ns: str,
    spec: Obj,
    status: Obj,
    labels: dict[str, str],
    **kw: Any,
) -> Obj:
    return add(
        {
            "apiVersion": api,
            "kind": kind,
            "metadata": meta(
                name, ns, labels=labels, generation=kw.pop("generation", 1), kind=kind, **kw
            ),
            "spec": spec,
            "status": status,
        }
    )


def template(labels: dict[str, str], spec: Obj) -> Obj:
    s = {k: v for k, v in spec.items() if k != "tolerations"}
    tol = [t for t in spec.get("tolerations", []) if t not in DEFAULT_TOLERATIONS]
    if tol:
        s["tolerations"] = tol
    return {"metadata": {"labels": labels}, "spec": s}


def pod_hash(name: str) -> str:
    return "".join(RNG.choice(ALPHABET) for _ in range(9))[: 8 + len(name) % 3]


def deployment(
    name: str,
    ns: str,
    spec: Obj,
    *,
    replicas: int,
    nodes: list[str],
    labels: dict[str, str] | None = None,
    pending_message: str = "",
) -> list[Obj]:
    """A Deployment, its ReplicaSet and pods: the first len(nodes) run there, the rest pend."""
    labels = labels or {"app.kubernetes.io/name": name}
    h = pod_hash(name)
    pod_labels = {**labels, "pod-template-hash": h}
    ready = min(replicas, len(nodes))
    dep = workload_obj(
        "apps/v1",
        "Deployment",
        name,
        ns,
        {
            "progressDeadlineSeconds": 600,
            "replicas": replicas,
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": labels},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            "template": template(labels, spec),
        },
        {
            "observedGeneration": 2,
            "replicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "updatedReplicas": replicas,
            **({"unavailableReplicas": replicas - ready} if replicas > ready else {}),
        },
        labels,
        generation=2,
        annotations={"deployment.kubernetes.io/revision": "1"},
    )
    rs = workload_obj(
        "apps/v1",
        "ReplicaSet",
        f"{name}-{h}",
        ns,
        {
            "replicas": replicas,
            "selector": {"matchLabels": pod_labels},
            "template": template(pod_labels, spec),
        },
        {
            "observedGeneration": 2,
            "replicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "fullyLabeledReplicas": replicas,
        },
        pod_labels,
        owner=owner_ref(dep),
        generation=2,
        annotations={
            "deployment.kubernetes.io/desired-replicas": str(replicas),
            "deployment.kubernetes.io/max-replicas": str(replicas + max(1, replicas // 4)),
            "deployment.kubernetes.io/revision": "1",
        },
    )
    pods = []
    for i in range(replicas):
        prefix = f"{name}-{h}-"
        node = nodes[i] if i < len(nodes) else ""
        created = ts(12, 10) if node else ts(14, 8, 30)
        pod = add_pod(
            prefix + suffix(),
            ns,
            spec,
            owner=owner_ref(rs),
            labels=pod_labels,
            node=node,
            created=created,
            generate_name=prefix,
        )
        if not node and pending_message:
            pod["status"]["conditions"][0]["message"] = pending_message
        pods.append(pod)
    return pods


def statefulset(
    name: str, ns: str, spec: Obj, *, replicas: int, nodes: list[str], service: str
) -> list[Obj]:
    labels = {"app.kubernetes.io/name": name}
    ready = min(replicas, len(nodes))
    revision = f"{name}-{pod_hash(name)}"
    sts = workload_obj(
        "apps/v1",
        "StatefulSet",
        name,
        ns,
        {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "serviceName": service,
            "podManagementPolicy": "Parallel",
            "persistentVolumeClaimRetentionPolicy": {
                "whenDeleted": "Retain",
                "whenScaled": "Retain",
            },
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "template": template(labels, spec),
        },
        {
            "observedGeneration": 1,
            "replicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "currentReplicas": replicas,
            "updatedReplicas": replicas,
            "currentRevision": revision,
            "updateRevision": revision,
        },
        labels,
    )
    pods = []
    for i in range(replicas):
        node = nodes[i] if i < len(nodes) else ""
        pods.append(
            add_pod(
                f"{name}-{i}",
                ns,
                {**spec, "hostname": f"{name}-{i}", "subdomain": service},
                owner=owner_ref(sts),
                labels={
                    **labels,
                    "apps.kubernetes.io/pod-index": str(i),
                    "controller-revision-hash": revision,
                    "statefulset.kubernetes.io/pod-name": f"{name}-{i}",
                },
                node=node,
                created=ts(11, 9) if node else ts(14, 8, 40),
            )
        )
    return pods


def daemonset(name: str, ns: str, spec: Obj, nodes: list[str], labels: dict[str, str]) -> None:
    n = len(nodes)
    ds = workload_obj(
        "apps/v1",
        "DaemonSet",
        name,
        ns,
        {
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": labels},
            "template": template(labels, spec),
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
            },
        },
        {
            "currentNumberScheduled": n,
            "desiredNumberScheduled": n,
            "numberAvailable": n,
            "numberMisscheduled": 0,
            "numberReady": n,
            "observedGeneration": 1,
            "updatedNumberScheduled": n,
        },
        labels,
        annotations={"deprecated.daemonset.template.generation": "1"},
    )
    rev = pod_hash(name)
    for node in nodes:
        affinity = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                }
            }
        }
        tol = [
            *spec.get("tolerations", []),
            *(
                {"effect": e, "key": k, "operator": "Exists"}
                for k, e in (
                    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                    ("node.kubernetes.io/unschedulable", "NoSchedule"),
                )
            ),
        ]
        pod_s = pod_spec(
            spec["containers"],
            **{
                **{k: v for k, v in spec.items() if k not in ("containers", "tolerations")},
                "affinity": affinity,
                "tolerations": tol,
            },
        )
        pod_s["tolerations"] = [t for t in pod_s["tolerations"] if t not in DEFAULT_TOLERATIONS] + [
            {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists"},
        ]
        add_pod(
            f"{name}-{suffix()}",
            ns,
            pod_s,
            owner=owner_ref(ds),
            labels={**labels, "controller-revision-hash": rev, "pod-template-generation": "1"},
            node=node,
            created=ts(9, 18)
            if node.startswith("gke-")
            else ts(6, 15)
            if "compute.internal" in node
            else ts(1, 9),
            generate_name=f"{name}-",
        )


ALL = [n["metadata"]["name"] for n in NODES]
system_critical = {"priorityClassName": "system-node-critical", "priority": 2000001000}
daemonset(
    "kube-proxy",
    "kube-system",
    pod_spec(
        [
            container(
                "kube-proxy",
                "registry.k8s.io/kube-proxy:v1.37.1",
                {"cpu": "100m", "memory": "64Mi"},
            )
        ],
        hostNetwork=True,
        serviceAccountName="kube-proxy",
        tolerations=[{"operator": "Exists"}],
        **system_critical,
    ),
    ALL,
    {"k8s-app": "kube-proxy"},
)
daemonset(
    "cilium",
    "kube-system",
    pod_spec(
        [
            container(
                "cilium-agent", "quay.io/cilium/cilium:v1.18.2", {"cpu": "100m", "memory": "256Mi"}
            )
        ],
        hostNetwork=True,
        serviceAccountName="cilium",
        tolerations=[{"operator": "Exists"}],
        **system_critical,
    ),
    ALL,
    {
        "k8s-app": "cilium",
        "app.kubernetes.io/name": "cilium-agent",
        "app.kubernetes.io/part-of": "cilium",
    },
)
daemonset(
    "prometheus-node-exporter",
    "monitoring",
    pod_spec(
        [
            container(
                "node-exporter",
                "quay.io/prometheus/node-exporter:v1.9.1",
                {"cpu": "50m", "memory": "64Mi"},
                {"memory": "128Mi"},
            )
        ],
        hostNetwork=True,
        hostPID=True,
        tolerations=[{"operator": "Exists"}],
        nodeSelector={"kubernetes.io/os": "linux"},
    ),
    ALL,
    {
        "app.kubernetes.io/name": "prometheus-node-exporter",
        "app.kubernetes.io/instance": "kube-prometheus-stack",
    },
)
daemonset(
    "nvidia-dra-driver-gpu-kubelet-plugin",
    "nvidia-dra-driver-gpu",
    pod_spec(
        [
            container(
                "gpus",
                "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0",
                {"cpu": "100m", "memory": "128Mi"},
            ),
            container(
                "compute-domains",
                "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0",
                {"cpu": "50m", "memory": "64Mi"},
            ),
        ],
        nodeSelector={"nvidia.com/gpu.present": "true"},
        tolerations=[tolerate(GB200_TAINT)],
        priorityClassName="system-node-critical",
        priority=2000001000,
    ),
    GB200_NAMES,
    {
        "app.kubernetes.io/name": "nvidia-dra-driver-gpu",
        "app.kubernetes.io/component": "kubelet-plugin",
    },
)
daemonset(
    "intel-gaudi-resource-driver-kubelet-plugin",
    "intel-gaudi",
    pod_spec(
        [
            container(
                "kubelet-plugin",
                "intel/intel-gaudi-resource-driver:v0.7.0",
                {"cpu": "50m", "memory": "64Mi"},
            )
        ],
        nodeSelector={"intel.feature.node.kubernetes.io/gaudi": "true"},
        tolerations=[tolerate(GAUDI_TAINT)],
    ),
    GAUDI,
    {"app": "intel-gaudi-resource-driver-kubelet-plugin"},
)
daemonset(
    "tpu-device-plugin",
    "kube-system",
    pod_spec(
        [
            container(
                "tpu-device-plugin",
                "gke.gcr.io/tpu-device-plugin:v0.14.0-gke.3",
                {"cpu": "50m", "memory": "64Mi"},
            )
        ],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "cloud.google.com/gke-tpu-accelerator",
                                    "operator": "Exists",
                                },
                                {
                                    "key": "cloud.google.com/gke-tpu-dra-driver",
                                    "operator": "DoesNotExist",
                                },
                            ]
                        }
                    ]
                }
            }
        },
        tolerations=[{"operator": "Exists"}],
        priorityClassName="system-node-critical",
        priority=2000001000,
    ),
    V6E["tpu-v6e-a"] + V6E["tpu-v6e-b"],
    {"k8s-app": "tpu-device-plugin"},
)
daemonset(
    "tpu-dra-driver",
    "kube-system",
    pod_spec(
        [
            container(
                "kubelet-plugin",
                "gke.gcr.io/tpu-dra-driver:v0.3.1-gke.1",
                {"cpu": "50m", "memory": "64Mi"},
            )
        ],
        nodeSelector={"cloud.google.com/gke-tpu-dra-driver": "true"},
        tolerations=[{"operator": "Exists"}],
        priorityClassName="system-node-critical",
        priority=2000001000,
    ),
    [V5E],
    {"k8s-app": "tpu-dra-driver"},
)

# System Deployments on the system nodes.
critical_addons = [{"effect": "NoSchedule", "key": "CriticalAddonsOnly", "operator": "Exists"}]
infra_selector = {"node-role.kubernetes.io/infra": ""}
deployment(
    "coredns",
    "kube-system",
    pod_spec(
        [
            container(
                "coredns",
                "registry.k8s.io/coredns/coredns:v1.12.3",
                {"cpu": "100m", "memory": "70Mi"},
                {"memory": "170Mi"},
            )
        ],
        tolerations=[
            *critical_addons,
            {"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"},
        ],
        priorityClassName="system-cluster-critical",
        priority=2000000000,
        serviceAccountName="coredns",
        dnsPolicy="Default",
    ),
    replicas=2,
    nodes=SYSTEM,
    labels={"k8s-app": "kube-dns"},
)
deployment(
    "metrics-server",
    "kube-system",
    pod_spec(
        [
            container(
                "metrics-server",
                "registry.k8s.io/metrics-server/metrics-server:v0.8.0",
                {"cpu": "100m", "memory": "200Mi"},
            )
        ],
        tolerations=critical_addons,
        priorityClassName="system-cluster-critical",
        priority=2000000000,
    ),
    replicas=1,
    nodes=SYSTEM[1:],
    labels={"k8s-app": "metrics-server"},
)
deployment(
    "cluster-autoscaler",
    "kube-system",
    pod_spec(
        [
            container(
                "cluster-autoscaler",
                "registry.k8s.io/autoscaling/cluster-autoscaler:v1.37.0",
                {"cpu": "100m", "memory": "600Mi"},
                {"cpu": "100m", "memory": "600Mi"},
                command=[
                    "/cluster-autoscaler",
                    "--cloud-provider=clusterapi",
                    "--node-group-auto-discovery=clusterapi:namespace=atlas-capi,clusterName=atlas",
                    "--expander=priority,least-waste",
                    "--enable-provisioning-requests=true",
                ],
            )
        ],
        tolerations=critical_addons,
        nodeSelector=infra_selector,
        priorityClassName="system-cluster-critical",
        priority=2000000000,
        serviceAccountName="cluster-autoscaler",
    ),
    replicas=1,
    nodes=SYSTEM[:1],
    labels={"app.kubernetes.io/name": "clusterapi-cluster-autoscaler"},
)
deployment(
    "karpenter",
    "karpenter",
    pod_spec(
        [
            container(
                "controller",
                "public.ecr.aws/karpenter/controller:1.8.1",
                {"cpu": "1", "memory": "1Gi"},
                {"cpu": "1", "memory": "1Gi"},
            )
        ],
        tolerations=critical_addons,
        nodeSelector=infra_selector,
        priorityClassName="system-cluster-critical",
        priority=2000000000,
        serviceAccountName="karpenter",
    ),
    replicas=2,
    nodes=SYSTEM,
    labels={"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": "karpenter"},
)
deployment(
    "kueue-controller-manager",
    "kueue-system",
    pod_spec(
        [
            container(
                "manager",
                "registry.k8s.io/kueue/kueue:v0.14.1",
                {"cpu": "500m", "memory": "512Mi"},
                {"cpu": "2", "memory": "2Gi"},
            )
        ],
        tolerations=critical_addons,
        serviceAccountName="kueue-controller-manager",
    ),
    replicas=1,
    nodes=SYSTEM[1:],
    labels={"control-plane": "controller-manager", "app.kubernetes.io/name": "kueue"},
)
deployment(
    "nvidia-dra-driver-gpu-controller",
    "nvidia-dra-driver-gpu",
    pod_spec(
        [
            container(
                "compute-domain",
                "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0",
                {"cpu": "100m", "memory": "128Mi"},
            )
        ],
        tolerations=[
            *critical_addons,
            {
                "effect": "NoSchedule",
                "key": "node-role.kubernetes.io/control-plane",
                "operator": "Exists",
            },
        ],
        nodeSelector={"node-role.kubernetes.io/control-plane": ""},
    ),
    replicas=1,
    nodes=[CP],
    labels={
        "app.kubernetes.io/name": "nvidia-dra-driver-gpu",
        "app.kubernetes.io/component": "controller",
    },
)
statefulset(
    "prometheus-kube-prometheus-stack-prometheus",
    "monitoring",
    pod_spec(
        [
            container(
                "prometheus",
                "quay.io/prometheus/prometheus:v3.6.0",
                {"cpu": "2", "memory": "8Gi"},
                {"memory": "16Gi"},
            )
        ],
        tolerations=critical_addons,
        nodeSelector=infra_selector,
        serviceAccountName="kube-prometheus-stack-prometheus",
    ),
    replicas=1,
    nodes=SYSTEM[:1],
    service="prometheus-operated",
)

# ---- Gaudi3: serving and training
gaudi_tol = [tolerate(GAUDI_TAINT)]
claim_template(
    "gaudi3-pair",
    "inference",
    [exactly("cards", "gaudi.intel.com", 2)],
    [{"matchAttribute": "resource.kubernetes.io/pcieRoot", "requests": ["cards"]}],
)
llama = deployment(
    "llama-3-70b-gaudi",
    "inference",
    pod_spec(
        [
            container(
                "vllm",
                "vault.habana.ai/gaudi-docker/1.22.0/ubuntu24.04/habanalabs/vllm:0.10.1",
                {"cpu": "24", "memory": "256Gi", "hugepages-2Mi": "4000Mi"},
                {"cpu": "24", "memory": "256Gi", "hugepages-2Mi": "4000Mi"},
                resources={"claims": [{"name": "gaudi"}]},
                ports=[{"containerPort": 8000, "name": "http", "protocol": "TCP"}],
            )
        ],
        tolerations=gaudi_tol,
        priorityClassName="inference-critical",
        priority=200000,
        resourceClaims=claims_of({"gaudi": "gaudi3-pair"}),
    ),
    replicas=3,
    nodes=GAUDI,
    labels={"app.kubernetes.io/name": "llama-3-70b", "app.kubernetes.io/component": "server"},
)
for pod, node in zip(llama[:2], GAUDI, strict=True):
    with_claims(
        pod,
        {"gaudi": "gaudi3-pair"},
        {"gaudi": [("cards", "gaudi.intel.com", node, gaudi_name(i)) for i in (0, 1)]},
    )

claim_template(
    "gaudi3-numa-4",
    "research",
    [exactly("cards", "gaudi.intel.com", 4)],
    [{"matchAttribute": "resource.kubernetes.io/numaNode", "requests": ["cards"]}],
)
claim_template("gaudi3-8", "research", [exactly("cards", "gaudi.intel.com", 8)])
claim_template("gaudi3-1", "research", [exactly("card", "gaudi.intel.com", 1)])
claim_template("gaudi3-4", "research", [exactly("cards", "gaudi.intel.com", 4)])


def job(
    name: str,
    ns: str,
    spec: Obj,
    *,
    completions: int,
    nodes: list[str],
    labels: dict[str, str] | None = None,
    suspend: bool = False,
    extra_pod_labels: dict[str, str] | None = None,
    succeeded: bool = False,
) -> tuple[Obj, list[Obj]]:
    j_uid = uid("Job", ns, name)
    job_labels = labels or {}
    sel = {"batch.kubernetes.io/controller-uid": j_uid}
    pod_labels = {
        **sel,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": j_uid,
        "job-name": name,
        **job_labels,
        **(extra_pod_labels or {}),
    }
    spec = {**spec, "restartPolicy": "Never"}
    status: Obj = {
        "active": 0 if suspend or succeeded else completions,
        "ready": len(nodes),
        "terminating": 0,
        "uncountedTerminatedPods": {},
    }
    if not suspend:
        status["startTime"] = ts(14, 5)
    if succeeded:
        status = {
            "succeeded": completions,
            "startTime": ts(14, 2),
            "completionTime": ts(14, 2, 41),
            "ready": 0,
            "terminating": 0,
            "uncountedTerminatedPods": {},
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "lastProbeTime": ts(14, 2, 41),
                    "lastTransitionTime": ts(14, 2, 41),
                }
                for t in ("SuccessCriteriaMet", "Complete")
            ],
        }
    if suspend:
        status["conditions"] = [
            {
                "type": "Suspended",
                "status": "True",
                "reason": "JobSuspended",
                "message": "Job suspended",
                "lastProbeTime": ts(14, 8),
                "lastTransitionTime": ts(14, 8),
            }
        ]
    j = add(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                **meta(name, ns, labels=job_labels, generation=1, kind="Job", created=ts(14, 4)),
                "uid": j_uid,
            },
            "spec": {
                "backoffLimit": 0,
                "completionMode": "Indexed" if completions > 1 else "NonIndexed",
                "completions": completions,
                "parallelism": completions,
                "manualSelector": False,
                "podReplacementPolicy": "TerminatingOrFailed",
                "selector": {"matchLabels": sel},
                "suspend": suspend,
                "template": template(pod_labels, spec),
            },
            "status": status,
        }
    )
    pods = []
    if suspend:
        return j, pods
    for i in range(completions):
        node = nodes[i] if i < len(nodes) else ""
        prefix = f"{name}-{i}-" if completions > 1 else f"{name}-"
        annotations = (
            {"batch.kubernetes.io/job-completion-index": str(i)} if completions > 1 else {}
        )
        lbl = {
            **pod_labels,
            **({"batch.kubernetes.io/job-completion-index": str(i)} if completions > 1 else {}),
        }
        pods.append(
            add_pod(
                prefix + suffix(),
                ns,
                {
                    **spec,
                    **({"hostname": f"{name}-{i}", "subdomain": name} if completions > 1 else {}),
                },
                owner=owner_ref(j),
                labels=lbl,
                annotations=annotations or None,
                node=node,
                created=ts(14, 5) if node else ts(14, 8, 20),
                generate_name=prefix,
            )
        )
    if succeeded:
        for p in pods:
            p["status"]["phase"] = "Succeeded"
            p["status"]["conditions"] = [
                {**c, "status": "False" if c["type"] in ("Ready", "ContainersReady") else "True"}
                for c in p["status"]["conditions"]
            ]
            for cs in p["status"]["containerStatuses"]:
                cs["ready"] = False
                cs["started"] = False
                cs["state"] = {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": ts(14, 2),
                        "finishedAt": ts(14, 2, 40),
                        "containerID": cs["containerID"],
                    }
                }
    return j, pods


habana = "vault.habana.ai/gaudi-docker/1.22.0/ubuntu24.04/habanalabs/pytorch-installer-2.7.1:latest"
_, sft = job(
    "mixtral-sft-numa",
    "research",
    dra_spec(
        "trainer",
        habana,
        {"cpu": "48", "memory": "512Gi"},
        {"gaudi": "gaudi3-numa-4"},
        tolerations=gaudi_tol,
        priorityClassName="training-high",
        priority=100000,
    ),
    completions=1,
    nodes=GAUDI[:1],
    labels={"team": "nlp"},
)
with_claims(
    sft[0],
    {"gaudi": "gaudi3-numa-4"},
    {"gaudi": [("cards", "gaudi.intel.com", GAUDI[0], gaudi_name(i)) for i in (4, 5, 6, 7)]},
)


def bare_pod(
    name: str,
    ns: str,
    spec: Obj,
    labels: dict[str, str] | None = None,
    message: str = "",
    **kw: Any,
) -> Obj:
    if spec.get("schedulingGates"):
        kw["status"] = gated_status(spec, ts(14, 8, 1))
    pod = add_pod(
        name,
        ns,
        spec,
        labels=labels or {"app": name},
        created=kw.pop("created", ts(14, 8, 10)),
        **kw,
    )
    if message and pod["status"]["phase"] == "Pending" and not spec.get("schedulingGates"):
        pod["status"]["conditions"][0]["message"] = message
    return pod


_, pretrain = job(
    "gaudi3-pretrain-8x",
    "research",
    dra_spec(
        "trainer",
        habana,
        {"cpu": "96", "memory": "1Ti"},
        {"gaudi": "gaudi3-8"},
        tolerations=gaudi_tol,
        priorityClassName="training-high",
        priority=100000,
    ),
    completions=1,
    nodes=[],
    labels={"team": "nlp"},
)
bare_pod(
    "gaudi3-numa-eval",
    "research",
    dra_spec(
        "eval",
        habana,
        {"cpu": "16", "memory": "128Gi"},
        {"gaudi": "gaudi3-numa-4"},
        tolerations=gaudi_tol,
    ),
    message=(
        "0/17 nodes are available: 2 cannot allocate all claims, 15 node(s) didn't match Pod's "
        "node affinity/selector."
    ),
)
bare_pod(
    "gaudi3-burst-eval",
    "research",
    dra_spec(
        "eval",
        habana,
        {"cpu": "32", "memory": "256Gi"},
        {"gaudi": "gaudi3-4"},
        tolerations=gaudi_tol,
        nodeSelector={"node.atlas.io/pool": "gaudi3-burst"},
    ),
    message="0/17 nodes are available: 17 node(s) didn't match Pod's node affinity/selector.",
)
bare_pod(
    "gaudi3-smoke-test",
    "research",
    dra_spec("hl-smi", habana, {"cpu": "2", "memory": "8Gi"}, {"gaudi": "gaudi3-1"}),
    message=(
        "0/17 nodes are available: 1 node(s) had untolerated taint "
        "{node-role.kubernetes.io/control-plane: }, 2 node(s) had untolerated taint "
        "{CriticalAddonsOnly: true}, 2 node(s) had untolerated taint {habana.ai/gaudi: "
        "present}, 12 cannot allocate all claims."
    ),
)

# ---- GB200: MIG serving, whole-GPU training, extended resources
gpu_tol = [tolerate(GB200_TAINT)]
claim_template(
    "mig-1g23gb",
    "inference",
    [
        exactly(
            "mig", "mig.nvidia.com", 1, "device.attributes['gpu.nvidia.com'].profile == '1g.23gb'"
        )
    ],
)
claim_template(
    "mig-2g47gb",
    "inference",
    [
        exactly(
            "mig", "mig.nvidia.com", 1, "device.attributes['gpu.nvidia.com'].profile == '2g.47gb'"
        )
    ],
)
claim_template(
    "mig-3g93gb",
    "research",
    [
        exactly(
            "mig", "mig.nvidia.com", 1, "device.attributes['gpu.nvidia.com'].profile == '3g.93gb'"
        )
    ],
)
claim_template("gb200-x4", "research", [exactly("gpus", "gpu.nvidia.com", 4)])
claim_template("gb200-x2", "research", [exactly("gpus", "gpu.nvidia.com", 2)])
C, D = GB200_NAMES
embedder = deployment(
    "bge-embedder",
    "inference",
    dra_spec(
        "tei",
        "ghcr.io/huggingface/text-embeddings-inference:hopper-1.8",
        {"cpu": "4", "memory": "16Gi"},
        {"mig": "mig-1g23gb"},
        tolerations=gpu_tol,
        priorityClassName="inference-critical",
        priority=200000,
    ),
    replicas=5,
    nodes=[C, C, C],
    labels={"app.kubernetes.io/name": "bge-embedder"},
)
for i, pod in enumerate(embedder[:3]):
    with_claims(
        pod,
        {"mig": "mig-1g23gb"},
        {"mig": [("mig", "gpu.nvidia.com", C, f"gpu-2-mig-1g23gb-19-{i}")]},
    )
triton = statefulset(
    "triton-asr",
    "inference",
    dra_spec(
        "triton",
        "nvcr.io/nvidia/tritonserver:25.09-py3",
        {"cpu": "8", "memory": "64Gi"},
        {"mig": "mig-2g47gb"},
        tolerations=gpu_tol,
    ),
    replicas=2,
    nodes=[D, D],
    service="triton-asr",
)
for i, pod in enumerate(triton):
    with_claims(
        pod,
        {"mig": "mig-2g47gb"},
        {"mig": [("mig", "gpu.nvidia.com", D, f"gpu-0-mig-2g47gb-14-{2 * i}")]},
    )
_, grpo = job(
    "grpo-actor",
    "research",
    dra_spec(
        "actor",
        "nvcr.io/nvidia/nemo:25.09",
        {"cpu": "32", "memory": "400Gi"},
        {"gpus": "gb200-x2"},
        tolerations=gpu_tol,
        priorityClassName="training-high",
        priority=100000,
    ),
    completions=1,
    nodes=[C],
)
with_claims(
    grpo[0],
    {"gpus": "gb200-x2"},
    {"gpus": [("gpus", "gpu.nvidia.com", C, f"gpu-{g}") for g in (0, 1)]},
)

# whisper asks nvidia.com/gpu: kube-scheduler made its special claim (KEP-5004).
whisper = deployment(
    "whisper-large",
    "inference",
    pod_spec(
        [
            container(
                "whisper",
                "ghcr.io/atlas/whisper-large-v3:2025.09",
                {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
                {"nvidia.com/gpu": "1"},
            )
        ],
        tolerations=gpu_tol,
    ),
    replicas=1,
    nodes=[C],
    labels={"app.kubernetes.io/name": "whisper-large"},
)
w = whisper[0]
prefix = f"{w['metadata']['name']}-extended-resources-"
special = prefix + suffix()
allocated_claim(
    special,
    "inference",
    [exactly("container-0-request-0", "gpu.nvidia.com", 1)],
    [("container-0-request-0", "gpu.nvidia.com", C, "gpu-3")],
    C,
    [reserved(w)],
    owner=owner_ref(w),
    annotations={"resource.kubernetes.io/extended-resource-claim": "true"},
    generate_name=prefix,
)
w["status"]["extendedResourceClaimStatus"] = {
    "requestMappings": [
        {
            "containerName": "whisper",
            "requestName": "container-0-request-0",
            "resourceName": "nvidia.com/gpu",
        }
    ],
    "resourceClaimName": special,
}

# A notebook claim shared by two pods: allocated on D for the running one.
shared = allocated_claim(
    "shared-mig-notebook",
    "research",
    [
        exactly(
            "mig", "mig.nvidia.com", 1, "device.attributes['gpu.nvidia.com'].profile == '1g.23gb'"
        )
    ],
    [("mig", "gpu.nvidia.com", D, "gpu-1-mig-1g23gb-19-0")],
    D,
    [],
)
nb_spec = pod_spec(
    [
        container(
            "jupyter",
            "quay.io/jupyter/pytorch-notebook:cuda12-2025-09-29",
            {"cpu": "2", "memory": "16Gi"},
            resources={"claims": [{"name": "mig"}]},
        )
    ],
    tolerations=gpu_tol,
    resourceClaims=[{"name": "mig", "resourceClaimName": "shared-mig-notebook"}],
)
nb0 = bare_pod(
    "notebook-alice",
    "research",
    nb_spec,
    labels={"app": "jupyter", "user": "alice"},
    node=D,
    created=ts(13, 15),
)
nb1 = bare_pod(
    "notebook-alice-2",
    "research",
    nb_spec,
    labels={"app": "jupyter", "user": "alice"},
    created=ts(14, 8, 50),
    message="0/17 nodes are available: 16 node(s) didn't match pod's node affinity/selector",
)
shared["status"]["reservedFor"] = [reserved(nb0)]
nb0["status"]["resourceClaimStatuses"] = []

bare_pod(
    "vlm-train-4gpu",
    "research",
    dra_spec(
        "trainer",
        "nvcr.io/nvidia/nemo:25.09",
        {"cpu": "64", "memory": "800Gi"},
        {"gpus": "gb200-x4"},
        tolerations=gpu_tol,
        priorityClassName="training-high",
        priority=100000,
    ),
    labels={"app": "vlm-train", "team": "vision"},
    message=(
        "0/17 nodes are available: 2 cannot allocate all claims, 15 node(s) had untolerated "
        "taint(s)."
    ),
)
bare_pod(
    "mig-3g-finetune",
    "research",
    dra_spec(
        "trainer",
        "nvcr.io/nvidia/pytorch:25.09-py3",
        {"cpu": "8", "memory": "64Gi"},
        {"mig": "mig-3g93gb"},
        tolerations=gpu_tol,
    ),
)
bare_pod(
    "cuda-vectoradd",
    "batch",
    pod_spec(
        [
            container(
                "vectoradd",
                "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
                {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"},
                {"nvidia.com/gpu": "2"},
            )
        ],
        tolerations=gpu_tol,
        restartPolicy="OnFailure",
    ),
)
bare_pod(
    "cuda-no-toleration",
    "batch",
    pod_spec(
        [
            container(
                "vectoradd",
                "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
                {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                {"nvidia.com/gpu": "1"},
            )
        ],
        restartPolicy="OnFailure",
    ),
)
bare_pod(
    "rocm-smoke",
    "research",
    dra_spec(
        "rocm",
        "rocm/pytorch:rocm6.4_ubuntu24.04_py3.12_pytorch_release_2.6.0",
        {"cpu": "4", "memory": "16Gi"},
        {"gpu": "mi300x-1"},
    ),
)
claim_template("mi300x-1", "research", [exactly("gpu", "gpu.amd.com", 1)])

# ---- gangs: scheduling.k8s.io/v1beta1 Workload + PodGroup


def gang(
    name: str,
    ns: str,
    min_count: int,
    spec: Obj,
    *,
    members: int,
    nodes: list[str],
    topology: str = "",
    scheduled: bool = False,
    message: str = "",
) -> list[Obj]:
    constraints = {"schedulingConstraints": {"topology": [{"key": topology}]}} if topology else {}
    wl = add(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "Workload",
            "metadata": meta(name, ns, generation=1, created=ts(14, 4), kind="Workload"),
            "spec": {
                "podGroupTemplates": [
                    {
                        "name": "workers",
                        "schedulingPolicy": {"gang": {"minCount": min_count}},
                        **constraints,
                    }
                ]
            },
        }
    )
    pg_name = f"{name}-workers"
    add(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": meta(
                pg_name, ns, generation=1, created=ts(14, 4), owner=owner_ref(wl), kind="PodGroup"
            ),
            "spec": {
                "workloadRef": {"workloadName": name, "templateName": "workers"},
                "schedulingPolicy": {"gang": {"minCount": min_count}},
                **constraints,
            },
            "status": {
                "conditions": [
                    {
                        "type": "PodGroupScheduled",
                        "status": "True" if scheduled else "False",
                        "reason": "Scheduled" if scheduled else "Unschedulable",
                        "message": "" if scheduled else message,
                        "lastTransitionTime": ts(14, 5),
                        "observedGeneration": 1,
                    }
                ]
            },
        }
    )
    pods = []
    for i in range(members):
        node = nodes[i] if i < len(nodes) else ""
        pods.append(
            bare_pod(
                f"{name}-{i}",
                ns,
                {**spec, "schedulingGroup": {"podGroupName": pg_name}},
                labels={"app": name, "atlas.io/gang-index": str(i)},
                node=node,
                created=ts(14, 5) if node else ts(14, 8, 5),
                message=message,
            )
        )
    return pods


jax = "us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:jax0.7.2-rev1"
tpu_spec = pod_spec(
    [
        container(
            "jax",
            jax,
            {"cpu": "160", "memory": "600Gi", "google.com/tpu": "4"},
            {"google.com/tpu": "4"},
            ports=[{"containerPort": 8471, "name": "tpu-runtime"}],
        )
    ],
    tolerations=[tolerate(TPU_TAINT)],
    nodeSelector={
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "4x4",
    },
    priorityClassName="training-high",
    priority=100000,
)
gang(
    "maxtext-pretrain",
    "tpu-jobs",
    4,
    tpu_spec,
    members=4,
    nodes=V6E["tpu-v6e-a"],
    topology="cloud.google.com/gke-nodepool",
    scheduled=True,
)
bare_pod(
    "tpu-v6e-healthcheck",
    "tpu-jobs",
    pod_spec(
        [
            container(
                "tpu-info",
                jax,
                {"cpu": "1", "memory": "4Gi", "google.com/tpu": "4"},
                {"google.com/tpu": "4"},
            )
        ],
        tolerations=[tolerate(TPU_TAINT)],
        nodeSelector={"cloud.google.com/gke-nodepool": "tpu-v6e-b"},
    ),
    node=V6E["tpu-v6e-b"][0],
    created=ts(14, 6),
)
gang(
    "maxtext-sft",
    "tpu-jobs",
    4,
    tpu_spec,
    members=4,
    nodes=[],
    topology="cloud.google.com/gke-nodepool",
    message=(
        "0/17 nodes are available: pod group maxtext-sft-workers needs 4 pods in one "
        "cloud.google.com/gke-nodepool domain."
    ),
)
gang(
    "ddp-gb200",
    "research",
    3,
    dra_spec(
        "trainer",
        "nvcr.io/nvidia/nemo:25.09",
        {"cpu": "100", "memory": "800Gi"},
        {"gpus": "gb200-x4"},
        tolerations=gpu_tol,
        priorityClassName="training-high",
        priority=100000,
    ),
    members=3,
    nodes=[],
    topology="nvidia.com/gpu.clique",
    message="0/17 nodes are available: 2 cannot allocate all claims.",
)
gang(
    "pipeline-stages",
    "research",
    4,
    dra_spec(
        "stage",
        habana,
        {"cpu": "16", "memory": "128Gi"},
        {"gaudi": "gaudi3-1"},
        tolerations=gaudi_tol,
    ),
    members=3,
    nodes=[],
    message="",
)

# ---- TPU v5e through DRA: a claim, a DRA-backed google.com/tpu request, allocationMode All
claim_template(
    "v5e-4",
    "tpu-jobs",
    [exactly("chips", "tpu.google.com", 4)],
    [{"matchAttribute": "resource.kubernetes.io/numaNode", "requests": ["chips"]}],
)
claim_template("v5e-host", "tpu-jobs", [exactly("chips", "tpu.google.com", mode="All")])
v5e_sel = {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice"}
serve = deployment(
    "gemma-serve-v5e",
    "tpu-jobs",
    dra_spec(
        "jetstream",
        "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-pytorch-server:v0.2.4",
        {"cpu": "32", "memory": "96Gi"},
        {"tpu": "v5e-4"},
        tolerations=[tolerate(TPU_TAINT)],
        nodeSelector=v5e_sel,
    ),
    replicas=1,
    nodes=[V5E],
    labels={"app.kubernetes.io/name": "gemma-serve"},
)
with_claims(
    serve[0],
    {"tpu": "v5e-4"},
    {"tpu": [("chips", "tpu.google.com", V5E, f"tpu-{c}") for c in range(4)]},
)
bare_pod(
    "jax-v5e-probe",
    "tpu-jobs",
    pod_spec(
        [
            container(
                "jax",
                jax,
                {"cpu": "8", "memory": "32Gi", "google.com/tpu": "4"},
                {"google.com/tpu": "4"},
            )
        ],
        tolerations=[tolerate(TPU_TAINT)],
        nodeSelector=v5e_sel,
    ),
)
bare_pod(
    "v5e-whole-host",
    "tpu-jobs",
    pod_spec(
        [
            container(
                "jax", jax, {"cpu": "8", "memory": "32Gi"}, resources={"claims": [{"name": "tpu"}]}
            )
        ],
        tolerations=[tolerate(TPU_TAINT)],
        nodeSelector=v5e_sel,
        resourceClaims=claims_of({"tpu": "v5e-host"}),
    ),
)

# ---- CPU work: a scaled-up ETL Deployment, a memory giant, a finished Job
deployment(
    "spark-etl-executor",
    "batch",
    pod_spec(
        [
            container(
                "executor",
                "apache/spark:4.0.1-scala2.13-java21-python3-ubuntu",
                {"cpu": "24", "memory": "96Gi"},
                {"cpu": "24", "memory": "96Gi"},
            )
        ],
        priorityClassName="batch-low",
        priority=-10,
    ),
    replicas=4,
    nodes=[CPU_NODE, CPU_NODE],
    labels={"app.kubernetes.io/name": "spark-etl", "spark-role": "executor"},
)
bare_pod(
    "genome-assembly",
    "batch",
    pod_spec(
        [
            container(
                "spades",
                "quay.io/biocontainers/spades:4.2.0--h8d6e82b_2",
                {"cpu": "32", "memory": "3Ti"},
                {"memory": "3Ti"},
            )
        ]
    ),
    message="0/17 nodes are available: 17 Insufficient memory.",
)
job(
    "nightly-usage-report",
    "batch",
    pod_spec(
        [container("report", "ghcr.io/atlas/usage-report:1.4.2", {"cpu": "500m", "memory": "1Gi"})]
    ),
    completions=1,
    nodes=[CPU_NODE],
    succeeded=True,
)

# ---- Kueue (v1beta1): a suspended Job and a pod group held by the admission gate
for kind, name, ns, spec in (
    (
        "ResourceFlavor",
        "gaudi3",
        "",
        {"nodeLabels": {"node.atlas.io/pool": "gaudi3"}, "tolerations": [tolerate(GAUDI_TAINT)]},
    ),
    (
        "ResourceFlavor",
        "gb200",
        "",
        {"nodeLabels": {"karpenter.sh/nodepool": "gb200"}, "tolerations": [tolerate(GB200_TAINT)]},
    ),
    (
        "ClusterQueue",
        "research",
        "",
        {
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [
                {
                    "coveredResources": [
                        "cpu",
                        "memory",
                        "deviceclass.resource.kubernetes.io/gaudi.intel.com",
                    ],
                    "flavors": [
                        {
                            "name": "gaudi3",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "256"},
                                {"name": "memory", "nominalQuota": "2Ti"},
                                {
                                    "name": "deviceclass.resource.kubernetes.io/gaudi.intel.com",
                                    "nominalQuota": "8",
                                },
                            ],
                        }
                    ],
                }
            ],
        },
    ),
    ("LocalQueue", "research", "research", {"clusterQueue": "research"}),
):
    add(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": kind,
            "metadata": meta(name, ns, generation=1, created=ts(2, 9), kind=kind),
            "spec": spec,
        }
    )
kueue_labels = {"kueue.x-k8s.io/queue-name": "research"}
suspended, _ = job(
    "llama-finetune-lora",
    "research",
    dra_spec(
        "trainer",
        habana,
        {"cpu": "24", "memory": "256Gi"},
        {"gaudi": "gaudi3-numa-4"},
        tolerations=gaudi_tol,
    ),
    completions=1,
    nodes=[],
    labels=kueue_labels,
    suspend=True,
)


def kueue_workload(
    name: str, owner: Obj | None, count: int, message: str, pod_set: str = "main"
) -> None:
    add(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "Workload",
            "metadata": {
                **meta(
                    name,
                    "research",
                    generation=1,
                    created=ts(14, 8, 1),
                    owner=owner,
                    labels={"kueue.x-k8s.io/job-uid": uid("x", name)},
                    kind="KueueWorkload",
                ),
                "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            },
            "spec": {
                "active": True,
                "queueName": "research",
                "podSets": [{"name": pod_set, "count": count}],
                "priority": 0,
            },
            "status": {
                "conditions": [
                    {
                        "type": "QuotaReserved",
                        "status": "False",
                        "reason": "Pending",
                        "message": message,
                        "lastTransitionTime": ts(14, 8, 2),
                        "observedGeneration": 1,
                    }
                ],
                "resourceRequests": [
                    {"name": pod_set, "resources": {"cpu": "24", "memory": "256Gi"}}
                ],
            },
        }
    )


kueue_workload(
    "job-llama-finetune-lora-3f2a1",
    owner_ref(suspended),
    1,
    (
        "couldn't assign flavors to pod set main: insufficient unused quota for "
        "deviceclass.resource.kubernetes.io/gaudi.intel.com in flavor gaudi3, 4 more needed"
    ),
)
kueue_workload(
    "eval-sweep",
    None,
    2,
    (
        "couldn't assign flavors to pod set 2b3c4d5e: insufficient unused quota for cpu in "
        "flavor gaudi3, 24 more needed"
    ),
    pod_set="2b3c4d5e",
)
for i in range(2):
    bare_pod(
        f"eval-sweep-{i}",
        "research",
        dra_spec(
            "eval",
            habana,
            {"cpu": "24", "memory": "256Gi"},
            {"gaudi": "gaudi3-1"},
            tolerations=gaudi_tol,
            schedulingGates=[{"name": "kueue.x-k8s.io/admission"}],
        ),
        labels={
            **kueue_labels,
            "kueue.x-k8s.io/managed": "true",
            "kueue.x-k8s.io/pod-group-name": "eval-sweep",
        },
        annotations={"kueue.x-k8s.io/pod-group-total-count": "2"},
    )
bare_pod(
    "dataset-warmup",
    "default",
    pod_spec(
        [container("warmup", "ghcr.io/atlas/dataset-cache:0.9.0", {"cpu": "2", "memory": "8Gi"})],
        schedulingGates=[{"name": "atlas.io/dataset-staged"}],
    ),
)

# ---- Services (what `kubectl get all` lists beside the workloads)
for name, ns, selector, port, extra in (
    ("kubernetes", "default", None, 443, {}),
    ("kube-dns", "kube-system", {"k8s-app": "kube-dns"}, 53, {}),
    ("metrics-server", "kube-system", {"k8s-app": "metrics-server"}, 443, {}),
    ("karpenter", "karpenter", {"app.kubernetes.io/name": "karpenter"}, 8080, {}),
    ("kueue-webhook-service", "kueue-system", {"control-plane": "controller-manager"}, 443, {}),
    (
        "prometheus-operated",
        "monitoring",
        {"app.kubernetes.io/name": "prometheus"},
        9090,
        {"clusterIP": "None"},
    ),
    (
        "llama-3-70b",
        "inference",
        {"app.kubernetes.io/name": "llama-3-70b"},
        8000,
        {"type": "LoadBalancer"},
    ),
    ("bge-embedder", "inference", {"app.kubernetes.io/name": "bge-embedder"}, 80, {}),
    (
        "triton-asr",
        "inference",
        {"app.kubernetes.io/name": "triton-asr"},
        8001,
        {"clusterIP": "None"},
    ),
    ("maxtext-pretrain", "tpu-jobs", {"app": "maxtext-pretrain"}, 8471, {"clusterIP": "None"}),
):
    ip = extra.get("clusterIP") or f"10.96.{RNG.randint(0, 255)}.{RNG.randint(2, 254)}"
    if name == "kubernetes":
        ip = "10.96.0.1"
    spec: Obj = {
        "clusterIP": ip,
        "clusterIPs": [ip],
        "internalTrafficPolicy": "Cluster",
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "ports": [{"name": "main", "port": port, "protocol": "TCP", "targetPort": port}],
        "sessionAffinity": "None",
        "type": extra.get("type", "ClusterIP"),
    }
    if selector:
        spec["selector"] = selector
    status: Obj = {"loadBalancer": {}}
    if spec["type"] == "LoadBalancer":
        spec["allocateLoadBalancerNodePorts"] = True
        spec["externalTrafficPolicy"] = "Cluster"
        spec["ports"][0]["nodePort"] = 31080
        status = {"loadBalancer": {"ingress": [{"ip": "10.20.200.15", "ipMode": "VIP"}]}}
    add(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta(name, ns, created=ts(2, 9), kind="Service"),
            "spec": spec,
            "status": status,
        }
    )

# An older ReplicaSet of llama, scaled to 0 by the rollout.
add(
    {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta(
            "llama-3-70b-gaudi-6b8f7c9d5",
            "inference",
            created=ts(5, 11),
            generation=3,
            labels={"app.kubernetes.io/name": "llama-3-70b", "pod-template-hash": "6b8f7c9d5"},
            annotations={"deployment.kubernetes.io/revision": "0"},
            kind="ReplicaSet",
        ),
        "spec": {
            "replicas": 0,
            "selector": {
                "matchLabels": {
                    "app.kubernetes.io/name": "llama-3-70b",
                    "pod-template-hash": "6b8f7c9d5",
                }
            },
        },
        "status": {"observedGeneration": 3, "replicas": 0},
    }
)

# --------------------------------------------------------------------------- node groups


def machine_deployment(
    name: str,
    replicas: int,
    low: int,
    high: int,
    labels: dict[str, str],
    notes: dict[str, str] | None = None,
) -> None:
    add(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "MachineDeployment",
            "metadata": meta(
                name,
                CAPI_NS,
                generation=2,
                created=ts(1, 7),
                labels={"cluster.x-k8s.io/cluster-name": CLUSTER},
                annotations={
                    "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": str(low),
                    "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": str(high),
                    "machinedeployment.clusters.x-k8s.io/revision": "1",
                    **(notes or {}),
                },
                kind="MachineDeployment",
            ),
            "spec": {
                "clusterName": CLUSTER,
                "replicas": replicas,
                "selector": {
                    "matchLabels": {
                        "cluster.x-k8s.io/cluster-name": CLUSTER,
                        "cluster.x-k8s.io/deployment-name": name,
                    }
                },
                "template": {
                    "metadata": {
                        "labels": {
                            "cluster.x-k8s.io/cluster-name": CLUSTER,
                            "cluster.x-k8s.io/deployment-name": name,
                            **labels,
                        }
                    },
                    "spec": {
                        "bootstrap": {
                            "configRef": {
                                "apiGroup": "bootstrap.cluster.x-k8s.io",
                                "kind": "KubeadmConfigTemplate",
                                "name": name,
                            }
                        },
                        "clusterName": CLUSTER,
                        "infrastructureRef": {
                            "apiGroup": "infrastructure.cluster.x-k8s.io",
                            "kind": "Metal3MachineTemplate",
                            "name": f"{name}-v1",
                        },
                        "version": "v1.37.1",
                    },
                },
            },
            "status": {
                "observedGeneration": 2,
                "replicas": replicas,
                "readyReplicas": replicas,
                "availableReplicas": replicas,
                "upToDateReplicas": replicas,
                "selector": (
                    f"cluster.x-k8s.io/cluster-name={CLUSTER},"
                    f"cluster.x-k8s.io/deployment-name={name}"
                ),
                "phase": "Running" if replicas else "ScalingUp" if low else "Running",
            },
        }
    )


machine_deployment("atlas-system", 2, 2, 3, {"node.cluster.x-k8s.io/pool": "system"})
machine_deployment("atlas-cpu", 1, 1, 6, {"node.cluster.x-k8s.io/pool": "cpu"})
machine_deployment("atlas-gaudi3", 2, 1, 4, {"node.cluster.x-k8s.io/pool": "gaudi3"})
machine_deployment(
    "atlas-gaudi3-burst",
    0,
    0,
    2,
    {"node.cluster.x-k8s.io/pool": "gaudi3-burst"},
    {
        "capacity.cluster-autoscaler.kubernetes.io/cpu": "192",
        "capacity.cluster-autoscaler.kubernetes.io/memory": "2015Gi",
        "capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk": "3576Gi",
        "capacity.cluster-autoscaler.kubernetes.io/maxPods": "110",
        "capacity.cluster-autoscaler.kubernetes.io/gpu-count": "8",
        "capacity.cluster-autoscaler.kubernetes.io/dra-driver": "gaudi.intel.com",
        "capacity.cluster-autoscaler.kubernetes.io/labels": (
            "node.atlas.io/pool=gaudi3-burst,intel.feature.node.kubernetes.io/gaudi=true"
        ),
        "capacity.cluster-autoscaler.kubernetes.io/taints": "habana.ai/gaudi=present:NoSchedule",
    },
)

GB200_CLASS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gb200"}
GB200_TYPE = {
    "key": "node.kubernetes.io/instance-type",
    "operator": "In",
    "values": ["p6e-gb200.36xlarge"],
}
karpenter_pool = add(
    {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": meta(
            "gb200",
            generation=1,
            created=ts(6, 14),
            annotations={
                "karpenter.sh/nodepool-hash": "6821555240594823858",
                "karpenter.sh/nodepool-hash-version": "v3",
            },
            kind="NodePool",
        ),
        "spec": {
            "disruption": {
                "budgets": [{"nodes": "10%"}],
                "consolidateAfter": "1h",
                "consolidationPolicy": "WhenEmpty",
            },
            "limits": {"cpu": "576"},
            "template": {
                "metadata": {"labels": {"nvidia.com/gpu.present": "true"}},
                "spec": {
                    "expireAfter": "720h",
                    "nodeClassRef": GB200_CLASS,
                    "requirements": [
                        GB200_TYPE,
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["reserved"],
                        },
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
                        {
                            "key": "topology.kubernetes.io/zone",
                            "operator": "In",
                            "values": ["us-west-2b"],
                        },
                    ],
                    "taints": [GB200_TAINT],
                },
            },
            "weight": 50,
        },
        "status": {
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "reason": t,
                    "message": "",
                    "lastTransitionTime": ts(6, 14, 1),
                    "observedGeneration": 1,
                }
                for t in (
                    "ValidationSucceeded",
                    "NodeClassReady",
                    "NodeRegistrationHealthy",
                    "Ready",
                )
            ],
            "nodes": 2,
            "resources": {
                "cpu": "288",
                "ephemeral-storage": "2147461080Ki",
                "memory": "2012704768Ki",
                "nodes": "2",
                "pods": "1474",
            },
        },
    }
)
for name, _ip, instance in GB200:
    add(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                **meta(
                    f"gb200-{suffix()}",
                    generation=1,
                    created=ts(6, 14, 10),
                    labels={
                        "karpenter.sh/nodepool": "gb200",
                        "karpenter.sh/capacity-type": "reserved",
                        "node.kubernetes.io/instance-type": "p6e-gb200.36xlarge",
                        "topology.kubernetes.io/zone": "us-west-2b",
                        "kubernetes.io/arch": "arm64",
                    },
                    owner=owner_ref(karpenter_pool),
                    kind="NodeClaim",
                ),
                "finalizers": ["karpenter.sh/termination"],
            },
            "spec": {
                "expireAfter": "720h",
                "nodeClassRef": GB200_CLASS,
                "requirements": [
                    GB200_TYPE,
                    {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gb200"]},
                ],
                "resources": {"requests": {"cpu": "300m", "pods": "5"}},
                "taints": [GB200_TAINT],
            },
            "status": {
                "nodeName": name,
                "providerID": f"aws:///us-west-2b/{instance}",
                "imageID": "ami-0c2f4e6a8b0d1f3e5",
                "capacity": {"cpu": "144", "memory": "960Gi", "pods": "737"},
                "allocatable": {"cpu": "143890m", "memory": "947Gi", "pods": "737"},
                "conditions": [
                    {
                        "type": t,
                        "status": "True",
                        "reason": t,
                        "message": "",
                        "lastTransitionTime": ts(6, 14, 12),
                    }
                    for t in ("Launched", "Registered", "Initialized", "Ready")
                ],
            },
        }
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
