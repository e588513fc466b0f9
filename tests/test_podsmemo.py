"""PodsMemo: a value of the pods and other objects is computed again exactly when they change,
through forks, reverts and commits; the gangs, the pending pods, the queue and the input's newest
time it keeps equal a fresh pass."""

from __future__ import annotations

import msgspec

from conftest import DATA
from draplan.autoscaler.plan import _newest, default_now
from draplan.autoscaler.scaleup import pending_pods
from draplan.cluster.podresources import is_waiting
from draplan.cluster.podsmemo import PodsMemo
from draplan.cluster.state import ClusterState
from draplan.scheduler.gangs import _find_gangs, find_gangs, kube_gangs
from draplan.scheduler.queue import in_queue_order, waiting_in_queue_order
from draplan.sources import load_objects


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
