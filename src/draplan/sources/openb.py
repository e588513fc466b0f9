"""The Alibaba openb GPU trace (cluster-trace-gpu-v2023) as DRA objects.

Every GPU is a device of its node's ResourceSlice that many pods may share: capacity
`gpuMilli: 1000`, `allowMultipleAllocations: true`. A pod with GPUs gets one ResourceClaim
`<pod>-gpu`: a sharing pod asks for one device and `gpuMilli: <gpu_milli>` of it, a whole-GPU
pod for `num_gpu` devices of `gpuMilli: 1000` each (so never a partly used GPU); `gpu_spec`
becomes a CEL selector on the `model` attribute. Units follow openb-benchmark.md §1.2/§2.8:
CPU in milli-cores, memory in MiB, a GPU is 1000 milli.

The structs are built directly (no YAML round trip) and identical parts are shared, so the
1,213-node list and a 10,000-pod list load in a small fraction of a second.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from draplan.api.core_v1 import (
    Container,
    ContainerResourceClaim,
    Node,
    NodeStatus,
    Pod,
    PodResourceClaim,
    PodSpec,
    ResourceRequirements,
)
from draplan.api.errors import BadInput
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.api.quantity import Quantity
from draplan.api.resource_v1 import (
    CapacityRequirements,
    CELDeviceSelector,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClaim,
    DeviceClass,
    DeviceClassSpec,
    DeviceRequest,
    DeviceSelector,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)

DRIVER = "gpu.openb.alibaba"
DEVICE_CLASS = DRIVER
MODEL_ATTRIBUTE = "model"
# The issue wrote `gpu-milli`, but a capacity name must be a C identifier (the API server and
# draplan.api.validation reject a hyphen), so the capacity is `gpuMilli`.
CAPACITY = "gpuMilli"
GPU_MILLI = 1000
CLAIM_NAME = "gpu"  # the pod's name for its claim (spec.resourceClaims[].name)
CONTAINER = "main"
DEFAULT_NAMESPACE = "default"
# The simulator's node objects allow 1001 pods, so the pod count never limits a node.
MAX_PODS = 1001
NODE_LIST = "openb_node_list_gpu_node.csv"
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
# The 17 pod lists the paper's run scripts use (openb-benchmark.md §2.6).
PAPER_TRACES = (
    "default",
    "cpu050",
    "cpu100",
    "cpu200",
    "cpu250",
    "gpushare40",
    "gpushare60",
    "gpushare80",
    "gpushare100",
    "gpuspec10",
    "gpuspec20",
    "gpuspec25",
    "gpuspec33",
    "multigpu20",
    "multigpu30",
    "multigpu40",
    "multigpu50",
)


@dataclass(frozen=True, slots=True)
class NodeRow:
    """One row of a node list."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class PodRow:
    """One row of a pod list; the 5-column multigpu files leave the trailing fields empty."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int  # per GPU, 0..1000
    gpu_spec: str = ""  # allowed models joined by "|"; "" = any
    qos: str = ""
    phase: str = ""
    creation_time: int | None = None
    deletion_time: int | None = None
    scheduled_time: int | None = None

    @property
    def models(self) -> tuple[str, ...]:
        """Allowed GPU models, sorted and unique; () = any."""
        return tuple(sorted({m for m in self.gpu_spec.split("|") if m}))

    @property
    def gpu_request_milli(self) -> int:
        """Total GPU milli the pod asks for (the quantity the benchmark counts)."""
        return self.num_gpu * self.gpu_milli


@dataclass(frozen=True)
class OpenbCluster:
    """The nodes of a node list with one ResourceSlice per GPU node, and the DeviceClass."""

    rows: tuple[NodeRow, ...]
    nodes: tuple[Node, ...]
    slices: tuple[ResourceSlice, ...]
    device_class: DeviceClass

    def objects(self) -> Iterator[KubeStruct]:
        """Everything, for `ClusterState.from_objects`."""
        yield self.device_class
        yield from self.nodes
        yield from self.slices


@dataclass(frozen=True)
class OpenbWorkload:
    """Pods of a pod list in file order; `claims[i]` is pod i's claim (None: no GPU)."""

    rows: tuple[PodRow, ...]
    pods: tuple[Pod, ...]
    claims: tuple[ResourceClaim | None, ...]

    def objects(self) -> Iterator[KubeStruct]:
        for pod, claim in zip(self.pods, self.claims, strict=True):
            yield pod
            if claim is not None:
                yield claim


# --- reading ---------------------------------------------------------------------------------


def _rows(path: str | os.PathLike[str], required: tuple[str, ...]) -> Iterator[dict[str, str]]:
    source = str(path)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in required if c not in (reader.fieldnames or ())]
            if missing:
                raise BadInput(f"missing column(s) {', '.join(missing)}", source=source)
            yield from reader
    except OSError as err:
        raise BadInput(err.strerror or "cannot read", source=source) from None
    except UnicodeDecodeError:
        raise BadInput("not UTF-8 text", source=source) from None
    except csv.Error as err:
        raise BadInput(f"not CSV: {err}", source=source) from None


