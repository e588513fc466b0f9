"""Cluster states for the auditor: the same pending 8-GPU pod in different situations."""

from __future__ import annotations

from typing import Any

from scale_scenarios import (
    CLIQUE,
    DRIVER,
    MIG_CLASS,
    NIC_DRIVER,
    PCIE_ROOT,
    device_class,
    gpu_request,
    gpus,
    mig_class,
    mig_slices,
    node_pool,
    pod,
    pool_with_slices,
    slice_spec,
    template,
)

HOSTNAME = "kubernetes.io/hostname"


def node(name: str, cpu: str = "64", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": {"cpu": cpu, "memory": "512Gi", "pods": "110"}},
    }


def gpu_slice(node_name: str, numa_of: list[int]) -> dict[str, Any]:
    devices = [
        {"name": f"gpu-{i}", "attributes": {"numa": {"int": numa}}}
        for i, numa in enumerate(numa_of)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def held(node_name: str, devices: list[int], name: str) -> list[dict[str, Any]]:
    """A running pod of a StatefulSet (Cluster Autoscaler would move it) holding `devices` of
    a node through an allocated claim."""
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"{name}-claim", "namespace": "default"},
        "spec": {"devices": {"requests": [gpu_request(len(devices))]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpus",
                            "driver": DRIVER,
                            "pool": node_name,
                            "device": f"gpu-{d}",
                        }
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
            "reservedFor": [{"resource": "pods", "name": name, "uid": f"uid-{name}"}],
        },
    }
    p = pod(name, None)
    p["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name, "uid": f"uid-sts-{name}"}
        | {"controller": True}
    ]
    p["spec"]["nodeName"] = node_name
    p["spec"]["resourceClaims"] = [{"name": "dev", "resourceClaimName": f"{name}-claim"}]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "dev"}]
    return [claim, p]


def eight_gpu_pod(numa: bool = False) -> list[dict[str, Any]]:
    cons = [{"matchAttribute": f"{DRIVER}/numa"}] if numa else None
    return [template("eight", [gpu_request(8)], cons), pod("trainer", "eight")]


def fragmented() -> list[dict[str, Any]]:
    """8 nodes × 8 GPUs, 7 held on each: 8 free GPUs in total, one per node."""
    objs: list[dict[str, Any]] = [device_class(), *eight_gpu_pod()]
    for n in range(8):
        name = f"node-{n}"
        objs += [node(name), gpu_slice(name, [0] * 8), *held(name, list(range(7)), f"w{n}")]
    return objs


def topology_mismatch() -> list[dict[str, Any]]:
    """One node with 8 free GPUs in two NUMA groups of 4; the pod wants 8 on one NUMA node."""
    objs: list[dict[str, Any]] = [device_class(), *eight_gpu_pod(numa=True)]
    objs += [node("node-0"), gpu_slice("node-0", [0, 0, 0, 0, 1, 1, 1, 1])]
    return objs


def exhausted() -> list[dict[str, Any]]:
    """Two nodes with 2 free GPUs each: 4 free in total, the pod needs 8."""
    objs: list[dict[str, Any]] = [device_class(), *eight_gpu_pod()]
    for n in range(2):
        name = f"node-{n}"
        objs += [node(name), gpu_slice(name, [0] * 8), *held(name, list(range(6)), f"w{n}")]
    return objs


def device_tainted() -> list[dict[str, Any]]:
    """One node with 8 free GPUs, gpu-3 under a NoExecute DeviceTaintRule; a CPU-only node."""
    rule = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "gpu-3-xid-errors"},
        "spec": {
            "deviceSelector": {"driver": DRIVER, "pool": "node-0", "device": "gpu-3"},
            "taint": {"key": "gpu.example.com/xid", "value": "79", "effect": "NoExecute"},
        },
    }
    objs: list[dict[str, Any]] = [device_class(), *eight_gpu_pod(), rule, node("cpu-0")]
    objs += [node("node-0"), gpu_slice("node-0", [0] * 8)]
    return objs


# --- builders for the other categories ---------------------------------------------------------


