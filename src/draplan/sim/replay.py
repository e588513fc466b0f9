"""The Alibaba openb trace replayed by its pods' creation and deletion times.

Every pod of the pod list that exists inside the window [start, end) of trace time becomes a
job of one pod: it arrives at its creation time (or at the window's start, if it was created
before) and is deleted at its deletion time, scheduled or not, as the trace recorded it. A pod
without a deletion time, or deleted after the window, runs to the end. Times are shifted so
the window starts at 0 and divided by the compression factor.

The cluster is either one NodePool per node type of the node list (GPU model and count, CPU,
memory), so the autoscaler adds and removes nodes, or the node list itself (static). Pods and
nodes are the DRA objects of `draplan.sources.openb`; nothing downstream knows the trace.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import msgspec

from draplan.api.draplan_v1alpha1 import (
    NODE_NAME_PLACEHOLDER,
    NodePool,
    NodePoolSpec,
    NodeTemplate,
    NodeTemplateMeta,
    OpenbReplay,
)
from draplan.api.errors import BadInput
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.sim.openb import default_data_dir
from draplan.sim.prices import gpu_hour_price
from draplan.sim.workloads import Job, timestamp
from draplan.sources import openb

CLUSTERS = ("pools", "static")
INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def pool_name(row: openb.NodeRow) -> str:
    """A NodePool name for a node type, unique per (model, GPUs, CPU, memory)."""
    model = re.sub(r"[^a-z0-9]+", "-", row.model.lower()).strip("-") or "cpu"
    return f"openb-{model}-{row.gpus}g-{row.cpu_milli}m-{row.memory_mib}mi"


def node_pools(
    rows: Sequence[openb.NodeRow],
    *,
    min_nodes: int = 0,
    max_nodes: int | None = None,
    provisioning_delay: int = 300,
    price_per_gpu_hour: float | None = None,
) -> list[NodePool]:
    """One NodePool per node type, in name order; at most `max_nodes` nodes each (default: as
    many as the node list has of that type); priced per GPU by `price_per_gpu_hour`, else by
    the model's public price (`draplan.sim.prices`)."""
    counts: Counter[str] = Counter()
    examples: dict[str, openb.NodeRow] = {}
    for row in rows:
        name = pool_name(row)
        counts[name] += 1
        examples.setdefault(name, row)
    pools = []
    for name in sorted(counts):
        row = replace(examples[name], name=NODE_NAME_PLACEHOLDER)
        per_gpu = gpu_hour_price(row.model) if price_per_gpu_hour is None else price_per_gpu_hour
        node, rs = openb.node_objects(row)
        template = NodeTemplate(
            metadata=NodeTemplateMeta(labels={INSTANCE_TYPE: name}), status=node.status
        )
        spec = NodePoolSpec(
            min_nodes=min_nodes,
            max_nodes=counts[name] if max_nodes is None else max_nodes,
            price_per_hour=f"{per_gpu * row.gpus:g}",
            provisioning_delay_seconds=provisioning_delay,
            template=template,
            resource_slices=() if rs is None else (rs.spec,),
        )
        pools.append(NodePool(metadata=ObjectMeta(name=name), spec=spec))
    return pools


def workload_class(row: openb.PodRow) -> str:
    """The per-class pending-time buckets: CPU only, a share of a GPU, one GPU, several."""
    if row.num_gpu == 0:
        return "cpu"
    if row.gpu_milli < openb.GPU_MILLI:
        return "gpu-share"
    return "gpu-1" if row.num_gpu == 1 else "gpu-multi"


def trace_end(rows: Sequence[openb.PodRow]) -> int:
    """The last creation or deletion time of the pod list."""
    times = [t for r in rows for t in (r.creation_time, r.deletion_time) if t is not None]
    return max(times, default=0)


