"""NodeAffinity (node_affinity.go): spec.nodeSelector and required node affinity (every
operator), the scheduler-enforced addedAffinity of NodeAffinityArgs, and the score of the
preferred terms (the pod's and addedAffinity's) that match, normalized over the nodes scored.
PreFilter narrows the nodes to those a required term names by metadata.name."""

from __future__ import annotations

from draplan.api.core_v1 import Node, NodeSelector, Pod, PreferredSchedulingTerm
from draplan.api.core_v1 import NodeAffinity as NodeAffinitySpec
from draplan.cluster.nodeselector import selector_matches, term_matches
from draplan.cluster.state import ClusterState
from draplan.scheduler.framework import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    CycleState,
    NodeScore,
    PodInfo,
    Status,
    default_normalize_score,
    unschedulable,
)
from draplan.scheduler.plugins.names import NODE_AFFINITY

REASON = "node(s) didn't match Pod's node affinity/selector"
ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
CONFLICT = "pod affinity terms conflict"
NAME_FIELD = "metadata.name"


def pod_matches_node(pod: Pod, node: Node) -> bool:
    """nodeSelector labels all equal, and (if set) one required affinity term matches."""
    labels = node.metadata.labels
    for key, value in pod.spec.node_selector.items():
        if labels.get(key) != value:
            return False
    aff = pod.spec.affinity
    required = (
        aff.node_affinity.required_during_scheduling_ignored_during_execution
        if (aff is not None and aff.node_affinity is not None)
        else None
    )
    return required is None or selector_matches(required, node)


def preferred_score(terms: tuple[PreferredSchedulingTerm, ...], node: Node) -> int:
    """PreferredSchedulingTerms.Score: the weights of the terms that match (a term of weight 0
    or without requirements counts for nothing)."""
    return sum(t.weight for t in terms if t.weight and term_matches(t.preference, node))


def _preferred(pod: Pod) -> tuple[PreferredSchedulingTerm, ...]:
    aff = pod.spec.affinity
    if aff is None or aff.node_affinity is None:
        return ()
    return aff.node_affinity.preferred_during_scheduling_ignored_during_execution


def _required(affinity: NodeAffinitySpec | None) -> NodeSelector | None:
    return affinity.required_during_scheduling_ignored_during_execution if affinity else None


def named_nodes(pod: Pod) -> frozenset[str] | None:
    """The nodes every required term limits the pod to by metadata.name In (None: a term
    names none, so any node may do)."""
    aff = pod.spec.affinity
    required = _required(aff.node_affinity if aff is not None else None)
    if required is None or not required.node_selector_terms:
        return None
    names: set[str] = set()
    for term in required.node_selector_terms:
        in_term: set[str] | None = None
        for req in term.match_fields:
            if req.key == NAME_FIELD and req.operator == "In":
                values = set(req.values)
                in_term = values if in_term is None else in_term & values
        if in_term is None:
            return None
        names |= in_term
    return frozenset(names)


class NodeAffinity:
    name = NODE_AFFINITY

    def __init__(self, added: NodeAffinitySpec | None = None) -> None:
        self.added = added

    def pre_filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo) -> Status:
        spec = pod.pod.spec
        aff = spec.affinity
        required = (
            aff.node_affinity.required_during_scheduling_ignored_during_execution
            if aff is not None and aff.node_affinity is not None
            else None
        )
        enforced = (
            self.added is not None
            and self.added.required_during_scheduling_ignored_during_execution is not None
        )
        if required is None and not enforced and not spec.node_selector:
            return SKIP
        names = named_nodes(pod.pod)
        if names is not None:
            if not names:
                return unschedulable(CONFLICT, resolvable=False)
            cycle.narrow(names, self.name)
        return SUCCESS

    def filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status:
        added = (
            self.added.required_during_scheduling_ignored_during_execution if self.added else None
        )
        if added is not None and not selector_matches(added, node):
            return unschedulable(ENFORCED, resolvable=False)
        if pod_matches_node(pod.pod, node):
            return SUCCESS
        return unschedulable(REASON, resolvable=False)

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> int:
        score = preferred_score(_preferred(pod.pod), node)
        if self.added is not None:
            score += preferred_score(
                self.added.preferred_during_scheduling_ignored_during_execution, node
            )
        return score

    def normalize_score(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, scores: list[NodeScore]
    ) -> None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