def gpu_node(
    name: str,
    numa_of: list[int] | None = None,
    held_by: dict[str, list[int]] | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    cpu: str = "64",
    used_cpu: str | None = None,
) -> list[dict[str, Any]]:
    """A node with GPUs (their NUMA node each; 8 on NUMA 0 by default) and running pods holding
    some of them: `held_by` maps a pod name to the GPU indexes it holds. `used_cpu`: the cpu
    the (first) running pod requests."""
    doc = node(name, cpu, labels)
    if taints:
        doc["spec"] = {"taints": taints}
    objs: list[dict[str, Any]] = [doc, gpu_slice(name, numa_of if numa_of is not None else [0] * 8)]
    for i, (pod_name, devices) in enumerate(sorted((held_by or {}).items())):
        claim, running = held(name, devices, pod_name)
        if used_cpu is not None and i == 0:
            running["spec"]["containers"][0]["resources"]["requests"]["cpu"] = used_cpu
        objs += [claim, running]
    return objs


def gpu_template(
    name: str, count: int, numa: bool = False, selector: str | None = None, cls: str = DRIVER
) -> dict[str, Any]:
    req = gpu_request(count, cls=cls)
    if selector:
        req["exactly"]["selectors"] = [{"cel": {"expression": selector}}]
    cons = [{"matchAttribute": f"{DRIVER}/numa"}] if numa else None
    return template(name, [req], cons)


def pending(
    name: str,
    tmpl: str | None,
    cpu: str = "1",
    spec_extra: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    created: str | None = None,
) -> dict[str, Any]:
    return pod(name, tmpl, cpu=cpu, spec_extra=spec_extra, labels=labels, created=created)


def holding(node_name: str, free: int) -> dict[str, list[int]]:
    """`held_by` for an 8-GPU node `node_name` with `free` GPUs free (the last ones)."""
    return {} if free >= 8 else {f"{node_name}-busy": list(range(8 - free))}


def pod_group(name: str, min_count: int, topology: str = "", ns: str = "default") -> dict[str, Any]:
    """A Workload API PodGroup (1.37, v1beta1) with a gang policy: a gang kube-scheduler
    itself places all or nothing (a coscheduling or Kueue group it takes pod by pod)."""
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def gang_member(name: str, group: str, tmpl: str, cpu: str = "1") -> dict[str, Any]:
    return pod(name, tmpl, cpu=cpu, spec_extra={"schedulingGroup": {"podGroupName": group}})


# --- NoMatchingDevice ----------------------------------------------------------------------------


def no_such_model() -> list[dict[str, Any]]:
    """The claim selects model b200; the cluster's GPUs have no such model."""
    return [
        device_class(),
        *gpu_node("node-0"),
        gpu_template("b200", 1, selector=f"device.attributes['{DRIVER}'].model == 'b200'"),
        pending("wants-b200", "b200"),
    ]


def missing_template() -> list[dict[str, Any]]:
    """The pod names a ResourceClaimTemplate that does not exist."""
    return [device_class(), *gpu_node("node-0"), pending("orphan", "no-such-template")]


def missing_class() -> list[dict[str, Any]]:
    """The template asks for a DeviceClass that does not exist."""
    return [
        device_class(),
        *gpu_node("node-0"),
        gpu_template("tpu", 1, cls="tpu.example.com"),
        pending("wants-tpu", "tpu"),
    ]


# --- GangIncomplete ------------------------------------------------------------------------------


def gang_short_of_members() -> list[dict[str, Any]]:
    """A PodGroup of minMember 4 with 2 pods created; the cluster has room for all."""
    return [
        device_class(),
        *gpu_node("node-0"),
        gpu_template("one", 1),
        pod_group("quad", 4),
        gang_member("quad-0", "quad", "one"),
        gang_member("quad-1", "quad", "one"),
    ]


def gang_without_group() -> list[dict[str, Any]]:
    """Pods labelled for a PodGroup that does not exist."""
    return [
        device_class(),
        *gpu_node("node-0"),
        gpu_template("one", 1),
        gang_member("lost-0", "ghost", "one"),
        gang_member("lost-1", "ghost", "one"),
    ]


# --- Schedulable ---------------------------------------------------------------------------------


def fits_now() -> list[dict[str, Any]]:
    """One node with 8 free GPUs and a pod asking 4 on one NUMA node."""
    return [
        device_class(),
        *gpu_node("node-0"),
        gpu_template("four", 4, numa=True),
        pending("p", "four"),
    ]


