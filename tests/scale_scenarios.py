"""Builders for autoscaler scenarios: NodePools with GPU slices, pods with template claims.

Every builder returns plain manifests (dicts), so a scenario can go through the CLI as YAML or
through the public API (`plan_api`) unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from draplan.api.codec import decode
from draplan.api.features import DEFAULT_VERSION, feature_gates
from draplan.autoscaler import Autoscaler
from draplan.cluster.state import ClusterState

DRIVER = "gpu.example.com"


# kube-scheduler keeps a PodGroup in the domain of its topology constraint only with this
# gate (alpha, off in 1.36 and 1.37): the gang scenarios below are about domains.
TOPOLOGY_GATE = "TopologyAwareWorkloadScheduling=true"


def load(objs: list[dict[str, Any]], gates: str = "") -> ClusterState:
    features = feature_gates(DEFAULT_VERSION, gates)
    return ClusterState.from_objects((decode(o) for o in objs), features)


def plan_api(
    objs: list[dict[str, Any]], legacy: bool = False, gates: str = "", **kwargs: Any
) -> tuple[dict[str, Any], ClusterState]:
    """The plan as `draplan scale -o json` prints it (`gates`: its --feature-gates), and the
    planned state."""
    state = load(objs, gates)
    plan = Autoscaler(legacy=legacy, **kwargs).plan(state)
    return plan.to_dict(), state


def write(tmp_path: Path, objs: list[dict[str, Any]], name: str = "in.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objs))
    return str(path)


def cli_json(run_cli: Any, *args: str) -> Any:
    """A command's `-o json` document (the run_cli fixture's), checked to exit 0."""
    out = run_cli(*args, "-o", "json")
    assert out.code == 0, out.err
    return out.json()


def device_class(name: str = DRIVER, expr: str = f"device.driver == '{DRIVER}'") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expr}}]},
    }


def gpus(
    n: int, per_numa: int = 4, taint_per_numa: int = 0, clique: str | None = None
) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        numa, slot = divmod(i, per_numa)
        dev: dict[str, Any] = {
            "name": f"gpu-{i}",
            "attributes": {
                "numa": {"int": numa},
                "resource.kubernetes.io/pcieRoot": {"string": f"pci{i:04x}:00"},
            },
            "capacity": {"memory": {"value": "80Gi"}},
        }
        if slot < taint_per_numa:
            dev["taints"] = [{"key": "reserved", "value": "system", "effect": "NoSchedule"}]
        out.append(dev)
    return out


def node_pool(
    name: str,
    price: str,
    devices: list[dict[str, Any]],
    max_nodes: int = 10,
    topology: list[dict[str, Any]] | None = None,
    cpu: str = "64",
    extra_slices: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minNodes": 0,
        "maxNodes": max_nodes,
        "pricePerHour": price,
        "template": {
            "metadata": {"labels": {"node.kubernetes.io/instance-type": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "512Gi", "pods": "110"}},
        },
        "resourceSlices": [
            {
                "driver": DRIVER,
                "nodeName": "$NODE_NAME",
                "pool": {"name": "$NODE_NAME", "generation": 1},
                "devices": devices,
            },
            *(extra_slices or []),
        ],
    }
    if topology:
        spec["topology"] = topology
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }


def template(
    name: str,
    requests: list[dict[str, Any]],
    constraints: list[dict[str, Any]] | None = None,
    ns: str = "default",
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


def gpu_request(count: int, cls: str = DRIVER, name: str = "gpus") -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "count": count}}


def pod(
    name: str,
    tmpl: str | None,
    cpu: str = "1",
    labels: dict[str, str] | None = None,
    spec_extra: dict[str, Any] | None = None,
    ns: str = "default",
    created: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "resources": {"requests": {"cpu": cpu}}}
    spec: dict[str, Any] = {"containers": [container]}
    if tmpl:
        container["resources"]["claims"] = [{"name": "dev"}]
        spec["resourceClaims"] = [{"name": "dev", "resourceClaimTemplateName": tmpl}]
    spec.update(spec_extra or {})
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    if created:
        meta["creationTimestamp"] = created
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def scenario_numa() -> list[dict[str, Any]]:
    """(a) 4 GPUs on one NUMA node; the cheap pool has 3 of 4 GPUs per socket reserved."""
    return [
        device_class(),
        node_pool("cheap-pcie", "10", gpus(8, taint_per_numa=3)),
        node_pool("right-numa", "30", gpus(8)),
        template("four-on-one-numa", [gpu_request(4)], [{"matchAttribute": f"{DRIVER}/numa"}]),
        pod("finetune", "four-on-one-numa"),
    ]


# --- generic builders ------------------------------------------------------------------------

GPU_CLASS = DRIVER
NIC_DRIVER = "nic.example.com"
MIG_CLASS = "mig-1g.example.com"
CLIQUE = "nvidia.com/gpu.clique"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
T0 = "2025-01-01T00:00:00Z"


def slice_spec(
    devices: list[dict[str, Any]] | None = None,
    driver: str = DRIVER,
    shared_counters: list[dict[str, Any]] | None = None,
    node: str = "$NODE_NAME",
    slice_count: int | None = None,
) -> dict[str, Any]:
    """A ResourceSlice spec; `node` is "$NODE_NAME" in a NodePool, a real name otherwise."""
    spec: dict[str, Any] = {
        "driver": driver,
        "nodeName": node,
        "pool": {"name": node, "generation": 1},
    }
    if slice_count is not None:
        spec["pool"]["resourceSliceCount"] = slice_count
    if devices is not None:
        spec["devices"] = devices
    if shared_counters is not None:
        spec["sharedCounters"] = shared_counters
    return spec


def pool_with_slices(
    name: str,
    price: str,
    slices: list[dict[str, Any]],
    max_nodes: int = 10,
    min_nodes: int = 0,
    topology: list[dict[str, Any]] | None = None,
    cpu: str = "64",
    priority: int | None = None,
) -> dict[str, Any]:
    doc = node_pool(name, price, [], max_nodes=max_nodes, topology=topology, cpu=cpu)
    doc["spec"]["resourceSlices"] = slices
    doc["spec"]["minNodes"] = min_nodes
    if priority is not None:
        doc["spec"]["priority"] = priority
    return doc


def from_node_pool(name: str, price: str, source: str, max_nodes: int = 10) -> dict[str, Any]:
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"maxNodes": max_nodes, "pricePerHour": price, "fromNode": source},
    }


def node(
    name: str, cpu: str = "64", labels: dict[str, str] | None = None, memory: str = "512Gi"
) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"capacity": dict(alloc), "allocatable": dict(alloc)},
    }


def resource_slice(
    node_name: str, devices: list[dict[str, Any]], driver: str = DRIVER
) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{driver}"},
        "spec": slice_spec(devices, driver, node=node_name, slice_count=1),
    }


def gpu_node(
    name: str, n: int = 8, labels: dict[str, str] | None = None, model: str | None = None
) -> list[dict[str, Any]]:
    """A real node with n GPUs (optionally with a `model` attribute) and its slice."""
    devs = gpus(n)
    if model is not None:
        for d in devs:
            d["attributes"]["model"] = {"string": model}
    return [node(name, labels=labels), resource_slice(name, devs)]


def pdb(name: str, ns: str, app: str, allowed: int) -> dict[str, Any]:
    """A PodDisruptionBudget over pods labelled app=`app`, allowing `allowed` disruptions."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
        "status": {
            "disruptionsAllowed": allowed,
            "currentHealthy": 1,
            "desiredHealthy": 1,
            "expectedPods": 1,
        },
    }


