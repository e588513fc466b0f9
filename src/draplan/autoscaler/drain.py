"""What Cluster Autoscaler does with each pod of a node it would remove: its drainability rules
in their order (`simulator/drainability/rules/rules.go`, `Default`), as `GetPodsToMove`
(`simulator/drain.go`) applies them.

- mirror pods and pods terminating past their grace period and 30 s more are ignored
  (`rules/mirror`, `rules/longterminating`; `utils/drain` IsPodLongTerminating);
- DaemonSet pods are evicted, never moved (`rules/daemonset`; `utils/pod` IsDaemonSetPod: a
  DaemonSet controller, or the `cluster-autoscaler.kubernetes.io/daemonset-pod` annotation);
- pods annotated `safe-to-evict: "true"` and terminal pods are moved whatever follows
  (`rules/safetoevict`, `rules/terminal`);
- then a pod blocks the node (`BlockingPodReason`) when it has no controller, or one of a kind
  other than ReplicationController, Job, ReplicaSet and StatefulSet while
  `--skip-nodes-with-custom-controller-pods` (`rules/replicated`, NotReplicated); runs in
  kube-system with no PodDisruptionBudget while `--skip-nodes-with-system-pods`
  (`rules/system`, UnmovableKubeSystemPod); is annotated `safe-to-evict: "false"`
  (`rules/notsafetoevict`, NotSafeToEvictAnnotation); has a hostPath or non-memory emptyDir
  volume not named in `safe-to-evict-local-volumes` while `--skip-nodes-with-local-storage`
  (`rules/localstorage`, `utils/drain` HasBlockingLocalStorage, LocalStorageRequested); or
  would take a PodDisruptionBudget below the disruptions it allows (`rules/pdb`, NotEnoughPdb;
  the budgets left are tracked across the nodes removed, as `RemainingPdbTracker` does).
Controllers are not looked up (draplan does not read ReplicaSets or Jobs), so
ControllerNotFound and MinReplicasReached are not modelled."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from draplan.api.core_v1 import Pod
from draplan.api.policy_v1 import PodDisruptionBudget
from draplan.autoscaler.provreq import parse_time
from draplan.cluster.labels import selector_of
from draplan.cluster.state import ClusterState, ObjectKey, key_of

MIRROR = "kubernetes.io/config.mirror"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
DAEMONSET_POD = "cluster-autoscaler.kubernetes.io/daemonset-pod"
LONG_TERMINATING_EXTRA = timedelta(seconds=30)  # utils/drain: PodLongTerminatingExtraThreshold
DEFAULT_GRACE_SECONDS = 30  # v1.DefaultTerminationGracePeriodSeconds
REPLICATED_KINDS = frozenset({"ReplicationController", "Job", "ReplicaSet", "StatefulSet"})


@dataclass(frozen=True)
class DrainOptions:
    """CA's flags that change what blocks a drain (its defaults)."""

    skip_nodes_with_system_pods: bool = True  # --skip-nodes-with-system-pods
    skip_nodes_with_local_storage: bool = True  # --skip-nodes-with-local-storage
    skip_nodes_with_custom_controller_pods: bool = True  # --skip-nodes-with-custom-controller-pods


@dataclass(frozen=True)
class Blocked:
    """A pod that keeps its node: CA's BlockingPodReason and its message."""

    pod: ObjectKey
    reason: str
    message: str


@dataclass
class Drain:
    move: list[Pod] = field(default_factory=list)  # rescheduled on other nodes
    evict: list[Pod] = field(default_factory=list)  # DaemonSet pods: evicted, not moved
    blocked: Blocked | None = None


class Budgets:
    """The PodDisruptionBudgets and the disruptions each still allows, lowered as nodes are
    drained in one simulation (`core/scaledown/pdb` RemainingPdbTracker)."""

    def __init__(self, state: ClusterState) -> None:
        self.pdbs = sorted(
            (o for o in state.others if isinstance(o, PodDisruptionBudget)), key=key_of
        )
        self.left = {key_of(p): _allowed(p) for p in self.pdbs}

    def matching(self, pod: Pod) -> list[PodDisruptionBudget]:
        return [
            p
            for p in self.pdbs
            if p.metadata.namespace == pod.metadata.namespace
            and selector_of(p.spec.selector).matches(pod.metadata.labels)
        ]

    def blocking(self, pods: Sequence[Pod]) -> PodDisruptionBudget | None:
        """The first budget moving all of `pods` would break."""
        used: dict[ObjectKey, int] = {}
        for pod in pods:
            for pdb in self.matching(pod):
                key = key_of(pdb)
                used[key] = used.get(key, 0) + 1
                if used[key] > self.left[key]:
                    return pdb
        return None

    def take(self, pods: Sequence[Pod]) -> None:
        for pod in pods:
            for pdb in self.matching(pod):
                self.left[key_of(pdb)] -= 1


