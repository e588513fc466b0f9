"""What the nodes say about one pod shape after the scheduling pass: the scheduler's reason
counts, the nodes with room that its taints or a cordon keep the pod off (not those its node
selector or affinity excludes: they are outside the scope its owner chose), and what every node
the pod may use has free for it (audit.supply).

A node's supply or room is kept in the placer, between audits, per shape and node version:
only nodes changed since are looked at again."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from draplan.allocator import Reason, allocate
from draplan.allocator.diagnose import evidence_label
from draplan.api.core_v1 import Node, Pod
from draplan.api.resource_v1 import ResourceClaim
from draplan.audit.placer import Placer
from draplan.audit.reach import CONSTRAINT_PLUGINS
from draplan.audit.supply import NodeSupply, node_supply
from draplan.cluster.nodeselector import selector_matches
from draplan.cluster.podresources import Resources, node_allocatable
from draplan.cluster.podresources import pod_requests as requests_of
from draplan.cluster.state import ClusterState
from draplan.scheduler import Profile
from draplan.scheduler.framework import Code, Status
from draplan.scheduler.plugins import names
from draplan.scheduler.plugins.nodeaffinity import pod_matches_node
from draplan.scheduler.plugins.noderesources import insufficient
from draplan.scheduler.reasons import reason_code

NEAREST = 3  # examples a verdict names (nodes excluded, nearest misses, fixes offered)
MAX_LOOKS = 1 << 18  # per-node looks remembered by Placer (then forgotten at once)


@dataclass
class ShapeView:
    """What the nodes say about one pod shape."""

    prefilter: Status
    counts: dict[str, int]  # the scheduler's per-node reason counts
    excluded: dict[str, str]  # nodes with room its taints or a cordon keep it off: reason
    plugins: dict[str, str]  # ... and the plugin that rejects each
    supplies: dict[str, NodeSupply]  # the nodes the pod may use, with what they have free
    fits: list[str] = field(default_factory=list)  # nodes where it fits now
    error: str = ""  # the claims are wrong on every node (the allocator's input errors)

    def evidence(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodes": self.counts}
        if not self.prefilter.ok and self.prefilter.reasons:
            out["prefilter"] = self.prefilter.reasons[0]
        return out


class Looker:
    """Every node's answer for each pod shape, once per shape within an audit."""

    def __init__(self, state: ClusterState, profile: Profile, placer: Placer) -> None:
        self.state = state
        self.profile = profile
        self.placer = placer
        self._views: dict[bytes, ShapeView] = {}

    def view(self, shape: bytes, pod: Pod, claims: list[ResourceClaim]) -> ShapeView:
        view = self._views.get(shape)
        if view is None:
            view = self._look(shape, pod, claims)
            self._views[shape] = view
        return view

    def _look(self, shape: bytes, pod: Pod, claims: list[ResourceClaim]) -> ShapeView:
        prefilter, statuses = self.placer.evaluate(self.state, pod)
        requests = requests_of(pod, self.state.features)
        view = ShapeView(
            prefilter,
            dict(sorted(Counter(map(reason_code, statuses.values())).items())),
            {},
            {},
            {},
        )
        looks = self.placer.looks
        if len(looks) > MAX_LOOKS:
            looks.clear()
        version = self.state.version
        # The claims' names too: a supply names them (generated ones by the pod's entry, so
        # the pods of one template share).
        look = (shape, tuple(evidence_label(c) for c in claims))
        for name, status in statuses.items():
            if status.plugin in CONSTRAINT_PLUGINS:
                # NEAREST examples make the point; looking further costs an allocation each.
                if len(view.excluded) > NEAREST:
                    continue
                # A node its selector or affinity excludes is outside the pod's chosen scope.
                if status.plugin == names.NODE_AFFINITY or not pod_matches_node(
                    pod, self.state.nodes[name]
                ):
                    continue
                room = self._looked(look, name, version(name), status)
                if not isinstance(room, bool):
                    node = self.state.nodes[name]
                    room = self._room_ignoring_constraints(node, requests, claims)
                    looks[look, name] = (version(name), status, room)
                if room:
                    view.excluded[name] = status.reasons[0] if status.reasons else status.plugin
                    view.plugins[name] = status.plugin
            elif status.code == Code.ERROR:
                view.error = view.error or (status.reasons[0] if status.reasons else "error")
            elif _usable(status):
                supply = self._looked(look, name, version(name), status)
                if not isinstance(supply, NodeSupply):
                    node = self.state.nodes[name]
                    supply = self._supply(node, requests, claims, status)
                    looks[look, name] = (version(name), status, supply)
                view.supplies[name] = supply
        view.fits = [n for n, s in view.supplies.items() if s.fits]
        if view.supplies or view.excluded:
            view.error = ""  # the error is particular to some nodes (e.g. a CEL runtime error)
        return view

    def _looked(
        self,
        look: tuple[bytes, tuple[str, ...]],
        name: str,
        version: tuple[int, int],
        status: Status,
    ) -> NodeSupply | bool | None:
        """What an earlier look at the node found for the shape, if the node is as it was
        then (same version) and the scheduler's answer the same."""
        hit = self.placer.looks.get((look, name))
        if hit is None or hit[0] != version or hit[1] is not status:
            return None
        return hit[2]

    def _supply(
        self, node: Node, requests: Resources, claims: list[ResourceClaim], status: Status
    ) -> NodeSupply:
        reason = status.detail if isinstance(status.detail, Reason) else None
        # A failed allocation carries the per-request counts; reuse them rather than count.
        rows = reason.evidence.get("requests") if reason is not None else None
        supply = node_supply(self.state, node, requests, claims, rows)
        supply.fits = status.ok
        if reason is not None:
            supply.code, supply.message = reason.code, reason.message
        return supply

    def _room_ignoring_constraints(
        self, node: Node, requests: Resources, claims: list[ResourceClaim]
    ) -> bool:
        alloc = node_allocatable(node)
        if insufficient(requests, self.state.requested(node.metadata.name), alloc):
            return False
        for claim in claims:
            sel = claim.status.allocation.node_selector if claim.status.allocation else None
            if sel is not None and not selector_matches(sel, node):
                return False
        pending = [c for c in claims if c.status.allocation is None]
        return not pending or allocate(self.state, node, pending, self.profile.options).ok


def _usable(status: Status) -> bool:
    """False when DynamicResources rejects the node without allocator evidence: a claim
    already allocated elsewhere keeps the pod off this node for good."""
    return (
        status.ok or status.plugin != names.DYNAMIC_RESOURCES or isinstance(status.detail, Reason)
    )
