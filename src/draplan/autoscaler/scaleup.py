"""Scale-up as Cluster Autoscaler orchestrates it: gangs first, then the node set, then the
chosen nodes built and every pod placed by the real scheduler.

The seams are Cluster Autoscaler's: `estimator` says how many pods of a class one node of a
pool holds (the template-node probe), `costopt` chooses the node set of least cost on those
numbers, `expanders` ranks options. With least-cost first the node set is the cheapest cover,
exactly when the problem is small; else, up to a size, whole nodes greedily and then the worst
of them chosen again exactly; beyond that, and with other expanders first, class by class
through the expander chain, least-cost looking ahead at what covering the rest of the class
costs. Only then are the chosen nodes built in the state and every pod placed on them by the
scheduler, each pod on its planned node or the first new node that takes it. Gangs go first,
whole, each in one topology domain (a fresh one when no partly filled domain has room).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from draplan.api.core_v1 import Node, Pod
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.resource_v1 import EXTENDED_RESOURCE_PREFIX as EXTENDED_PREFIX
from draplan.autoscaler import costopt
from draplan.autoscaler.derived import MAX_NODES_REASON
from draplan.autoscaler.estimator import Capacities, Capacity, Estimator, PodClass, pod_size
from draplan.autoscaler.existing import ExistingFit
from draplan.autoscaler.expanders import ClassOption, StepValue, choose, choose_by, class_score
from draplan.autoscaler.options import DEFAULT_EXPANDERS, EXPENDABLE_CUTOFF, Limits, Option
from draplan.autoscaler.templates import NewNode, NodeNamer, add_new_node, make_node, pool_size
from draplan.autoscaler.utilization import waste
from draplan.cluster.podresources import is_terminal
from draplan.cluster.podsmemo import PodsIndex, PodsMemo
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import Scheduler
from draplan.scheduler.gangs import Gang, pinned_domains
from draplan.scheduler.queue import priority_of, priority_table, waiting_in_queue_order

__all__ = [
    "Capacity",
    "PodClass",
    "ScaleUp",
    "ScaleUpPlanner",
    "expendable",
    "pending_pods",
    "scaled_for",
]

# Limits of the exact choice (about a second at most; beyond them the class-by-class choice):
EXACT_STATES = 20_000  # vectors of pods left per class
EXACT_WORK = 400_000  # vectors × node contents
PROBE_BUDGET = 2_000  # placements spent finding node contents, per round
MIXED_GREEDY = 120  # classes × pools up to which least-cost fills whole nodes greedily
MAX_ROUNDS = 8


@dataclass
class ScaleUp:
    """The chosen additions, in the order they were chosen."""

    options: list[Option] = field(default_factory=list)
    placed: dict[ObjectKey, str] = field(default_factory=dict)  # pod -> new node
    reasons: dict[ObjectKey, str] = field(default_factory=dict)  # gang member -> why no pool

    @property
    def nodes_added(self) -> int:
        return sum(len(o.nodes) for o in self.options)

    @property
    def cost_per_hour(self) -> float:
        return sum(o.cost_per_hour for o in self.options)


@dataclass(frozen=True)
class _GangUnit:
    """A gang's pending members as the planner weighs them against each pool."""

    gang: Gang
    classes: list[PodClass]
    keys: set[ObjectKey]
    pinned: str | None  # the domain its running members fix (the first in member order)


def pending_pods(state: ClusterState) -> list[Pod]:
    """Pods waiting for a node, in key order; gated pods are not: no autoscaler scales for
    them."""
    return sorted(waiting_in_queue_order(state), key=key_of)


def scaled_for(state: ClusterState, cutoff: int = EXPENDABLE_CUTOFF) -> list[Pod]:
    """The pending pods Cluster Autoscaler scales for (FilterOutExpendableAndSplit,
    cluster-autoscaler/core/utils): not expendable (priority below `cutoff`) and not waiting
    for a preemption on a node that exists (status.nominatedNodeName: their requests count
    there, as CA adds them to its snapshot on that node)."""
    classes, default = priority_table(state)
    return [
        p
        for p in pending_pods(state)
        if priority_of(p, classes, default) >= cutoff
        and p.status.nominated_node_name not in state.nodes
    ]


