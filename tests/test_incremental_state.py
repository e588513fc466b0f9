"""cluster.incremental: after any sequence of adds, replacements and deletes, the state equals a
fresh `ClusterState.from_objects` of the objects left, and the scheduler answers the same."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DATA
from draplan.api.core_v1 import Pod
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.features import DEFAULT as DEFAULT_FEATURES
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.cluster.incremental import (
    IncrementalState,
    MirrorState,
    ObjectsInOrder,
    changes_between,
    state_objects,
)
from draplan.cluster.state import ClusterState, origin_key
from draplan.sources import load_objects
from generated_clusters import KeptObjects, variant_universe
from state_projection import projection, schedule_outcome


def _variants(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The object and the changes a watch would bring for it."""
    out = [doc]
    kind = doc["kind"]
    if kind == "Node":
        relabelled = copy.deepcopy(doc)
        relabelled["metadata"]["labels"]["topology.kubernetes.io/zone"] = "c"
        cordoned = copy.deepcopy(doc)
        cordoned["spec"]["unschedulable"] = True
        out += [relabelled, cordoned]
    elif kind == "ResourceSlice":
        newer = copy.deepcopy(doc)
        newer["spec"]["pool"]["generation"] = 2
        out.append(newer)
        if doc["spec"].get("devices"):
            fewer = copy.deepcopy(doc)
            fewer["spec"]["devices"] = fewer["spec"]["devices"][:-1]
            out.append(fewer)
            moved = copy.deepcopy(doc)
            moved["spec"]["pool"]["name"] += "-moved"
            out.append(moved)
    elif kind == "Pod":
        other = copy.deepcopy(doc)
        if doc["spec"].get("nodeName"):
            other["spec"].pop("nodeName")
            done = copy.deepcopy(doc)
            done["status"]["phase"] = "Succeeded"
            out.append(done)
        else:
            other["spec"]["nodeName"] = "h100-0"
        out.append(other)
    elif kind == "ResourceClaim" and "status" in doc:
        freed = copy.deepcopy(doc)
        freed.pop("status")
        out.append(freed)
    return out


UNIVERSE = variant_universe((10, 0), _variants)  # partitionable A100s with allocated MIG claims

op = st.tuples(
    st.sampled_from(("put", "put", "delete")),
    st.integers(0, len(UNIVERSE) - 1),
    st.integers(0, 3),
)


def _fresh(store: dict[Any, KubeStruct]) -> ClusterState:
    return ClusterState.from_objects([(o, "src") for o in store.values()])


@settings(max_examples=100, deadline=None)
@given(
    initial=st.lists(st.integers(0, len(UNIVERSE) - 1), unique=True, max_size=40),
    ops=st.lists(op, max_size=60),
)
def test_any_event_sequence_ends_equal_to_a_fresh_load(
    initial: list[int], ops: list[tuple[str, int, int]]
) -> None:
    kept = KeptObjects((UNIVERSE[i][0] for i in initial), "src")
    for action, i, v in ops:
        variants = UNIVERSE[i]
        kept.change(action, variants[v % len(variants)])
    state = kept.inc.flush()
    fresh = kept.fresh()
    assert projection(state) == projection(fresh)
    assert schedule_outcome(state) == schedule_outcome(fresh)


@settings(max_examples=60, deadline=None)
@given(
    snapshots=st.lists(
        st.lists(st.tuples(st.integers(0, len(UNIVERSE) - 1), st.integers(0, 3)), max_size=40),
        min_size=1,
        max_size=6,
    )
)
def test_a_mirror_equals_a_fresh_load_of_each_set_of_objects(
    snapshots: list[list[tuple[int, int]]],
) -> None:
    """Each set of objects, sent to a mirror as the changes from the set before, leaves it equal
    to a fresh load of the set."""
    mirror = MirrorState()
    held: dict[int, KubeStruct] = {}
    for picks in snapshots:
        store: dict[Any, KubeStruct] = {}
        for i, v in picks:
            obj = UNIVERSE[i][v % len(UNIVERSE[i])]
            store[origin_key(obj)] = obj
        held, changes = changes_between(held, store.values(), lambda _: "src")
        assert {origin_key(o): o for o in held.values()} == store
        state = mirror.apply(changes, DEFAULT_FEATURES)
        fresh = _fresh(store)
        assert projection(state) == projection(fresh)
        assert schedule_outcome(state) == schedule_outcome(fresh)


