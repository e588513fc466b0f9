"""InterPodAffinity: required pod affinity and anti-affinity (filter), the anti-affinity of the
pods already running against the incoming one, and preferred terms (score), as kube-scheduler
has them in pkg/scheduler/framework/plugins/interpodaffinity (filtering.go, scoring.go, plugin.go;
read at v1.36, where 1.37 keeps them).

The counts upstream's PreFilter and PreScore build by a pass over every node are `NodeSums`
here: kept per node and moved by the nodes the change log names, so a pod of a shape seen
before costs what changed since, not the whole cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from draplan.api.core_v1 import Node, Pod
from draplan.cluster.nodesums import SumsStore
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import SUCCESS, Status, unschedulable
from draplan.scheduler.plugins.clusterplugin import ClusterPlugin, Scored
from draplan.scheduler.plugins.podaffinityterms import (
    NO_TERMS,
    AffinityTerm,
    PodTerms,
    WeightedTerm,
    namespace_labels,
    pod_terms,
)

NAME = "InterPodAffinity"
# filtering.go's ErrReason* strings, as FailedScheduling prints them.
AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
MAX_NODE_SCORE = 100
# Kinds of terms of running pods.
REQUIRED, REQUIRED_ANTI = "required-affinity", "required-anti-affinity"
PREFERRED, PREFERRED_ANTI = "preferred-affinity", "preferred-anti-affinity"

Pair = tuple[str, str]  # (topology key, value)
RunningTerm = tuple[str, AffinityTerm, int]  # (kind, term, weight)


@dataclass(frozen=True)
class AffinityArgs:
    """InterPodAffinityArgs (kubescheduler.config.k8s.io/v1): hardPodAffinityWeight 0..100,
    default 1; ignorePreferredTermsOfExistingPods, default false."""

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


def _all_match(terms: tuple[AffinityTerm, ...], pod: Pod, ns_labels: Mapping[str, str]) -> bool:
    """podMatchesAllAffinityTerms: false for no terms."""
    return bool(terms) and all(t.matches(pod, ns_labels) for t in terms)


def _pair(node: Node, key: str) -> Pair | None:
    value = node.metadata.labels.get(key)
    return None if value is None else (key, value)


# --- Filter ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreMap:
    """preScoreState's topology score: the incoming pod's preferred terms' weights per pair
    (`keys`: the topology keys they use), and per running pods' term that selects the pod,
    its weight (negative for anti-affinity) and the domain values of the pods with it."""

    incoming: Mapping[Pair, int]
    keys: tuple[str, ...]
    by_term: tuple[tuple[int, str, Mapping[str, int]], ...]


@dataclass
class FilterState:
    """preFilterState: the incoming pod's terms and three maps of topology pair to count."""

    terms: PodTerms
    # Per running pods' anti-affinity term that selects the pod: its topology key, and the
    # values of the domains the pods with it run in (with how many).
    existing_anti: tuple[tuple[str, Mapping[str, int]], ...]
    affinity: Mapping[Pair, int]
    anti: Mapping[Pair, int]
    self_match: bool  # the pod matches all its own required affinity terms


def _incoming_part(terms: PodTerms) -> Callable[[ClusterState, str], dict[Hashable, int]]:
    """getIncomingAffinityAntiAffinityCounts, one node's part: ("a", pair) for pods matching
    every required affinity term, ("n", pair) for each anti-affinity term a pod matches."""
    affinity, anti = terms.required_affinity, terms.required_anti_affinity

    def part(state: ClusterState, name: str) -> dict[Hashable, int]:
        node = state.nodes[name]
        ns_labels = NamespaceLabels(state)
        out: dict[Hashable, int] = {}
        for pod in state.pods_on(name):
            labels = ns_labels[pod.metadata.namespace]
            if _all_match(affinity, pod, labels):
                for t in affinity:
                    _count(out, "a", node, t.topology_key, 1)
            for t in anti:
                if t.matches(pod, labels):
                    _count(out, "n", node, t.topology_key, 1)
        return out

    return part


def _count(out: dict[Hashable, int], kind: str, node: Node, key: str, n: int) -> None:
    value = node.metadata.labels.get(key)
    if value is not None:
        at = (kind, (key, value))
        out[at] = out.get(at, 0) + n


class NamespaceLabels(dict[str, Mapping[str, str]]):
    """namespace_labels by namespace, looked up once each."""

    def __init__(self, state: ClusterState) -> None:
        super().__init__()
        self._state = state

    def __missing__(self, namespace: str) -> Mapping[str, str]:
        labels = self[namespace] = namespace_labels(self._state, namespace)
        return labels


