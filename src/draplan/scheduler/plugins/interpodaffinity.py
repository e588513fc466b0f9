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

Pair = tuple[str, str]  # (topology key, value)


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


@dataclass
class FilterState:
    """preFilterState: the incoming pod's terms and three maps of topology pair to count."""

    terms: PodTerms
    existing_anti: Mapping[Pair, int]
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
class InterPodAffinity(ClusterPlugin[FilterState, Mapping[Pair, int]]):
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
        running = self.sums.get(state, ("terms",), _terms_part, _affinity_nodes).total
        selecting = sorted(key for (key, t) in running if t.matches(pod, own_labels))
        return (mine, selecting)

    # --- PreFilter and Filter ---------------------------------------------------------------

    def filter_state(self, state: ClusterState, pod: Pod) -> FilterState | None:
        """PreFilter: None when it would return Skip (nothing to check)."""
        terms = pod_terms(pod)
        own_labels = namespace_labels(state, pod.metadata.namespace)
        existing = self._existing_anti(state, pod, own_labels)
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

    def _existing_anti(
        self, state: ClusterState, pod: Pod, own_labels: Mapping[str, str]
    ) -> Mapping[Pair, int]:
        """getExistingAntiAffinityCounts: topology pairs of running pods whose required
        anti-affinity terms match the incoming pod."""
        spec = ("existing", _seen_as(pod, own_labels))

        def part(state: ClusterState, name: str) -> dict[Hashable, int]:
            node = state.nodes[name]
            out: dict[Hashable, int] = {}
            for other in state.pods_on(name):
                for t in pod_terms(other).required_anti_affinity:
                    if t.matches(pod, own_labels):
                        pair = _pair(node, t.topology_key)
                        if pair is not None:
                            out[pair] = out.get(pair, 0) + 1
            return out

        return self.sums.get(state, spec, part, _affinity_nodes).total

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
        if fs.existing_anti:
            for pair in labels.items():
                if fs.existing_anti.get(pair, 0) > 0:
                    return unschedulable(EXISTING_ANTI_AFFINITY)
        return SUCCESS

    # --- PreScore, Score and NormalizeScore ---------------------------------------------------

    def score_state(
        self, state: ClusterState, pod: Pod, nodes: Sequence[Node] = ()
    ) -> Mapping[Pair, int] | None:
        """PreScore: the topology score map (a sum of weights per topology pair), None when it
        would return Skip."""
        terms = pod_terms(pod)
        preferred = bool(terms.preferred_affinity or terms.preferred_anti_affinity)
        if self.args.ignore_preferred_terms_of_existing_pods and not preferred:
            return None
        own_labels = namespace_labels(state, pod.metadata.namespace)
        spec = (
            "score",
            _seen_as(pod, own_labels),
            terms.preferred_affinity,
            terms.preferred_anti_affinity,
            self.args,
        )
        hard = self.args.hard_pod_affinity_weight

        def part(state: ClusterState, name: str) -> dict[Hashable, int]:
            node = state.nodes[name]
            labels = node.metadata.labels
            if not labels:
                return {}  # processExistingPod: a node without labels is in no topology
            ns_labels = NamespaceLabels(state)
            out: dict[Hashable, int] = {}
            for other in state.pods_on(name):
                mine = pod_terms(other)
                if not preferred and mine is NO_TERMS:
                    continue  # only the pods with affinity terms can add to the score
                other_labels = ns_labels[other.metadata.namespace]
                _add_weighted(out, terms.preferred_affinity, other, other_labels, labels, +1)
                _add_weighted(out, terms.preferred_anti_affinity, other, other_labels, labels, -1)
                if hard > 0:
                    for t in mine.required_affinity:
                        if t.matches(pod, own_labels) and t.topology_key in labels:
                            pair = (t.topology_key, labels[t.topology_key])
                            out[pair] = out.get(pair, 0) + hard
                _add_weighted(out, mine.preferred_affinity, pod, own_labels, labels, +1)
                _add_weighted(out, mine.preferred_anti_affinity, pod, own_labels, labels, -1)
            return {k: v for k, v in out.items() if v}

        where: Callable[[ClusterState], Iterable[str]] | None = _affinity_nodes
        if preferred:
            weighted = (*terms.preferred_affinity, *terms.preferred_anti_affinity)
            where = _term_nodes(tuple(w.term for w in weighted), also=_affinity_nodes)
        total = self.sums.get(state, spec, part, where).total
        return total or None

    def score_node(self, scores: Mapping[Pair, int], node: Node) -> int:
        """Score: the sum of the map's weights for the node's topology pairs."""
        labels = node.metadata.labels
        return sum(scores.get(pair, 0) for pair in labels.items())

    def normalize(self, ss: Mapping[Pair, int], scores: Sequence[Scored]) -> None:
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


def _terms_part(state: ClusterState, name: str) -> dict[Hashable, int]:
    """The terms of the pods on a node, each as (its canonical key, the term)."""
    out: dict[Hashable, int] = {}
    for pod in state.pods_on(name):
        terms = pod_terms(pod)
        if terms is NO_TERMS:
            continue
        for kind, group in (
            ("required-affinity", terms.required_affinity),
            ("required-anti-affinity", terms.required_anti_affinity),
            ("preferred-affinity", tuple(w.term for w in terms.preferred_affinity)),
            ("preferred-anti-affinity", tuple(w.term for w in terms.preferred_anti_affinity)),
        ):
            for t in group:
                at = ((kind, t.key), t)
                out[at] = out.get(at, 0) + 1
    return out


def _seen_as(pod: Pod, namespace_labels: Mapping[str, str]) -> Hashable:
    """What other pods' terms read of a pod: its namespace, labels and namespace's labels."""
    return (
        pod.metadata.namespace,
        tuple(sorted(pod.metadata.labels.items())),
        tuple(sorted(namespace_labels.items())),
    )


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
