"""Queue order: priority (spec.priority or its PriorityClass), then creation time, then name;
a gang takes the place of its first member. Gated pods stay out of the queue."""

from __future__ import annotations

from collections.abc import Iterable

from draplan.api.core_v1 import Pod
from draplan.api.meta import ObjectMeta
from draplan.api.scheduling import PriorityClass
from draplan.api.validation import SYSTEM_PRIORITY_CLASSES
from draplan.cluster.podresources import is_gated, is_terminal, is_waiting
from draplan.cluster.podsmemo import PodsIndex, PodsMemo
from draplan.cluster.state import ClusterState


def priority_of(pod: Pod, classes: dict[str, PriorityClass], default: int) -> int:
    if pod.spec.priority is not None:
        return pod.spec.priority
    pc = classes.get(pod.spec.priority_class_name)
    return pc.value if pc is not None else default


def priority_table(state: ClusterState) -> tuple[dict[str, PriorityClass], int]:
    """The PriorityClasses by name, and the globalDefault's value (0 without one)."""
    return _PRIORITIES(state)


# kube-apiserver creates these two classes itself: a dump seldom lists them.
BUILT_IN = {
    name: PriorityClass(metadata=ObjectMeta(name=name), value=value)
    for name, value in SYSTEM_PRIORITY_CLASSES.items()
}


def _priorities(state: ClusterState) -> tuple[dict[str, PriorityClass], int]:
    classes = dict(BUILT_IN)
    classes.update((o.metadata.name, o) for o in state.others if isinstance(o, PriorityClass))
    default = next((pc.value for pc in classes.values() if pc.global_default), 0)
    return classes, default


# A gang's members are put in queue order one gang at a time: a pass over the other objects
# for each would cost gangs × objects.
_PRIORITIES = PodsMemo(_priorities, pods=False)


def sort_key(
    pod: Pod, classes: dict[str, PriorityClass], default: int
) -> tuple[int, str, str, str]:
    return (
        -priority_of(pod, classes, default),
        pod.metadata.creation_timestamp or "",
        pod.metadata.namespace,
        pod.metadata.name,
    )


def in_queue_order(state: ClusterState, pods: Iterable[Pod]) -> list[Pod]:
    """Those of `pods` that wait to be scheduled (unbound, not finished, not gated), in queue
    order."""
    classes, default = priority_table(state)
    waiting = [p for p in pods if is_waiting(p)]
    waiting.sort(key=lambda p: sort_key(p, classes, default))
    return waiting


def waiting_in_queue_order(state: ClusterState) -> list[Pod]:
    """Every pod of `state` that waits to be scheduled, in queue order."""
    return list(_WAITING(state))


def _if_waiting(pod: Pod) -> Pod | None:
    return pod if is_waiting(pod) else None


# The waiting pods, looked at again only for the pods changed (`PodsIndex`).
_WAITING_PODS = PodsIndex(lambda state: _if_waiting)


def _waiting(state: ClusterState) -> tuple[Pod, ...]:
    return tuple(in_queue_order(state, _WAITING_PODS(state).values()))


_WAITING = PodsMemo(_waiting)


def _if_gated(pod: Pod) -> Pod | None:
    return pod if not pod.spec.node_name and not is_terminal(pod) and is_gated(pod) else None


# The gated pods, looked at again only for the pods changed (`PodsIndex`).
_GATED_PODS = PodsIndex(lambda state: _if_gated)


def gated_pods(state: ClusterState) -> list[Pod]:
    """Unbound pods held back by scheduling gates, in name order: neither scheduled nor
    scaled for until their gates are removed."""
    return [p for _, p in sorted(_GATED_PODS(state).items())]
