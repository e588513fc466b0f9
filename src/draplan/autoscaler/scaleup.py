"""Scale-up: for each NodePool, fork the state, add template nodes, run the real scheduler, and
keep the option the expanders like best; repeat while pending pods remain. No placement rule of
its own: what fits is what the scheduler places."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from draplan.api.core_v1 import Node, Pod
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.resource_v1 import EXTENDED_RESOURCE_PREFIX as EXTENDED_PREFIX
from draplan.autoscaler.options import DEFAULT_EXPANDERS, Limits, Option, choose
from draplan.autoscaler.templates import NewNode, NodeNamer, add_new_node, make_node, pool_members
from draplan.autoscaler.utilization import waste
from draplan.cluster.podresources import is_terminal, node_allocatable, pod_requests
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import PodResult, Scheduler
from draplan.scheduler.claims import ClaimNotFound, pod_claims, requested_devices
from draplan.scheduler.gangs import find_gangs


@dataclass
class ScaleUp:
    """The chosen additions, in the order they were chosen."""

    options: list[Option] = field(default_factory=list)
    placed: dict[ObjectKey, str] = field(default_factory=dict)  # pod -> new node
    reasons: dict[ObjectKey, str] = field(default_factory=dict)  # pod -> why no pool helps

    @property
    def nodes_added(self) -> int:
        return sum(len(o.nodes) for o in self.options)

    @property
    def cost_per_hour(self) -> float:
        return sum(o.cost_per_hour for o in self.options)


def pending_pods(state: ClusterState) -> list[Pod]:
    return [p for _, p in sorted(state.pods.items()) if not p.spec.node_name and not is_terminal(p)]


def _room(state: ClusterState, pool: NodePool, added: dict[str, int]) -> int:
    return max(
        0, pool.spec.max_nodes - len(pool_members(state, pool)) - added.get(pool.metadata.name, 0)
    )


def _devices(new: NewNode) -> int:
    return sum(len(rs.spec.devices) for rs in new.slices) + _counted_devices(new.node)


def _counted_devices(node: Node) -> int:
    """Devices a node advertises as extended resource counts (the legacy view has no slices)."""
    alloc = node.status.allocatable or node.status.capacity
    return sum(q.value() for k, q in alloc.items() if k.startswith(EXTENDED_PREFIX))


def _template_devices(state: ClusterState, pool: NodePool) -> int:
    return _devices(make_node(state, pool, f"{pool.metadata.name}-template", {}))


def _node_devices(state: ClusterState, node: Node) -> int:
    name = node.metadata.name
    local = sum(1 for p in state.pools_for_node(node) for v in p.devices if v.node_name == name)
    return local + _counted_devices(node)


class ScaleUpPlanner:
    """Plans node additions for the pending pods of a state, with one scheduler profile."""

    def __init__(
        self,
        scheduler: Scheduler,
        pools: Sequence[NodePool],
        limits: Limits | None = None,
        expanders: Sequence[str] = DEFAULT_EXPANDERS,
    ) -> None:
        self.scheduler = scheduler
        self.pools = sorted(pools, key=lambda p: p.metadata.name)
        self.limits = limits or Limits()
        self.expanders = tuple(expanders)
        # Whether a pod shape fits an empty node of a pool does not change during a plan.
        self.fits_empty: dict[tuple[str, bytes], bool] = {}

    def helpable(self, state: ClusterState, pool: NodePool, pods: list[Pod]) -> list[Pod]:
        """Pods that would fit alone on one empty node of `pool` (gangs ignored)."""
        keys = [(pool.metadata.name, self.scheduler.shape_of(state, pod)) for pod in pods]
        unknown = [(k, pod) for k, pod in zip(keys, pods, strict=True) if k not in self.fits_empty]
        if unknown:
            with state.forked():
                name, labels = NodeNamer(state, pool).next()
                add_new_node(state, make_node(state, pool, name, labels))
                for k, pod in unknown:
                    if k in self.fits_empty:
                        continue
                    with state.forked():
                        self.fits_empty[k] = (
                            self.scheduler.schedule_pod(state, pod, [name]).node is not None
                        )
        return [pod for k, pod in zip(keys, pods, strict=True) if self.fits_empty[k]]

    def _estimate(self, pool: NodePool, new: NewNode, pods: list[Pod]) -> int:
        alloc = node_allocatable(new.node)
        need = {"cpu": 0, "memory": 0}
        for pod in pods:
            req = pod_requests(pod)
            for k in need:
                need[k] += req.get(k, 0)
        ratios = [need[k] / alloc[k] for k in need if alloc.get(k)]
        return max(1, math.ceil(max(ratios, default=1.0)))

    def simulate(
        self, state: ClusterState, pool: NodePool, room: int, pods: list[Pod]
    ) -> Option | None:
        """Add nodes of `pool` (up to `room`) until the pods it can help are placed."""
        helpable = self.helpable(state, pool, pods)
        if not helpable or room <= 0:
            return None
        wanted = {key_of(p) for p in helpable}
        with state.forked():
            namer = NodeNamer(state, pool)
            nodes: list[NewNode] = []
            target = min(
                room,
                len(helpable),
                self._estimate(pool, make_node(state, pool, "estimate", {}), helpable),
            )
            placed: dict[ObjectKey, str] = {}
            while True:
                while len(nodes) < target:
                    name, labels = namer.next()
                    new = make_node(state, pool, name, labels)
                    add_new_node(state, new)
                    nodes.append(new)
                for r in self.scheduler.run(state, only=wanted, order=self.order(state)):
                    if r.node and r.key in wanted:
                        placed[r.key] = r.node
                left = wanted - placed.keys()
                if not left or target >= min(room, len(helpable)):
                    break
                target = min(room, len(helpable), target * 2)
            used = set(placed.values())
            kept = [n for n in nodes if n.node.metadata.name in used]
            option = Option(
                pool,
                kept,
                sorted(placed),
                waste(state, [n.node for n in kept]),
                sum(_devices(n) for n in kept),
            )
        return option

    def _limit_room(self, state: ClusterState, pool: NodePool, plan: ScaleUp) -> int:
        """How many nodes of `pool` the cluster-wide limits still allow: Cluster Autoscaler
        caps a scale-up at the limit instead of dropping it."""
        room = 1 << 30
        lim = self.limits
        if lim.max_nodes_total is not None:
            room = min(room, lim.max_nodes_total - len(state.nodes))
        per_node = _template_devices(state, pool)
        if lim.max_devices_total is not None and per_node:
            existing = sum(_node_devices(state, n) for n in state.nodes.values())
            room = min(room, (lim.max_devices_total - existing) // per_node)
        price = float(pool.spec.price_per_hour)
        if lim.max_cost_per_hour is not None and price > 0:
            room = min(room, int((lim.max_cost_per_hour - plan.cost_per_hour) // price))
        return max(0, room)

    def apply(self, state: ClusterState, option: Option) -> list[PodResult]:
        """Add the option's nodes to `state` and schedule onto them (the plan's state)."""
        for new in option.nodes:
            add_new_node(state, new)
        return self.scheduler.run(state, order=self.order(state))

    def order(self, state: ClusterState) -> Callable[[Pod], tuple[int, int, int, str, str]]:
        """Cluster Autoscaler's estimator packs the biggest pods first (DecreasingPodOrderer);
        here size counts devices too, and a gang's members share the gang's total size."""
        sizes: dict[ObjectKey, tuple[int, int]] = {}
        for pkey, pod in state.pods.items():
            if pod.spec.node_name:
                continue
            try:
                devices = requested_devices(pod_claims(state, pod))
            except ClaimNotFound:
                devices = 0
            sizes[pkey] = (devices, pod_requests(pod).get("cpu", 0))
        gangs = find_gangs(state)
        totals: dict[tuple[str, ...], tuple[int, int]] = {}
        for pkey, gang in gangs.items():
            d, c = totals.get(gang.key, (0, 0))
            dd, cc = sizes.get(pkey, (0, 0))
            totals[gang.key] = (d + dd, c + cc)

        def key(pod: Pod) -> tuple[int, int, int, str, str]:
            k = key_of(pod)
            gang = gangs.get(k)
            d, c = totals[gang.key] if gang is not None else sizes.get(k, (0, 0))
            return (-d, -c, 0 if gang is not None else 1, k[0], k[1])

        return key

    def plan(self, state: ClusterState) -> ScaleUp:
        """Mutates `state` into the planned cluster: new nodes added, pods placed."""
        plan = ScaleUp()
        added: dict[str, int] = {}
        # Pods that fit existing nodes are no reason to scale (filter_out_schedulable).
        self.scheduler.run(state)
        while True:
            pods = pending_pods(state)
            if not pods:
                break
            options = []
            for pool in self.pools:
                room = min(_room(state, pool, added), self._limit_room(state, pool, plan))
                option = self.simulate(state, pool, room, pods)
                if option is not None and option.pods:
                    options.append(option)
            if not options:
                break
            best = choose(options, self.expanders)
            before = {key_of(p) for p in pods}
            for r in self.apply(state, best):
                if r.node and r.key in before:
                    plan.placed[r.key] = r.node
            names = {n.node.metadata.name for n in best.nodes}
            best.pods = sorted(k for k in before if plan.placed.get(k) in names)
            best.intended = {}
            for k in best.pods:
                best.intended.setdefault(plan.placed[k], []).append(k)
            plan.options.append(best)
            added[best.pool.metadata.name] = added.get(best.pool.metadata.name, 0) + len(best.nodes)
        return plan
