"""What the NodePools can do for a pending pod, from the autoscaler itself: the pool and node
count it waits for, the limit that stops it, or why no pool's node could ever hold it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from draplan.api.core_v1 import Pod
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.audit.reach import allocation_error, relaxed
from draplan.autoscaler import Autoscaler, Plan
from draplan.autoscaler.derived import MAX_NODES_REASON, SLICE_NODES, raise_to
from draplan.autoscaler.moves import unlabel
from draplan.autoscaler.options import Option
from draplan.autoscaler.templates import NodeNamer, add_new_node, make_node, pool_members
from draplan.cluster.state import ClusterState, ObjectKey
from draplan.scheduler import Profile, Scheduler
from draplan.scheduler.claims import ClaimNotFound, pod_claims
from draplan.scheduler.plugins.nodeaffinity import pod_matches_node
from draplan.scheduler.reasons import FitReason

WAITING = "WaitingForScaleUp"
LIMITED = "PoolLimitReached"
NO_POOL = "NoPoolCanFit"
# kube-scheduler's frame around one template node's reason.
_ONE_NODE = re.compile(r"^0/1 nodes are available: 1 ")


@dataclass
class PoolVerdict:
    category: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    fix: dict[str, Any] | None = None


def _raised(pool: NodePool, extra: int, domains: bool) -> NodePool:
    """`pool` with room for `extra` more nodes and, with `domains`, unbounded domains."""
    spec = pool.spec
    topology = spec.topology
    if domains:
        topology = tuple(msgspec.structs.replace(t, nodes_per_domain=0) for t in topology)
    spec = msgspec.structs.replace(spec, max_nodes=spec.max_nodes + extra, topology=topology)
    return msgspec.structs.replace(pool, spec=spec)


class PoolAdvisor:
    """One autoscaler plan for the whole state (as `draplan scale` makes it); plans with the
    pools' limits raised are made only when some pod is stopped by a limit, to name the fix."""

    def __init__(
        self,
        state: ClusterState,
        profile: Profile,
        pending: int,
        scheduler: Scheduler | None = None,
    ) -> None:
        """`scheduler`: the audit's, whose evaluations of the state's nodes the plans reuse
        (its random tie-breaks are drawn per pod, so sharing it changes no draw)."""
        self.state = state
        self.profile = profile
        self.pending = pending
        self.scheduler = scheduler
        # With the moves `scale` makes: a node one moved pod spares is not bought.
        plan = self._plan(dict(state.node_pools), moves=True)
        self.options = _by_pod(plan)
        # The price of the node a one-pod move spares, per pod it makes room for.
        self.spared = {unlabel(pod): m.saving for m in plan.moves if m.made for pod in m.place}
        self.reasons = {key: why for key, _, why in plan.pending}
        self._raised: dict[bool, tuple[dict[ObjectKey, Option], dict[str, int]]] = {}
        self._misses: dict[bytes, Misses] = {}
        self._sizes: dict[str, int] = {}

    def _plan(self, pools: dict[str, NodePool], moves: bool = False) -> Plan:
        saved = dict(self.state.node_pools)
        self.state.node_pools.clear()
        self.state.node_pools.update(pools)
        try:
            autoscaler = Autoscaler(self.profile, scheduler=self.scheduler)
            with self.state.forked():
                return autoscaler.plan(self.state, scale_down=False, moves=moves)
        finally:
            self.state.node_pools.clear()
            self.state.node_pools.update(saved)

    def raised(self, domains: bool) -> tuple[dict[ObjectKey, Option], dict[str, int]]:
        """What the autoscaler would do with every maxNodes raised by the number of pending
        pods (no pod needs more than one new node) and, with `domains`, unbounded domains: the
        option per pod, and the nodes added per pool."""
        if domains not in self._raised:
            pools = {
                name: _raised(p, self.pending, domains) for name, p in self.state.node_pools.items()
            }
            # Without moves: this plan only sizes a limit (moves would cost more than it).
            plan = self._plan(pools)
            added: dict[str, int] = {}
            for option in plan.scale_up:
                name = option.pool.metadata.name
                added[name] = added.get(name, 0) + len(option.nodes)
            self._raised[domains] = (_by_pod(plan), added)
        return self._raised[domains]

    def _size(self, pool: NodePool) -> int:
        """The pool's nodes now (a walk over every node: once per pool)."""
        name = pool.metadata.name
        if name not in self._sizes:
            self._sizes[name] = len(pool_members(self.state, pool))
        return self._sizes[name]

    def waiting(self, key: ObjectKey, group: set[ObjectKey]) -> PoolVerdict | None:
        """WaitingForScaleUp when the plan adds nodes for the pod: its share of them, the
        nodes meant for it or its gang (`group`)."""
        option = _option_of(self.options, key, group)
        return _waiting(option, group) if option is not None else None

    def verdict(
        self, key: ObjectKey, pod: Pod, shape: bytes, group: set[ObjectKey]
    ) -> PoolVerdict | None:
        """PoolLimitReached or NoPoolCanFit for a pod the plan adds no node for (nor for the
        rest of its gang, `group`)."""
        why = self.reasons.get(key)
        if why is None or _option_of(self.options, key, group) is not None:
            return None  # the plan places it on an existing node, or adds one for it
        if why.startswith("no NodePool"):
            return self._no_pool(pod, shape, why)
        return self._limited(key, why, group)

    def _limited(self, key: ObjectKey, why: str, group: set[ObjectKey]) -> PoolVerdict:
        evidence: dict[str, Any] = {"autoscaler": why}
        options, added = self.raised(domains=False)
        option = _option_of(options, key, group)
        if option is not None:
            pool = self.state.node_pools[option.pool.metadata.name]
            name = pool.metadata.name
            # Room for every pod the raised plan serves from this pool, not only this one.
            need = self._size(pool) + added[name]
            fixed = pool.metadata.annotations.get(MAX_NODES_REASON)
            if fixed:
                # A size no setting changes (one multi-host TPU slice): another pool is the fix,
                # and a slice comes whole: as many hosts as one has, per slice needed.
                extra = need - self._size(pool)
                hosts = int(pool.metadata.annotations.get(SLICE_NODES, "1"))
                extra = -(-extra // hosts) * hosts
                return PoolVerdict(
                    LIMITED,
                    f"Pool {name} could host it but holds at most {pool.spec.max_nodes} nodes: "
                    f"{fixed}; add a node pool of its kind for it ({extra} node(s)).",
                    evidence,
                    {"action": "add a node pool like it", "pool": name, "add": extra},
                )
            fix: dict[str, Any] = {
                "action": "raise the pool's maxNodes",
                "pool": name,
                "maxNodes": need,
                "add": need - pool.spec.max_nodes,
            }
            # A pool derived from a node group: its maximum is written where that group is.
            where = raise_to(self.state, pool, need)
            words = f"raise maxNodes to {need}" if where is None else where[0]
            if where is not None:
                fix = {**fix, "action": "raise the node group's maximum", **where[1]}
            return PoolVerdict(
                LIMITED,
                f"Pool {name} could host it but stops at maxNodes {pool.spec.max_nodes}; "
                f"{words} so the autoscaler can add a node for it.",
                evidence,
                fix,
            )
        options, added = self.raised(domains=True)
        option = options.get(key)
        if option is not None and option.pool.spec.topology:
            name = option.pool.metadata.name
            pool = self.state.node_pools[name]
            topo = pool.spec.topology[0]
            fix = {
                "action": "raise the pool's nodesPerDomain",
                "pool": name,
                "add": len(option.nodes),
                "nodesPerDomain": topo.nodes_per_domain,
                "needed": len(option.nodes),
            }
            also = ""
            need = self._size(pool) + added[name]
            if need > pool.spec.max_nodes:  # both limits bind: name both
                fix["maxNodes"] = need
                also = f" and raise maxNodes to {need}"
            return PoolVerdict(
                LIMITED,
                f"Pool {name} would need {len(option.nodes)} node(s) in one {topo.key} domain "
                f"but its domains hold {topo.nodes_per_domain}; use a pool with larger domains "
                f"or split the gang{also}.",
                evidence,
                fix,
            )
        return PoolVerdict(
            LIMITED,
            f"A NodePool could host it alone but the autoscaler adds nothing for it ({why}).",
            evidence,
        )

    def _no_pool(self, pod: Pod, shape: bytes, why: str) -> PoolVerdict:
        misses = self.misses(pod, shape)
        evidence: dict[str, Any] = {"autoscaler": why, "pools": misses.reasons}
        fix = {"action": "add a NodePool whose nodes fit the pod"}
        # The example is a pool the pod's node selector and affinity admit, if any.
        names = sorted(misses.reasons, key=lambda n: (n not in misses.chosen, n))
        broken = [n for n in names if n in misses.errors]
        if broken and broken[0] in misses.chosen:
            evidence["templateErrors"] = broken
            return PoolVerdict(
                NO_POOL,
                f"No NodePool's node could ever hold it: pool {broken[0]}'s nodes cannot be "
                f"evaluated for it ({misses.errors[broken[0]]}); make the claim's selectors "
                "hold on the pool's devices or add a pool whose nodes offer what it asks for.",
                evidence,
                fix,
            )
        example = f" (pool {names[0]}: {misses.reasons[names[0]]})" if names else ""
        return PoolVerdict(
            NO_POOL,
            f"No NodePool's node could ever hold it{example}; add a pool whose nodes offer "
            "what it asks for.",
            evidence,
            fix,
        )

    def misses(self, pod: Pod, shape: bytes) -> Misses:
        """Per pool, why the pod does not fit one empty node of it (the scheduler's words).
        What the node lacks even with the pod's node constraints set aside comes first: the
        filters stop at a taint, which no toleration fixes on a node that is too small."""
        if shape not in self._misses:
            scheduler = Scheduler(self.profile)
            out = Misses()
            try:
                claims = [c for c in pod_claims(self.state, pod) if c.status.allocation is None]
            except ClaimNotFound:
                claims = []
            for name, pool in sorted(self.state.node_pools.items()):
                with self.state.forked():
                    node, labels = NodeNamer(self.state, pool).next()
                    new = make_node(self.state, pool, node, labels)
                    add_new_node(self.state, new)
                    if pod_matches_node(pod, new.node):
                        out.chosen.add(name)
                    with self.state.forked():
                        result = scheduler.schedule_pod(self.state, relaxed(pod), [node])
                    if result.node is not None:
                        result = scheduler.schedule_pod(self.state, pod, [node])
                    elif claims:
                        error = allocation_error(self.state, new.node, claims, self.profile)
                        if error:
                            out.errors[name] = error
                out.reasons[name] = out.errors.get(name) or _why_not(result.reason, node)
            self._misses[shape] = out
        return self._misses[shape]


@dataclass
class Misses:
    """Why a pod fits no pool's empty node: per pool the scheduler's words, the pools whose
    nodes its node selector and affinity admit (the ones it asks for) and those its claims
    cannot be evaluated on (a CEL runtime error on a template device: upstream's scheduler
    returns an error there)."""

    reasons: dict[str, str] = field(default_factory=dict)
    chosen: set[str] = field(default_factory=set)
    errors: dict[str, str] = field(default_factory=dict)


def _why_not(reason: FitReason | None, node: str) -> str:
    """What the pool's empty node lacks: the filters' words, not the PostFilter plugins'."""
    if reason is None:
        return "it fits"
    detail = reason.evidence.get("allocator", {}).get(node)
    if detail:
        return str(detail["message"]).replace(f" on node {node}", "")
    return _ONE_NODE.sub("", reason.filtered).rstrip(".")


def _by_pod(plan: Plan) -> dict[ObjectKey, Option]:
    return {key: option for option in plan.scale_up for key in option.pods}


def _option_of(
    options: dict[ObjectKey, Option], key: ObjectKey, group: set[ObjectKey]
) -> Option | None:
    """The option that serves the pod, else one that serves its gang (`group`): a gang whose
    other members go to existing nodes waits for the nodes added for the rest."""
    option = options.get(key)
    if option is None:
        option = next((options[k] for k in sorted(group) if k in options), None)
    return option


def _waiting(option: Option, group: set[ObjectKey]) -> PoolVerdict:
    pool = option.pool.metadata.name
    # The nodes meant for the pod or its gang; the plan's other nodes of the pool are for
    # other pods.
    mine = [n for n, pods in option.intended.items() if group.intersection(pods)]
    add = len(mine) or len(option.nodes)
    nodes = len(option.nodes) if option.count is None else option.count
    cost = round(option.price * add, 4)
    others = f" (of {nodes} it adds for {len(option.pods)} pods)" if nodes > add else ""
    return PoolVerdict(
        WAITING,
        f"The autoscaler adds {add} node(s) of pool {pool} (${cost:g}/h) for it{others}; it "
        "waits for them to join.",
        {"pool": pool, "add": add, "costPerHour": cost, "poolAdds": nodes},
        {
            "action": "wait for the autoscaler's nodes",
            "pool": pool,
            "add": add,
            "costPerHour": cost,
        },
    )
