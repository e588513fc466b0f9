"""Generated clusters for benchmarks: nodes with one ResourceSlice of GPUs each."""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import uuid
from typing import Any


def gpu_node_objects(nodes: int, gpus: int = 8, numa_groups: int = 2) -> list[dict[str, Any]]:
    """`nodes` nodes, each with a slice of `gpus` GPUs carrying 8 attributes and a capacity."""
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]},
        }
    ]
    per_group = max(1, gpus // numa_groups)
    for n in range(nodes):
        name = f"node-{n:05d}"
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "96", "memory": "768Gi", "pods": "110"}},
            }
        )
        devices = []
        for i in range(gpus):
            devices.append(
                {
                    "name": f"gpu-{i}",
                    "attributes": {
                        "index": {"int": i},
                        "uuid": {"string": f"GPU-{n:05d}-{i}"},
                        "model": {"string": "H100"},
                        "numa": {"int": i // per_group},
                        "resource.kubernetes.io/pcieRoot": {"string": f"pci{i // 2:04x}:00"},
                        "driverVersion": {"version": "550.54.15"},
                        "family": {"string": "hopper"},
                        "nvlink": {"bool": True},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                }
            )
        objs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpu"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
    return objs


def claim(name: str, count: int, match: str | None = None, ns: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "devices": {
            "requests": [
                {"name": "gpus", "exactly": {"deviceClassName": "gpu.example.com", "count": count}}
            ]
        }
    }
    if match:
        spec["devices"]["constraints"] = [{"matchAttribute": match}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


# --- A production-sized dump, as `kubectl get nodes,pods,resourceslices,... -A -o json` writes it.

GPU_DRIVER = "gpu.nvidia.com"
_ZONES = ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d")
_DAEMONS = (
    ("node-exporter", "monitoring"),
    ("dcgm-exporter", "gpu-operator"),
    ("kube-proxy", "kube-system"),
)
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_TIME = "2026-11-30T10:00:00Z"
_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# Running shapes: GPUs and the constraint that placed them (devices taken in index order from
# the first free aligned block, as the driver's topology makes the scheduler do).
_RUNNING = (
    (1, None),
    (1, None),
    (2, "resource.kubernetes.io/pcieRoot"),
    (4, "gpu.nvidia.com/numa"),
)
# Pending shapes that fit a node with room, and shapes that never do: four GPUs under one PCIe
# root (a root holds two) and eight whole GPUs (every node runs at least one GPU pod).
_FITS = ((1, None), (2, "resource.kubernetes.io/pcieRoot"), (4, "gpu.nvidia.com/numa"))
_NEVER = ((4, "resource.kubernetes.io/pcieRoot"), (8, None))


class _Ids:
    """Deterministic UIDs, resource versions and IPs."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.version = 1000

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def rv(self) -> str:
        self.version += 1
        return str(self.version)

    def ip(self, n: int) -> str:
        return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def _node(n: int, ids: _Ids) -> dict[str, Any]:
    name = f"gpu-node-{n:05d}"
    capacity = {
        "cpu": "192",
        "ephemeral-storage": "3750000000Ki",
        "hugepages-1Gi": "0",
        "memory": "2113879940Ki",
        "pods": "110",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": ids.uid(),
            "resourceVersion": ids.rv(),
            "creationTimestamp": _TIME,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "karpenter.sh/nodepool": "h100",
                "karpenter.sh/capacity-type": "on-demand",
                "node.kubernetes.io/instance-type": "p5.48xlarge",
                "topology.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": _ZONES[n % len(_ZONES)],
                "nvidia.com/gpu.present": "true",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {
            "providerID": f"aws:///{_ZONES[n % len(_ZONES)]}/i-{n:017x}",
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        },
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": ids.ip(n)},
                {"type": "Hostname", "address": name},
            ],
            "allocatable": {**capacity, "cpu": "191450m", "memory": "2102365060Ki"},
            "capacity": capacity,
            "conditions": [
                {
                    "type": t,
                    "status": "True" if t == "Ready" else "False",
                    "lastHeartbeatTime": _TIME,
                    "lastTransitionTime": _TIME,
                    "reason": r,
                    "message": m,
                }
                for t, r, m in (
                    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                    ("Ready", "KubeletReady", "kubelet is posting ready status"),
                )
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "containerRuntimeVersion": "containerd://2.0.5",
                "kernelVersion": "6.1.141-155.222.amzn2023.x86_64",
                "kubeletVersion": "v1.36.0",
                "operatingSystem": "linux",
                "osImage": "Amazon Linux 2023.7.20250623",
                "machineID": f"{n:032x}",
            },
        },
    }


def _slice(n: int, ids: _Ids) -> dict[str, Any]:
    node = f"gpu-node-{n:05d}"
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {
                "type": {"string": "gpu"},
                "productName": {"string": "NVIDIA H100 80GB HBM3"},
                "cudaDriverVersion": {"version": "12.8.0"},
                "driverVersion": {"version": "570.124.6"},
                "index": {"int": i},
                "uuid": {"string": f"GPU-{n:08x}-{i:04x}-4c2e-9a1b-{ids.rng.getrandbits(48):012x}"},
                "numa": {"int": i // 4},
                "resource.kubernetes.io/pcieRoot": {"string": f"pci{i // 2:04x}:00"},
            },
            "capacity": {"memory": {"value": "81559Mi"}},
        }
        for i in range(8)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{node}-{GPU_DRIVER}-{n:05x}",
            "generateName": f"{node}-{GPU_DRIVER}-",
            "uid": ids.uid(),
            "resourceVersion": ids.rv(),
            "creationTimestamp": _TIME,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": node,
                    "uid": ids.uid(),
                    "controller": True,
                }
            ],
        },
        "spec": {
            "driver": GPU_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _request(count: int, match: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "requests": [{"name": "gpus", "exactly": {"deviceClassName": GPU_DRIVER, "count": count}}]
    }
    if match:
        spec["constraints"] = [{"requests": ["gpus"], "matchAttribute": match}]
    return spec


def _shape_name(count: int, match: str | None) -> str:
    return f"gpu{count}" + (f"-{match.rsplit('/', 1)[-1].lower()}" if match else "")


def _pod(
    name: str,
    ns: str,
    ids: _Ids,
    owner: tuple[str, str],
    requests: dict[str, str],
    node: str | None,
    claim: str | None,
    template: str | None,
    n: int,
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": "nvcr.io/nvidia/pytorch:25.10-py3",
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": requests},
    }
    spec: dict[str, Any] = {
        "containers": [container],
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always" if owner[0] != "Job" else "Never",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            _TOLERATION,
        ],
    }
    status: dict[str, Any] = {"qosClass": "Guaranteed"}
    if claim or template:
        container["resources"]["claims"] = [{"name": "gpu"}]
        spec["resourceClaims"] = [
            {"name": "gpu", "resourceClaimTemplateName": template or "unused"}
        ]
    if node is not None:
        spec["nodeName"] = node
        status.update(
            phase="Running",
            hostIP=ids.ip(n),
            podIP=ids.ip(n + 1_000_000),
            startTime=_TIME,
            conditions=[
                {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": _TIME}
                for t in ("Ready", "PodScheduled")
            ],
            containerStatuses=[
                {
                    "name": "main",
                    "image": container["image"],
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": _TIME}},
                }
            ],
        )
        if claim:
            status["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim}]
    else:
        status.update(
            phase="Pending",
            conditions=[
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": _TIME,
                    "reason": "Unschedulable",
                    "message": "0/1 nodes are available",
                }
            ],
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": name.rsplit("-", 1)[0] + "-",
            "namespace": ns,
            "uid": ids.uid(),
            "resourceVersion": ids.rv(),
            "creationTimestamp": f"2026-11-30T{10 + n // 3600 % 10:02d}:{n // 60 % 60:02d}:"
            f"{n % 60:02d}Z",
            "labels": {"app": owner[1], "pod-template-hash": f"{hash_of(owner[1]):010x}"[:10]},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1" if owner[0] != "Job" else "batch/v1",
                    "kind": owner[0],
                    "name": owner[1],
                    "uid": f"uid-{owner[1]}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
        "status": status,
    }


def suffix(serial: int) -> str:
    """Five generateName characters, distinct for distinct serials below 27**5."""
    n = serial * 7_919 % 27**5  # a prime to the alphabet's powers: a bijection, scrambled
    return "".join(_ALPHABET[n // 27**k % 27] for k in range(5))


def hash_of(text: str) -> int:
    """A stable small hash (Python's `hash` is salted per process)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:5], "big")


def _claim(
    name: str,
    ns: str,
    pod: dict[str, Any],
    node: str,
    shape: tuple[int, str | None],
    devices: list[int],
    ids: _Ids,
) -> dict[str, Any]:
    meta = pod["metadata"]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": ids.uid(),
            "resourceVersion": ids.rv(),
            "creationTimestamp": _TIME,
            "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"devices": _request(*shape)},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpus",
                            "driver": GPU_DRIVER,
                            "pool": node,
                            "device": f"gpu-{d}",
                        }
                        for d in devices
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
            "reservedFor": [{"resource": "pods", "name": meta["name"], "uid": meta["uid"]}],
        },
    }


def _place(free: list[bool], count: int) -> list[int] | None:
    """The first free aligned block of `count` GPUs (a pair shares a PCIe root, four a NUMA
    node)."""
    for start in range(0, 8, count):
        block = list(range(start, start + count))
        if all(free[d] for d in block):
            return block
    return None


def production_cluster(
    nodes: int = 10_000,
    pods: int = 50_000,
    pending: int = 1_000,
    never: float = 0.0,
    seed: int = 1,
    deployments: bool = False,
) -> list[dict[str, Any]]:
    """A GPU cluster as kubectl dumps it: `nodes` p5.48xlarge nodes (8 H100, two per PCIe root,
    four per NUMA node, tainted nvidia.com/gpu) each with its driver's ResourceSlice, three
    DaemonSet pods per node, running GPU pods (1, 2 on one PCIe root or 4 on one NUMA node; every
    node runs at least one) with their allocated claims, and `pending` GPU pods from
    ResourceClaimTemplates, a share `never` of which have a shape no node can host now (4 GPUs
    under one PCIe root, 8 GPUs). `pods` counts every pod. Deterministic for a seed.

    With `deployments`, the running pods' ReplicaSets are in the dump with a Service each, and
    the pending pods are Deployments' (ReplicaSet-owned) instead of Jobs': every pod then gets
    PodTopologySpread's default constraints (hostname and zone)."""
    rng = random.Random(seed)
    ids = _Ids(rng)
    selector = f"device.driver == '{GPU_DRIVER}' && device.attributes['{GPU_DRIVER}'].type == 'gpu'"
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {
                "name": GPU_DRIVER,
                "uid": ids.uid(),
                "resourceVersion": ids.rv(),
                "creationTimestamp": _TIME,
            },
            "spec": {"selectors": [{"cel": {"expression": selector}}]},
        }
    ]
    for shape in _FITS + _NEVER:
        objs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {
                    "name": _shape_name(*shape),
                    "namespace": "research",
                    "uid": ids.uid(),
                    "resourceVersion": ids.rv(),
                    "creationTimestamp": _TIME,
                },
                "spec": {"spec": {"devices": _request(*shape)}},
            }
        )
    running = max(nodes, pods - pending - len(_DAEMONS) * nodes)
    extra = set(rng.sample(range(nodes), min(nodes, running - nodes)))
    serial = 0
    for n in range(nodes):
        objs.append(_node(n, ids))
        objs.append(_slice(n, ids))
        name = f"gpu-node-{n:05d}"
        for daemon, ns in _DAEMONS:
            serial += 1
            pod_name = f"{daemon}-{suffix(serial)}"
            objs.append(
                _pod(
                    pod_name,
                    ns,
                    ids,
                    ("DaemonSet", daemon),
                    {"cpu": "100m", "memory": "128Mi"},
                    name,
                    None,
                    None,
                    serial,
                )
            )
        free = [True] * 8
        for _ in range(2 if n in extra else 1):
            count, match = rng.choice(_RUNNING)
            devices = _place(free, count) or _place(free, 1)
            if devices is None:
                continue
            if len(devices) != count:
                count, match = 1, None
            for d in devices:
                free[d] = False
            serial += 1
            owner = f"{_shape_name(count, match)}-{serial % 997:03d}"
            pod_name = f"{owner}-{suffix(serial)}"
            claim_name = f"{pod_name}-gpu-{suffix(serial + 7)}"
            requests = {"cpu": str(12 * count), "memory": f"{128 * count}Gi"}
            pod = _pod(
                pod_name,
                "research",
                ids,
                ("ReplicaSet", owner),
                requests,
                name,
                claim_name,
                _shape_name(count, match),
                serial,
            )
            objs.append(_claim(claim_name, "research", pod, name, (count, match), devices, ids))
            objs.append(pod)
    for i in range(pending):
        shape = _NEVER[i % len(_NEVER)] if rng.random() < never else rng.choice(_FITS)
        serial += 1
        kind = "ReplicaSet" if deployments else "Job"
        owner = f"{'serve' if deployments else 'job'}-{_shape_name(*shape)}-{i // 50:04d}"
        requests = {"cpu": str(12 * shape[0]), "memory": f"{128 * shape[0]}Gi"}
        objs.append(
            _pod(
                f"{owner}-{suffix(serial)}",
                "research",
                ids,
                (kind, owner),
                requests,
                None,
                None,
                _shape_name(*shape),
                serial,
            )
        )
    if deployments:
        objs += _selecting(objs, ids)
    return objs


