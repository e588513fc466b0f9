"""policy/v1 PodDisruptionBudget: what the scheduler's preemption reads of it (spec.selector,
status.disruptionsAllowed and status.disruptedPods), and what the disruption controller
derives that status from when the input has none."""

from __future__ import annotations

from draplan.api.meta import (
    Condition,
    Int32,
    KubeStruct,
    LabelSelector,
    NonNegativeInt64,
    ObjectMeta,
)

IntOrString = int | str


class PodDisruptionBudgetSpec(KubeStruct, frozen=True):
    min_available: IntOrString | None = None
    selector: LabelSelector | None = None
    max_unavailable: IntOrString | None = None
    unhealthy_pod_eviction_policy: str = ""


class PodDisruptionBudgetStatus(KubeStruct, frozen=True):
    observed_generation: NonNegativeInt64 = 0
    disrupted_pods: dict[str, str] = {}
    disruptions_allowed: Int32 = 0
    current_healthy: Int32 = 0
    desired_healthy: Int32 = 0
    expected_pods: Int32 = 0
    conditions: tuple[Condition, ...] = ()


class PodDisruptionBudget(KubeStruct, frozen=True):
    api_version: str = "policy/v1"
    kind: str = "PodDisruptionBudget"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodDisruptionBudgetSpec = PodDisruptionBudgetSpec()
    status: PodDisruptionBudgetStatus | None = None