def gang_fits_now() -> list[dict[str, Any]]:
    """A gang of two 4-GPU pods and one empty 8-GPU node."""
    return [
        device_class(),
        *gpu_node("node-0"),
        gpu_template("four", 4),
        pod_group("pair", 2),
        gang_member("pair-0", "pair", "four"),
        gang_member("pair-1", "pair", "four"),
    ]


def queue_contention() -> list[dict[str, Any]]:
    """Two 8-GPU pods and one empty 8-GPU node: the older pod takes it; the other is judged
    on what is left (nothing), so it is CapacityExhausted, not Schedulable."""
    return [
        device_class(),
        *gpu_node("node-0"),
        gpu_template("eight", 8),
        pending("first", "eight", created="2025-01-01T00:00:00Z"),
        pending("second", "eight", created="2025-01-01T00:01:00Z"),
    ]


# --- NodeConstraints -----------------------------------------------------------------------------


def selector_excludes() -> list[dict[str, Any]]:
    """The pod selects zone b, whose node is full; zone a has 8 free GPUs."""
    return [
        device_class(),
        *gpu_node("node-a", labels={"zone": "a"}),
        *gpu_node("node-b", labels={"zone": "b"}, held_by=holding("node-b", 0)),
        gpu_template("eight", 8),
        pending("zoned", "eight", spec_extra={"nodeSelector": {"zone": "b"}}),
    ]


def taint_excludes() -> list[dict[str, Any]]:
    """The only node with room is tainted; the pod has no toleration."""
    taint = [{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]
    return [
        device_class(),
        *gpu_node("node-free", taints=taint),
        *gpu_node("node-full", held_by=holding("node-full", 0)),
        gpu_template("four", 4),
        pending("untolerated", "four"),
    ]


# --- rules about other pods: PodAffinity / TopologySpread / HostPortConflict --------------------


def running(name: str, node_name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    """A running pod without devices on `node_name`."""
    doc = pod(name, None, labels=labels, spec_extra={"nodeName": node_name, **spec})
    doc["status"] = {"phase": "Running"}
    return doc


def anti_affinity_held() -> list[dict[str, Any]]:
    """The only node with free GPUs runs a replica the pod keeps away from by hostname."""
    apart = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "serve"}}, "topologyKey": HOSTNAME}
            ]
        }
    }
    return [
        device_class(),
        *gpu_node("node-free"),
        *gpu_node("node-full", held_by=holding("node-full", 0)),
        running("serve-0", "node-free", {"app": "serve"}),
        gpu_template("four", 4),
        pending("serve-1", "four", labels={"app": "serve"}, spec_extra={"affinity": apart}),
    ]


def spread_skewed() -> list[dict[str, Any]]:
    """Zone a holds two replicas and has room; zone b's node is full: one more in zone a
    would skew the spread past 1."""
    zone = "topology.kubernetes.io/zone"
    spread = {
        "maxSkew": 1,
        "topologyKey": zone,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "serve"}},
    }
    return [
        device_class(),
        *gpu_node("node-a", labels={zone: "a"}),
        *gpu_node("node-b", labels={zone: "b"}, held_by=holding("node-b", 0)),
        running("serve-0", "node-a", {"app": "serve"}),
        running("serve-1", "node-a", {"app": "serve"}),
        gpu_template("four", 4),
        pending(
            "serve-2",
            "four",
            labels={"app": "serve"},
            spec_extra={"topologySpreadConstraints": [spread]},
        ),
    ]


def host_port_held() -> list[dict[str, Any]]:
    """The only node with free GPUs runs an exporter on the host port the pod wants."""
    ports = [{"containerPort": 9400, "hostPort": 9400}]
    exporter = running("dcgm-exporter", "node-free", {"app": "dcgm"})
    exporter["spec"]["containers"][0]["ports"] = ports
    want = pending("metrics-gpu", "four")
    want["spec"]["containers"][0]["ports"] = ports
    return [
        device_class(),
        *gpu_node("node-free"),
        *gpu_node("node-full", held_by=holding("node-full", 0)),
        exporter,
        gpu_template("four", 4),
        want,
    ]


# --- NodePools: WaitingForScaleUp / PoolLimitReached / NoPoolCanFit ------------------------------