def _selecting(objs: list[dict[str, Any]], ids: _Ids) -> list[dict[str, Any]]:
    """A ReplicaSet selecting each ReplicaSet-owned pod set, and a Service per app."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for pod in objs:
        meta = pod["metadata"]
        if pod["kind"] != "Pod" or meta["ownerReferences"][0]["kind"] != "ReplicaSet":
            continue
        owner = meta["ownerReferences"][0]["name"]
        if owner in seen:
            continue
        seen.add(owner)
        head = {
            "namespace": meta["namespace"],
            "uid": ids.uid(),
            "resourceVersion": ids.rv(),
            "creationTimestamp": _TIME,
        }
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": owner, **head},
                "spec": {"selector": {"matchLabels": dict(meta["labels"])}},
            }
        )
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": owner, **head},
                "spec": {"selector": {"app": meta["labels"]["app"]}, "ports": [{"port": 80}]},
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Write a production-sized GPU cluster as a JSON List."
    )
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=0, help="default: five per node")
    parser.add_argument("--pending", type=int, default=1_000)
    parser.add_argument(
        "--never", type=float, default=0.0, help="share of pending pods no node hosts"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    objs = production_cluster(
        args.nodes, args.pods or 5 * args.nodes, args.pending, args.never, args.seed
    )
    with open(args.output, "w") as fh:
        json.dump(
            {
                "apiVersion": "v1",
                "kind": "List",
                "metadata": {"resourceVersion": ""},
                "items": objs,
            },
            fh,
            separators=(",", ":"),
        )


if __name__ == "__main__":
    main()