def allocated_claim(
    name: str,
    node_name: str,
    devices: list[str],
    users: list[str],
    cls: str = GPU_CLASS,
    selectors: list[str] | None = None,
    driver: str = DRIVER,
    ns: str = "default",
) -> dict[str, Any]:
    """A ResourceClaim already allocated on `node_name`'s devices and reserved for `users`."""
    exactly: dict[str, Any] = {"deviceClassName": cls, "count": len(devices)}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-claim-{name}"},
        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpus", "driver": driver, "pool": node_name, "device": d}
                        for d in devices
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node_name]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": u, "uid": f"uid-{u}"} for u in users],
        },
    }


def running_pod(
    name: str,
    node_name: str,
    claim: str | None,
    cpu: str = "1",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    spec_extra: dict[str, Any] | None = None,
    controller: str | None = "ReplicaSet",
) -> dict[str, Any]:
    """A pod bound to `node_name`, using the (already allocated) claim `claim`, made by a
    `controller` of that kind (Cluster Autoscaler drains only replicated pods)."""
    doc = pod(name, None, cpu=cpu, labels=labels, spec_extra=spec_extra)
    if controller:
        doc["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": controller,
                "name": f"{name}-{controller.lower()}",
                "uid": f"uid-{name}-owner",
                "controller": True,
            }
        ]
    doc["spec"]["nodeName"] = node_name
    if claim:
        doc["spec"]["containers"][0]["resources"]["claims"] = [{"name": "dev"}]
        doc["spec"]["resourceClaims"] = [{"name": "dev", "resourceClaimName": claim}]
    if annotations:
        doc["metadata"]["annotations"] = annotations
    doc["status"] = {"phase": "Running"}
    return doc