@dataclass
class InterPodAffinity(ClusterPlugin[FilterState, "ScoreMap"]):
    """The plugin: PreFilter / Filter / PreScore / Score / NormalizeScore. A cluster plugin:
    its answer for a node depends on the pods of other nodes."""

    args: AffinityArgs = field(default_factory=AffinityArgs)
    name: str = NAME
    sums: SumsStore = field(default_factory=SumsStore)

    def pod_shape(self, state: ClusterState, pod: Pod) -> object:
        """What the plugin reads of a pod beyond the scheduler's shape (which has its terms):
        with terms of its own, its namespace and labels (whether it matches them); and which
        terms of running pods select it. Pods alike there are alike to the plugin."""
        own_labels = namespace_labels(state, pod.metadata.namespace)
        meta = pod.metadata
        mine = (
            (meta.namespace, sorted(meta.labels.items()))
            if pod_terms(pod) is not NO_TERMS
            else None
        )
        selecting = sorted(
            (kind, t.key, weight)
            for (kind, t, weight), _ in self._selecting(state, pod, own_labels)
        )
        return (mine, selecting)

    def _selecting(
        self, state: ClusterState, pod: Pod, own_labels: Mapping[str, str]
    ) -> list[tuple[RunningTerm, Mapping[str, int]]]:
        """The running pods' terms that select `pod`, each with the domain values they run
        in (one sum for every pod: a pod is judged by the terms, not pass by pass)."""
        running = self.sums.get(state, ("running",), _running_part, _affinity_nodes, True)
        return [
            (group, values)  # type: ignore[misc]
            for group, values in running.groups.items()
            if group[1].matches(pod, own_labels)  # type: ignore[index]
        ]

    # --- PreFilter and Filter ---------------------------------------------------------------

    def filter_state(self, state: ClusterState, pod: Pod) -> FilterState | None:
        """PreFilter: None when it would return Skip (nothing to check)."""
        terms = pod_terms(pod)
        own_labels = namespace_labels(state, pod.metadata.namespace)
        # Copies: the sums move with the state, and a cycle's filter state must not (the
        # nominated pods bound in a fork, a preemption's trials, both reverted after).
        existing = tuple(
            (t.topology_key, dict(values))
            for (kind, t, _), values in self._selecting(state, pod, own_labels)
            if kind == REQUIRED_ANTI
        )
        if not existing and not terms.required_affinity and not terms.required_anti_affinity:
            return None
        affinity: dict[Pair, int] = {}
        anti: dict[Pair, int] = {}
        if terms.required_affinity or terms.required_anti_affinity:
            spec = ("incoming", terms.required_affinity, terms.required_anti_affinity)
            # A pod matching every affinity term matches the first.
            selecting = (*terms.required_affinity[:1], *terms.required_anti_affinity)
            where = _term_nodes(selecting)
            total = self.sums.get(state, spec, _incoming_part(terms), where).total
            for (kind, pair), n in total.items():
                (affinity if kind == "a" else anti)[pair] = n
        return FilterState(
            terms, existing, affinity, anti, _all_match(terms.required_affinity, pod, own_labels)
        )

    def filter_node(self, fs: FilterState, pod: Pod, node: Node) -> Status:
        """Filter: the node's topology pairs against the three maps."""
        labels = node.metadata.labels
        if not satisfies_affinity(fs, labels):
            return unschedulable(AFFINITY_MISMATCH, resolvable=False)
        if fs.anti:
            for t in fs.terms.required_anti_affinity:
                value = labels.get(t.topology_key)
                if value is not None and fs.anti.get((t.topology_key, value), 0) > 0:
                    return unschedulable(ANTI_AFFINITY_MISMATCH)
        for key, values in fs.existing_anti:
            value = labels.get(key)
            if value is not None and values.get(value, 0) > 0:
                return unschedulable(EXISTING_ANTI_AFFINITY)
        return SUCCESS

    # --- PreScore, Score and NormalizeScore ---------------------------------------------------

    def score_state(
        self, state: ClusterState, pod: Pod, nodes: Sequence[Node] = ()
    ) -> ScoreMap | None:
        """PreScore: the topology score map, None when it would return Skip. The incoming
        pod's preferred terms against the running pods are summed per pair; the running
        pods' terms that select the pod add their weight (hardPodAffinityWeight for required
        affinity) per domain they run in."""
        terms = pod_terms(pod)
        preferred = bool(terms.preferred_affinity or terms.preferred_anti_affinity)
        if self.args.ignore_preferred_terms_of_existing_pods and not preferred:
            return None
        own_labels = namespace_labels(state, pod.metadata.namespace)
        hard = self.args.hard_pod_affinity_weight
        by_term: list[tuple[int, str, Mapping[str, int]]] = []
        for (kind, t, weight), values in self._selecting(state, pod, own_labels):
            factor = {REQUIRED: hard, PREFERRED: weight, PREFERRED_ANTI: -weight}.get(kind, 0)
            if factor:
                by_term.append((factor, t.topology_key, values))
        incoming: Mapping[Pair, int] = {}
        if preferred:
            spec = ("preferred", terms.preferred_affinity, terms.preferred_anti_affinity)
            weighted = (*terms.preferred_affinity, *terms.preferred_anti_affinity)
            where = _term_nodes(tuple(w.term for w in weighted))
            incoming = self.sums.get(state, spec, _preferred_part(terms), where).total
        if not incoming and not by_term:
            return None
        return ScoreMap(incoming, tuple(sorted({k for k, _ in incoming})), tuple(by_term))

    def score_node(self, scores: ScoreMap, node: Node) -> int:
        """Score: the weights of the map for the node's topology pairs."""
        labels = node.metadata.labels
        total = 0
        for key in scores.keys:
            value = labels.get(key)
            if value is not None:
                total += scores.incoming.get((key, value), 0)
        for factor, key, values in scores.by_term:
            value = labels.get(key)
            if value is not None:
                total += factor * values.get(value, 0)
        return total

    def normalize(self, ss: ScoreMap, scores: Sequence[Scored]) -> None:
        normalize(scores)