def pool_max_reached() -> list[dict[str, Any]]:
    """Two 8-GPU pods, a pool of 8-GPU nodes allowing one node: one waits for it, the other
    is stopped by maxNodes."""
    return [
        device_class(),
        node_pool("gpu8", "20", gpus(8), max_nodes=1),
        gpu_template("eight", 8),
        pending("first", "eight", created="2025-01-01T00:00:00Z"),
        pending("second", "eight", created="2025-01-01T00:01:00Z"),
    ]


def pool_wrong_numa() -> list[dict[str, Any]]:
    """Only the pool whose sockets have 3 of 4 GPUs reserved: 4 on one NUMA never fit."""
    return [
        device_class(),
        node_pool("cheap-pcie", "10", gpus(8, taint_per_numa=3)),
        template("four-on-one-numa", [gpu_request(4)], [{"matchAttribute": f"{DRIVER}/numa"}]),
        pod("finetune", "four-on-one-numa"),
    ]


def pool_split_roots() -> list[dict[str, Any]]:
    """Only the pool whose NICs sit on other PCIe roots than its GPUs."""
    return [
        device_class(),
        device_class(NIC_DRIVER, f"device.driver == '{NIC_DRIVER}'"),
        pool_with_slices(
            "split-roots",
            "12",
            [slice_spec(gpus(4)), slice_spec(nics(4, 0x10), driver=NIC_DRIVER)],
        ),
        gpu_and_nic_template(),
        pod("rdma-worker", "gpu-and-nic"),
    ]


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


def gpu_and_nic_template() -> dict[str, Any]:
    return template(
        "gpu-and-nic",
        [gpu_request(1, name="gpu"), gpu_request(1, cls=NIC_DRIVER, name="nic")],
        [{"requests": ["gpu", "nic"], "matchAttribute": PCIE_ROOT}],
    )


# --- CapacityExhausted ---------------------------------------------------------------------------


def gang_exhausted() -> list[dict[str, Any]]:
    """A gang of two 8-GPU pods: one node is empty, the other full. Each member fits alone but
    the gang's 16 GPUs exceed the 8 free."""
    return [
        device_class(),
        *gpu_node("node-0"),
        *gpu_node("node-1", held_by=holding("node-1", 0)),
        gpu_template("eight", 8),
        pod_group("big", 2),
        gang_member("big-0", "big", "eight"),
        gang_member("big-1", "big", "eight"),
    ]


def too_big() -> list[dict[str, Any]]:
    """A pod asking 128 cpu on 64-cpu nodes: no node could ever hold it."""
    return [
        device_class(),
        *gpu_node("node-0"),
        *gpu_node("node-1"),
        gpu_template("one", 1),
        pending("huge", "one", cpu="128"),
    ]


# --- TopologyMismatch ----------------------------------------------------------------------------


def pcie_mismatch() -> list[dict[str, Any]]:
    """A node whose free GPUs and NICs sit on different PCIe roots; the claim pairs them."""
    name = "node-0"
    gpu_devices = gpus(4)
    nic_slice = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-nics"},
        "spec": slice_spec(nics(4, 0x10), NIC_DRIVER, node=name, slice_count=1),
    }
    gpu_slice_doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-gpus"},
        "spec": slice_spec(gpu_devices, DRIVER, node=name, slice_count=1),
    }
    return [
        device_class(),
        device_class(NIC_DRIVER, f"device.driver == '{NIC_DRIVER}'"),
        node(name),
        gpu_slice_doc,
        nic_slice,
        gpu_and_nic_template(),
        pod("rdma-worker", "gpu-and-nic"),
    ]


def gang_domain_mismatch() -> list[dict[str, Any]]:
    """A gang of two 8-GPU pods required in one NVLink clique; each clique has one free node."""
    objs: list[dict[str, Any]] = [device_class(), gpu_template("eight", 8)]
    for clique in ("a", "b"):
        objs += gpu_node(f"{clique}-free", labels={CLIQUE: clique})
        objs += gpu_node(
            f"{clique}-full", labels={CLIQUE: clique}, held_by=holding(f"{clique}-full", 0)
        )
    objs += [pod_group("ring", 2, CLIQUE)]
    objs += [gang_member(f"ring-{i}", "ring", "eight") for i in range(2)]
    return objs


# --- Fragmentation -------------------------------------------------------------------------------


