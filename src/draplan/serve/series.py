"""The cluster's Prometheus series, computed once per audit from the same documents the HTTP API
serves; a scrape only formats them. Labels are bounded by the cluster's shape (drivers, resource
pools, node pools, GPU models, namespaces, why categories), never by its pods."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from draplan.api.core_v1 import Pod
from draplan.audit.why import Diagnosis
from draplan.cluster.accelerators import allocated, is_accelerator
from draplan.cluster.devices import DeviceView, Pool
from draplan.cluster.nodepools import pool_name
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState
from draplan.scheduler.gangs import gangs_under

# The attributes naming a device's model, the first found wins, in any domain: NVIDIA's
# productName, a model (Intel Gaudi), a TPU's tpuType, else a type.
MODEL_ATTRIBUTES = ("productName", "model", "tpuType", "type")

Labels = tuple[str, ...]


@dataclass(frozen=True)
class Family:
    """One gauge: its name, help, label names and samples."""

    name: str
    help: str
    labels: Labels
    samples: tuple[tuple[Labels, float], ...]


def model_of(view: DeviceView) -> str:
    """The device's model: its first model-like attribute with a string value (any domain,
    in name order within one), or ""."""
    found: dict[str, str] = {}
    for key, attr in sorted(view.device.attributes.items()):
        name = key.rpartition("/")[2]
        if name in MODEL_ATTRIBUTES and attr.string:
            found.setdefault(name, attr.string)
    return next((found[n] for n in MODEL_ATTRIBUTES if n in found), "")


def _family(name: str, help: str, labels: Labels, values: Mapping[Labels, float]) -> Family:
    return Family(name, help, labels, tuple(sorted(values.items())))


@dataclass(frozen=True)
class _PoolDevices:
    """One resource pool's devices and allocated devices per (driver, pool, model), and the
    model of its first accelerator with one; kept while its nodes' versions hold."""

    where: tuple[str, ...]  # the nodes its devices are bound to
    key: object  # their versions when counted
    local: str | None  # the one node all its devices are bound to, if any
    counts: tuple[tuple[tuple[str, str, str], int, int], ...]
    model: str


@dataclass(frozen=True)
class _NodeDevices:
    """What one node adds to the device counts: its pools (each bound to it alone), their
    counts under its node pool, and its accelerator model."""

    pools: tuple[Pool, ...]
    owner: str
    counts: tuple[tuple[Labels, int, int], ...]
    model: str


class SeriesMemo:
    """What the series may keep between audits of one changing state: each resource pool's
    device counts, while its nodes' versions hold; and, while every pool is bound to one node
    alone, each node's part of the counts and their sums, so that an audit counts again only
    the nodes the change log names (or whose node pool changed)."""

    def __init__(self) -> None:
        self.state: ClusterState | None = None
        self.pools: dict[Pool, _PoolDevices] = {}
        self.cursor: int | None = None  # the change log read up to; None: count every node
        self.in_order = False  # a pool is on several nodes (or none): count them all, in order
        self.nodes: dict[str, _NodeDevices] = {}
        self.owners: dict[str, str] = {}
        self.total: Counter[Labels] = Counter()
        self.taken: Counter[Labels] = Counter()
        self.node_model: dict[str, str] = {}

    def pool(self, state: ClusterState, pool: Pool, kept: dict[Pool, _PoolDevices]) -> _PoolDevices:
        got = kept.get(pool)
        where = got.where if got is not None else pool.bound_nodes()
        key = state.ledgers_version(where)
        if got is None or got.key != key:
            got = _count(state, pool, where, key)
        self.pools[pool] = got
        return got

    def to_count(self, state: ClusterState, node_pools: Mapping[str, str]) -> list[str] | None:
        """The nodes whose part may have changed since the last audit; None: every node."""
        changed = state.changed_since(self.cursor) if self.cursor is not None else None
        self.cursor = len(state.change_log)
        if state is not self.state:  # node versions are one state's
            self.state, self.pools, self.in_order = state, {}, False
            changed = None
        if changed is None:
            self.nodes = {}
            self.total, self.taken, self.node_model = Counter(), Counter(), {}
            self.owners = dict(node_pools)
            return None
        if node_pools != self.owners:
            names = {*node_pools, *self.owners}
            moved = {n for n in names if node_pools.get(n) != self.owners.get(n)}
            changed = sorted({*changed, *moved})
            self.owners = dict(node_pools)
        return changed

    def recount(self, state: ClusterState, name: str, owner: str) -> bool:
        """Take the node's part out of the sums and put its new part in; False when one of its
        pools is not its alone (then only a pass over every node in order counts right)."""
        old = self.nodes.pop(name, None)
        if old is not None:
            self.node_model.pop(name, None)
            for pool in old.pools:
                self.pools.pop(pool, None)
            for key, n, taken in old.counts:
                self.total[key] -= n
                self.taken[key] -= taken
                if not self.total[key]:
                    del self.total[key], self.taken[key]
        node = state.nodes.get(name)
        if node is None:
            return True
        pools = state.pools_for_node(node)
        counted = [self.pool(state, pool, self.pools) for pool in pools]
        if any(c.local != name for c in counted):
            return False
        part = _NodeDevices(
            pools,
            owner,
            tuple(
                ((driver, pool_id, owner, model), n, taken)
                for c in counted
                for (driver, pool_id, model), n, taken in c.counts
            ),
            next((c.model for c in counted if c.model), ""),
        )
        self.nodes[name] = part
        if part.model:
            self.node_model[name] = part.model
        for key, n, taken in part.counts:
            self.total[key] += n
            self.taken[key] += taken
        return True


