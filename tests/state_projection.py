"""What must be equal between a ClusterState kept current by events and a fresh
`ClusterState.from_objects` of the same objects: the objects, the pools every node sees, the
device views, the ledgers (zero entries dropped: a freed device leaves a zero where a fresh load
has nothing), pods' bindings and per-node requests, and what the scheduler does on each.
"""

from __future__ import annotations

from typing import Any

from draplan.cluster.devices import DeviceView
from draplan.cluster.state import ClusterState
from draplan.scheduler.core import Scheduler


def _nonzero(values: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in values.items() if v}


def _view(view: DeviceView | None) -> tuple[Any, ...] | None:
    if view is None:
        return None
    return (
        view.slice_name,
        view.device,
        view.node_name,
        view.node_term,
        view.all_nodes,
        view.capacity,
        view.consumes,
        view.multi,
    )


def projection(state: ClusterState) -> dict[str, Any]:
    views = {view.id for name in state.slices for view in state.slice_devices(name)}
    return {
        "nodes": dict(state.nodes.items()),
        "pools": {
            name: [
                (p.id, p.generation, [d.id for d in p.devices], p.counters, p.incomplete, p.invalid)
                for p in state.pools_for_node(node)
            ]
            for name, node in sorted(state.nodes.items())
        },
        "slices": dict(state.slices.items()),
        "devices": {i: _view(state.device(i)) for i in sorted(views)},
        "exclusive": dict(sorted(state.exclusive.items())),
        "shared": {k: (u.shares, _nonzero(u.consumed)) for k, u in sorted(state.shared.items())},
        "counters": {k: v for k, v in sorted(state.counters.items()) if v},
        "requested": {
            n: _nonzero(r) for n, r in sorted(state.node_requested.items()) if any(r.values())
        },
        "pods": dict(state.pods.items()),
        # The pods each node holds and those with pod affinity (ClusterState's pod index).
        "node_pods": {n: sorted(keys) for n, keys in sorted(state.node_pods.items()) if keys},
        "affinity_pods": dict(sorted(state.affinity_pods.items())),
        "port_pods": {n: sorted(keys) for n, keys in sorted(state.port_pods.items()) if keys},
        "bindings": sorted((k, p.spec.node_name) for k, p in state.pods.items()),
        "claims": dict(state.claims.items()),
        "classes": state.device_classes,
        "templates": state.claim_templates,
        "pod_templates": state.pod_templates,
        "node_pools": state.node_pools,
        "namespaces": state.namespaces,
        "selecting": (
            state.services,
            state.replica_sets,
            state.stateful_sets,
            state.replication_controllers,
        ),
        "taint_rules": state.taint_rules,
        "others": sorted(
            (f"{getattr(o, 'api_version', '')}/{getattr(o, 'kind', '')}", repr(o))
            for o in state.others
        ),
        "origin": dict(state.origin),
    }


def schedule_outcome(state: ClusterState) -> list[tuple[Any, ...]]:
    """Where the scheduler puts every pending pod, run in a fork that is reverted."""
    with state.forked():
        results = Scheduler().run(state)
    return sorted(
        (r.key, r.node, r.reason.message if r.reason else "", sorted(repr(c) for c in r.claims))
        for r in results
    )
