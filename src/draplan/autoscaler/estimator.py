"""How many nodes of a pool a set of pods needs: Cluster Autoscaler's estimator seam, with the
real scheduler the only judge of fit.

Pending pods fall into equivalence classes, one pod shape each. How many pods of a class one
empty node of a pool holds is found by placing them, with the real scheduler, on one template
node, memoised per pool and shape: under the pool's content and the node it copies, so a memo
kept between plans (as `draplan serve` keeps one) sees a pool derived again differently. The
same probe finds the mixed contents of one node: every maximal way to fill it (for the exact
choice) or one greedy fill in a given class order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from draplan.api.core_v1 import Pod
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.autoscaler.costopt import Content, maximal
from draplan.autoscaler.templates import add_new_node, make_node, node_copy
from draplan.autoscaler.utilization import waste
from draplan.cluster.podresources import pod_requests
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import Scheduler
from draplan.scheduler.claims import ClaimNotFound, pod_claims, requested_devices


@dataclass
class PodClass:
    """Pending pods of one shape: interchangeable for the scheduler."""

    shape: bytes
    pods: list[Pod]
    size: tuple[int, int]  # devices and milli-cpu of one pod (big classes are packed first)

    @property
    def count(self) -> int:
        return len(self.pods)


@dataclass(frozen=True)
class Capacity:
    """What one empty node of a pool does for a class."""

    pods: int  # how many of its pods the scheduler placed there, one after another
    exact: bool  # a pod was refused (else the class ran out of pods first)
    waste: float  # least-waste of that node


Capacities = dict[tuple[str, int], Capacity]  # (pool name, class index) -> what a node holds


def pod_size(state: ClusterState, pod: Pod) -> tuple[int, int]:
    """Devices and milli-cpu of one pod: what "bigger" means when classes are ordered."""
    try:
        devices = requested_devices(pod_claims(state, pod))
    except ClaimNotFound:
        devices = 0
    return devices, pod_requests(pod, state.features).get("cpu", 0)


def fill_limits(pool: NodePool, caps: Capacities, left: list[int]) -> tuple[int, ...]:
    """Per class, the most pods one node of `pool` is filled with: what is left of the class,
    at most what one node holds (0 for a class the pool cannot hold)."""
    name = pool.metadata.name
    return tuple(min(n, caps[name, i].pods) if (name, i) in caps else 0 for i, n in enumerate(left))


class Estimator:
    """Template-node probes with one scheduler, memoised."""

    def __init__(self, scheduler: Scheduler, quiet: Scheduler | None = None) -> None:
        self.scheduler = scheduler
        # Estimates need no explanation of failures.
        self.quiet = quiet or Scheduler(scheduler.profile, gangs=scheduler.gangs, explain=False)
        # What an empty node of a pool holds of a pod shape, by `pool_key` and shape.
        self.capacities: dict[tuple[str, bytes], Capacity] = {}
        self._fills: dict[tuple[object, ...], Content] = {}  # for one round's classes
        self._pool_keys: dict[str, tuple[NodePool, str]] = {}

    def pool_key(self, state: ClusterState, pool: NodePool) -> str:
        """The pool's name and a digest of what its new nodes are made of (its spec, the node
        it copies, cluster-wide changes); read once per pool object (an estimator serves one
        plan, during which nodes are added and pods placed, never a template changed)."""
        name = pool.metadata.name
        hit = self._pool_keys.get(name)
        if hit is not None and hit[0] is pool:
            return hit[1]
        source = state.nodes.get(pool.spec.from_node) if pool.spec.from_node else None
        copied = node_copy(state, source) if source is not None else None
        content = msgspec.msgpack.encode((pool, copied, state.version("*")[0]), enc_hook=str)
        key = f"{name}/{hashlib.blake2b(content, digest_size=16).hexdigest()}"
        self._pool_keys[name] = (pool, key)
        return key

    def new_round(self) -> None:
        """Forget the fills: they are keyed by the round's class numbering."""
        self._fills.clear()

    def classes(self, state: ClusterState, pods: Sequence[Pod]) -> list[PodClass]:
        """`pods` by shape, big classes first (Cluster Autoscaler's DecreasingPodOrderer; size
        counts devices before cpu)."""
        groups: dict[bytes, list[Pod]] = {}
        for pod in pods:
            groups.setdefault(self.scheduler.shape_of(state, pod), []).append(pod)
        out = []
        for shape, members in groups.items():
            members.sort(key=key_of)
            out.append(PodClass(shape, members, pod_size(state, members[0])))
        out.sort(key=lambda c: (-c.size[0], -c.size[1], key_of(c.pods[0])))
        return out

    def probe_name(self, state: ClusterState, pool: NodePool) -> tuple[str, dict[str, str]]:
        """The name and topology labels of the node `probe_node` adds."""
        name = f"{pool.metadata.name}-estimate"
        while name in state.nodes:
            name += "-x"
        return name, {t.key: f"{pool.metadata.name}-estimate" for t in pool.spec.topology}

    def probe_node(self, state: ClusterState, pool: NodePool) -> str:
        """Add one empty node of `pool` (in a fork the caller reverts) and return its name."""
        name, labels = self.probe_name(state, pool)
        add_new_node(state, make_node(state, pool, name, labels))
        return name

    def capacity(
        self, state: ClusterState, pool: NodePool, classes: Sequence[PodClass]
    ) -> list[Capacity]:
        """How many pods of each class the real scheduler places, one after another, on one
        empty node of `pool` (one template node serves every class not yet known)."""
        out: list[Capacity | None] = []
        memo_key = self.pool_key(state, pool)
        for cls in classes:
            hit = self.capacities.get((memo_key, cls.shape))
            out.append(hit if hit is not None and (hit.exact or hit.pods >= cls.count) else None)
        if any(c is None for c in out):
            with state.forked():
                name = self.probe_node(state, pool)
                for i, cls in enumerate(classes):
                    if out[i] is not None:
                        continue
                    with state.forked():
                        placed = self.place_while_taken(state, name, cls.pods, cls.count)
                        used = waste(state, [state.nodes[name]]) if placed else 1.0
                    cap = Capacity(placed, placed < cls.count, used)
                    self.capacities[memo_key, cls.shape] = cap
                    out[i] = cap
        return [c for c in out if c is not None]

    def place_while_taken(
        self, state: ClusterState, name: str, pods: Sequence[Pod], limit: int
    ) -> int:
        """Place the first `limit` of `pods` on the probe node `name`, one after another, until
        the scheduler refuses one; how many it took."""
        placed = 0
        while (
            placed < limit and self.quiet.schedule_pod(state, pods[placed], [name]).node is not None
        ):
            placed += 1
        return placed

    def helpable(self, state: ClusterState, pool: NodePool, pods: list[Pod]) -> list[Pod]:
        """Pods that would fit alone on one empty node of `pool` (gangs ignored)."""
        out = []
        for cls in self.classes(state, pods):
            # A known capacity is returned whatever the class's count (it is never 0 pods
            # without a refusal); else the node is probed with one pod.
            [hit] = self.capacity(state, pool, [PodClass(cls.shape, cls.pods[:1], cls.size)])
            if hit.pods:
                out.extend(cls.pods)
        return sorted(out, key=key_of)

    def contents(
        self,
        state: ClusterState,
        pool: NodePool,
        classes: list[PodClass],
        caps: Capacities,
        budget: int,
    ) -> tuple[list[tuple[Content, float]], int] | None:
        """The maximal contents (pods per class) of one node of `pool`, with their waste: each
        one placed by the scheduler on a template node, classes in order, one fork per pod so
        that backing off one pod is one revert. None past `budget` placements."""
        usable = [i for i in range(len(classes)) if (pool.metadata.name, i) in caps]
        found: list[tuple[Content, float]] = []
        content = [0] * len(classes)
        calls = 0

        def walk(j: int, name: str) -> bool:
            nonlocal calls
            i = usable[j]
            cls = classes[i]
            limit = min(cls.count, caps[pool.metadata.name, i].pods)
            placed = 0
            while placed < limit:
                if calls >= budget:
                    for _ in range(placed):
                        state.revert()
                    return False
                calls += 1
                state.fork()
                if self.quiet.schedule_pod(state, cls.pods[placed], [name]).node is None:
                    state.revert()
                    break
                placed += 1
            last = j == len(usable) - 1
            for x in range(placed, -1, -1):
                content[i] = x
                if last:
                    if x == placed:  # fewer of the last class is never better
                        found.append((tuple(content), waste(state, [state.nodes[name]])))
                elif not walk(j + 1, name):
                    for _ in range(x):
                        state.revert()
                    content[i] = 0
                    return False
                if x:
                    state.revert()
            content[i] = 0
            return True

        with state.forked():
            ok = walk(0, self.probe_node(state, pool))
        if not ok:
            return None
        return maximal(found), calls

    def fill(
        self,
        state: ClusterState,
        pool: NodePool,
        classes: list[PodClass],
        caps: Capacities,
        left: list[int],
        order: list[int],
    ) -> Content:
        """The pods (per class) the scheduler places on one empty node of `pool`, taking the
        classes in `order`, each as many as fit (at most `left`)."""
        limits = fill_limits(pool, caps, left)
        key = (pool.metadata.name, *limits)
        hit = self._fills.get(key)
        if hit is not None:
            return hit
        content = [0] * len(classes)
        with state.forked():
            name = self.probe_node(state, pool)
            for i in order:
                content[i] = self.place_while_taken(state, name, classes[i].pods, limits[i])
        self._fills[key] = tuple(content)
        return self._fills[key]