def defragmentable() -> list[dict[str, Any]]:
    """node-0 has 6 free GPUs (two 1-GPU pods), node-1 has 4 free (one 4-GPU pod): moving the
    two small pods to node-1 frees node-0 for the 8-GPU pod."""
    return [
        device_class(),
        *gpu_node("node-0", held_by={"small-a": [0], "small-b": [1]}),
        *gpu_node("node-1", held_by={"medium": [0, 1, 2, 3]}),
        *eight_gpu_pod(),
    ]


# --- GangUnplaceable -----------------------------------------------------------------------------


def gang_split_leftovers() -> list[dict[str, Any]]:
    """A gang of three 2-GPU pods; two nodes with 3 free GPUs each: 6 free for 6 needed, each
    member fits alone, but only two fit together (one per node)."""
    return [
        device_class(),
        *gpu_node("node-0", held_by=holding("node-0", 3)),
        *gpu_node("node-1", held_by=holding("node-1", 3)),
        gpu_template("two", 2),
        pod_group("trio", 3),
        *[gang_member(f"trio-{i}", "trio", "two") for i in range(3)],
    ]


def gang_cpu_split() -> list[dict[str, Any]]:
    """A gang of two pods, each 40 cpu and 1 GPU; node-0 has 50 cpu free, node-1 34: 84 free
    for 80 needed, each fits on node-0 alone, but not both."""
    return [
        device_class(),
        *gpu_node("node-0", held_by={"cpu-a": [0]}, used_cpu="14"),
        *gpu_node("node-1", held_by={"cpu-b": [0]}, used_cpu="30"),
        gpu_template("one", 1),
        pod_group("duo", 2),
        *[gang_member(f"duo-{i}", "duo", "one", cpu="40") for i in range(2)],
    ]


# --- Timeout -------------------------------------------------------------------------------------


def hard_slice(node_name: str) -> dict[str, Any]:
    """GPUs with attributes a and b such that no 6 have distinct a and distinct b (the three
    a-values 0-2 share two b-values), which the search only learns by trying: ~1,700 steps."""
    devices = []
    for a in range(6):
        bs = (0, 1) if a < 3 else (2, 3, 4, 5)
        devices += [
            {"name": f"gpu-{a}-{b}", "attributes": {"a": {"int": a}, "b": {"int": b}}} for b in bs
        ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": slice_spec(devices, DRIVER, node=node_name, slice_count=1),
    }


def search_budget(nodes: int = 1) -> list[dict[str, Any]]:
    """With filterTimeoutSeconds 0 the search stops after 512 steps on every node."""
    objs: list[dict[str, Any]] = [device_class()]
    for n in range(nodes):
        objs += [node(f"node-{n}"), hard_slice(f"node-{n}")]
    objs.append(
        template(
            "distinct-six",
            [gpu_request(6)],
            [{"distinctAttribute": f"{DRIVER}/a"}, {"distinctAttribute": f"{DRIVER}/b"}],
        )
    )
    objs.append(pod("searcher", "distinct-six"))
    return objs


def zero_timeout_profile() -> dict[str, Any]:
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": "impatient"},
        "spec": {"filterTimeoutSeconds": 0},
    }


# --- metrics -------------------------------------------------------------------------------------


def priced_fragmented() -> list[dict[str, Any]]:
    """Two nodes of NodePool gpu8 ($20/h), 7 of 8 GPUs held on each, and a pending 8-GPU pod:
    2 GPUs free, both stranded; each node strands 1/8 of its GPUs, $2.50/h."""
    objs: list[dict[str, Any]] = [
        device_class(),
        node_pool("gpu8", "20", gpus(8)),
        *eight_gpu_pod(),
    ]
    for n in range(2):
        name = f"gpu8-{n}"
        objs += gpu_node(
            name, labels={"draplan.io/node-pool": "gpu8"}, held_by={f"w{n}": list(range(7))}
        )
    return objs


