"""Physical accelerators: which published devices are one GPU, and how much of it is in use.

The rule (KEP-4815, partitionable devices): a driver that can split a GPU publishes every way
of using it, the whole GPU and each partition (MIG profile), as a device of its own, and makes
them consume counters of a counter set (ResourceSlice `spec.sharedCounters`) that stands for
the GPU's memory slices and engines; the allocator admits a device only while its counters fit.
So devices that consume counters of the same counter set are one physical device (a device that
consumes from two sets joins them), and a device that consumes no counters is a physical device
of its own. Counter sets are named per resource pool, so the grouping is within a pool.

Accelerators are the devices of drivers named for them (gpu.nvidia.com, gpu.amd.com,
gpu.intel.com, tpu.google.com, ...); NICs and other devices of a node are not GPUs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from draplan.api.core_v1 import Node
from draplan.cluster.devices import CounterKey, DeviceView, Pool, PoolID
from draplan.cluster.state import ClusterState

ACCELERATOR_PREFIXES = ("gpu.", "tpu.", "neuron.", "gaudi.")


# The device plugins' resource names for the same devices: nvidia.com/gpu, amd.com/gpu,
# nvidia.com/mig-1g.10gb, google.com/tpu, habana.ai/gaudi, aws.amazon.com/neuron, ...
RESOURCE_PREFIXES = ("gpu", "tpu", "neuron", "gaudi", "mig-")


def is_accelerator(driver: str) -> bool:
    return driver.startswith(ACCELERATOR_PREFIXES)


def is_accelerator_resource(name: str) -> bool:
    """An extended resource name a device plugin serves accelerators under."""
    domain, slash, resource = name.partition("/")
    return bool(slash) and "kubernetes.io" not in domain and resource.startswith(RESOURCE_PREFIXES)


def is_partition_resource(name: str) -> bool:
    """An extended resource for parts of accelerators, not whole ones: NVIDIA's MIG profiles
    (`nvidia.com/mig-1g.10gb`: NVIDIA/k8s-device-plugin's `flags.migStrategy: mixed`) and
    time-sliced replicas renamed `<name>.shared` (its `sharing.timeSlicing.renameByDefault`;
    without the rename the replicas stay `nvidia.com/gpu`, indistinguishable from GPUs)."""
    resource = name.partition("/")[2]
    return resource.startswith("mig-") or resource.endswith(".shared")


@dataclass(frozen=True, eq=False)
class Accelerator:
    """One physical device of a pool: its published devices (publish order), the counters of
    its counter sets with their totals, and which of its devices are partitions."""

    pool_id: PoolID
    devices: tuple[DeviceView, ...]
    counters: tuple[tuple[CounterKey, int], ...]
    # Devices that use part of it. When a GPU is published as several devices, the one that
    # consumes every counter of its sets in full is the whole GPU offered as one more way to
    # use it; the others are its partitions. A GPU published as one device has none.
    partitions: tuple[DeviceView, ...]
    node_name: str | None  # the node all its devices are bound to; None if not one node


def pool_accelerators(pool: Pool) -> tuple[Accelerator, ...]:
    """The physical devices of an accelerator driver's pool, in the order of their first
    published device; () for other drivers."""
    return _group(pool) if is_accelerator(pool.id[0]) else ()


def physical_ids(views: Iterable[DeviceView]) -> dict[DeviceView, Hashable]:
    """Each device's physical device: the union of the counter sets it consumes from (within
    its pool), or the device itself if it consumes none; equal ids are one physical device."""
    views = list(views)
    parent: dict[tuple[PoolID, str], tuple[PoolID, str]] = {}

    def root(cset: tuple[PoolID, str]) -> tuple[PoolID, str]:
        while parent[cset] != cset:
            parent[cset] = parent[parent[cset]]
            cset = parent[cset]
        return cset

    # Union-find over counter sets: a device joins the group of every set it consumes from.
    for view in views:
        sets = sorted({(view.pool_id, ckey[0]) for ckey, _ in view.consumes})
        for cset in sets:
            parent.setdefault(cset, cset)
        for cset in sets[1:]:
            parent[root(cset)] = root(sets[0])
    return {
        view: root((view.pool_id, view.consumes[0][0][0])) if view.consumes else view.id
        for view in views
    }


def _group(pool: Pool) -> tuple[Accelerator, ...]:
    if not pool.counters and not any(v.consumes for v in pool.devices):
        return tuple(Accelerator(pool.id, (v,), (), (), v.node_name) for v in pool.devices)
    ids = physical_ids(pool.devices)
    groups: dict[Hashable, list[DeviceView]] = {}
    for view in pool.devices:
        groups.setdefault(ids[view], []).append(view)
    out = []
    for members in groups.values():
        own = {ckey[0] for v in members for ckey, _ in v.consumes}
        counters = tuple(
            sorted((ckey, total) for ckey, total in pool.counters.items() if ckey[0] in own)
        )
        nodes = {v.node_name for v in members}
        out.append(
            Accelerator(
                pool_id=pool.id,
                devices=tuple(members),
                counters=counters,
                partitions=_partitions(members, counters),
                node_name=nodes.pop() if len(nodes) == 1 else None,
            )
        )
    return tuple(out)


def _partitions(
    members: list[DeviceView], counters: tuple[tuple[CounterKey, int], ...]
) -> tuple[DeviceView, ...]:
    if len(members) == 1:
        return ()
    full = dict(counters)
    return tuple(v for v in members if dict(v.consumes) != full)


def node_accelerators(
    state: ClusterState,
    node: Node,
    grouped: Callable[[Pool], tuple[Accelerator, ...]] = pool_accelerators,
) -> list[Accelerator]:
    """The physical accelerators bound to `node` (network-attached ones belong to no node);
    `grouped` is `pool_accelerators` or a memo of it."""
    name = node.metadata.name
    return [
        acc for pool in state.pools_for_node(node) for acc in grouped(pool) if acc.node_name == name
    ]


def usage(state: ClusterState, acc: Accelerator) -> tuple[float, bool]:
    """(the fraction of the accelerator in use, 0 to 1; whether any claim holds it or a part
    of it). A partitionable one: the mean fraction consumed over its counters (a GPU with one
    of eight memory slices taken is 1/8 used; the most used counter would call it full). One
    exclusive device: 0 or 1. One shared device (allowMultipleAllocations): its most consumed
    capacity, or 1 once shared if it has none."""
    if acc.counters:
        pid = acc.pool_id
        fractions = [
            min(1.0, state.counter_used(pid, ckey) / total) for ckey, total in acc.counters if total
        ]
        fraction = sum(fractions) / len(fractions) if fractions else 0.0
        return fraction, fraction > 0 or any(allocated(state, v) for v in acc.devices)
    view = acc.devices[0]
    if state.in_use(view.id):
        return 1.0, True
    share = state.shared_use(view.id)
    if share is None:
        return 0.0, False
    fraction = max(
        (share.consumed.get(k, 0) / total for k, total in view.capacity.items() if total),
        default=1.0,
    )
    return fraction, True


def used(state: ClusterState, acc: Accelerator) -> float:
    """The fraction of the accelerator in use (`usage`)."""
    return usage(state, acc)[0]


def allocated(state: ClusterState, view: DeviceView) -> bool:
    """Is the device allocated (exclusively, or shared by at least one claim)?"""
    return state.in_use(view.id) or state.shared_use(view.id) is not None
