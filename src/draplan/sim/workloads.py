"""Workloads: jobs (pods, claim templates, gang objects) with arrival times and run times."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from draplan.api.codec import decode
from draplan.api.meta import KubeStruct
from draplan.sim.calibration import sample_runtime

TOPOLOGY_KEY = "nvidia.com/gpu.clique"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)  # simulated time 0


def timestamp(seconds: float) -> str:
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Job:
    """A unit of work: it starts when all its pods run, and ends `duration` seconds later; or,
    with `deletion` (a replayed trace), its pods are deleted then, started or not."""

    name: str
    kind: str  # workload class, for per-class metrics
    arrival: float
    duration: float
    objects: tuple[KubeStruct, ...]
    pods: tuple[tuple[str, str], ...]
    devices: int
    deletion: float | None = None


@dataclass(frozen=True)
class Mix:
    """The synthetic AI mix: how many jobs, how fast they come, what they ask for."""

    jobs: int = 40
    arrivals_per_hour: float = 30.0
    training: float = 0.25
    finetune: float = 0.35
    inference: float = 0.40
    time_compression: float = 4.0  # run times are divided by this (a demo must be short)
    namespace: str = "ml"
    gpu_class: str = "gpu.nvidia.com"
    gpu_driver: str = "gpu.nvidia.com"
    gpu_model: str = "NVIDIA H100"
    mig_class: str = "mig.nvidia.com"
    mig_profile: str = "1g.10gb"
    nic_class: str = "rdma.dra.net"
    topology_key: str = TOPOLOGY_KEY
    tolerations: tuple[dict[str, Any], ...] = ()  # on every pod, in their JSON form


def _template(
    ns: str,
    name: str,
    requests: list[dict[str, Any]],
    constraints: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": {"devices": devices}},
    }


def _pod(
    mix: Mix,
    name: str,
    template: str,
    cpu: str,
    created: float,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    ns = mix.namespace
    tolerations = {"tolerations": list(mix.tolerations)} if mix.tolerations else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"uid-{name}",
            "creationTimestamp": timestamp(created),
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "resources": {
                        "requests": {"cpu": cpu, "memory": "32Gi"},
                        "claims": [{"name": "dev"}],
                    },
                }
            ],
            "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": template}],
            **tolerations,
            **(extra or {}),
        },
    }


def _training(
    mix: Mix, name: str, t: float, rng: random.Random
) -> tuple[list[dict[str, Any]], int]:
    ns = mix.namespace
    size = rng.choice((2, 2, 3, 4))
    gpus: dict[str, Any] = {"deviceClassName": mix.gpu_class, "count": 8}
    if mix.gpu_model:
        attribute = f"device.attributes[{json.dumps(mix.gpu_driver)}].productName"
        product = f"{attribute}.startsWith({json.dumps(mix.gpu_model)})"
        gpus["selectors"] = [{"cel": {"expression": product}}]
    group: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": size}}}
    if mix.topology_key:
        group["schedulingConstraints"] = {"topology": [{"key": mix.topology_key}]}
    docs: list[dict[str, Any]] = [
        _template(ns, f"{name}-8gpu", [{"name": "gpus", "exactly": gpus}]),
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns},
            "spec": group,
        },
    ]
    docs += [
        _pod(
            mix, f"{name}-{i}", f"{name}-8gpu", "16", t, {"schedulingGroup": {"podGroupName": name}}
        )
        for i in range(size)
    ]
    return docs, 8 * size


def _finetune(mix: Mix, name: str, t: float) -> tuple[list[dict[str, Any]], int]:
    ns = mix.namespace
    requests: list[dict[str, Any]] = [
        {"name": "gpus", "exactly": {"deviceClassName": mix.gpu_class, "count": 4}}
    ]
    if mix.nic_class:
        requests.append({"name": "nic", "exactly": {"deviceClassName": mix.nic_class}})
    tmpl = _template(
        ns, f"{name}-gpus-nic", requests, [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    )
    return [tmpl, _pod(mix, name, f"{name}-gpus-nic", "8", t)], 4


def _inference(mix: Mix, name: str, t: float) -> tuple[list[dict[str, Any]], int]:
    ns = mix.namespace
    request: dict[str, Any] = {"deviceClassName": mix.mig_class or mix.gpu_class}
    if mix.mig_class and mix.mig_profile:
        attribute = f"device.attributes[{json.dumps(mix.gpu_driver)}].profile"
        sel = f"{attribute} == {json.dumps(mix.mig_profile)}"
        request["selectors"] = [{"cel": {"expression": sel}}]
    tmpl = _template(ns, f"{name}-mig", [{"name": "mig", "exactly": request}])
    return [tmpl, _pod(mix, name, f"{name}-mig", "2", t)], 1


def synthetic(mix: Mix, seed: int) -> list[Job]:
    """Training gangs in one NVLink clique, fine-tuning with 4 GPUs and an RDMA NIC on one PCIe
    root, and inference on MIG slices; Poisson arrivals; Philly run times (long for training,
    short for inference)."""
    rng = random.Random(seed)
    jobs = []
    t = 0.0
    kinds = ("training", "finetune", "inference")
    weights = (mix.training, mix.finetune, mix.inference)
    # Each class draws its run time from its own part of the Philly distribution.
    bands = {"training": (0.6, 0.95), "finetune": (0.4, 0.85), "inference": (0.1, 0.7)}
    for i in range(mix.jobs):
        t += rng.expovariate(mix.arrivals_per_hour / 3600.0)
        kind = rng.choices(kinds, weights)[0]
        name = f"{kind[:5]}-{i:04d}"
        if kind == "training":
            docs, devices = _training(mix, name, t, rng)
        elif kind == "finetune":
            docs, devices = _finetune(mix, name, t)
        else:
            docs, devices = _inference(mix, name, t)
        low, high = bands[kind]
        duration = max(60.0, sample_runtime(rng, low, high) / mix.time_compression)
        objects = tuple(decode(d, source="<synthetic>") for d in docs)
        pods = tuple(
            (d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs if d["kind"] == "Pod"
        )
        jobs.append(Job(name, kind, round(t, 3), round(duration, 3), objects, pods, devices))
    return jobs