def shared_gpus() -> list[dict[str, Any]]:
    """Two shareable 80Gi GPUs; a running pod holds 30Gi of gpu-0; a pending pod asks 60Gi.
    Free: 50Gi + 80Gi. Shapes: 30Gi (running) and 60Gi (pending), half each: the 60Gi shape
    cannot use gpu-0's 50Gi, so 25Gi is stranded."""
    name = "node-0"
    policy = {"default": "10Gi", "validRange": {"min": "10Gi", "max": "80Gi", "step": "10Gi"}}
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {"numa": {"int": 0}},
            "capacity": {"memory": {"value": "80Gi", "requestPolicy": policy}},
            "allowMultipleAllocations": True,
        }
        for i in range(2)
    ]
    rs = gpu_slice(name, [0, 0])
    rs["spec"]["devices"] = devices

    def shared_request(amount: str) -> dict[str, Any]:
        req = gpu_request(1)
        req["exactly"]["capacity"] = {"requests": {"memory": amount}}
        return req

    claim, running = held(name, [0], "sharer")
    claim["spec"]["devices"]["requests"] = [shared_request("30Gi")]
    result = claim["status"]["allocation"]["devices"]["results"][0]
    result["shareID"] = "5f1c1a52-3f8b-4f7e-9a43-6c1e2d3b4a5f"
    result["consumedCapacity"] = {"memory": "30Gi"}
    return [
        device_class(),
        node(name),
        rs,
        claim,
        running,
        template("sixty", [shared_request("60Gi")]),
        pod("big-share", "sixty"),
    ]


def mig_node(taken: int = 2) -> list[dict[str, Any]]:
    """A real node with one partitionable GPU (7 memory-slice counters, 7 1g partitions and the
    full GPU), `taken` partitions allocated to a running pod."""
    name = "mig-0"
    counters, devices = mig_slices()
    objs: list[dict[str, Any]] = [device_class(), mig_class(), node(name)]
    for i, spec in enumerate((counters, devices)):
        spec = {**spec, "nodeName": name, "pool": {"name": name, "generation": 1}}
        spec["pool"]["resourceSliceCount"] = 2
        objs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-{i}"},
                "spec": spec,
            }
        )
    claim, running = held(name, [], "migger")
    claim["spec"]["devices"]["requests"] = [gpu_request(taken, cls=MIG_CLASS)]
    claim["status"]["allocation"]["devices"]["results"] = [
        {"request": "gpus", "driver": DRIVER, "pool": name, "device": f"gpu-0-mig-1g-{i}"}
        for i in range(taken)
    ]
    return [*objs, claim, running]


def mixed_queue(nodes: int = 10, pods: int = 40) -> list[dict[str, Any]]:
    """Nodes in five fill patterns and pods of four shapes in round robin (8 GPUs, 6 and 4 on
    one NUMA node, 1 GPU), some fitting, some never: a small copy of the audit benchmark."""
    numa = [0, 0, 0, 0, 1, 1, 1, 1]
    patterns = ([0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 4, 5, 6], [0, 1, 4, 5])
    objs: list[dict[str, Any]] = [device_class()]
    for n in range(nodes):
        held_by = {f"run-{n}": patterns[n % 5]} if n % 5 < 4 else {f"run-{n}": [0, 1]}
        objs += gpu_node(f"node-{n:02d}", numa, held_by=held_by)
    objs += [
        gpu_template("g8", 8),
        gpu_template("g6numa", 6, numa=True),
        gpu_template("g4numa", 4, numa=True),
        gpu_template("g1", 1),
    ]
    kinds = ("g8", "g6numa", "g4numa", "g1")
    objs += [pending(f"p-{i:03d}", kinds[i % 4]) for i in range(pods)]
    return objs


def gated() -> list[dict[str, Any]]:
    """Pods that would fit now, held back by scheduling gates: one by Kueue (its Workload short
    of quota), one by another controller's gate."""
    kueue_gate = {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "pod-queued-1a2b3",
            "namespace": "default",
            "ownerReferences": [{"kind": "Pod", "name": "queued", "uid": "uid-queued"}],
        },
        "spec": {"queueName": "main", "podSets": [{"name": "main", "count": 1}]},
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Pending",
                    "message": "insufficient quota for nvidia.com/gpu in flavor h100.",
                }
            ]
        },
    }
    return [
        device_class(),
        *gpu_node("node-0"),
        gpu_template("four", 4, numa=True),
        pending("queued", "four", spec_extra=kueue_gate),
        pending("approval", "four", spec_extra={"schedulingGates": [{"name": "example.com/ok"}]}),
        workload,
    ]
