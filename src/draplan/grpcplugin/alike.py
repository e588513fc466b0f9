"""Node groups whose new nodes the scheduler cannot tell apart for the pods of one request, so
that what it does on a new node of one (how many pods of a shape one node holds, what it
puts on one node, what a node's content measures, why a pod fits none) holds for the other.
CA offers one option per node group, and the groups of one machine type (in other zones, of
other capacity types) differ mostly in labels nothing reads, and in their names and prices.

Under kube-scheduler's default filters (`scheduler.build_profile`) a new node is read
through: its spec, status, annotations, slices and DaemonSet pods (compared as they are, its
name put to one side); the label values that node selectors compare (the pods' nodeSelector
and node affinity, the scheduler's addedAffinity, the nodeSelector of ResourceSlices, of their
devices and of claims' allocations); and the labels that are topology keys (spread constraints
and their defaults, the pod (anti-)affinity terms of the offered and the running pods), where
only which nodes share a value counts, so a value no existing node has is a domain of its
own whichever it is. Its name counts only where something names it: a matchFields term, a
pod's spec.nodeName, a device's nodeName, a DeviceTaintRule's pool (a node's pool is named
after it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from draplan.api.core_v1 import NodeSelector, Pod, PodAffinityTerm
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.resource_v1 import DeviceTaintRule
from draplan.autoscaler.templates import make_node
from draplan.cluster.state import ClusterState
from draplan.scheduler.plugins.nodeaffinity import NodeAffinity
from draplan.scheduler.plugins.podtopologyspread import PodTopologySpread
from draplan.scheduler.profile import DRAPLAN_FILTERS, Profile

# The filters whose reads of a node are the ones above: kube-scheduler's default filters,
# which draplan's own profile runs too.
_KNOWN = frozenset(DRAPLAN_FILTERS)
_NAME = "draplan-alike"  # the name every compared node gets
_OWN_DOMAIN = "\0"  # a label value no existing node has


@dataclass(frozen=True)
class LabelReads:
    """What the scheduler may read of a new node: label values, topology domains (with the
    values existing nodes have for those keys), and the node names something names."""

    values: frozenset[str]
    domains: frozenset[str]
    taken: frozenset[tuple[str, str]]
    named: frozenset[str]


class _Reads:
    def __init__(self) -> None:
        self.values: set[str] = set()
        self.domains: set[str] = set()
        self.named: set[str] = set()

    def selector(self, selector: NodeSelector | None) -> None:
        for term in selector.node_selector_terms if selector is not None else ():
            self.values.update(r.key for r in term.match_expressions)
            self.named.update(v for r in term.match_fields for v in r.values)

    def pod(self, pod: Pod) -> None:
        if pod.spec.node_name:
            self.named.add(pod.spec.node_name)
        self.values.update(pod.spec.node_selector)
        aff = pod.spec.affinity
        if aff is not None and aff.node_affinity is not None:
            na = aff.node_affinity
            self.selector(na.required_during_scheduling_ignored_during_execution)
            for w in na.preferred_during_scheduling_ignored_during_execution:
                self.values.update(r.key for r in w.preference.match_expressions)
        self.domains.update(c.topology_key for c in pod.spec.topology_spread_constraints)
        self.domains.update(t.topology_key for t in _pod_terms(pod))


def _pod_terms(pod: Pod) -> Iterable[PodAffinityTerm]:
    aff = pod.spec.affinity
    for spec in (aff.pod_affinity, aff.pod_anti_affinity) if aff is not None else ():
        if spec is not None:
            yield from spec.required_during_scheduling_ignored_during_execution
            for w in spec.preferred_during_scheduling_ignored_during_execution:
                yield w.pod_affinity_term


def label_reads(state: ClusterState, profile: Profile, pods: Iterable[Pod]) -> LabelReads | None:
    """What `profile` may read of a new node when it places `pods` in `state`; None: more
    than the above (a profile with other filters)."""
    if profile.siblings or any(
        p.name not in _KNOWN for p in (*profile.pre_filters, *profile.filters)
    ):
        return None
    reads = _Reads()
    for plugin in profile.filters:
        if isinstance(plugin, NodeAffinity) and plugin.added is not None:
            added = plugin.added
            reads.selector(added.required_during_scheduling_ignored_during_execution)
            for w in added.preferred_during_scheduling_ignored_during_execution:
                reads.values.update(r.key for r in w.preference.match_expressions)
        if isinstance(plugin, PodTopologySpread):
            reads.domains.update(c.topology_key for c in plugin.args.defaults)
    for pod in pods:
        reads.pod(pod)
    for pod in state.pods.values():
        if pod.spec.affinity is not None:  # a running pod's anti-affinity keeps others off
            reads.domains.update(t.topology_key for t in _pod_terms(pod))
    for rs in state.slices.values():
        reads.selector(rs.spec.node_selector)
        if rs.spec.per_device_node_selection:
            for device in rs.spec.devices:
                reads.selector(device.node_selector)
                if device.node_name:
                    reads.named.add(device.node_name)
    for claim in state.claims.values():
        if claim.status.allocation is not None:
            reads.selector(claim.status.allocation.node_selector)
    for obj in state.others:
        selector = obj.spec.device_selector if isinstance(obj, DeviceTaintRule) else None
        if selector is not None and selector.pool:
            reads.named.add(selector.pool)
    domains = frozenset(reads.domains)
    taken = {
        (k, v)
        for node in state.nodes.values()
        for k, v in node.metadata.labels.items()
        if k in domains
    }
    return LabelReads(frozenset(reads.values), domains, frozenset(taken), frozenset(reads.named))


def alike_key(
    state: ClusterState, pool: NodePool, name: str, labels: dict[str, str], reads: LabelReads
) -> bytes | None:
    """What the scheduler can read of the node `make_node` makes of `pool` with `name` and
    `labels`: equal for two groups' nodes it cannot tell apart; None when something names the
    node."""
    if name in reads.named:
        return None
    kept = {}
    for key, value in make_node(state, pool, name, labels).node.metadata.labels.items():
        if key in reads.values:
            kept[key] = value
        elif key in reads.domains:
            kept[key] = value if (key, value) in reads.taken else _OWN_DOMAIN
    canonical = make_node(state, pool, _NAME, dict.fromkeys(labels, _NAME))
    meta = msgspec.structs.replace(canonical.node.metadata, labels=kept)
    node = msgspec.structs.replace(canonical.node, metadata=meta)
    return msgspec.msgpack.encode((node, canonical.slices, canonical.pods), enc_hook=str)
