"""`Scheduler.run(placements_only=True)` parks a pod shape that fit nowhere for the rest of the
run: it must place exactly the pods a full run places, on the same nodes, with the same
devices, on clusters of other vendors' accelerators, control-plane and system nodes,
DaemonSets, pod affinity, spread constraints, priorities and nominations."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.codec import decode
from draplan.api.meta import KubeStruct
from draplan.cluster.state import ClusterState
from draplan.scheduler import PodResult, Scheduler
from scheduler_builders import MakeNode, MakePod
from topology_clusters import cluster

GAUDI = "habana.ai/gaudi"
HOSTNAME = "kubernetes.io/hostname"


def _placed(state: ClusterState, results: list[PodResult]) -> dict[object, object]:
    """Where each placed pod went, with its claims' allocations, and every nomination."""
    out: dict[object, object] = {}
    for r in results:
        if r.node or r.nominated:
            allocations = tuple(
                state.claims[(c.metadata.namespace, c.metadata.name)].status.allocation
                for c in r.claims
            )
            out[r.key] = (r.node, r.nominated, allocations)
    return out


def _both(objs: list[KubeStruct], post_filter: bool) -> tuple[dict[object, object], ...]:
    answers = []
    for only in (False, True):
        state = ClusterState.from_objects(objs)
        results = Scheduler(post_filter=post_filter).run(state, placements_only=only)
        answers.append(_placed(state, results))
    return tuple(answers)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), post_filter=st.booleans())
def test_the_same_pods_are_placed_as_by_a_full_run(seed: int, post_filter: bool) -> None:
    objs = [decode(d) for d in cluster(seed)]
    full, placements = _both(objs, post_filter)
    assert placements == full, seed


def gaudi_node(name: str, cards: int) -> KubeStruct:
    node = MakeNode().name(name).label(HOSTNAME, name)
    return node.capacity(cpu="160", memory="1Ti", **{GAUDI: cards}).obj()


def test_a_nominated_pod_is_tried_after_its_shape_fit_nowhere() -> None:
    """`peer` fits nowhere (the equal-priority nomination holds gaudi-0's cards); `waiting`,
    of the same shape but nominated there, is not parked with it: the room is its own."""
    objs = [
        gaudi_node("gaudi-0", 4),
        gaudi_node("gaudi-1", 2),
        MakePod().name("peer").req(**{GAUDI: 4}).priority(100).created("2026-10-01T09:00:00Z"),
        MakePod()
        .name("waiting")
        .req(**{GAUDI: 4})
        .priority(100)
        .nominated("gaudi-0")
        .created("2026-10-01T10:00:00Z"),
    ]
    objs = [o if not isinstance(o, MakePod) else o.obj() for o in objs]
    full, placements = _both(objs, post_filter=False)
    assert placements == full
    assert [key[1] for key in placements] == ["waiting"]


def _pod(name: str, created: str, labels: dict[str, str], affinity: bool) -> KubeStruct:
    spec: dict[str, object] = {
        "containers": [{"name": "main", "resources": {"requests": {GAUDI: "1"}}}]
    }
    if affinity:
        term = {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": HOSTNAME}
        spec["affinity"] = {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": labels,
            "creationTimestamp": created,
        },
        "spec": spec,
    }
    return decode(doc)


def test_a_shape_refused_by_other_pods_is_tried_again() -> None:
    """`reader-a` needs a cache pod beside it and none runs yet (a failure that reads other
    nodes' pods); once `cache` is placed, `reader-b`, of the same shape, fits."""
    objs = [
        gaudi_node("gaudi-0", 8),
        _pod("reader-a", "2026-10-01T08:00:00Z", {"app": "reader"}, affinity=True),
        _pod("cache", "2026-10-01T09:00:00Z", {"app": "cache"}, affinity=False),
        _pod("reader-b", "2026-10-01T10:00:00Z", {"app": "reader"}, affinity=True),
    ]
    full, placements = _both(objs, post_filter=False)
    assert placements == full
    assert sorted(key[1] for key in placements) == ["cache", "reader-b"]