def _int(text: str | None, column: str, source: str, line: int) -> int:
    try:
        return int(text or "")
    except ValueError:
        raise BadInput(
            f"line {line}: column {column}: not an integer: {text!r}", source=source
        ) from None


def _opt_int(text: str | None, column: str, source: str, line: int) -> int | None:
    return None if not text else _int(text, column, source, line)


def read_nodes(path: str | os.PathLike[str]) -> list[NodeRow]:
    """The rows of a node list CSV (`sn,cpu_milli,memory_mib,gpu,model`)."""
    source = str(path)
    out = []
    for line, r in enumerate(_rows(path, NODE_COLUMNS), start=2):
        gpus = _int(r["gpu"], "gpu", source, line)
        model = r["model"] or ""
        if gpus < 0 or (gpus and not model):
            raise BadInput(f"line {line}: a GPU node needs a model and gpu >= 0", source=source)
        out.append(
            NodeRow(
                name=r["sn"],
                cpu_milli=_int(r["cpu_milli"], "cpu_milli", source, line),
                memory_mib=_int(r["memory_mib"], "memory_mib", source, line),
                gpus=gpus,
                model=model,
            )
        )
    return out


def read_pods(path: str | os.PathLike[str]) -> list[PodRow]:
    """The rows of a pod list CSV (11 columns, or the 5 of the multigpu files)."""
    source = str(path)
    out = []
    for line, r in enumerate(_rows(path, POD_COLUMNS), start=2):
        num_gpu = _int(r["num_gpu"], "num_gpu", source, line)
        gpu_milli = _int(r["gpu_milli"], "gpu_milli", source, line)
        if num_gpu < 0 or not 0 <= gpu_milli <= GPU_MILLI or (num_gpu == 0) != (gpu_milli == 0):
            raise BadInput(
                f"line {line}: num_gpu {num_gpu} with gpu_milli {gpu_milli} is not a request",
                source=source,
            )
        if num_gpu > 1 and gpu_milli != GPU_MILLI:
            # A multi-GPU pod never shares in openb (§1.2); a claim could not express it.
            raise BadInput(f"line {line}: a multi-GPU pod must ask for whole GPUs", source=source)
        out.append(
            PodRow(
                name=r["name"],
                cpu_milli=_int(r["cpu_milli"], "cpu_milli", source, line),
                memory_mib=_int(r["memory_mib"], "memory_mib", source, line),
                num_gpu=num_gpu,
                gpu_milli=gpu_milli,
                gpu_spec=r.get("gpu_spec") or "",
                qos=r.get("qos") or "",
                phase=r.get("pod_phase") or "",
                creation_time=_opt_int(r.get("creation_time"), "creation_time", source, line),
                deletion_time=_opt_int(r.get("deletion_time"), "deletion_time", source, line),
                scheduled_time=_opt_int(r.get("scheduled_time"), "scheduled_time", source, line),
            )
        )
    return out


def openb_dir(data_dir: str | os.PathLike[str]) -> Path:
    """Where the trace's CSV files are: `<data_dir>/openb` if it exists, else `data_dir`."""
    nested = Path(data_dir) / "openb"
    return nested if nested.is_dir() else Path(data_dir)


def trace_path(trace: str, data_dir: str | os.PathLike[str]) -> Path:
    """A pod list: `trace` itself if it is a file, else `<data_dir>/openb_pod_list_<trace>.csv`."""
    if os.path.isfile(trace):
        return Path(trace)
    return Path(data_dir) / f"openb_pod_list_{trace}.csv"


# --- building objects ------------------------------------------------------------------------

_QUANTITIES: dict[tuple[str, int], Quantity] = {}


def _qty(unit: str, n: int) -> Quantity:
    # Few distinct values recur thousands of times; parsing each once keeps loading fast.
    key = (unit, n)
    q = _QUANTITIES.get(key)
    if q is None:
        if unit == "m":
            q = Quantity.from_milli(n)
        elif unit == "Mi":
            q = Quantity.parse(f"{n}Mi") if n else Quantity.from_int(0)
        else:
            q = Quantity.from_int(n)
        _QUANTITIES[key] = q
    return q


def device_class() -> DeviceClass:
    """The class every openb claim asks for: the devices of the openb driver."""
    return DeviceClass(
        metadata=ObjectMeta(name=DEVICE_CLASS),
        spec=DeviceClassSpec(
            selectors=(DeviceSelector(cel=CELDeviceSelector(f'device.driver == "{DRIVER}"')),)
        ),
    )


def node_objects(row: NodeRow) -> tuple[Node, ResourceSlice | None]:
    """The Node, and its ResourceSlice if it has GPUs (pool = node name, one slice)."""
    resources = {
        "cpu": _qty("m", row.cpu_milli),
        "memory": _qty("Mi", row.memory_mib),
        "pods": _qty("", MAX_PODS),
    }
    node = Node(
        metadata=ObjectMeta(name=row.name, labels={"kubernetes.io/hostname": row.name}),
        status=NodeStatus(capacity=resources, allocatable=resources),
    )
    if not row.gpus:
        return node, None
    attrs = {MODEL_ATTRIBUTE: DeviceAttribute(string=row.model)}
    caps = {CAPACITY: DeviceCapacity(value=_qty("", GPU_MILLI))}
    devices = tuple(
        Device(name=f"gpu-{i}", attributes=attrs, capacity=caps, allow_multiple_allocations=True)
        for i in range(row.gpus)
    )
    rs = ResourceSlice(
        metadata=ObjectMeta(name=f"{row.name}-gpu"),
        spec=ResourceSliceSpec(
            driver=DRIVER,
            pool=ResourcePool(name=row.name, generation=1, resource_slice_count=1),
            node_name=row.name,
            devices=devices,
        ),
    )
    return node, rs


