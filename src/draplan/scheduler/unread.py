"""The device attributes a scheduling run can read, so that those it cannot (a GPU's UUID, a
serial number) are left out when nodes are compared: nodes whose devices differ only there
get the same answers, and a cluster of 10,000 identical GPU nodes is evaluated per kind of
node, not per node.

What reads an attribute: a CEL selector of a DeviceClass, of a claim or of a claim template
(the lookups its text shows, `draplan.cel.reads`; a selector that may read more reads
everything), a claim's matchAttribute / distinctAttribute, the topology attributes (the
allocator's `tight` order and TopologyLocality group devices by them), and the plugins. Only
kube-scheduler's own plugins are known to read nothing else; with any other plugin (the
placement policies read a kind attribute and their workload's selectors) every attribute
counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

import msgspec

from draplan.api.core_v1 import Node
from draplan.api.resource_v1 import DeviceSelector, ResourceClaimSpec
from draplan.cel.device import split_name
from draplan.cel.reads import reads
from draplan.cluster.devices import TOPOLOGY_ATTRIBUTES
from draplan.cluster.state import ClusterState
from draplan.scheduler.plugins import names
from draplan.scheduler.profile import Profile

HOSTNAME = "kubernetes.io/hostname"

# Plugins that read no attribute beyond the selectors, constraints and topology attributes.
KNOWN_PLUGINS = frozenset(
    {
        names.NODE_UNSCHEDULABLE,
        names.NODE_NAME,
        names.TAINT_TOLERATION,
        names.NODE_AFFINITY,
        names.NODE_RESOURCES_FIT,
        names.BALANCED_ALLOCATION,
        names.IMAGE_LOCALITY,
        names.DYNAMIC_RESOURCES,
        names.LEAST_ALLOCATED,
        names.MOST_ALLOCATED,
        names.TOPOLOGY_LOCALITY,
        # These read pods and node labels, no device attribute.
        names.NODE_PORTS,
        names.POD_TOPOLOGY_SPREAD,
        names.INTER_POD_AFFINITY,
    }
)


class AttributeReads(NamedTuple):
    """Attributes read: by (domain, id), and ids read in any domain."""

    pairs: frozenset[tuple[str, str]]
    ids: frozenset[str]

    def read(self, name: str, driver: str) -> bool:
        """Whether the attribute `name` of a device of `driver` is read."""
        domain, ident = split_name(name, driver)
        return ident in self.ids or (domain, ident) in self.pairs

    def covers(self, other: AttributeReads | None) -> bool:
        return other is not None and other.pairs <= self.pairs and other.ids <= self.ids


# The topology attributes: qualified ones by (domain, id), bare ones in any domain.
TOPOLOGY = AttributeReads(
    frozenset((a.partition("/")[0], a.partition("/")[2]) for a in TOPOLOGY_ATTRIBUTES if "/" in a),
    frozenset(a for a in TOPOLOGY_ATTRIBUTES if "/" not in a),
)


def profile_reads_only_known(profile: Profile) -> bool:
    """Whether the profile's plugins read no attribute beyond those gathered here."""
    plugins = [*profile.pre_filters, *profile.filters, *(p for p, _ in profile.scores)]
    known = all(getattr(p, "name", None) in KNOWN_PLUGINS for p in plugins)
    return known and not profile.policy and profile.options.prefer is None


def state_reads(state: ClusterState) -> AttributeReads | None:
    """What the classes, claims and claim templates of `state` read (None: everything)."""
    selectors = [s for dc in state.device_classes.values() for s in dc.spec.selectors]
    specs = [c.spec for c in state.claims.values()]
    specs += [t.spec.spec for t in state.claim_templates.values()]
    return merge(TOPOLOGY, selectors, specs)


def merge(
    base: AttributeReads | None,
    selectors: Iterable[DeviceSelector],
    specs: Iterable[ResourceClaimSpec],
) -> AttributeReads | None:
    """`base` with what the selectors and claim specs read."""
    if base is None:
        return None
    pairs = set(base.pairs)
    expressions = {s.cel.expression for s in selectors if s.cel is not None}
    for spec in specs:
        for req in spec.devices.requests:
            for sub in (req.exactly, *req.first_available):
                if sub is not None:
                    expressions.update(s.cel.expression for s in sub.selectors if s.cel)
        for con in spec.devices.constraints:
            name = con.match_attribute or con.distinct_attribute
            if name:
                domain, _, ident = name.partition("/")
                pairs.add((domain, ident))
    for expression in expressions:
        found = _selector_reads(expression)
        if found is None:
            return None
        pairs.update(found)
    return AttributeReads(frozenset(pairs), base.ids)


@lru_cache(maxsize=4096)
def _selector_reads(expression: str) -> frozenset[tuple[str, str]] | None:
    found = reads(expression)
    if found is None:
        return None
    return frozenset((domain, ident) for kind, domain, ident in found if kind == "attributes")


def node_as_read(node: Node, reads_known: bool) -> object:
    """What the scheduling plugins read of a Node object, without its identity (name, uid,
    hostname label): with kube-scheduler's own plugins (`reads_known`), its labels, taints,
    cordon and resources, not its provider ID or annotations, which differ between otherwise
    identical nodes; with others, all of it."""
    meta = node.metadata
    labels = {k: v for k, v in meta.labels.items() if k != HOSTNAME}
    if reads_known:
        return (
            sorted(labels.items()),
            node.spec.taints,
            node.spec.unschedulable,
            node.status.capacity,
            node.status.allocatable,
        )
    return msgspec.structs.replace(
        node,
        metadata=msgspec.structs.replace(
            meta, name="", uid="", resource_version="", creation_timestamp=None, labels=labels
        ),
    )