def _allowed(pdb: PodDisruptionBudget) -> int:
    return pdb.status.disruptions_allowed if pdb.status is not None else 0


def is_daemonset_pod(pod: Pod) -> bool:
    controller = controller_of(pod)
    if controller is not None and controller[0] == "DaemonSet":
        return True
    return pod.metadata.annotations.get(DAEMONSET_POD) == "true"


def controller_of(pod: Pod) -> tuple[str, str] | None:
    """The pod's controller (metav1.GetControllerOf): kind and name."""
    for ref in pod.metadata.owner_references:
        if ref.controller:
            return ref.kind, ref.name
    return None


def is_terminal(pod: Pod) -> bool:
    """`utils/drain` IsPodTerminal."""
    phase, policy = pod.status.phase, pod.spec.restart_policy
    if policy == "Never" and phase in ("Succeeded", "Failed"):
        return True
    if policy == "OnFailure" and phase == "Succeeded":
        return True
    return phase == "Failed"


def long_terminating(pod: Pod, now: datetime) -> bool:
    deleted = parse_time(pod.metadata.deletion_timestamp)
    if deleted is None:
        return False
    grace = pod.spec.termination_grace_period_seconds
    seconds = DEFAULT_GRACE_SECONDS if grace is None else grace
    return deleted + timedelta(seconds=seconds) + LONG_TERMINATING_EXTRA < now


def blocking_local_storage(pod: Pod) -> bool:
    """A hostPath or emptyDir (not in memory) volume not named safe to evict."""
    safe = set(pod.metadata.annotations.get(SAFE_LOCAL_VOLUMES, "").split(","))
    for volume in pod.spec.volumes:
        local = volume.host_path is not None or (
            volume.empty_dir is not None and volume.empty_dir.medium != "Memory"
        )
        if local and volume.name not in safe:
            return True
    return False


def _blocked(pod: Pod, options: DrainOptions, budgets: Budgets) -> Blocked | None:
    """The blocking rules, in their order, for a pod no earlier rule let go."""
    key = key_of(pod)
    name = f"{pod.metadata.namespace}/{pod.metadata.name}"
    controller = controller_of(pod)
    replicated = controller is not None and (
        not options.skip_nodes_with_custom_controller_pods or controller[0] in REPLICATED_KINDS
    )
    if not replicated:
        return Blocked(key, "NotReplicated", f"{name} is not replicated")
    if (
        options.skip_nodes_with_system_pods
        and pod.metadata.namespace == "kube-system"
        and not budgets.matching(pod)
    ):
        return Blocked(
            key,
            "UnmovableKubeSystemPod",
            f"non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: "
            f"{pod.metadata.name}",
        )
    if pod.metadata.annotations.get(SAFE_TO_EVICT) == "false":
        return Blocked(
            key,
            "NotSafeToEvictAnnotation",
            f"pod annotated as not safe to evict present: {pod.metadata.name}",
        )
    if options.skip_nodes_with_local_storage and blocking_local_storage(pod):
        return Blocked(
            key, "LocalStorageRequested", f"pod with local storage present: {pod.metadata.name}"
        )
    for pdb in budgets.matching(pod):
        if budgets.left[key_of(pdb)] < 1:
            return Blocked(key, "NotEnoughPdb", f"not enough pod disruption budget to move {name}")
    return None


IGNORE, EVICT, MOVE = "ignore", "evict", "move"


def _rule(pod: Pod, options: DrainOptions, budgets: Budgets, now: datetime | None) -> str | Blocked:
    """The drainability rules for one pod, in their order: IGNORE (mirror, long terminating:
    not checked without `now`), EVICT (DaemonSet), MOVE, or what blocks the node."""
    if MIRROR in pod.metadata.annotations or (now is not None and long_terminating(pod, now)):
        return IGNORE
    if is_daemonset_pod(pod):
        return EVICT
    if pod.metadata.annotations.get(SAFE_TO_EVICT) == "true" or is_terminal(pod):
        return MOVE
    return _blocked(pod, options, budgets) or MOVE


def movable(pod: Pod, options: DrainOptions, budgets: Budgets) -> bool:
    """Whether CA moves the pod to another node when it drains the pod's node: `drain`'s rules
    for one pod, the budgets as they stand. A pod being deleted or done is not moved: it is
    leaving anyway."""
    if pod.metadata.deletion_timestamp or is_terminal(pod):
        return False
    return _rule(pod, options, budgets, None) == MOVE


def drain(pods: Sequence[Pod], options: DrainOptions, budgets: Budgets, now: datetime) -> Drain:
    """What CA does with `pods` (one node's) if it drains their node."""
    out = Drain()
    for pod in pods:
        rule = _rule(pod, options, budgets, now)
        if isinstance(rule, Blocked):
            out.blocked = rule
            return out
        if rule == EVICT:
            out.evict.append(pod)
        elif rule == MOVE:
            out.move.append(pod)
    return out
