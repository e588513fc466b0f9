"""What-if placements on a fork of the state: which running pods to move so a node frees up for
a pending pod (defragmentation), and how many members of a gang fit together.

Every simulation runs in a fork that is reverted, so the state is unchanged afterwards; moved
pods go wherever the real scheduler puts them, under the scale-down rules (a claim shared with
a pod that stays cannot move, running gangs are never broken, safe-to-evict is honoured).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

from draplan.api.core_v1 import Pod
from draplan.autoscaler.scaledown import SAFE_TO_EVICT
from draplan.cluster.nodepools import price_per_hour
from draplan.cluster.podresources import is_terminal
from draplan.cluster.state import ClusterState, ObjectKey
from draplan.scheduler import Scheduler
from draplan.scheduler.claims import release_claims
from draplan.scheduler.gangs import Gang

MAX_MOVED = 3  # pods moved off one node at most: a bigger plan is no longer "a few moves"
MAX_TRIES = 16  # sets of pods tried per node, so one audit stays bounded


def label(key: ObjectKey) -> str:
    return f"{key[0]}/{key[1]}"


def price_tiers(state: ClusterState) -> list[list[str]]:
    """Node names grouped by price per hour, cheapest first; nodes without a price last."""
    tiers: dict[float, list[str]] = {}
    for name, node in sorted(state.nodes.items()):
        price = price_per_hour(state, node)
        tiers.setdefault(math.inf if price is None else price, []).append(name)
    return [tiers[p] for p in sorted(tiers)]


class Mover:
    def __init__(
        self,
        state: ClusterState,
        scheduler: Scheduler,
        gangs: dict[ObjectKey, Gang],
        by_price: bool = False,
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
        self._on_node: dict[str, list[ObjectKey]] | None = None
        self._tiers: list[list[str]] | None = None

    def pods_on(self, node: str) -> list[ObjectKey]:
        """Running pods per node, indexed once (audits run on one unchanging state)."""
        if self._on_node is None:
            index: dict[str, list[ObjectKey]] = {}
            for key, pod in sorted(self.state.pods.items()):
                if pod.spec.node_name and not is_terminal(pod):
                    index.setdefault(pod.spec.node_name, []).append(key)
            self._on_node = index
        return self._on_node.get(node, [])

    def _held(self, key: ObjectKey) -> int:
        """Devices allocated to the pod's claims."""
        pod = self.state.pods[key]
        ns = pod.metadata.namespace
        names = {r.resource_claim_name or "" for r in pod.spec.resource_claims}
        names |= {s.resource_claim_name or "" for s in pod.status.resource_claim_statuses}
        total = 0
        for name in names - {""}:
            claim = self.state.claims.get((ns, name))
            if claim is not None and claim.status.allocation is not None:
                total += len(claim.status.allocation.devices.results)
        return total

    def _movable(self, node: str) -> list[tuple[int, ObjectKey]]:
        out = []
        for key in self.pods_on(node):
            pod = self.state.pods[key]
            if key in self.gangs or key in self.fixed:
                continue
            if pod.metadata.annotations.get(SAFE_TO_EVICT) == "false":
                continue
            out.append((self._held(key), key))
        return sorted(out)

    def defragment(self, pod: Pod, node: str, deficit: int) -> dict[str, str] | None:
        """The fewest running pods to move off `node` (holding at least `deficit` devices
        together) so that `pod` fits there and each moved pod fits elsewhere: {pod: new node}."""
        movable = self._movable(node)
        tries = 0
        for size in range(1, min(MAX_MOVED, len(movable)) + 1):
            for combo in combinations(movable, size):
                if sum(held for held, _ in combo) < deficit:
                    continue
                tries += 1
                if tries > MAX_TRIES:
                    return None
                moved = self._try(pod, node, [key for _, key in combo])
                if moved is not None:
                    return moved
        return None

    def _try(self, pod: Pod, node: str, keys: list[ObjectKey]) -> dict[str, str] | None:
        state = self.state
        with state.forked():
            if release_claims(state, set(keys)):
                return None
            for key in keys:
                state.unbind_pod(state.pods[key])
            if self.scheduler.schedule_pod(state, pod, [node]).node is None:
                return None
            out = {}
            for key in keys:
                target = self._place(state.pods[key])
                if target is None:
                    return None
                out[label(key)] = target
            return out

    def _place(self, pod: Pod) -> str | None:
        """Bind a moved pod where it goes (see `by_price`); None if nowhere."""
        if not self.by_price:
            return self.scheduler.schedule_pod(self.state, pod).node
        if self._tiers is None:
            self._tiers = price_tiers(self.state)  # nodes do not change during an audit
        for tier in self._tiers:
            node = self.scheduler.schedule_pod(self.state, pod, tier).node
            if node is not None:
                return node
        return None

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
