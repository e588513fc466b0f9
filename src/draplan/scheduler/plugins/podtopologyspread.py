"""PodTopologySpread: topology spread constraints, DoNotSchedule as a filter and ScheduleAnyway
as a score, with the system default constraints for pods that have none, as kube-scheduler has
them in pkg/scheduler/framework/plugins/podtopologyspread (common.go, filtering.go, scoring.go,
plugin.go) and helper/spread.go's DefaultSelector (read at v1.36, where 1.37 keeps them).

The pods matching each constraint are counted per topology domain in `NodeSums`, kept per node
and moved by the nodes the change log names (upstream counts every node's pods per cycle).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import msgspec

from draplan.api.core_v1 import Node, Pod, Service, TopologySpreadConstraint
from draplan.api.errors import BadInput
from draplan.cluster.labels import Selector, from_set, selector_of
from draplan.cluster.nodesums import SumsStore
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import SUCCESS, Status, unschedulable
from draplan.scheduler.plugins.clusterplugin import ClusterPlugin, Scored
from draplan.scheduler.plugins.nodeaffinity import pod_matches_node
from draplan.scheduler.plugins.tainttoleration import untolerated

NAME = "PodTopologySpread"
# plugin.go's ErrReason* strings, as FailedScheduling prints them.
CONSTRAINTS_MISMATCH = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL = CONSTRAINTS_MISMATCH + " (missing required label)"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
MAX_NODE_SCORE = 100
# ("c", i, value): pods matching constraint i on its eligible nodes of the domain value;
# ("h", i, node): pods matching a hostname constraint on one node, eligible or not.
SpreadKey = tuple[str, int, str]

# plugin.go's systemDefaultConstraints (defaultingType System).
SYSTEM_DEFAULTS = (
    TopologySpreadConstraint(max_skew=3, topology_key=HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    TopologySpreadConstraint(max_skew=5, topology_key=ZONE, when_unsatisfiable=SCHEDULE_ANYWAY),
)


@dataclass(frozen=True)
class SpreadArgs:
    """PodTopologySpreadArgs (kubescheduler.config.k8s.io/v1): defaultingType System (the
    default; then no defaultConstraints may be given) or List (the defaultConstraints given,
    which need no labelSelector: the default selector is theirs)."""

    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = "System"

    def __post_init__(self) -> None:
        if self.defaulting_type not in ("System", "List"):
            raise BadInput(
                f"unsupported value {self.defaulting_type!r}: System or List",
                path="defaultingType",
            )
        if self.defaulting_type == "System" and self.default_constraints:
            raise BadInput(
                "when .defaultingType is System, .defaultConstraints must be empty",
                path="defaultConstraints",
            )
        for i, c in enumerate(self.default_constraints):
            if c.label_selector is not None:
                raise BadInput(
                    "must not be set: a default constraint takes each pod's default selector",
                    path=f"defaultConstraints[{i}].labelSelector",
                )

    @property
    def defaults(self) -> tuple[TopologySpreadConstraint, ...]:
        return SYSTEM_DEFAULTS if self.defaulting_type == "System" else self.default_constraints

    @property
    def system_defaulted(self) -> bool:
        return self.defaulting_type == "System"


@dataclass(frozen=True)
class Constraint:
    """topologySpreadConstraint: one constraint with its selector parsed and defaults filled."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    honor_affinity: bool = True  # nodeAffinityPolicy, unset: Honor
    honor_taints: bool = False  # nodeTaintsPolicy, unset: Ignore

    @property
    def key(self) -> tuple[object, ...]:
        """A canonical, printable identity (the same in every run)."""
        return (
            self.max_skew,
            self.topology_key,
            self.selector.describe(),
            self.min_domains,
            self.honor_affinity,
            self.honor_taints,
        )