def _count(state: ClusterState, pool: Pool, where: tuple[str, ...], key: object) -> _PoolDevices:
    total: Counter[tuple[str, str, str]] = Counter()
    taken: Counter[tuple[str, str, str]] = Counter()
    first = ""
    for view in pool.devices:
        model = model_of(view)
        if model and not first and is_accelerator(view.driver):
            first = model
        labels = (view.driver, pool.id[1], model)
        total[labels] += 1
        taken[labels] += allocated(state, view)
    return _PoolDevices(
        where,
        key,
        pool.sole_node(),
        tuple((k, n, taken[k]) for k, n in total.items()),
        first,
    )


def _devices(
    state: ClusterState, node_pools: Mapping[str, str], memo: SeriesMemo
) -> tuple[Family, Family, dict[str, str]]:
    """Devices and allocated devices per (driver, resource pool, node pool, model), and each
    node's accelerator model. A pool that several nodes see is counted once."""
    changed = memo.to_count(state, node_pools)
    names = sorted(state.nodes.keys()) if changed is None else changed
    if not memo.in_order and all(
        memo.recount(state, name, node_pools.get(name, "")) for name in names
    ):
        total, taken, node_model = memo.total, memo.taken, memo.node_model
    else:
        memo.in_order = True  # on this state from now on
        total, taken, node_model = _devices_in_order(state, node_pools, memo)
    labels = ("driver", "pool", "node_pool", "model")
    return (
        _family("draplan_devices", "DRA devices published.", labels, total),
        _family("draplan_devices_allocated", "DRA devices allocated.", labels, taken),
        dict(node_model),
    )


def _devices_in_order(
    state: ClusterState, node_pools: Mapping[str, str], memo: SeriesMemo
) -> tuple[Counter[Labels], Counter[Labels], dict[str, str]]:
    """The counts of a pass over every node in name order: a pool on several nodes (or on
    none) is counted at the first node that sees it, in no node pool."""
    total: Counter[Labels] = Counter()
    taken: Counter[Labels] = Counter()
    node_model: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    kept, memo.pools = memo.pools, {}
    for name, node in sorted(state.nodes.items()):
        for pool in state.pools_for_node(node):
            if pool.id in seen:
                continue
            seen.add(pool.id)
            counted = memo.pool(state, pool, kept)
            if counted.model:
                node_model.setdefault(name, counted.model)
            owner = node_pools[name] if counted.local == name else ""
            for (driver, pool_id, model), n, allocated_ in counted.counts:
                key = (driver, pool_id, owner, model)
                total[key] += n
                taken[key] += allocated_
    return total, taken, node_model