# --- (b) a gang of 4 × 8 GPUs in one NVLink domain; the pool allows 3 nodes per domain ----


def gang_workload(name: str, min_count: int, topology_key: str) -> list[dict[str, Any]]:
    """A v1alpha2 Workload with one gang template and its PodGroup `name`."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "Workload",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "podGroupTemplates": [
                    {
                        "name": "worker",
                        "schedulingPolicy": {"gang": {"minCount": min_count}},
                        "schedulingConstraints": {"topology": [{"key": topology_key}]},
                    }
                ]
            },
        },
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "podGroupTemplateRef": {
                    "workload": {"workloadName": name, "podGroupTemplateName": "worker"}
                },
                "schedulingPolicy": {"gang": {"minCount": min_count}},
            },
        },
    ]


def nvl_pool(
    name: str = "nvl72", per_domain: int = 3, max_nodes: int = 12, price: str = "98.32"
) -> dict[str, Any]:
    return node_pool(
        name,
        price,
        gpus(8),
        max_nodes=max_nodes,
        topology=[{"key": CLIQUE, "nodesPerDomain": per_domain}],
        cpu="192",
    )


def scenario_gang(
    per_domain: int = 3, max_nodes: int = 12, members: int = 4, api: str = "workload"
) -> list[dict[str, Any]]:
    """(b) `members` pods × 8 GPUs, all in one NVLink clique (Workload v1alpha2 + PodGroup, or
    Kueue's pod-group label with the required-topology annotation)."""
    objs: list[dict[str, Any]] = [
        device_class(),
        nvl_pool(per_domain=per_domain, max_nodes=max_nodes),
        template("eight-gpus", [gpu_request(8)]),
    ]
    if api == "workload":
        objs.extend(gang_workload("train", members, CLIQUE))
    for i in range(members):
        if api == "workload":
            objs.append(
                pod(
                    f"train-{i}",
                    "eight-gpus",
                    spec_extra={"schedulingGroup": {"podGroupName": "train"}},
                )
            )
        else:
            doc = pod(f"train-{i}", "eight-gpus", labels={"kueue.x-k8s.io/pod-group-name": "train"})
            doc["metadata"]["annotations"] = {
                "kueue.x-k8s.io/pod-group-total-count": str(members),
                "kueue.x-k8s.io/podset-required-topology": CLIQUE,
            }
            objs.append(doc)
    return objs


# --- (c) seven 1g MIG slices on one partitionable GPU -----------------------------------------


def mig_slices(gpu_count: int = 1, partitions: int = 7) -> list[dict[str, Any]]:
    """Dynamic-MIG style slices: a counter slice (memory-slice-N counters per GPU), and a device
    slice with `partitions` 1g devices plus the full GPU consuming every counter."""
    counter_sets = []
    devices = []
    for g in range(gpu_count):
        cs = f"gpu-{g}-counter-set"
        counters = {f"memory-slice-{i}": {"value": "1"} for i in range(partitions)}
        counter_sets.append({"name": cs, "counters": counters})
        devices.append(
            {
                "name": f"gpu-{g}",
                "attributes": {"type": {"string": "gpu"}},
                "consumesCounters": [{"counterSet": cs, "counters": dict(counters)}],
            }
        )
        for i in range(partitions):
            devices.append(
                {
                    "name": f"gpu-{g}-mig-1g-{i}",
                    "attributes": {"type": {"string": "mig"}, "profile": {"string": "1g"}},
                    "consumesCounters": [
                        {"counterSet": cs, "counters": {f"memory-slice-{i}": {"value": "1"}}}
                    ],
                }
            )
    return [slice_spec(shared_counters=counter_sets), slice_spec(devices)]


def mig_class() -> dict[str, Any]:
    return device_class(
        MIG_CLASS,
        f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'mig' && "
        f"device.attributes['{DRIVER}'].profile == '1g'",
    )


def scenario_mig(pods: int = 7) -> list[dict[str, Any]]:
    """(c) `pods` pods each asking one 1g MIG device; one A100-like GPU has seven."""
    objs: list[dict[str, Any]] = [
        mig_class(),
        pool_with_slices("a100-mig", "4", mig_slices(), max_nodes=10),
        template("one-mig", [gpu_request(1, cls=MIG_CLASS, name="mig")]),
    ]
    objs.extend(pod(f"infer-{i}", "one-mig") for i in range(pods))
    return objs


# --- (d) GPU + RDMA NIC on one PCIe root --------------------------------------------------------


def nics(n: int, root_offset: int) -> list[dict[str, Any]]:
    return [
        {
            "name": f"nic-{i}",
            "attributes": {
                "type": {"string": "rdma"},
                PCIE_ROOT: {"string": f"pci{i + root_offset:04x}:00"},
            },
        }
        for i in range(n)
    ]


def scenario_pcie() -> list[dict[str, Any]]:
    """(d) A claim for one GPU and one RDMA NIC on the same PCIe root (two drivers). The cheap
    pool's NICs sit on other roots than its GPUs; the dearer pool pairs them."""
    return [
        device_class(),
        device_class(NIC_DRIVER, f"device.driver == '{NIC_DRIVER}'"),
        pool_with_slices(
            "split-roots",
            "12",
            [slice_spec(gpus(4)), slice_spec(nics(4, root_offset=0x10), driver=NIC_DRIVER)],
        ),
        pool_with_slices(
            "paired-roots",
            "15",
            [slice_spec(gpus(4)), slice_spec(nics(4, root_offset=0), driver=NIC_DRIVER)],
        ),
        template(
            "gpu-and-nic",
            [gpu_request(1, name="gpu"), gpu_request(1, cls=NIC_DRIVER, name="nic")],
            [{"requests": ["gpu", "nic"], "matchAttribute": PCIE_ROOT}],
        ),
        pod("rdma-worker", "gpu-and-nic"),
    ]


# --- (e) ProvisioningRequests -----------------------------------------------------------------


def pod_template(name: str, tmpl: str | None, cpu: str = "1") -> dict[str, Any]:
    body = pod(name, tmpl, cpu=cpu)
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "template": {"metadata": {"labels": {"app": name}}, "spec": body["spec"]},
    }


