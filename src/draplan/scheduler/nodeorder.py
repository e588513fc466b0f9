"""The order kube-scheduler tries nodes in, and how many feasible ones it looks for.

The scheduler cache keeps nodes in a tree by zone (backend/cache/node_tree.go): zones in the
order their first node arrived, each zone's nodes in arrival order, and its list takes one
node of each zone in turn. A scheduler that starts lists the nodes from the API server, which
returns them by name: draplan takes that order for every node (a node added later would come
last in its zone upstream; here it takes its place by name). Each cycle starts where the last
one stopped (nextStartNodeIndex, kept per profile in `ClusterState.search_start`) and stops
once it has found `num_feasible_to_find` feasible nodes; only those are scored
(schedule_one.go, findNodesThatPassFilters). Upstream checks nodes in 16 parallel workers, so
which nodes beyond the first few it finds before stopping varies; draplan checks them one
after another.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Mapping
from itertools import zip_longest

from draplan.api.core_v1 import Node
from draplan.cluster.state import ClusterState

# schedule_one.go: minFeasibleNodesToFind, minFeasibleNodesPercentageToFind.
MIN_FEASIBLE_NODES = 100
MIN_FEASIBLE_PERCENTAGE = 5

ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")
REGION_LABELS = ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region")


def num_feasible_to_find(percentage: int, nodes: int) -> int:
    """numFeasibleNodesToFind: every node under 100; else `percentage` of them (0: the
    adaptive 50 - nodes/125, at least 5), at least 100."""
    if nodes < MIN_FEASIBLE_NODES:
        return nodes
    if percentage == 0:
        percentage = max(50 - nodes // 125, MIN_FEASIBLE_PERCENTAGE)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES)


def _first(labels: dict[str, str], keys: tuple[str, str]) -> str:
    for key in keys:
        if key in labels:
            return labels[key]
    return ""


def zone_key(node: Node) -> str:
    """utilnode.GetZoneKey: region and zone (the beta labels first), "" when neither is set."""
    labels = node.metadata.labels
    zone, region = _first(labels, ZONE_LABELS), _first(labels, REGION_LABELS)
    return f"{region}:\x00:{zone}" if region or zone else ""


def tree_order(nodes: Mapping[str, Node]) -> list[str]:
    """nodeTree.list() of the nodes added by name."""
    zones: dict[str, list[str]] = {}
    for name in sorted(nodes):
        zones.setdefault(zone_key(nodes[name]), []).append(name)
    lists = list(zones.values())
    out: list[str] = []
    for i in range(max((len(z) for z in lists), default=0)):
        out.extend(z[i] for z in lists if i < len(z))
    return out


class NodeOrder:
    """`tree_order` of a state's nodes, kept current through the state's change log: a node
    that comes, goes or changes zone moves in its zone's list alone (the scale-down's forks
    remove and bring back one node at a time), and the lists are interleaved again."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.position: dict[str, int] = {}
        self.epoch = 0  # changes whenever the order does
        self._zones: dict[str, str] = {}
        self._members: dict[str, list[str]] = {}  # per zone, its nodes by name
        self._state: ClusterState | None = None
        self._cursor = -1

    def sync(self, state: ClusterState) -> None:
        tail = state.changed_since(self._cursor) if state is self._state else None
        self._cursor = len(state.change_log)
        if tail is None:
            # A cluster-wide change: nodes come and go only by name, so the set tells.
            if state is self._state and self._same_names(state):
                return
            self._state = state
            self._rebuild(dict(state.nodes.items()))  # read once: a fork's nodes are layered
            return
        moved = False
        for name in tail:
            node = state.nodes.get(name)
            zone = zone_key(node) if node is not None else None
            old = self._zones.get(name)
            if zone == old:
                continue
            moved = True
            if old is not None:
                members = self._members[old]
                del members[bisect_left(members, name)]
                if not members:
                    del self._members[old]
                del self._zones[name]
            if zone is not None:
                insort(self._members.setdefault(zone, []), name)
                self._zones[name] = zone
        if moved:
            self._publish()

    def _rebuild(self, nodes: Mapping[str, Node]) -> None:
        self._zones = {name: zone_key(node) for name, node in nodes.items()}
        self._members = {}
        for name in sorted(nodes):
            self._members.setdefault(self._zones[name], []).append(name)
        self._publish()

    def _publish(self) -> None:
        # Zones in the order of their first node by name, as `tree_order` takes them.
        lists = sorted(self._members.values(), key=lambda members: members[0])
        if len(lists) == 1:
            names = list(lists[0])
        else:  # one of each zone in turn; a zone that has run out is passed over
            names = [n for turn in zip_longest(*lists) for n in turn if n is not None]
        self.names = names
        self.position = dict(zip(names, range(len(names)), strict=True))
        self.epoch += 1

    def _same_names(self, state: ClusterState) -> bool:
        position = self.position
        count = 0
        for name in state.nodes:
            if name not in position:
                return False
            count += 1
        return count == len(position)
