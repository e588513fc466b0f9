"""Node kinds in audit.reach: nodes are grouped by what the scheduler reads of them, so nodes of
a real dump (each with its own provider ID, uid and annotations) share one check per kind."""

from __future__ import annotations

import msgspec

from conftest import DATA
from draplan.api.core_v1 import Node, Taint
from draplan.audit.reach import Reacher
from draplan.audit.why import why
from draplan.cluster.state import ClusterState
from draplan.scheduler import build_profile
from draplan.sources import load_objects

TWINS = ("gpu-h100-a", "gpu-h100-b")  # same labels, capacity and devices but their identities


def _state() -> ClusterState:
    return ClusterState.from_objects(load_objects([str(DATA / "realistic")]))


def _group(state: ClusterState, name: str) -> list[str]:
    kinds = Reacher(state, build_profile()).kinds()
    return next(group for group in kinds if name in group)


def _replace(state: ClusterState, name: str, **spec: object) -> None:
    node = state.nodes[name]
    meta = msgspec.structs.replace(
        node.metadata, uid=f"uid-{name}-2", annotations={"node.alpha.kubernetes.io/ttl": "0"}
    )
    new = msgspec.structs.replace(
        node, metadata=meta, spec=msgspec.structs.replace(node.spec, **spec)
    )
    assert isinstance(new, Node)
    state.add_node(new)


def test_nodes_differing_only_in_what_no_filter_reads_are_one_kind() -> None:
    state = _state()
    assert set(TWINS) <= set(_group(state, TWINS[0]))
    _replace(state, TWINS[1], provider_id="aws:///us-east-1a/i-0123456789abcdef0")
    assert set(TWINS) <= set(_group(state, TWINS[0]))


def test_a_taint_makes_another_kind() -> None:
    state = _state()
    _replace(state, TWINS[1], taints=(Taint(key="maintenance", effect="NoSchedule"),))
    assert TWINS[1] not in _group(state, TWINS[0])


def test_why_is_the_same_whatever_the_nodes_identities() -> None:
    state = _state()
    before = [d.to_dict() for d in why(state)]
    _replace(state, TWINS[1], provider_id="aws:///us-east-1a/i-0123456789abcdef0")
    assert [d.to_dict() for d in why(state)] == before