def own_constraints(pod: Pod, action: str) -> tuple[Constraint, ...]:
    """filterTopologySpreadConstraints: the pod's constraints of `action`, matchLabelKeys
    merged into the selector (the API server does it too since 1.34; twice is once)."""
    labels = pod.metadata.labels
    out = []
    for c in pod.spec.topology_spread_constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = selector_of(c.label_selector)
        if c.match_label_keys:
            merged = {k: labels[k] for k in c.match_label_keys if k in labels}
            if merged:
                selector = selector.add(from_set(merged).requirements)
        out.append(_parsed(c, selector))
    return tuple(out)


def _parsed(c: TopologySpreadConstraint, selector: Selector) -> Constraint:
    """A constraint with `selector`; unset minDomains is 1, unset policies Honor (affinity)
    and Ignore (taints)."""
    return Constraint(
        c.max_skew,
        c.topology_key,
        selector,
        c.min_domains if c.min_domains is not None else 1,
        c.node_affinity_policy != "Ignore",
        c.node_taints_policy == "Honor",
    )


def default_selector(
    state: ClusterState, pod: Pod, services: Iterable[Service] | None = None
) -> Selector:
    """helper.DefaultSelector: the selectors of the pod's namespace's Services that select it
    (`services`: those of the namespace, when the caller has them), and of the
    ReplicationController, ReplicaSet or StatefulSet that controls it."""
    meta = pod.metadata
    labels = meta.labels
    merged: dict[str, str] = {}
    if services is None:
        services = [s for (ns, _), s in sorted(state.services.items()) if ns == meta.namespace]
    for service in services:
        sel = service.spec.selector
        # A Service without a selector selects nothing, not everything.
        if sel and all(labels.get(k) == v for k, v in sel.items()):
            merged.update(sel)
    selector = from_set(merged)
    owner = next((o for o in meta.owner_references if o.controller), None)
    if owner is None:
        return selector
    at = (meta.namespace, owner.name)
    if owner.api_version == "v1" and owner.kind == "ReplicationController":
        rc = state.replication_controllers.get(at)
        if rc is not None:
            selector = from_set({**merged, **rc.selector})
    elif owner.api_version == "apps/v1" and owner.kind in ("ReplicaSet", "StatefulSet"):
        table = state.replica_sets if owner.kind == "ReplicaSet" else state.stateful_sets
        workload = table.get(at)
        if workload is not None and workload.spec.selector is not None:
            selector = selector.add(selector_of(workload.spec.selector).requirements)
    return selector


def constraints_for(
    state: ClusterState,
    pod: Pod,
    action: str,
    args: SpreadArgs,
    selector: Selector | None = None,
) -> tuple[Constraint, ...]:
    """The pod's own constraints of `action`, or (when it has none of either kind) the default
    ones with the default selector (buildDefaultConstraints; `selector` when the caller has
    it); none if that selects nothing."""
    if pod.spec.topology_spread_constraints:
        return own_constraints(pod, action)
    defaults = [c for c in args.defaults if c.when_unsatisfiable == action]
    if not defaults:
        return ()
    if selector is None:
        selector = default_selector(state, pod)
    if selector.empty:
        return ()
    return tuple(_parsed(c, selector) for c in defaults)


def included(pod: Pod, node: Node, honor_affinity: bool, honor_taints: bool) -> bool:
    """matchNodeInclusionPolicies: Honor means the node must pass the pod's required node
    affinity (nodeSelector and affinity), or tolerate its NoSchedule / NoExecute taints."""
    if honor_affinity and not pod_matches_node(pod, node):
        return False
    return not (honor_taints and untolerated(node.spec.taints, pod.spec.tolerations))


def count_matching(pods: Iterable[Pod], selector: Selector, namespace: str) -> int:
    """countPodsMatchSelector: pods of the namespace the selector matches, terminating pods
    (deletionTimestamp set) left out; an empty selector counts nothing."""
    if selector.empty:
        return 0
    return sum(
        1
        for p in pods
        if p.metadata.namespace == namespace
        and p.metadata.deletion_timestamp is None
        and selector.matches(p.metadata.labels)
    )


