"""apps/v1 kinds read for their selectors: the ReplicaSet or StatefulSet that controls a pod
gives PodTopologySpread's default constraints their selector (helper.DefaultSelector)."""

from __future__ import annotations

from draplan.api.meta import KubeStruct, LabelSelector, ObjectMeta


class SelectorSpec(KubeStruct, frozen=True):
    selector: LabelSelector | None = None


class ReplicaSet(KubeStruct, frozen=True):
    api_version: str = "apps/v1"
    kind: str = "ReplicaSet"
    metadata: ObjectMeta = ObjectMeta()
    spec: SelectorSpec = SelectorSpec()


class StatefulSet(KubeStruct, frozen=True):
    api_version: str = "apps/v1"
    kind: str = "StatefulSet"
    metadata: ObjectMeta = ObjectMeta()
    spec: SelectorSpec = SelectorSpec()