def expendable(state: ClusterState, pod: Pod, cutoff: int = EXPENDABLE_CUTOFF) -> bool:
    """Below the cutoff: CA leaves the pod out of its snapshot (IsExpendablePod)."""
    classes, default = priority_table(state)
    return priority_of(pod, classes, default) < cutoff


def _running_priority(state: ClusterState) -> Callable[[Pod], int | None]:
    classes, default = priority_table(state)
    return lambda p: (
        priority_of(p, classes, default) if p.spec.node_name and not is_terminal(p) else None
    )


# The running pods' priorities, looked at again only for the pods changed (`PodsIndex`).
_RUNNING_PRIORITY = PodsIndex(_running_priority)


def _could_preempt(state: ClusterState) -> bool:
    """A waiting pod outranks a running one somewhere: kube-scheduler may preempt."""
    classes, default = priority_table(state)
    lowest = min(_RUNNING_PRIORITY(state).values(), default=None)
    return lowest is not None and any(
        priority_of(p, classes, default) > lowest for p in waiting_in_queue_order(state)
    )


COULD_PREEMPT = PodsMemo(_could_preempt)


def _devices(new: NewNode) -> int:
    return sum(len(rs.spec.devices) for rs in new.slices) + _counted_devices(new.node)


def _counted_devices(node: Node) -> int:
    """Devices a node advertises as extended resource counts (the legacy view has no slices)."""
    alloc = node.status.allocatable or node.status.capacity
    return sum(q.value() for k, q in alloc.items() if k.startswith(EXTENDED_PREFIX))


def _node_devices(state: ClusterState, node: Node) -> int:
    name = node.metadata.name
    local = sum(1 for p in state.pools_for_node(node) for v in p.devices if v.node_name == name)
    return local + _counted_devices(node)


def _price(pool: NodePool) -> float:
    return float(pool.spec.price_per_hour)