def _inclusion_key(pod: Pod) -> bytes:
    """What the node inclusion policies read of the pod."""
    spec = pod.spec
    node_affinity = spec.affinity.node_affinity if spec.affinity is not None else None
    return msgspec.msgpack.encode((spec.node_selector, node_affinity, spec.tolerations))


class DefaultSelectors:
    """default_selector by (namespace, labels, controller), and the Services by namespace,
    kept while the state and its selecting objects stay (a change to a Namespace, Service or
    workload controller's selector touches every node: cluster.incremental)."""

    MAX = 1 << 14

    def __init__(self) -> None:
        self._state: ClusterState | None = None
        self._everywhere = -1
        self._services: dict[str, list[Service]] = {}
        self._memo: dict[Hashable, Selector] = {}

    def __getstate__(self) -> object:
        return True  # a cache of one state: another process starts afresh

    def __setstate__(self, _: object) -> None:
        self.__init__()  # type: ignore[misc]

    def of(self, state: ClusterState, pod: Pod) -> Selector:
        everywhere = state.version("*")[0]
        if state is not self._state or everywhere != self._everywhere:
            self._state, self._everywhere = state, everywhere
            self._memo.clear()
            self._services = {}
            for (ns, _), service in sorted(state.services.items()):
                self._services.setdefault(ns, []).append(service)
        meta = pod.metadata
        owner = next((o for o in meta.owner_references if o.controller), None)
        key = (
            meta.namespace,
            tuple(sorted(meta.labels.items())),
            (owner.api_version, owner.kind, owner.name) if owner is not None else None,
        )
        selector = self._memo.get(key)
        if selector is None:
            if len(self._memo) >= self.MAX:
                self._memo.clear()
            services = self._services.get(meta.namespace, [])
            selector = self._memo[key] = default_selector(state, pod, services)
        return selector


# --- Filter ---------------------------------------------------------------------------------


@dataclass
class FilterState:
    """preFilterState: per constraint, the matching pods per domain value, and the global
    minimum the skew is measured from."""

    constraints: tuple[Constraint, ...]
    counts: Mapping[SpreadKey, int]  # ("c", i, value) -> matching pods
    minimum: tuple[int, ...]


@dataclass
class ScoreState:
    """preScoreState: the constraints, nodes left out, and each constraint's weight."""

    constraints: tuple[Constraint, ...]
    counts: Mapping[SpreadKey, int]  # ("c", i, value) and, for hostname, ("h", i, node)
    ignored: frozenset[str]
    weights: tuple[float, ...]

    @cached_property
    def terms(self) -> tuple[tuple[int, str, bool, float, int], ...]:
        """Per constraint what Score reads: index, key, hostname, weight, maxSkew - 1."""
        return tuple(
            (i, c.topology_key, c.topology_key == HOSTNAME, self.weights[i], c.max_skew - 1)
            for i, c in enumerate(self.constraints)
        )