def _stranded(
    doc: dict[str, Any], node_model: dict[str, str], node_pools: Mapping[str, str]
) -> list[Family]:
    gpus: Counter[Labels] = Counter()
    free: Counter[Labels] = Counter()
    tainted: Counter[Labels] = Counter()
    stranded: Counter[Labels] = Counter()
    for name, tally in doc["nodes"].items():
        if not tally["gpus"]:
            continue
        key = (node_model.get(name, ""), node_pools.get(name, ""))
        gpus[key] += tally["gpus"]
        free[key] += tally["freeGpus"]
        tainted[key] += tally["taintedGpus"]
        stranded[key] += tally["strandedGpus"]
    labels = ("model", "node_pool")
    cost: dict[Labels, float] = {
        (name,): tally["strandedCostPerHour"]
        for name, tally in doc["nodePools"].items()
        if tally["strandedCostPerHour"] is not None
    }
    counters: dict[Labels, float] = {
        (name,): tally["counterUtilizationPercent"] / 100
        for name, tally in doc["nodePools"].items()
        if tally["counterUtilizationPercent"] is not None
    }
    return [
        _family("draplan_gpus", "Physical GPUs.", labels, gpus),
        _family(
            "draplan_gpus_free",
            "Physical GPUs not allocated and not tainted (in GPUs).",
            labels,
            free,
        ),
        _family(
            "draplan_gpus_tainted",
            "Physical GPUs not allocated whose every device a NoSchedule or NoExecute taint "
            "keeps from pods without a toleration (in GPUs).",
            labels,
            tainted,
        ),
        _family(
            "draplan_gpus_stranded",
            "Free GPUs no typical pod shape can use (the FGD measure, in physical GPUs).",
            labels,
            {k: round(v, 3) for k, v in stranded.items()},
        ),
        _family(
            "draplan_stranded_cost_per_hour",
            "What the stranded GPUs cost per hour, from the nodes' prices.",
            ("node_pool",),
            cost,
        ),
        _family(
            "draplan_counter_utilization_ratio",
            "Mean share of the shared counters (partitionable devices) consumed.",
            ("node_pool",),
            counters,
        ),
    ]


def _created(pod: Pod) -> float | None:
    stamp = pod.metadata.creation_timestamp
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def waiting_gangs(state: ClusterState, kube: bool = True) -> dict[str, float | None]:
    """Gangs of the scheduler modelled (`gangs_under`: kube-scheduler's under one of its
    profiles, `kube`, else draplan's) with a member still pending: the oldest member's
    creation time (None unknown)."""
    out: dict[str, float | None] = {}
    for gang in {g.key: g for g in gangs_under(state, kube).values()}.values():
        pods = [state.pods.get(k) for k in gang.members]
        members = [p for p in pods if p is not None and not is_terminal(p)]
        if not any(not p.spec.node_name for p in members):
            continue
        times = [t for t in map(_created, members) if t is not None]
        out[gang.label or "/".join(gang.key)] = min(times) if times else None
    return out


def cluster_series(
    state: ClusterState,
    diagnoses: Sequence[Diagnosis],
    metrics: dict[str, Any],
    plan: dict[str, Any],
    gang_waits: Sequence[float],
    memo: SeriesMemo | None = None,
    node_pools: Mapping[str, str] | None = None,
) -> tuple[Family, ...]:
    """Every cluster series of one audit; `gang_waits` are the waiting gangs' ages in seconds;
    a `memo` kept from the audits before spares counting again what did not change, and
    `node_pools` are each node's pool name if the caller has them (a measure's)."""
    memo = memo or SeriesMemo()
    if node_pools is None:
        node_pools = {name: pool_name(state, node) for name, node in state.nodes.items()}
    devices, allocated_devices, node_model = _devices(state, node_pools, memo)
    pending: Counter[Labels] = Counter((d.category, d.pod[0]) for d in diagnoses)
    planned: defaultdict[Labels, float] = defaultdict(float)
    for pool in state.node_pools:
        planned[(pool,)] = 0
    for up in plan["scaleUp"]:
        planned[(up["pool"],)] += up["add"]
    return (
        devices,
        allocated_devices,
        *_stranded(metrics, node_model, node_pools),
        _family(
            "draplan_pending_pods",
            "Pending pods by why category.",
            ("category", "namespace"),
            pending,
        ),
        Family(
            "draplan_gangs_waiting", "Gangs with a member pending.", (), (((), len(gang_waits)),)
        ),
        Family(
            "draplan_gang_wait_seconds_max",
            "How long the longest-waiting gang has waited.",
            (),
            (((), max(gang_waits, default=0.0)),),
        ),
        _family(
            "draplan_scaleup_nodes_planned",
            "Nodes the scale plan adds now, per NodePool.",
            ("pool",),
            planned,
        ),
    )