def replay_jobs(
    rows: Sequence[openb.PodRow],
    *,
    start: float = 0.0,
    end: float | None = None,
    compression: float = 1.0,
    namespace: str = openb.DEFAULT_NAMESPACE,
    source: str = "",
) -> list[Job]:
    """One job per pod alive in [start, end), in file order; times shifted and compressed."""
    if end is None:
        end = trace_end(rows)
    horizon = (end - start) / compression
    jobs = []
    for row in rows:
        created, deleted = row.creation_time, row.deletion_time
        if created is None:
            raise BadInput(
                f"pod {row.name!r} has no creation_time: this pod list cannot be replayed by time",
                source=source,
            )
        if created >= end or (deleted is not None and deleted <= start):
            continue
        arrival = (max(created, start) - start) / compression
        gone = horizon if deleted is None or deleted >= end else (deleted - start) / compression
        gone = max(gone, arrival)
        pod, claim = openb.pod_objects(row, namespace=namespace)
        # The scheduling queue orders by creation time, as kube-scheduler's does.
        meta = msgspec.structs.replace(pod.metadata, creation_timestamp=timestamp(arrival))
        pod = msgspec.structs.replace(pod, metadata=meta)
        objects: tuple[KubeStruct, ...] = (pod,) if claim is None else (pod, claim)
        jobs.append(
            Job(
                row.name,
                workload_class(row),
                arrival,
                gone - arrival,
                objects,
                ((namespace, row.name),),
                row.num_gpu,
                deletion=gone,
            )
        )
    return jobs


@dataclass(frozen=True)
class ReplayInput:
    cluster: list[KubeStruct]
    jobs: list[Job]
    horizon: float  # the window's length, compressed


def _bad(message: str, field: str, source: str) -> BadInput:
    return BadInput(message, source=source, kind="Scenario", path=f"spec.workload.openb.{field}")


def _paths(spec: OpenbReplay, source: str) -> tuple[Path, Path]:
    """(pod list, node list). Relative paths are relative to the Scenario's file."""
    base = Path(source).parent if source and Path(source).is_file() else None

    def rel(text: str) -> Path:
        path = Path(text)
        return base / path if base is not None and not path.is_absolute() else path

    trace_file = rel(spec.trace)
    if trace_file.suffix == ".csv" or trace_file.is_file():
        data = trace_file.parent
    else:
        found = rel(spec.data_dir) if spec.data_dir else default_data_dir()
        if found is None:
            raise _bad(
                "no openb data: set dataDir (or run next to ../shared/data)", "dataDir", source
            )
        data = openb.openb_dir(found)
        if spec.data_dir and not data.is_dir():
            raise _bad(f"not a directory: {data}", "dataDir", source)
        trace_file = data / f"openb_pod_list_{spec.trace}.csv"
    nodes = rel(spec.node_list) if spec.node_list else data / openb.NODE_LIST
    return trace_file, nodes


def load_replay(spec: OpenbReplay, source: str = "") -> ReplayInput:
    """The cluster objects, jobs and horizon a Scenario's `openb` workload stands for."""
    if spec.time_compression <= 0:
        raise _bad("must be > 0", "timeCompression", source)
    if spec.cluster not in CLUSTERS:
        known = ", ".join(CLUSTERS)
        raise _bad(f"unknown cluster {spec.cluster!r}; one of {known}", "cluster", source)
    trace_file, node_file = _paths(spec, source)
    rows = openb.read_pods(trace_file)
    end = spec.end_seconds if spec.end_seconds is not None else trace_end(rows)
    if end <= spec.start_seconds:
        raise _bad(f"the window ends ({end}) before it starts", "endSeconds", source)
    jobs = replay_jobs(
        rows,
        start=spec.start_seconds,
        end=end,
        compression=spec.time_compression,
        namespace=spec.namespace,
        source=str(trace_file),
    )
    cluster: list[KubeStruct]
    if spec.cluster == "static":
        cluster = list(openb.load_cluster(node_file).objects())
    else:
        pools = node_pools(
            openb.read_nodes(node_file),
            min_nodes=spec.min_nodes,
            max_nodes=spec.max_nodes,
            provisioning_delay=spec.provisioning_delay_seconds,
            price_per_gpu_hour=spec.price_per_gpu_hour,
        )
        cluster = [openb.device_class(), *pools]
    return ReplayInput(cluster, jobs, (end - spec.start_seconds) / spec.time_compression)
