"""The scheduling framework's contract: Status, cycle state, pod and node views, and one
protocol per extension point (as in k8s.io/kube-scheduler/framework).

A scheduling cycle (core.Scheduler.schedule_pod) runs, as kube-scheduler's schedulePod does:

1. PreFilter, every plugin in profile order. SKIP means the plugin's Filter is not called for
   this pod (`CycleState.skip_filter`); a plugin may narrow the nodes to try
   (`CycleState.narrow`, upstream's PreFilterResult).
2. Filter on each node; the nodes that pass are the feasible ones. Only the first
   `num_feasible_to_find` feasible nodes (percentageOfNodesToScore), found in the
   scheduler's node order from where the last cycle stopped, go on to scoring.
3. PreScore with those nodes (SKIP: the plugin's Score is not called and adds 0), Score per
   node (an integer 0..MAX_NODE_SCORE, or any integer if the plugin normalizes), NormalizeScore
   over those nodes, then the weighted sum; the best total wins, ties uniformly at random.
4. When no node is feasible, PostFilter plugins in order (their messages end the
   FailedScheduling text); otherwise Reserve, Permit, Bind.

Node-local and cluster plugins. draplan evaluates a node once per pod *shape* and node
version and shares answers between identical nodes (scheduler.evaluations). That is right
for a plugin whose Filter and Score for a node depend only on the pod's shape, that node's
Node object, what is on it (its pods' requests, its devices and their ledgers) and what its
`signature(state, node)` returns: a *node-local* plugin, the default. A plugin whose answer
for a node depends on anything else — pods on other nodes, the set of nodes — sets the class
attribute `cluster = True`. For a cluster plugin the evaluator:

- calls `pre_filter` every cycle (compute what you need from the whole ClusterState there
  and keep it in `cycle.data[self.name]`; keep your own indexes incremental by the state's
  `change_log` / node versions, never by the evaluator's caches);
- calls `filter` every cycle, on the nodes the node-local filters passed, in the scheduler's
  node order, never caching or sharing the answer between nodes or cycles; a node's reported
  status is the first failure in profile order, local or not;
- calls `pre_score` every cycle with the nodes to score and `score` on each of them;
  `normalize_score` (if defined) sees those nodes' scores only.

A node-local plugin may normalize too (its raw score is cached, the normalization is done over
the scored nodes each cycle). A cluster plugin that reads more of the pod than its shape
(`encode_shape`: requests, selectors, affinity, tolerations, claims), or a node-local one that
reads more of it, adds it by defining `pod_shape(state, pod) -> object`: pods that differ there
then never share answers (the autoscaler groups pods by shape, `why` judges a shape once). A
failure that a cluster filter took part in is not monotone (placing other pods may undo it):
`PodResult.monotone` is False then, and callers that skip pods of a shape found to fit nowhere
must not skip those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

import msgspec

from draplan.api.core_v1 import Node, Pod
from draplan.api.features import DEFAULT as DEFAULT_FEATURES
from draplan.api.features import FeatureGates
from draplan.cluster.podresources import Resources, nonzero_requests
from draplan.cluster.state import ClusterState, ObjectKey


class Code(Enum):
    SUCCESS = "Success"
    ERROR = "Error"  # bad input or a bug: this pod's attempt is aborted
    UNSCHEDULABLE = "Unschedulable"
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
    SKIP = "Skip"


@dataclass(frozen=True)
class Status:
    """Outcome of one plugin call; `reasons` are the strings kube-scheduler would print, and
    `code_name` a short machine code (e.g. the allocator's failure code) for aggregation."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    detail: Any = None

    @cached_property
    def ok(self) -> bool:  # cached: one status is shared by many nodes and read for each
        return self.code in (Code.SUCCESS, Code.SKIP)

    def with_plugin(self, name: str) -> Status:
        return Status(self.code, self.reasons, name, self.detail)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def unschedulable(*reasons: str, detail: Any = None, resolvable: bool = True) -> Status:
    code = Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    return Status(code, reasons, detail=detail)


def error(reason: str) -> Status:
    return Status(Code.ERROR, (reason,))


@dataclass
class CycleState:
    """Scratch space of one scheduling attempt, keyed by plugin name; which plugins skip
    Filter (their PreFilter said SKIP) and Score (their PreScore said SKIP); and the nodes a
    PreFilter narrowed the attempt to (None: every node)."""

    data: dict[object, Any] = field(default_factory=dict)
    skip_filter: set[str] = field(default_factory=set)
    skip_score: set[str] = field(default_factory=set)
    nodes: frozenset[str] | None = None
    narrowed_by: list[str] = field(default_factory=list)

    def narrow(self, names: frozenset[str], plugin: str) -> None:
        """Keep only `names` (kube-scheduler merges PreFilterResults by intersection)."""
        self.nodes = names if self.nodes is None else self.nodes & names
        self.narrowed_by.append(plugin)


def encode_shape(
    pod: Pod,
    requests: Resources,
    nonzero: Resources,
    claim_shapes: list[Any],
    extra: Sequence[object] = (),
) -> bytes:
    """What the node-local filters and scores read of a pod, as bytes, with what plugins add
    by `pod_shape` (`extra`): equal bytes, same answers."""
    spec = pod.spec
    return msgspec.msgpack.encode(
        (
            sorted(requests.items()),
            sorted(nonzero.items()),
            spec.node_name,
            spec.node_selector,
            spec.affinity,
            spec.tolerations,
            claim_shapes,
            extra,
        ),
        enc_hook=str,
    )


@dataclass(frozen=True)
class PodInfo:
    """A pod with what every plugin needs precomputed."""

    pod: Pod
    key: ObjectKey
    requests: Resources
    shape: bytes  # equal for pods the scheduler cannot tell apart (same template)
    features: FeatureGates = DEFAULT_FEATURES  # the modelled cluster's
    # What the node-local plugins read of the pod (the shape without what only cluster
    # plugins add): their answers, cached per node, are shared by pods equal here.
    local_shape: bytes = b""
    # What the node-local plugins add to it (`pod_shape`), for keys built from other parts.
    local_extra: tuple[object, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.key[0]}/{self.key[1]}"

    @cached_property
    def nonzero(self) -> Resources:
        """cpu and memory as the scores see them (schedutil's non-zero defaults)."""
        return nonzero_requests(self.pod, self.features)


MAX_NODE_SCORE = 100  # fwk.MaxNodeScore


@dataclass(slots=True)
class NodeScore:
    """One node's score for one plugin (fwk.NodeScore), as NormalizeScore rewrites it."""

    name: str
    score: int


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """helper.DefaultNormalizeScore: scale to 0..max_priority by the highest score (reversed:
    max_priority minus that); all zero stays zero, or max_priority when reversed."""
    top = max((s.score for s in scores), default=0)
    if top == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return
    for s in scores:
        value = max_priority * s.score // top
        s.score = max_priority - value if reverse else value


def is_cluster(plugin: object) -> bool:
    """Whether a plugin's answer for a node depends on other nodes (see the module's note)."""
    return getattr(plugin, "cluster", False) is True


@dataclass(frozen=True)
class PostFilterResult:
    """What a PostFilter plugin achieved: the node the pod is nominated to (preemption) and
    the pods evicted for it."""

    nominated_node: str = ""
    victims: tuple[Pod, ...] = ()


class Plugin(Protocol):
    name: str


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo) -> Status: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node
    ) -> Status: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    def post_filter(
        self,
        state: ClusterState,
        cycle: CycleState,
        pod: PodInfo,
        statuses: Mapping[str, Status],
    ) -> Status:
        """Called when no node is feasible, with every node's failure. SUCCESS with a
        PostFilterResult as `detail` ends the PostFilter phase; an unschedulable status's
        reasons join the FailedScheduling message."""
        ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, nodes: Sequence[Node]
    ) -> Status:
        """`nodes`: the feasible nodes to be scored. SKIP: Score is not called (adds 0)."""
        ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        """0..MAX_NODE_SCORE, higher is better (any integer for a plugin that normalizes);
        kube-scheduler's own plugins return integers, draplan's placement policies may not."""
        ...


@runtime_checkable
class NormalizeScorePlugin(Protocol):
    name: str

    def normalize_score(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, scores: list[NodeScore]
    ) -> None:
        """Rewrite `scores` (the nodes scored this cycle) into 0..MAX_NODE_SCORE."""
        ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node
    ) -> Status: ...

    def unreserve(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node
    ) -> None: ...


@runtime_checkable
class PermitPlugin(Protocol):
    name: str

    def permit(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node
    ) -> Status: ...


@runtime_checkable
class BindPlugin(Protocol):
    name: str

    def bind(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status: ...