def model_selector(models: tuple[str, ...]) -> str:
    """The CEL expression admitting exactly `models` (a pod's gpu_spec)."""
    attr = f"device.attributes[{json.dumps(DRIVER)}].{MODEL_ATTRIBUTE}"
    # A JSON string is a valid CEL string literal, whatever a user's file holds.
    if len(models) == 1:
        return f"{attr} == {json.dumps(models[0])}"
    return f"{attr} in [{', '.join(json.dumps(m) for m in models)}]"


_CLAIM_SPECS: dict[tuple[int, int, tuple[str, ...]], ResourceClaimSpec] = {}
_CONTAINERS: dict[tuple[int, int, bool], tuple[Container, ...]] = {}


def claim_spec(num_gpu: int, gpu_milli: int, models: tuple[str, ...]) -> ResourceClaimSpec:
    """One request for `num_gpu` devices, each giving `gpu_milli` of its capacity."""
    key = (num_gpu, gpu_milli, models)
    spec = _CLAIM_SPECS.get(key)
    if spec is None:
        selectors = (DeviceSelector(cel=CELDeviceSelector(model_selector(models))),)
        request = ExactDeviceRequest(
            device_class_name=DEVICE_CLASS,
            selectors=selectors if models else (),
            count=num_gpu,
            capacity=CapacityRequirements(requests={CAPACITY: _qty("", gpu_milli)}),
        )
        spec = ResourceClaimSpec(
            devices=DeviceClaim(requests=(DeviceRequest(name=CLAIM_NAME, exactly=request),))
        )
        _CLAIM_SPECS[key] = spec
    return spec


def _containers(cpu_milli: int, memory_mib: int, gpu: bool) -> tuple[Container, ...]:
    key = (cpu_milli, memory_mib, gpu)
    out = _CONTAINERS.get(key)
    if out is None:
        # Requests equal limits, as the simulator's pod_csv_to_yaml.py writes them (§1.5).
        res = {"cpu": _qty("m", cpu_milli), "memory": _qty("Mi", memory_mib)}
        claims = (ContainerResourceClaim(name=CLAIM_NAME),) if gpu else ()
        resources = ResourceRequirements(requests=res, limits=res, claims=claims)
        out = (Container(name=CONTAINER, resources=resources),)
        _CONTAINERS[key] = out
    return out


def claim_name(pod_name: str) -> str:
    return f"{pod_name}-{CLAIM_NAME}"


def pod_objects(
    row: PodRow, *, name: str = "", namespace: str = DEFAULT_NAMESPACE
) -> tuple[Pod, ResourceClaim | None]:
    """The Pod for `row` (named `name` if given, e.g. a resampled copy) and its claim."""
    name = name or row.name
    gpu = row.num_gpu > 0
    resource_claims: tuple[PodResourceClaim, ...] = ()
    claim = None
    if gpu:
        cname = claim_name(name)
        resource_claims = (PodResourceClaim(name=CLAIM_NAME, resource_claim_name=cname),)
        claim = ResourceClaim(
            metadata=ObjectMeta(name=cname, namespace=namespace),
            spec=claim_spec(row.num_gpu, row.gpu_milli, row.models),
        )
    pod = Pod(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=PodSpec(
            containers=_containers(row.cpu_milli, row.memory_mib, gpu),
            resource_claims=resource_claims,
        ),
    )
    return pod, claim


def load_cluster(path: str | os.PathLike[str]) -> OpenbCluster:
    """A node list CSV as Nodes, ResourceSlices and the DeviceClass."""
    rows = read_nodes(path)
    nodes = []
    slices = []
    for row in rows:
        node, rs = node_objects(row)
        nodes.append(node)
        if rs is not None:
            slices.append(rs)
    return OpenbCluster(tuple(rows), tuple(nodes), tuple(slices), device_class())


def load_workload(
    path: str | os.PathLike[str], *, namespace: str = DEFAULT_NAMESPACE
) -> OpenbWorkload:
    """A pod list CSV as Pods and their ResourceClaims, in file order."""
    rows = read_pods(path)
    pods = []
    claims = []
    seen: set[str] = set()
    for line, row in enumerate(rows, start=2):
        if row.name in seen:
            raise BadInput(f"line {line}: duplicate pod name {row.name!r}", source=str(path))
        seen.add(row.name)
        pod, claim = pod_objects(row, namespace=namespace)
        pods.append(pod)
        claims.append(claim)
    return OpenbWorkload(tuple(rows), tuple(pods), tuple(claims))
