"""Pod affinity terms as kube-scheduler reads them (framework.AffinityTerm, PodInfo): namespaces,
namespaceSelector, label selector and topology key, parsed once per pod object.

Upstream: pkg/scheduler/framework/types.go (newAffinityTerm, getNamespacesFromPodAffinityTerm,
AffinityTerm.Matches) and the API server's pod strategy (applyMatchLabelKeysAndMismatchLabelKeys,
which merges matchLabelKeys / mismatchLabelKeys into the label selector when a pod is created,
KEP-3633). A dumped pod carries the merged selector already; merging again adds requirements it
has, so pods written by hand and pods read from a cluster read alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from draplan.api.core_v1 import Pod, PodAffinityTerm
from draplan.cluster.labels import NOTHING, Requirement, Selector, selector_of
from draplan.cluster.state import ClusterState

# The API server labels every namespace with its name (NamespaceDefaultLabelName, 1.22+).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class AffinityTerm:
    """A term of some pod: which pods it selects and over which topology key."""

    namespaces: frozenset[str]
    namespace_selector: Selector
    selector: Selector
    topology_key: str

    @property
    def key(self) -> tuple[str, ...]:
        """A canonical, printable identity (the same in every run)."""
        return (
            self.topology_key,
            self.selector.describe(),
            ",".join(sorted(self.namespaces)),
            self.namespace_selector.describe(),
        )

    def matches(self, pod: Pod, namespace_labels: Mapping[str, str]) -> bool:
        """AffinityTerm.Matches: the pod is in one of the namespaces, or its namespace's labels
        (`namespace_labels`) match the namespace selector; and its labels match."""
        meta = pod.metadata
        if meta.namespace in self.namespaces or self.namespace_selector.matches(namespace_labels):
            return self.selector.matches(meta.labels)
        return False


@dataclass(frozen=True)
class WeightedTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True)
class PodTerms:
    """PodInfo's four lists of parsed terms."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedTerm, ...] = ()


NO_TERMS = PodTerms()


def _merged_keys(term: PodAffinityTerm, labels: Mapping[str, str]) -> list[Requirement]:
    """applyMatchLabelKeysAndMismatchLabelKeys: `key in (value)` for matchLabelKeys and `key
    notin (value)` for mismatchLabelKeys, for keys the pod has; none when there is no selector
    (a nil selector selects nothing anyway)."""
    if term.label_selector is None:
        return []
    reqs: list[Requirement] = [
        (k, "In", frozenset((labels[k],))) for k in term.match_label_keys if k in labels
    ]
    reqs.extend(
        (k, "NotIn", frozenset((labels[k],))) for k in term.mismatch_label_keys if k in labels
    )
    return reqs


def parse_term(pod: Pod, term: PodAffinityTerm) -> AffinityTerm:
    """newAffinityTerm: no namespaces and no namespace selector mean the pod's own namespace;
    a nil namespace selector selects no namespace, an empty one every namespace."""
    meta = pod.metadata
    selector = selector_of(term.label_selector).add(_merged_keys(term, meta.labels))
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((meta.namespace,))
    else:
        namespaces = frozenset(term.namespaces)
    ns_selector = (
        selector_of(term.namespace_selector) if term.namespace_selector is not None else NOTHING
    )
    return AffinityTerm(namespaces, ns_selector, selector, term.topology_key)


MAX_PARSED = 1 << 14
_PARSED: dict[bytes, PodTerms] = {}


def pod_terms(pod: Pod) -> PodTerms:
    """A pod's terms, parsed once per (namespace, labels, affinity): the replicas of one
    template share them."""
    aff = pod.spec.affinity
    if aff is None or (aff.pod_affinity is None and aff.pod_anti_affinity is None):
        return NO_TERMS
    meta = pod.metadata
    key = msgspec.msgpack.encode((meta.namespace, meta.labels, aff))
    terms = _PARSED.get(key)
    if terms is None:
        if len(_PARSED) >= MAX_PARSED:
            _PARSED.clear()
        terms = _PARSED[key] = _parse_terms(pod)
    return terms


def _parse_terms(pod: Pod) -> PodTerms:
    aff = pod.spec.affinity
    assert aff is not None
    pa, pn = aff.pod_affinity, aff.pod_anti_affinity
    return PodTerms(
        required_affinity=tuple(
            parse_term(pod, t)
            for t in (pa.required_during_scheduling_ignored_during_execution if pa else ())
        ),
        required_anti_affinity=tuple(
            parse_term(pod, t)
            for t in (pn.required_during_scheduling_ignored_during_execution if pn else ())
        ),
        preferred_affinity=tuple(
            WeightedTerm(parse_term(pod, w.pod_affinity_term), w.weight)
            for w in (pa.preferred_during_scheduling_ignored_during_execution if pa else ())
        ),
        preferred_anti_affinity=tuple(
            WeightedTerm(parse_term(pod, w.pod_affinity_term), w.weight)
            for w in (pn.preferred_during_scheduling_ignored_during_execution if pn else ())
        ),
    )


def namespace_labels(state: ClusterState, namespace: str) -> dict[str, str]:
    """The labels of a namespace, with the name label the API server sets on every namespace. A
    namespace the input has pods in but no Namespace object for exists in the cluster (the API
    server admits no pod into a missing namespace): it has that label alone."""
    ns = state.namespaces.get(namespace)
    labels = dict(ns.metadata.labels) if ns is not None else {}
    labels[NAMESPACE_NAME_LABEL] = namespace
    return labels