def provisioning_request(
    name: str,
    cls: str,
    pod_template_name: str,
    count: int,
    created: str = T0,
    parameters: dict[str, str] | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
        "spec": {
            "provisioningClassName": cls,
            "podSets": [{"podTemplateRef": {"name": pod_template_name}, "count": count}],
        },
    }
    if parameters:
        doc["spec"]["parameters"] = parameters
    if conditions:
        doc["status"] = {"conditions": conditions}
    return doc


def provisioned_condition(at: str) -> dict[str, Any]:
    return {
        "type": "Provisioned",
        "status": "True",
        "reason": "CapacityIsFound",
        "message": "capacity is found in the cluster",
        "lastTransitionTime": at,
    }


# --- (f) scale-down ------------------------------------------------------------------------------


def in_node_group(objs: list[dict[str, Any]], pool: str = "gpus") -> list[dict[str, Any]]:
    """`objs` with every Node in one node group Cluster Autoscaler manages: a NodePool
    copying the first node, each node labelled with it."""
    nodes = [o for o in objs if o["kind"] == "Node"]
    for doc in nodes:
        doc["metadata"]["labels"]["draplan.io/node-pool"] = pool
    group = from_node_pool(pool, "10", nodes[0]["metadata"]["name"], max_nodes=len(nodes) + 8)
    return [*objs, group]


