"""What-if placements on a fork of the state: which running pods to move so a node frees up for
a pending pod (defragmentation), and how many members of a gang fit together.

Every simulation runs in a fork that is reverted, so the state is unchanged afterwards; moved
pods go where the real scheduler puts them, under the scale-down rules (a claim shared with a
pod that stays cannot move, running gangs are never broken, only pods Cluster Autoscaler would
move with its default flags, PodDisruptionBudgets included: `drain.movable`).

A moved pod goes to the cheapest nodes that take it: nodes are tried in tiers of what they
cost per hour (cluster.nodepools.price_per_hour), cheapest first; nodes nothing prices come
after every priced one, smaller ones (allocatable cpu, then memory) first, since a smaller
node of a cluster costs less. Within a tier the scheduler chooses, as it would.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import msgspec

from draplan.api.core_v1 import Pod
from draplan.autoscaler.drain import Budgets, DrainOptions, movable
from draplan.cluster.nodepools import price_per_hour
from draplan.cluster.podresources import is_terminal, node_allocatable
from draplan.cluster.state import ClusterState, ObjectKey
from draplan.scheduler import Scheduler
from draplan.scheduler.claims import held_claims, release_claims
from draplan.scheduler.gangs import Gang

MAX_MOVED = 3  # pods moved off one node at most: a bigger plan is no longer "a few moves"
MAX_TRIES = 16  # sets of pods tried per node, so one audit stays bounded
DRAIN = DrainOptions()  # a move is one CA would make with its default flags


def label(key: ObjectKey) -> str:
    return f"{key[0]}/{key[1]}"


def unlabel(text: str) -> ObjectKey:
    """The key a `label` names."""
    namespace, _, name = text.partition("/")
    return (namespace, name)


def release(state: ClusterState, keys: set[ObjectKey]) -> str:
    """scheduler.claims.release_claims over the claims of `keys` only, found through the pods
    (not by walking every claim)."""
    return release_claims(state, keys, [c for k in sorted(keys) for c in held_claims(state, k)])


class Mover:
    def __init__(
        self,
        state: ClusterState,
        scheduler: Scheduler,
        gangs: dict[ObjectKey, Gang],
        by_price: bool = True,
        fixed: frozenset[ObjectKey] = frozenset(),
    ):
        """`by_price`: a moved pod goes to the cheapest node that takes it, not where the
        scheduler would score it best; `fixed`: pods that must not move (say, placed by a
        plan but not running yet)."""
        self.state = state
        self.scheduler = scheduler
        self.gangs = gangs
        self.by_price = by_price
        self.fixed = fixed
        self.budgets = Budgets(state)  # lowered by the moves kept
        self._on_node: dict[str, list[ObjectKey]] | None = None
        self._tiers: list[list[str]] | None = None

    def pods_on(self, node: str) -> list[ObjectKey]:
        """The pods running on `node`: indexed once, on the first call; a pod moved or placed
        since is not counted (a fix already counts on where it is)."""
        if self._on_node is None:
            index: dict[str, list[ObjectKey]] = {}
            bound = [
                (k, p)
                for k, p in self.state.pods.items()
                if p.spec.node_name and not is_terminal(p)
            ]
            for key, pod in sorted(bound, key=lambda kp: kp[0]):
                index.setdefault(pod.spec.node_name, []).append(key)
            self._on_node = index
        pods = self.state.pods
        return [
            k for k in self._on_node.get(node, []) if k in pods and pods[k].spec.node_name == node
        ]

    def tiers(self) -> list[list[str]]:
        """The nodes grouped by what they cost, cheapest first (see the module's note)."""
        if self._tiers is None:
            groups: dict[tuple[int, float, int, int], list[str]] = {}
            for name, node in sorted(self.state.nodes.items()):
                price = price_per_hour(self.state, node)
                alloc = node_allocatable(node)
                size = (alloc.get("cpu", 0), alloc.get("memory", 0))
                key = (0, price, 0, 0) if price is not None else (1, 0.0, *size)
                groups.setdefault(key, []).append(name)
            self._tiers = [groups[k] for k in sorted(groups)]
        return self._tiers

    def place_cheaply(self, pod: Pod, away_from: str) -> str | None:
        """Place a moved pod on the cheapest tier that takes it, never back on `away_from`
        (which the caller has cordoned in its fork)."""
        state = self.state
        tiers = self.tiers()
        if len(tiers) == 1 or not self.by_price:
            result = self.scheduler.schedule_pod(state, pod)
            return result.node if result.node != away_from else None
        for tier in tiers:
            candidates = [n for n in tier if n != away_from and n in state.nodes]
            if candidates:
                result = self.scheduler.schedule_pod(state, pod, candidates)
                if result.node is not None:
                    return result.node
        return None

    def _held(self, key: ObjectKey) -> int:
        """Devices allocated to the pod's claims."""
        return sum(
            len(c.status.allocation.devices.results)
            for c in held_claims(self.state, key)
            if c.status.allocation is not None
        )

    def _movable(self, node: str) -> list[tuple[int, ObjectKey]]:
        out = []
        for key in self.pods_on(node):
            pod = self.state.pods[key]
            if key in self.gangs or key in self.fixed or not movable(pod, DRAIN, self.budgets):
                continue
            out.append((self._held(key), key))
        return sorted(out)

    def defragment(
        self, pod: Pod, node: str, deficit: int, keep: bool = False
    ) -> dict[str, str] | None:
        """The fewest running pods to move off `node` (holding at least `deficit` devices
        together) so that `pod` fits there and each moved pod fits elsewhere: {pod: new node}.
        With `keep`, the moves found stay made in the state (the pod placed, the moved pods
        on their new nodes, `node` cordoned so nothing else counts on it)."""
        movable = self._movable(node)
        tries = 0
        for size in range(1, min(MAX_MOVED, len(movable)) + 1):
            for combo in combinations(movable, size):
                if sum(held for held, _ in combo) < deficit:
                    continue
                if self.budgets.blocking([self.state.pods[k] for _, k in combo]) is not None:
                    continue  # together they would take a budget below what it allows
                tries += 1
                if tries > MAX_TRIES:
                    return None
                moved = self._try(pod, node, [key for _, key in combo], keep)
                if moved is not None:
                    return moved
        return None

    def _try(self, pod: Pod, node: str, keys: list[ObjectKey], keep: bool) -> dict[str, str] | None:
        state = self.state
        state.fork()
        moved = None
        try:
            moved = self._moved(pod, node, keys)
        finally:
            if moved is not None and keep:
                self.budgets.take([state.pods[k] for k in keys])
                state.commit()
            else:
                state.revert()
        return moved

    def _moved(self, pod: Pod, node: str, keys: list[ObjectKey]) -> dict[str, str] | None:
        state = self.state
        if release(state, set(keys)):
            return None
        for key in keys:
            state.unbind_pod(state.pods[key])
        if self.scheduler.schedule_pod(state, pod, [node]).node is None:
            return None
        freed = state.nodes[node]
        cordoned = msgspec.structs.replace(freed.spec, unschedulable=True)
        state.add_node(msgspec.structs.replace(freed, spec=cordoned))  # no move back
        out = {}
        for key in keys:
            target = self.place_cheaply(state.pods[key], node)
            if target is None:
                return None
            out[label(key)] = target
        return out

    def together(self, pods: Sequence[Pod], nodes: list[str] | None = None) -> int:
        """How many of `pods` the scheduler places one after another (on `nodes` only)."""
        with self.state.forked():
            return sum(1 for p in pods if self.scheduler.schedule_pod(self.state, p, nodes).node)

    def best_domain(self, pods: Sequence[Pod], key: str) -> tuple[str, int, int]:
        """The `key` domain where most of `pods` fit together: (domain, fitted, domains)."""
        domains: dict[str, list[str]] = {}
        for name, node in sorted(self.state.nodes.items()):
            value = node.metadata.labels.get(key)
            if value is not None:
                domains.setdefault(value, []).append(name)
        best = ("", 0)
        for value, nodes in sorted(domains.items()):
            fitted = self.together(pods, nodes)
            if fitted > best[1]:
                best = (value, fitted)
        return best[0], best[1], len(domains)