def normalize(scores: Sequence[Scored]) -> None:
    """NormalizeScore: min-max to 0..100 over the nodes scored, truncated as Go's int64()."""
    if not scores:
        return
    low = min(s.score for s in scores)
    diff = max(s.score for s in scores) - low
    for s in scores:
        s.score = (
            int(float(MAX_NODE_SCORE) * (float(s.score - low) / float(diff))) if diff > 0 else 0
        )


def _running_part(state: ClusterState, name: str) -> dict[Hashable, int]:
    """The terms of the pods on a node, by (kind, term, weight) and the node's value of the
    term's topology key (a node without it is in no domain of the term)."""
    labels = state.nodes[name].metadata.labels
    out: dict[Hashable, int] = {}
    for pod in state.pods_on(name):
        terms = pod_terms(pod)
        if terms is NO_TERMS:
            continue
        for kind, weighted in (
            (REQUIRED, [(t, 0) for t in terms.required_affinity]),
            (REQUIRED_ANTI, [(t, 0) for t in terms.required_anti_affinity]),
            (PREFERRED, [(w.term, w.weight) for w in terms.preferred_affinity]),
            (PREFERRED_ANTI, [(w.term, w.weight) for w in terms.preferred_anti_affinity]),
        ):
            for t, weight in weighted:
                value = labels.get(t.topology_key)
                if value is not None:
                    at = ((kind, t, weight), value)
                    out[at] = out.get(at, 0) + 1
    return out


def _preferred_part(terms: PodTerms) -> Callable[[ClusterState, str], dict[Hashable, int]]:
    """scoreMap.processTerms of the incoming pod's preferred terms, one node's part: the
    weights of the terms each pod on it matches, per topology pair."""

    def part(state: ClusterState, name: str) -> dict[Hashable, int]:
        labels = state.nodes[name].metadata.labels
        ns_labels = NamespaceLabels(state)
        out: dict[Hashable, int] = {}
        for other in state.pods_on(name):
            other_labels = ns_labels[other.metadata.namespace]
            _add_weighted(out, terms.preferred_affinity, other, other_labels, labels, +1)
            _add_weighted(out, terms.preferred_anti_affinity, other, other_labels, labels, -1)
        return {k: v for k, v in out.items() if v}

    return part


def satisfies_affinity(fs: FilterState, labels: Mapping[str, str]) -> bool:
    """satisfyPodAffinity: every term's key on the node; a matching pod in each term's domain,
    or (the first pod of a set that selects itself) no matching pod anywhere."""
    pods_exist = True
    for t in fs.terms.required_affinity:
        value = labels.get(t.topology_key)
        if value is None:
            return False
        if fs.affinity.get((t.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    return not fs.affinity and fs.self_match


def _add_weighted(
    out: dict[Hashable, int],
    terms: tuple[WeightedTerm, ...],
    pod: Pod,
    ns_labels: Mapping[str, str],
    node_labels: Mapping[str, str],
    sign: int,
) -> None:
    """scoreMap.processTerms: each term the pod matches adds its weight to the node's pair."""
    for w in terms:
        t = w.term
        value = node_labels.get(t.topology_key)
        if value is not None and t.matches(pod, ns_labels):
            pair = (t.topology_key, value)
            out[pair] = out.get(pair, 0) + sign * w.weight


def _term_nodes(
    terms: tuple[AffinityTerm, ...],
    also: Callable[[ClusterState], Iterable[str]] | None = None,
) -> Callable[[ClusterState], Iterable[str]] | None:
    """For a first pass: the nodes that may hold a pod one of `terms` selects (and those of
    `also`); None (every node) when a term selects by namespace labels."""
    if any(not t.namespace_selector.nothing for t in terms):
        return None

    def where(state: ClusterState) -> Iterable[str]:
        pods = state.pods
        found = set(also(state)) if also is not None else set()
        for t in terms:
            if t.selector.nothing:
                continue
            required = t.selector.required()
            for ns in t.namespaces:
                for key in state.pod_labels.candidates(ns, required):
                    p = pods.get(key)
                    if p is not None and p.spec.node_name:
                        found.add(p.spec.node_name)
        return found

    return where


def _affinity_nodes(state: ClusterState) -> Iterable[str]:
    """The nodes that hold pods with affinity terms (HavePodsWithAffinityList)."""
    return set(state.affinity_pods.values())
