"""PodsMemo: a value of the pods and other objects is computed again exactly when they change,
through forks, reverts and commits; the gangs, the pending pods, the queue and the input's newest
time it keeps equal a fresh pass."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from conftest import DATA
from draplan.api.core_v1 import Node, Pod, PodSchedulingGate
from draplan.audit.why import _UNBOUND
from draplan.autoscaler.plan import _newest, default_now
from draplan.autoscaler.scaleup import COULD_PREEMPT, pending_pods
from draplan.cluster.podresources import is_waiting
from draplan.cluster.podsmemo import PodsMemo
from draplan.cluster.state import ClusterState, origin_key
from draplan.scheduler.gangs import (
    COSCHEDULING_LABEL,
    KUEUE_GROUP_COUNT,
    KUEUE_GROUP_LABEL,
    _find_gangs,
    find_gangs,
    kube_gangs,
)
from draplan.scheduler.queue import gated_pods, in_queue_order, waiting_in_queue_order
from draplan.sources import load_objects
from generated_clusters import KeptObjects


def _state() -> ClusterState:
    return ClusterState.from_objects(load_objects([str(DATA / "realistic")]))


def test_computed_again_exactly_when_pods_or_other_objects_change() -> None:
    state = _state()
    calls: list[int] = []

    def compute(s: ClusterState) -> tuple[tuple[str, str], ...]:
        calls.append(1)
        return tuple(sorted(s.pods.keys()))

    memo = PodsMemo(compute)
    running = sorted(k for k, p in state.pods.items() if p.spec.node_name)
    assert memo(state) == memo(state) and len(calls) == 1
    state.fork()
    state.remove_pod(running[0])
    assert running[0] not in memo(state) and len(calls) == 2
    state.revert()
    assert running[0] in memo(state) and len(calls) == 3
    state.fork()
    state.remove_pod(running[1])
    state.commit()
    assert running[1] not in memo(state) and len(calls) == 4
    assert memo(state) and len(calls) == 4
    state.others.append(state.others[0])  # the list grew
    memo(state)
    assert len(calls) == 5
    state.others = list(state.others)  # replaced, however alike
    memo(state)
    assert len(calls) == 6


def _fresh_equal(state: ClusterState) -> None:
    assert find_gangs(state) == _find_gangs(state, kube=False)
    assert kube_gangs(state) == _find_gangs(state, kube=True)
    assert pending_pods(state) == [p for _, p in sorted(state.pods.items()) if is_waiting(p)]
    assert waiting_in_queue_order(state) == in_queue_order(state, state.pods.values())
    assert default_now(state) == _newest(state)


def test_what_is_kept_equals_a_fresh_pass() -> None:
    state = _state()
    pending = sorted(k for k, p in state.pods.items() if not p.spec.node_name)
    checks = 0
    for step in range(len(pending)):
        _fresh_equal(state)
        checks += 1
        key = pending[step]
        pod = state.pods[key]
        state.fork()
        state.put_pod(
            msgspec.structs.replace(
                pod,
                metadata=msgspec.structs.replace(
                    pod.metadata,
                    labels={**pod.metadata.labels, "scheduling.x-k8s.io/pod-group": "g"},
                ),
            )
        )
        _fresh_equal(state)
        state.revert()
        state.remove_pod(key)
    assert checks == len(pending) > 0
    # What callers get is theirs to change.
    find_gangs(state).clear()
    pending_pods(state).clear()
    waiting_in_queue_order(state).clear()
    _fresh_equal(state)


def test_a_value_of_the_other_objects_alone_outlives_pod_changes() -> None:
    state = _state()
    calls: list[int] = []

    def compute(s: ClusterState) -> int:
        calls.append(1)
        return len(s.others)

    memo = PodsMemo(compute, pods=False)
    memo(state)
    state.remove_pod(min(state.pods.keys()))
    assert memo(state) == len(state.others) and len(calls) == 1
    state.others = list(state.others)
    memo(state)
    assert len(calls) == 2


def _pod_variants(pod: Pod, nodes: list[str]) -> list[Pod]:
    """The pod and what watch events could make of it: bound elsewhere or unbound, ended,
    gated, in a coscheduling or Kueue group, of high priority, created later."""
    meta, spec = pod.metadata, pod.spec

    return [
        pod,
        replace(pod, spec=replace(spec, node_name=None if spec.node_name else nodes[0])),
        replace(pod, spec=replace(spec, node_name=nodes[-1])),
        replace(pod, status=replace(pod.status, phase="Succeeded")),
        replace(pod, spec=replace(spec, scheduling_gates=(PodSchedulingGate(name="hold"),))),
        replace(pod, metadata=replace(meta, labels={**meta.labels, COSCHEDULING_LABEL: "g"})),
        replace(
            pod,
            metadata=replace(
                meta,
                labels={**meta.labels, KUEUE_GROUP_LABEL: "k"},
                annotations={**meta.annotations, KUEUE_GROUP_COUNT: "2"},
            ),
        ),
        replace(pod, spec=replace(spec, priority=1_000_000, node_name=None)),
        replace(pod, metadata=replace(meta, creation_timestamp="2031-05-06T07:08:09Z")),
    ]


OBJECTS = [o for o, _ in load_objects([str(DATA / "realistic")])]
NODES = sorted(o.metadata.name for o in OBJECTS if isinstance(o, Node))
POD_VARIANTS = [_pod_variants(o, NODES) for o in OBJECTS if isinstance(o, Pod)]


def _answers(state: ClusterState) -> tuple[object, ...]:
    return (
        gated_pods(state),
        sorted(_UNBOUND(state).items()),
        find_gangs(state),
        kube_gangs(state),
        waiting_in_queue_order(state),
        pending_pods(state),
        default_now(state),
        COULD_PREEMPT(state),
    )


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(("put", "put", "delete", "fork", "commit", "unlogged")),
                st.integers(0, len(POD_VARIANTS) - 1),
                st.integers(0, 8),
            ),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=8,
    )
)
def test_kept_pod_indexes_answer_as_a_fresh_state_after_any_changes(
    batches: list[list[tuple[str, int, int]]],
) -> None:
    """The gangs, the queue, the newest time and whether a pod could preempt, kept through
    batches of events (`IncrementalState`), forks, commits and writes the object log never
    saw, equal those of a fresh state of the same pods."""
    kept = KeptObjects(OBJECTS, "src")
    state = kept.inc.flush()
    _answers(state)
    for batch in batches:
        for action, i, v in batch:
            pod = POD_VARIANTS[i][v]
            if action in ("put", "delete"):
                kept.change(action, pod)
            elif action == "fork":  # a trial placement, reverted
                state.fork()
                state.put_pod(pod)
                fresh = kept.fresh()
                fresh.put_pod(pod)
                assert _answers(state) == _answers(fresh)
                state.revert()
            else:  # written below the object log: committed from a fork, or put directly
                if action == "commit":
                    state.fork()
                state.put_pod(pod)
                if action == "commit":
                    state.commit()
                kept.store[origin_key(pod)] = pod
        state = kept.inc.flush()
        assert _answers(state) == _answers(kept.fresh())