@settings(max_examples=30, deadline=None)
@given(order=st.permutations(range(len(UNIVERSE))))
def test_objects_arriving_in_any_order_end_equal_to_a_fresh_load(order: list[int]) -> None:
    # A claim allocated on a device whose slice comes later must still consume its counters.
    inc = IncrementalState()
    for i in order:
        inc.put(UNIVERSE[i][0], "src")
    fresh = _fresh({origin_key(vs[0]): vs[0] for vs in UNIVERSE})
    assert projection(inc.flush()) == projection(fresh)


def test_node_versions_move_for_every_node_an_event_changes() -> None:
    store = {origin_key(o): o for o in (vs[0] for vs in UNIVERSE)}
    inc = IncrementalState([(o, "src") for o in store.values()])
    state = inc.state
    slices = [vs for vs in UNIVERSE if vs[0].kind == "ResourceSlice" and len(vs) > 2]
    rs = slices[0][2]  # one device fewer
    node = rs.spec.node_name
    before = state.version(node)
    cursor = len(state.change_log)
    inc.put(rs, "src")
    assert state.version(node) != before
    assert state.changed_since(cursor) == [node]
    pods = [vs for vs in UNIVERSE if vs[0].kind == "Pod" and vs[0].spec.node_name]
    pod = pods[0][0]
    cursor = len(state.change_log)
    inc.delete(pod)
    assert state.changed_since(cursor) == [pod.spec.node_name]


# Kinds beside the generated clusters': namespaces, services, a replica set, NodePools and kinds
# kept in `others` (a Kueue Workload, a ConfigMap).
REALISTIC = [[o] for o, _ in load_objects([str(DATA / "realistic")]) if not isinstance(o, Pod)]
EVERY_KIND = [*UNIVERSE, *REALISTIC]


@settings(max_examples=60, deadline=None)
@given(
    initial=st.lists(st.integers(0, len(EVERY_KIND) - 1), unique=True, max_size=40),
    batches=st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(("put", "put", "delete", "unlogged")),
                st.integers(0, len(EVERY_KIND) - 1),
                st.integers(0, 3),
            ),
            max_size=8,
        ),
        max_size=6,
    ),
)
def test_objects_in_order_follow_every_change_as_a_pass_over_them_finds_it(
    initial: list[int], batches: list[list[tuple[str, int, int]]]
) -> None:
    """After each batch of events (and writes the object log does not see: a pod bound in
    place, a NodePool derived), a look gives every object in `state_objects`' order and the
    changes `changes_between` finds between the objects of one look and the next."""
    kept = KeptObjects((EVERY_KIND[i][0] for i in initial), "src")
    seen = ObjectsInOrder()
    held: dict[int, KubeStruct] = {}
    for batch in batches:
        state = kept.inc.flush()
        for action, i, v in batch:
            obj = EVERY_KIND[i][v % len(EVERY_KIND[i])]
            if action != "unlogged":
                kept.change(action, obj)
            elif isinstance(obj, Pod):
                state.put_pod(obj)
            else:
                state.node_pools[f"derived-{i}"] = NodePool(
                    metadata=ObjectMeta(name=f"derived-{i}")
                )
        state = kept.inc.flush()
        objects, changes = seen.look(state)
        assert objects == state_objects(state)
        held, expected = changes_between(held, objects, state.source_of)
        assert changes == expected
