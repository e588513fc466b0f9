"""The scheduling framework's contract: Status, cycle state, pod and node views, and one
protocol per extension point (as in k8s.io/kube-scheduler/framework)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

import msgspec

from draplan.api.core_v1 import Node, Pod
from draplan.cluster.podresources import Resources
from draplan.cluster.state import ClusterState, ObjectKey


class Code(Enum):
    SUCCESS = "Success"
    ERROR = "Error"  # bad input or a bug: this pod's attempt is aborted
    UNSCHEDULABLE = "Unschedulable"
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
    SKIP = "Skip"


@dataclass(frozen=True)
class Status:
    """Outcome of one plugin call; `reasons` are the strings kube-scheduler would print, and
    `code_name` a short machine code (e.g. the allocator's failure code) for aggregation."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    detail: Any = None

    @cached_property
    def ok(self) -> bool:  # cached: one status is shared by many nodes and read for each
        return self.code in (Code.SUCCESS, Code.SKIP)

    def with_plugin(self, name: str) -> Status:
        return Status(self.code, self.reasons, name, self.detail)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def unschedulable(*reasons: str, detail: Any = None, resolvable: bool = True) -> Status:
    code = Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    return Status(code, reasons, detail=detail)


def error(reason: str) -> Status:
    return Status(Code.ERROR, (reason,))


@dataclass
class CycleState:
    """Scratch space of one scheduling attempt, keyed by plugin name."""

    data: dict[object, Any] = field(default_factory=dict)


def encode_shape(pod: Pod, requests: Resources, claim_shapes: list[Any]) -> bytes:
    """What the filters and scores read of a pod, as bytes: equal bytes, same answers."""
    spec = pod.spec
    return msgspec.msgpack.encode(
        (
            sorted(requests.items()),
            spec.node_name,
            spec.node_selector,
            spec.affinity,
            spec.tolerations,
            claim_shapes,
        ),
        enc_hook=str,
    )


@dataclass(frozen=True)
class PodInfo:
    """A pod with what every plugin needs precomputed."""

    pod: Pod
    key: ObjectKey
    requests: Resources
    shape: bytes  # equal for pods the scheduler cannot tell apart (same template)

    @property
    def label(self) -> str:
        return f"{self.key[0]}/{self.key[1]}"


class Plugin(Protocol):
    name: str


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: ClusterState, cycle: CycleState, pod: PodInfo) -> Status: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node
    ) -> Status: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> float:
        """0..100, higher is better; must depend only on the pod and this node's state."""
        ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node
    ) -> Status: ...

    def unreserve(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node
    ) -> None: ...


@runtime_checkable
class PermitPlugin(Protocol):
    name: str

    def permit(
        self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node
    ) -> Status: ...


@runtime_checkable
class BindPlugin(Protocol):
    name: str

    def bind(self, state: ClusterState, cycle: CycleState, pod: PodInfo, node: Node) -> Status: ...