class Budget:
    """How many more nodes each pool may get: its maxNodes, then the cluster-wide limits
    (Cluster Autoscaler caps a scale-up at a limit instead of dropping it)."""

    def __init__(
        self,
        state: ClusterState,
        pools: Sequence[NodePool],
        limits: Limits,
        cost: float,
        sizes: Mapping[str, int] | None = None,
    ) -> None:
        """`sizes`: each pool's existing nodes, if the caller counted them (`pool_sizes`)."""
        self.limits = limits
        self.pool_room = {
            p.metadata.name: max(0, p.spec.max_nodes - pool_size(state, p, sizes)) for p in pools
        }
        self.nodes_left = None
        if limits.max_nodes_total is not None:
            self.nodes_left = limits.max_nodes_total - len(state.nodes)
        self.devices_left = None
        if limits.max_devices_total is not None:
            used = sum(_node_devices(state, n) for n in state.nodes.values())
            self.devices_left = limits.max_devices_total - used
        self.cost_left = (
            limits.max_cost_per_hour - cost if limits.max_cost_per_hour is not None else None
        )
        self.per_node = {
            p.metadata.name: _devices(make_node(state, p, f"{p.metadata.name}-template", {}))
            for p in pools
            if self.devices_left is not None
        }

    def room(self, pool: NodePool) -> int:
        name = pool.metadata.name
        room = self.pool_room.get(name, 0)
        if self.nodes_left is not None:
            room = min(room, self.nodes_left)
        if self.devices_left is not None and self.per_node.get(name):
            room = min(room, self.devices_left // self.per_node[name])
        price = _price(pool)
        if self.cost_left is not None and price > 0:
            # A hair of slack: a cap equal to the plan's cost must not lose a node to rounding.
            room = min(room, int((self.cost_left + 1e-9) // price))
        return max(0, room)

    def take(self, pool: NodePool, n: int) -> None:
        name = pool.metadata.name
        self.pool_room[name] = self.pool_room.get(name, 0) - n
        if self.nodes_left is not None:
            self.nodes_left -= n
        if self.devices_left is not None:
            self.devices_left -= n * self.per_node.get(name, 0)
        if self.cost_left is not None:
            self.cost_left -= n * _price(pool)

    def copy(self) -> Budget:
        other = Budget.__new__(Budget)
        other.__dict__.update(self.__dict__)
        other.pool_room = dict(self.pool_room)
        return other


class ScaleUpPlanner:
    """Plans node additions for the pending pods of a state, with one scheduler profile."""

    def __init__(
        self,
        scheduler: Scheduler,
        pools: Sequence[NodePool],
        limits: Limits | None = None,
        expanders: Sequence[str] = DEFAULT_EXPANDERS,
        quiet: Scheduler | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.pools = sorted(pools, key=lambda p: p.metadata.name)
        self.limits = limits or Limits()
        self.expanders = tuple(expanders)
        # Estimates and placements on chosen nodes need no explanation of failures.
        self.estimator = Estimator(scheduler, quiet)
        self.quiet = self.estimator.quiet  # placements on chosen nodes need no explanation
        # Set by an autoscaler that plans one state again and again: the previous plan's
        # placements on existing nodes, repeated where nothing changed.
        self.existing: ExistingFit | None = None
        # Set by a caller that counted every pool's existing nodes of the state `node_set` is
        # asked on (`pool_sizes`; the expander's judge, for many options on one state).
        self.pool_sizes: Mapping[str, int] | None = None

    @property
    def capacities(self) -> dict[tuple[str, bytes], Capacity]:
        """The estimator's memo (an autoscaler shares it between plans: pools are fixed)."""
        return self.estimator.capacities

    @capacities.setter
    def capacities(self, memo: dict[tuple[str, bytes], Capacity]) -> None:
        self.estimator.capacities = memo

    def classes(self, state: ClusterState, pods: Sequence[Pod]) -> list[PodClass]:
        return self.estimator.classes(state, pods)

    def capacity(
        self, state: ClusterState, pool: NodePool, classes: Sequence[PodClass]
    ) -> list[Capacity]:
        return self.estimator.capacity(state, pool, classes)

    def helpable(self, state: ClusterState, pool: NodePool, pods: list[Pod]) -> list[Pod]:
        return self.estimator.helpable(state, pool, pods)

    # --- the plan --------------------------------------------------------------------------

    def plan(self, state: ClusterState) -> ScaleUp:
        """Mutates `state` into the planned cluster: new nodes added, pods placed."""
        plan = ScaleUp()
        # Pods that fit existing nodes are no reason to scale (filter_out_schedulable); nor
        # are those kube-scheduler places there by preemption: by the time CA looks, they are
        # nominated (it ignores them), their victims evicted.
        if state.nodes:
            if COULD_PREEMPT(state):
                with self.scheduler.post_filtering():
                    self.scheduler.run(state, placements_only=True)
            elif self.existing is not None:
                self.existing.run(state, self.scheduler)
            else:
                self.scheduler.run(state, placements_only=True)
        for _ in range(MAX_ROUNDS):
            pods = scaled_for(state, self.limits.expendable_priority_cutoff)
            if not pods or not self._round(state, pods, plan):
                break
        return plan

    def plan_pods(self, state: ClusterState, pods: Sequence[Pod]) -> ScaleUp:
        """New nodes for `pods` alone, pending pods of `state` that no existing node takes (as
        Cluster Autoscaler hands an expander); mutates `state` like `plan`."""
        plan = ScaleUp()
        keys = sorted({key_of(p) for p in pods})
        for _ in range(MAX_ROUNDS):
            left = [state.pods[k] for k in keys if not state.pods[k].spec.node_name]
            if not left or not self._round(state, left, plan):
                break
        return plan

    def _round(self, state: ClusterState, pods: list[Pod], plan: ScaleUp) -> bool:
        """One round: gangs, then the other pods; whether it placed any pod."""
        budget = Budget(state, self.pools, self.limits, plan.cost_per_hour)
        gangs, solo = self._units(state, pods)
        before = len(plan.placed)
        for gang, members in gangs:
            self._plan_gang(state, gang, members, plan, budget)
        if solo and self.pools:  # no pool, no class to weigh
            self.estimator.new_round()
            self._plan_classes(state, self.classes(state, solo), plan, budget)
        return len(plan.placed) != before

    def _units(
        self, state: ClusterState, pods: list[Pod]
    ) -> tuple[list[tuple[Gang, list[Pod]]], list[Pod]]:
        """Gangs (with their pending members, biggest first) and the other pods."""
        found = self.scheduler.gangs_of(state)
        if not found:
            return [], pods
        units: dict[tuple[str, ...], tuple[Gang, list[Pod]]] = {}
        solo = []
        for pod in pods:
            gang = found.get(key_of(pod))
            if gang is None:
                solo.append(pod)
            else:
                units.setdefault(gang.key, (gang, []))[1].append(pod)

        def size(unit: tuple[Gang, list[Pod]]) -> tuple[int, int, tuple[str, ...]]:
            sizes = [pod_size(state, p) for p in unit[1]]
            return (-sum(s[0] for s in sizes), -sum(s[1] for s in sizes), unit[0].key)

        return sorted(units.values(), key=size), solo

    # --- gangs -----------------------------------------------------------------------------

    def _plan_gang(
        self, state: ClusterState, gang: Gang, members: list[Pod], plan: ScaleUp, budget: Budget
    ) -> None:
        """All of the gang on new nodes of one pool (in one domain), or nothing and why."""
        options = []
        why = []
        # What does not depend on the pool: the members' classes, keys and pinned domain.
        classes = self.classes(state, members)
        keys = {key_of(p) for p in members}
        pinned = pinned_domains(state, gang, keys)
        unit = _GangUnit(gang, classes, keys, pinned[0] if pinned else None)
        for pool in self.pools:
            option, reason = self._gang_option(state, unit, pool, budget)
            if option is not None:
                options.append(option)
            elif reason:
                why.append(reason)
        if not options:
            text = "; ".join(why) or "no NodePool can fit its pods"
            for pod in members:
                plan.reasons[key_of(pod)] = text
            return
        best = choose(options, self.expanders)
        for new in best.nodes:
            add_new_node(state, new)
        budget.take(best.pool, len(best.nodes))
        wanted = {key_of(p) for p in members}
        results = self.scheduler.run(state, only=wanted, placements_only=True)
        placed = {r.key: r.node for r in results if r.node}
        self._record(plan, best, placed)

    def _gang_option(
        self, state: ClusterState, unit: _GangUnit, pool: NodePool, budget: Budget
    ) -> tuple[Option | None, str]:
        """The gang on new nodes of `pool`, as many as the estimate says (one more while the
        scheduler refuses, within limits), all in one domain; else why not."""
        gang, classes, keys, pinned = unit.gang, unit.classes, unit.keys, unit.pinned
        name = pool.metadata.name
        need = 0
        for cls, cap in zip(classes, self.capacity(state, pool, classes), strict=True):
            if not cap.pods:
                return None, ""  # a member does not fit its nodes at all
            need += math.ceil(cls.count / cap.pods)
        rule = None
        if gang.topology is not None:
            rule = next((t for t in pool.spec.topology if t.key == gang.topology.key), None)
            if rule is None and gang.topology.required:
                return None, f"{name} does not label its nodes with {gang.topology.key}"
        where = f" in one {rule.key} domain" if rule is not None else ""
        room = budget.room(pool)
        limit = room
        if rule is not None and rule.nodes_per_domain:
            limit = min(limit, rule.nodes_per_domain)
            if need > rule.nodes_per_domain:
                return None, (
                    f"needs {need} nodes{where} of {name}; at most {rule.nodes_per_domain} "
                    "per domain"
                )
        if need > room:
            cap_text = (
                pool_limit(pool)
                if room == budget.pool_room.get(name, 0)
                else f"cluster limits allow {room} more"
            )
            return None, f"needs {need} nodes{where} of {name}; {cap_text}"
        # One class per node is the estimate's worst case; a node or two more covers what it
        # cannot see (say, a member placed apart), and trying more would not end.
        limit = min(limit, need + 2)
        while True:
            with state.forked():
                namer = NodeNamer(state, pool)
                domains = {}
                if rule is not None:
                    domain = namer.domain_for(rule.key, need, pinned)
                    if domain is None:
                        return None, (
                            f"needs {need} nodes{where} of {name}; its domain has no room"
                        )
                    domains[rule.key] = domain
                nodes = []
                for _ in range(need):
                    node_name, labels = namer.next(domains)
                    new = make_node(state, pool, node_name, labels)
                    add_new_node(state, new)
                    nodes.append(new)
                results = self.scheduler.run(state, only=keys, placements_only=True)
                placed = {r.key: r.node for r in results if r.node}
                if placed:  # the scheduler binds a gang only when it is complete
                    used = set(placed.values())
                    kept = [n for n in nodes if n.node.metadata.name in used]
                    return (
                        Option(
                            pool,
                            kept,
                            sorted(placed),
                            waste(state, [n.node for n in kept]),
                            sum(_devices(n) for n in kept),
                        ),
                        "",
                    )
                message = next((r.reason.message for r in results if r.reason), "")
            if need >= limit:
                return None, f"{name}: {need} new nodes{where} do not hold it ({message})"
            need += 1

    # --- classes ---------------------------------------------------------------------------

    def _plan_classes(
        self, state: ClusterState, classes: list[PodClass], plan: ScaleUp, budget: Budget
    ) -> None:
        """Choose nodes for the classes (see the module's docstring) and build them."""
        caps: Capacities = {}
        for pool in self.pools:
            if budget.room(pool) <= 0:
                continue
            for i, cap in enumerate(self.capacity(state, pool, classes)):
                if cap.pods:
                    caps[pool.metadata.name, i] = cap
        served = [
            i for i in range(len(classes)) if any((p.metadata.name, i) in caps for p in self.pools)
        ]
        if not served:
            return  # no pool takes any of them: they stay pending
        if len(served) < len(classes):
            classes, caps = _restrict(classes, caps, served)
        nodes = None
        if self.expanders[0] == "least-cost":
            nodes, limited = self._cheapest(state, classes, caps, budget)
            greedy = None
            if (nodes is None or limited) and len(classes) * len(self.pools) <= MIXED_GREEDY:
                own = costopt.own_costs(len(classes), self.pools, _price, _per_node(caps))
                greedy = self._by_node(state, classes, caps, own, budget.copy())
                if greedy is not None:
                    greedy = self._improve(state, classes, caps, own, budget, greedy)
            if nodes is None or (greedy is not None and _cost(greedy) < _cost(nodes) - 1e-9):
                nodes = greedy
        if nodes is not None:
            self._build_nodes(state, classes, nodes, plan, budget)
            return
        share = self._by_class(classes, caps, budget.copy())
        for pool in self.pools:
            batches = [
                (classes[i], share[pool.metadata.name, i])
                for i in range(len(classes))
                if (pool.metadata.name, i) in share
            ]
            if batches:
                self._build(state, pool, [], batches, plan, budget)

    def _by_class(
        self, classes: list[PodClass], caps: Capacities, budget: Budget
    ) -> dict[tuple[str, int], list[Pod]]:
        """Class by class, big first: the expander chain picks a pool for as much of the class
        as the pool may take; least-cost counts what covering the rest would cost. Returns
        the pods per (pool name, class)."""
        share: dict[tuple[str, int], list[Pod]] = {}
        for i, cls in enumerate(classes):
            left = cls.count
            while left:
                options = []
                for pool in self.pools:
                    cap = caps.get((pool.metadata.name, i))
                    room = budget.room(pool)
                    if cap is None or room <= 0:
                        continue
                    per = min(cap.pods, left)
                    take = min(left, room * per)
                    nodes = math.ceil(take / per)
                    rest, rest_cost = self._cover(i, left - take, caps, budget, pool, nodes)
                    cost = nodes * _price(pool) + rest_cost
                    options.append(ClassOption(pool, take, nodes, cap.waste, cost, rest))
                if not options:
                    break
                best = choose_by(
                    options, self.expanders, class_score, lambda o: o.pool.metadata.name
                )
                start = cls.count - left
                share.setdefault((best.pool.metadata.name, i), []).extend(
                    cls.pods[start : start + best.pods]
                )
                budget.take(best.pool, best.nodes)
                left -= best.pods
        return share

    def _by_node(
        self,
        state: ClusterState,
        classes: list[PodClass],
        caps: Capacities,
        own: list[float],
        budget: Budget,
    ) -> list[tuple[NodePool, tuple[int, ...]]] | None:
        """Least-cost when the exact choice is out of reach: whole nodes greedily
        (`costopt.cover_greedily`), each node's pods the ones the scheduler fits on one template
        node of its pool. None if some pod is left over (the class-by-class choice then says
        why). `own`: the pods' own costs (`costopt.own_costs`)."""
        return costopt.cover_greedily(
            [c.count for c in classes],
            self.pools,
            _price,
            _name,
            budget.room,
            budget.take,
            lambda pool, left, order: self.estimator.fill(state, pool, classes, caps, left, order),
            own,
        )

    def _improve(
        self,
        state: ClusterState,
        classes: list[PodClass],
        caps: Capacities,
        own: list[float],
        budget: Budget,
        chosen: list[tuple[NodePool, tuple[int, ...]]],
    ) -> list[tuple[NodePool, tuple[int, ...]]]:
        """A greedy choice's worst nodes chosen again exactly (`costopt.improve`)."""

        def solve(
            dims: list[int], counts: list[int], kept: list[tuple[NodePool, tuple[int, ...]]]
        ) -> list[tuple[NodePool, tuple[int, ...]]] | None:
            full = [0] * len(classes)
            for d, n in zip(dims, counts, strict=True):
                full[d] = n
            part, part_caps = _restrict(classes, caps, dims, full)
            room = budget.copy()
            for pool, _ in kept:
                room.take(pool, 1)
            return self._cheapest(state, part, part_caps, room)[0]

        return costopt.improve(chosen, own, _price, EXACT_STATES, solve)

    def _cover(
        self,
        i: int,
        left: int,
        caps: Capacities,
        budget: Budget,
        used: NodePool,
        used_nodes: int,
    ) -> tuple[int, float]:
        """(pods left uncovered, cost) of covering `left` pods of class `i` with the cheapest
        pods first, after `used_nodes` nodes of `used` (`costopt.cover_rest`)."""
        offers = []
        for pool in self.pools:
            cap = caps.get((pool.metadata.name, i))
            if cap is not None:
                room = budget.room(pool) - (used_nodes if pool is used else 0)
                offers.append((_price(pool), cap.pods, room, pool.metadata.name))
        return costopt.cover_rest(left, offers)

    def _cheapest(
        self,
        state: ClusterState,
        classes: list[PodClass],
        caps: Capacities,
        budget: Budget,
    ) -> tuple[list[tuple[NodePool, tuple[int, ...]]] | None, bool]:
        """The cheapest set of nodes holding every pod of the classes, exactly: a dynamic
        programme over the vectors of pods left per class, whose steps are the node contents
        the scheduler accepted on one template node of each pool. Ties go down the expander
        chain, then to fewer nodes and earlier pool names. Limits are not in the programme: pools
        an answer overruns are left out and it is solved again, which the second value says
        (the caller then weighs a greedy use of those pools up to their limits). None when the
        problem is too big for it."""
        counts = [c.count for c in classes]
        states = math.prod(n + 1 for n in counts)
        if states > EXACT_STATES:
            return None, False
        steps: list[tuple[NodePool, tuple[int, ...], int]] = []
        spent = 0
        value = StepValue(self.expanders, self.pools, sum(counts))
        for pool in self.pools:
            if not any((pool.metadata.name, i) in caps for i in range(len(classes))):
                continue
            found = self.estimator.contents(state, pool, classes, caps, PROBE_BUDGET - spent)
            if found is None:
                return None, False
            contents, calls = found
            spent += calls
            for content, used in contents:
                steps.append((pool, content, value(pool, used)))
        limited = False
        while steps and states * len(steps) <= EXACT_WORK:
            picked = costopt.cover_exactly(counts, [(c, v) for _, c, v in steps])
            chosen = None if picked is None else [(steps[s][0], cut) for s, cut in picked]
            if chosen is None:
                break
            over = _overrun(chosen, self.pools, budget)
            if not over:
                return chosen, limited
            limited = True
            steps = [st for st in steps if st[0].metadata.name not in over]
        return None, limited

    # --- building the chosen nodes ---------------------------------------------------------

    def _build_nodes(
        self,
        state: ClusterState,
        classes: list[PodClass],
        chosen: list[tuple[NodePool, tuple[int, ...]]],
        plan: ScaleUp,
        budget: Budget,
    ) -> None:
        """The exact choice's nodes, each given the pods of its content."""
        taken = [0] * len(classes)
        for pool in self.pools:
            contents = [c for p, c in chosen if p is pool]
            if not contents:
                continue
            per_node: list[list[tuple[bytes, Pod]]] = []
            for content in sorted(contents, reverse=True):
                pods: list[tuple[bytes, Pod]] = []
                for i, n in enumerate(content):
                    shape = classes[i].shape
                    pods.extend((shape, p) for p in classes[i].pods[taken[i] : taken[i] + n])
                    taken[i] += n
                per_node.append(pods)
            self._build(state, pool, per_node, [], plan, budget)

    def _build(
        self,
        state: ClusterState,
        pool: NodePool,
        per_node: list[list[tuple[bytes, Pod]]],
        batches: list[tuple[PodClass, list[Pod]]],
        plan: ScaleUp,
        budget: Budget,
    ) -> None:
        """Add nodes of `pool` and let the scheduler place pods on them: `per_node` pods (each
        with its class's shape) on a node each; then `batches` (and any pod a node refused)
        one class after another, each pod on the first new node that takes it, a new node when
        none does.

        A node that refused a pod of the class is not asked again (it only gets fuller), nor
        is any node identical to it: same domain and the same pods, counted per shape."""
        namer = NodeNamer(state, pool)
        nodes: list[NewNode] = []
        placed: dict[ObjectKey, str] = {}
        refused: list[Pod] = []
        domains: dict[str, tuple[tuple[str, str], ...]] = {}
        held: dict[str, dict[bytes, int]] = {}  # node -> its pods per shape

        def kind(name: str) -> tuple[object, ...]:
            return (domains[name], *sorted(held[name].items()))

        def add() -> str:
            name, labels = namer.next()
            new = make_node(state, pool, name, labels)
            add_new_node(state, new)
            budget.take(pool, 1)
            nodes.append(new)
            domains[name] = tuple(sorted(labels.items()))
            held[name] = {}
            return name

        def place(pod: Pod, shape: bytes, name: str) -> bool:
            if self.quiet.schedule_pod(state, pod, [name]).node is None:
                return False
            placed[key_of(pod)] = name
            held[name][shape] = held[name].get(shape, 0) + 1
            return True

        for content in per_node:
            if budget.room(pool) <= 0:
                refused.extend(pod for _, pod in content)
                continue
            name = add()
            for shape, pod in content:
                if not place(pod, shape, name):
                    refused.append(pod)
        if refused:
            batches = [*batches, *((c, c.pods) for c in self.classes(state, refused))]
        for cls, pods in batches:
            start = 0
            full: set[tuple[object, ...]] = set()  # kinds of node that refused this class
            for pod in pods:
                while start < len(nodes):
                    name = nodes[start].node.metadata.name
                    if kind(name) not in full:
                        if place(pod, cls.shape, name):
                            break
                        full.add(kind(name))
                    start += 1
                if start < len(nodes):
                    continue
                if budget.room(pool) <= 0:
                    break
                name = add()
                if not place(pod, cls.shape, name):
                    break  # not even an empty node takes it: the class stays pending
        used = set(placed.values())
        for new in [n for n in nodes if n.node.metadata.name not in used]:
            state.remove_node(new.node.metadata.name)  # every pod it was built for went elsewhere
            budget.take(pool, -1)
            nodes.remove(new)
        if nodes:
            option = Option(
                pool,
                nodes,
                [],
                waste(state, [n.node for n in nodes]),
                sum(_devices(n) for n in nodes),
            )
            self._record(plan, option, placed)

    def _record(self, plan: ScaleUp, option: Option, placed: dict[ObjectKey, str]) -> None:
        names = {n.node.metadata.name for n in option.nodes}
        option.pods = sorted(k for k, node in placed.items() if node in names)
        option.intended = {}
        for k in option.pods:
            option.intended.setdefault(placed[k], []).append(k)
        plan.placed.update((k, placed[k]) for k in option.pods)
        plan.options.append(option)

    # --- the node set alone -------------------------------------------------------------------

    def units(self, state: ClusterState, pods: list[Pod]) -> tuple[list[Gang], list[Pod]]:
        """The gangs among `pods` (as the scheduler groups them) and the other pods."""
        gangs, solo = self._units(state, pods)
        return [g for g, _ in gangs], solo

    def node_set(
        self, state: ClusterState, classes: list[PodClass]
    ) -> list[tuple[NodePool, tuple[int, ...]]] | None:
        """Nodes (a pool and the pods per class it holds) for every pod of `classes`, within
        the pools' room, without building them: whole nodes greedily, else the exact choice;
        each content was placed by the scheduler on a template node (`estimator`), so nodes
        of one content are interchangeable. None when the pools cannot hold them all."""
        caps: Capacities = {}
        for pool in self.pools:
            for i, cap in enumerate(self.capacity(state, pool, classes)):
                if cap.pods:
                    caps[pool.metadata.name, i] = cap
        if not all(
            any((p.metadata.name, i) in caps for p in self.pools) for i in range(len(classes))
        ):
            return None
        self.estimator.new_round()
        own = costopt.own_costs(len(classes), self.pools, _price, _per_node(caps))
        budget = Budget(state, self.pools, self.limits, 0.0, self.pool_sizes)
        chosen = self._by_node(state, classes, caps, own, budget.copy())
        if chosen is None:
            chosen, _ = self._cheapest(state, classes, caps, budget)
        return chosen

    # --- one pool on its own ---------------------------------------------------------------

    def simulate(self, state: ClusterState, pool: NodePool, pods: list[Pod]) -> Option | None:
        """What adding nodes of `pool` (up to its maxNodes, no cluster-wide limits) alone does
        for `pods`; `state` is kept."""
        budget = Budget(state, [pool], Limits(), 0.0)
        if budget.room(pool) <= 0:
            return None
        classes = self.classes(state, pods)
        plan = ScaleUp()
        with state.forked():
            self._build(state, pool, [], [(c, c.pods) for c in classes], plan, budget)
        return plan.options[0] if plan.options and plan.options[0].pods else None


def pool_limit(pool: NodePool) -> str:
    """What stops a pool at its size: its maxNodes, or what makes its size fixed (a derived
    pool that is one multi-host slice says so)."""
    reason = pool.metadata.annotations.get(MAX_NODES_REASON)
    limit = f"pool max reached at {pool.spec.max_nodes}"
    return f"{limit}: {reason}" if reason else limit


def _restrict(
    classes: Sequence[PodClass],
    caps: Capacities,
    keep: list[int],
    counts: Sequence[int] | None = None,
) -> tuple[list[PodClass], Capacities]:
    """The classes numbered `keep` (ascending), each cut to its first `counts[i]` pods when
    `counts` is given, with their capacities renumbered 0, 1, … in that order."""
    index = {i: n for n, i in enumerate(keep)}
    if counts is None:
        part = [classes[i] for i in keep]
    else:
        part = [
            PodClass(classes[i].shape, classes[i].pods[: counts[i]], classes[i].size) for i in keep
        ]
    return part, {(name, index[i]): cap for (name, i), cap in caps.items() if i in index}


def _cost(nodes: Sequence[tuple[NodePool, tuple[int, ...]]]) -> float:
    return costopt.cost(nodes, _price)


def _name(pool: NodePool) -> str:
    return pool.metadata.name


def _per_node(caps: Capacities) -> Callable[[NodePool, int], int]:
    """How many pods of a class one node of a pool holds (0: none), for `costopt`."""

    def per_node(pool: NodePool, i: int) -> int:
        cap = caps.get((pool.metadata.name, i))
        return cap.pods if cap is not None else 0

    return per_node


def _overrun(
    chosen: Sequence[tuple[NodePool, tuple[int, ...]]], pools: Sequence[NodePool], budget: Budget
) -> set[str]:
    """The pools whose nodes in `chosen` go past what the budget allows."""
    per_pool: dict[str, int] = {}
    for pool, _ in chosen:
        per_pool[pool.metadata.name] = per_pool.get(pool.metadata.name, 0) + 1
    check = budget.copy()
    over = set()
    for pool in pools:
        n = per_pool.get(pool.metadata.name, 0)
        if n > check.room(pool):
            over.add(pool.metadata.name)
        check.take(pool, min(n, check.room(pool)))
    return over