def scenario_scale_down(
    safe_to_evict: bool = False, gang: bool = True, special: bool = True
) -> list[dict[str, Any]]:
    """Nodes (name order is the order scale-down considers them):
    - a-idle: 8 GPUs, no pods: removable;
    - b-special: one pod whose claim asks for the `special` model only this node has (1/8
      used); it cannot move, so the node stays;
    - c-annotated: one pod with one GPU (1/8 used), `safe-to-evict: "false"` unless
      `safe_to_evict`;
    - d-gang: two running pods of a gang (coscheduling PodGroup minMember 2), one GPU each;
    - z-busy: 16 GPUs, 10 used (above the threshold): room for the pods that can move."""
    objs: list[dict[str, Any]] = [device_class()]
    objs += gpu_node("a-idle")
    objs += gpu_node("b-special", model="special" if special else "common")
    objs += gpu_node("c-annotated", model="common")
    objs += gpu_node("d-gang", model="common")
    objs += gpu_node("z-busy", n=16, model="common")
    sel = [f"device.attributes['{DRIVER}'].model == 'special'"] if special else None
    objs.append(
        allocated_claim("special-claim", "b-special", ["gpu-0"], ["special"], selectors=sel)
    )
    objs.append(running_pod("special", "b-special", "special-claim"))
    objs.append(allocated_claim("annotated-claim", "c-annotated", ["gpu-0"], ["annotated"]))
    ann = None if safe_to_evict else {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
    objs.append(running_pod("annotated", "c-annotated", "annotated-claim", annotations=ann))
    for i in range(2):
        objs.append(allocated_claim(f"gang-claim-{i}", "d-gang", [f"gpu-{i}"], [f"gang-{i}"]))
        labels = {"scheduling.x-k8s.io/pod-group": "pair"} if gang else None
        objs.append(running_pod(f"gang-{i}", "d-gang", f"gang-claim-{i}", labels=labels))
    if gang:
        objs.append(
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": "pair", "namespace": "default"},
                "spec": {"minMember": 2},
            }
        )
    for i in range(10):
        objs.append(allocated_claim(f"busy-claim-{i}", "z-busy", [f"gpu-{i}"], [f"busy-{i}"]))
        objs.append(running_pod(f"busy-{i}", "z-busy", f"busy-claim-{i}"))
    return in_node_group(objs)


def scenario_provreq(
    cls: str,
    count: int,
    gpus_per_pod: int = 1,
    parameters: dict[str, str] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    pool_max: int = 4,
    existing_gpus: int = 8,
    with_pool: bool = True,
    created: str = T0,
) -> list[dict[str, Any]]:
    """One ProvisioningRequest `req` of class `cls` for `count` pods of `gpus_per_pod` GPUs,
    an existing node `n1` with `existing_gpus` GPUs, and (optionally) pool `gpu8` (8 GPUs)."""
    objs: list[dict[str, Any]] = [device_class()]
    if existing_gpus:
        objs += gpu_node("n1", n=existing_gpus)
    if with_pool:
        objs.append(node_pool("gpu8", "20", gpus(8), max_nodes=pool_max))
    objs.append(template("req-gpus", [gpu_request(gpus_per_pod)]))
    objs.append(pod_template("req-pod", "req-gpus"))
    objs.append(provisioning_request("req", cls, "req-pod", count, created, parameters, conditions))
    return objs


def scenario_shared_claim() -> list[dict[str, Any]]:
    """Two pods on two nodes (one pod slot each) share one claim on a network-attached device
    visible to `fabric=a` nodes only; `z-spare` (no fabric) is idle. Neither sharer can move."""
    fabric = {"fabric": "a"}
    objs: list[dict[str, Any]] = [device_class()]
    for name in ("m-shared-1", "m-shared-2"):
        doc = node(name, labels=fabric)
        for key in ("capacity", "allocatable"):
            doc["status"][key]["pods"] = "1"
        objs.append(doc)
    objs.append(node("z-spare"))
    objs.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "fabric-a"},
            "spec": {
                "driver": DRIVER,
                "pool": {"name": "fabric-a", "generation": 1, "resourceSliceCount": 1},
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "fabric", "operator": "In", "values": ["a"]}]}
                    ]
                },
                "devices": [{"name": "shared-mem-0"}],
            },
        }
    )
    claim = allocated_claim("shared", "fabric-a", ["shared-mem-0"], ["user-1", "user-2"])
    claim["status"]["allocation"]["nodeSelector"] = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "fabric", "operator": "In", "values": ["a"]}]}
        ]
    }
    objs.append(claim)
    objs.append(running_pod("user-1", "m-shared-1", "shared"))
    objs.append(running_pod("user-2", "m-shared-2", "shared"))
    return in_node_group(objs, "fabric")