@dataclass
class PodTopologySpread(ClusterPlugin[FilterState, ScoreState]):
    """The plugin: PreFilter / Filter / PreScore / Score / NormalizeScore. A cluster plugin:
    its answer for a node depends on the pods of other nodes."""

    args: SpreadArgs = field(default_factory=SpreadArgs)
    name: str = NAME
    sums: SumsStore = field(default_factory=SumsStore)
    _selectors: DefaultSelectors = field(default_factory=lambda: DefaultSelectors())

    def pod_shape(self, state: ClusterState, pod: Pod) -> object:
        """What the plugin reads of a pod beyond the scheduler's shape: its namespace, and its
        constraints of either kind (its own or the defaults, their selectors resolved) with
        whether it matches each. Pods alike there are alike to the plugin."""
        labels = pod.metadata.labels
        return (
            pod.metadata.namespace,
            [
                [(c.key, c.selector.matches(labels)) for c in self.constraints(state, pod, action)]
                for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
            ],
        )

    def constraints(self, state: ClusterState, pod: Pod, action: str) -> tuple[Constraint, ...]:
        """`constraints_for`, the default selector looked up once per controller and labels
        while the state's selecting objects stay."""
        if pod.spec.topology_spread_constraints:
            return own_constraints(pod, action)
        return constraints_for(state, pod, action, self.args, self._selectors.of(state, pod))

    def _domains(
        self, state: ClusterState, pod: Pod, constraints: tuple[Constraint, ...]
    ) -> Mapping[tuple[int, str], int]:
        """The eligible nodes per (constraint, domain value): nodes with every topology key
        that the constraint's inclusion policies admit (domains with no matching pod too)."""
        keys = tuple(c.topology_key for c in constraints)
        policies = tuple((c.topology_key, c.honor_affinity, c.honor_taints) for c in constraints)
        spec = ("domains", policies, _inclusion_key(pod))

        def part(state: ClusterState, name: str) -> dict[tuple[int, str], int]:
            node = state.nodes[name]
            labels = node.metadata.labels
            if not all(k in labels for k in keys):
                return {}
            return {
                (i, labels[c.topology_key]): 1
                for i, c in enumerate(constraints)
                if included(pod, node, c.honor_affinity, c.honor_taints)
            }

        return self.sums.get(state, spec, part).total

    def _counts(
        self,
        state: ClusterState,
        pod: Pod,
        constraints: tuple[Constraint, ...],
        require_all: bool,
        hostnames: bool,
    ) -> Mapping[SpreadKey, int]:
        """The NodeSums of ("c", i, value): pods matching constraint i on its eligible nodes of
        domain value; with `hostnames`, ("h", i, node) for hostname constraints, on every
        node. A first pass looks only at the nodes that may hold a matching pod."""
        namespace = pod.metadata.namespace
        keys = tuple(c.topology_key for c in constraints)
        spec = ("counts", namespace, constraints, _inclusion_key(pod), require_all, hostnames)

        def part(state: ClusterState, name: str) -> dict[SpreadKey, int]:
            node = state.nodes[name]
            labels = node.metadata.labels
            pods = [p for p in state.pods_on(name) if p.metadata.namespace == namespace]
            out: dict[SpreadKey, int] = {}
            if not pods:
                return out
            if hostnames:
                for i, c in enumerate(constraints):
                    if c.topology_key == HOSTNAME and HOSTNAME in labels:
                        n = count_matching(pods, c.selector, namespace)
                        if n:
                            out[("h", i, name)] = n
            if require_all and not all(k in labels for k in keys):
                return out
            for i, c in enumerate(constraints):
                if included(pod, node, c.honor_affinity, c.honor_taints):
                    n = count_matching(pods, c.selector, namespace)
                    if n:
                        out[("c", i, labels.get(c.topology_key, ""))] = n
            return out

        def where(state: ClusterState) -> set[str]:
            pods = state.pods
            found: set[str] = set()
            for c in constraints:
                for key in state.pod_labels.candidates(namespace, c.selector.required()):
                    p = pods.get(key)
                    if p is not None and p.spec.node_name:
                        found.add(p.spec.node_name)
            return found

        return self.sums.get(state, spec, part, where).total

    # --- PreFilter and Filter ---------------------------------------------------------------

    def filter_state(self, state: ClusterState, pod: Pod) -> FilterState | None:
        """PreFilter: None when it would return Skip (no DoNotSchedule constraint)."""
        constraints = self.constraints(state, pod, DO_NOT_SCHEDULE)
        if not constraints:
            return None
        # A copy: the sums move with the state, and a cycle's filter state must not (the
        # nominated pods bound in a fork, a preemption's trials, both reverted after).
        counts = dict(self._counts(state, pod, constraints, True, False))
        domains = [0] * len(constraints)  # eligible domains
        for i, _ in self._domains(state, pod, constraints):
            domains[i] += 1
        positive = [0] * len(constraints)  # ... with matching pods
        lowest = [0] * len(constraints)  # the fewest matching pods of those
        for (_, i, _), n in counts.items():
            lowest[i] = n if not positive[i] else min(lowest[i], n)
            positive[i] += 1
        # CriticalPaths' minimum, or 0 with fewer eligible domains than minDomains or with a
        # domain no matching pod is in.
        minimum = tuple(
            lowest[i] if domains[i] >= c.min_domains and positive[i] == domains[i] else 0
            for i, c in enumerate(constraints)
        )
        return FilterState(constraints, counts, minimum)

    def filter_node(self, fs: FilterState, pod: Pod, node: Node) -> Status:
        """Filter: matching pods in the node's domain, plus the pod if it matches, minus the
        minimum, must not exceed maxSkew; a node without the topology label never fits."""
        labels = node.metadata.labels
        for i, c in enumerate(fs.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return unschedulable(MISSING_LABEL, resolvable=False)
            own = 1 if c.selector.matches(pod.metadata.labels) else 0
            if fs.counts.get(("c", i, value), 0) + own - fs.minimum[i] > c.max_skew:
                return unschedulable(CONSTRAINTS_MISMATCH)
        return SUCCESS

    # --- PreScore, Score and NormalizeScore ---------------------------------------------------

    def score_state(
        self, state: ClusterState, pod: Pod, nodes: Sequence[Node]
    ) -> ScoreState | None:
        """PreScore over the nodes that passed the filters: None when it would return Skip."""
        if not nodes:
            return None  # upstream skips a cluster without nodes; it has none feasible either
        constraints = self.constraints(state, pod, SCHEDULE_ANYWAY)
        if not constraints:
            return None
        # Only a pod's own or listed defaults need every topology label on a node: a node
        # without a zone label still gets hostname spreading from the system defaults.
        require_all = bool(pod.spec.topology_spread_constraints) or not self.args.system_defaulted
        keys = [c.topology_key for c in constraints]
        ignored = set()
        values: list[set[str]] = [set() for _ in constraints]
        size = 0
        for node in nodes:
            labels = node.metadata.labels
            if require_all and not all(k in labels for k in keys):
                ignored.add(node.metadata.name)
                continue
            size += 1
            for i, key in enumerate(keys):
                if key != HOSTNAME:
                    values[i].add(labels.get(key, ""))
        weights = tuple(
            math.log((size if key == HOSTNAME else len(values[i])) + 2)
            for i, key in enumerate(keys)
        )
        counts = self._counts(state, pod, constraints, require_all, True)
        return ScoreState(constraints, counts, frozenset(ignored), weights)

    def score_node(self, ss: ScoreState, node: Node) -> int:
        """Score: per constraint, the matching pods of the node's domain (of the node itself for
        hostname) times the constraint's weight, plus maxSkew - 1; rounded as Go's math.Round."""
        name = node.metadata.name
        if name in ss.ignored:
            return 0
        labels = node.metadata.labels
        counts = ss.counts
        total = 0.0
        for i, key, hostname, weight, skew in ss.terms:
            value = labels.get(key)
            if value is not None:
                n = counts.get(("h", i, name) if hostname else ("c", i, value), 0)
                total += n * weight + skew
        whole = math.floor(total)
        return whole + 1 if total - whole >= 0.5 else whole

    def normalize(self, ss: ScoreState, scores: Sequence[Scored]) -> None:
        normalize(ss, scores)


def normalize(ss: ScoreState, scores: Sequence[Scored]) -> None:
    """NormalizeScore: fewer matching pods score higher, MaxNodeScore * (max + min - s) / max
    in integers; nodes left out score 0."""
    kept = [s.score for s in scores if s.name not in ss.ignored]
    low = min(kept, default=0)
    high = max(kept, default=0)
    for s in scores:
        if s.name in ss.ignored:
            s.score = 0
        elif high == 0:
            s.score = MAX_NODE_SCORE
        else:
            s.score = MAX_NODE_SCORE * (high + low - s.score) // high
