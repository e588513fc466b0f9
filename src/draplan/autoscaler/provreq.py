"""ProvisioningRequest classes with Cluster Autoscaler's semantics and conditions:
check-capacity (fit on existing nodes, book it) and best-effort-atomic-scale-up (all pods or
none, from one pool)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import msgspec

from draplan.api.autoscaling import BEST_EFFORT_ATOMIC, CHECK_CAPACITY, ProvisioningRequest
from draplan.api.core_v1 import Pod
from draplan.api.meta import Condition, ObjectMeta
from draplan.cluster.state import ClusterState, ObjectKey, key_of

CONSUME_ANNOTATION = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS_ANNOTATION = "autoscaling.x-k8s.io/provisioning-class-name"
BOOKING = timedelta(minutes=10)  # defaultReservationTime
EXPIRY = timedelta(days=7)  # defaultExpirationTime


@dataclass
class ProvReqOutcome:
    request: ProvisioningRequest
    conditions: list[Condition] = field(default_factory=list)
    pods: list[ObjectKey] = field(default_factory=list)
    book: bool = False  # its pods hold capacity in the plan


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def format_time(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def provreq_pods(state: ClusterState, pr: ProvisioningRequest) -> list[Pod]:
    """The pods a request stands for, built from its PodTemplates (pod sets × count)."""
    ns, name = key_of(pr)
    pods = []
    for i, ps in enumerate(pr.spec.pod_sets):
        tmpl = state.pod_templates.get((ns, ps.pod_template_ref.name))
        if tmpl is None:
            continue
        for j in range(ps.count):
            meta = ObjectMeta(
                name=f"{name}-{i}-{j}",
                namespace=ns,
                uid=f"{name}-{i}-{j}",
                labels=tmpl.template.metadata.labels,
                annotations={
                    **tmpl.template.metadata.annotations,
                    CONSUME_ANNOTATION: name,
                    CLASS_ANNOTATION: pr.spec.provisioning_class_name,
                },
            )
            pods.append(Pod(metadata=meta, spec=tmpl.template.spec))
    return pods


def condition(ctype: str, status: bool, reason: str, message: str, now: datetime) -> Condition:
    return Condition(
        type=ctype,
        status="True" if status else "False",
        reason=reason,
        message=message,
        last_transition_time=format_time(now),
    )


def existing(pr: ProvisioningRequest, ctype: str) -> Condition | None:
    return next((c for c in pr.status.conditions if c.type == ctype), None)


def keep_transitions(pr: ProvisioningRequest, conditions: list[Condition]) -> list[Condition]:
    """A condition whose status did not change keeps its lastTransitionTime (as
    meta.SetStatusCondition does): a re-checked booking must not restart its clock."""
    out = []
    for c in conditions:
        before = existing(pr, c.type)
        if before is not None and before.status == c.status and before.last_transition_time:
            c = msgspec.structs.replace(c, last_transition_time=before.last_transition_time)
        out.append(c)
    return out


def booking_state(state: ClusterState, pr: ProvisioningRequest, now: datetime) -> Condition | None:
    """BookingExpired when provisioned over 10 minutes ago, or when all its pods are running
    (PR autoscaler#9806 fixed double booking); None while the booking holds."""
    provisioned = existing(pr, "Provisioned")
    if provisioned is None or provisioned.status != "True":
        return None
    ns, name = key_of(pr)
    consumers = [
        p
        for p in state.pods.values()
        if p.metadata.namespace == ns and p.metadata.annotations.get(CONSUME_ANNOTATION) == name
    ]
    wanted = sum(ps.count for ps in pr.spec.pod_sets)
    if consumers and sum(1 for p in consumers if p.spec.node_name) >= wanted:
        return condition(
            "BookingExpired",
            True,
            "CapacityBookingConsumed",
            "all pods of the request are scheduled",
            now,
        )
    since = parse_time(provisioned.last_transition_time)
    if since is not None and now - since > BOOKING:
        return condition(
            "BookingExpired",
            True,
            "CapacityReservationTimeExpired",
            "capacity was booked for 10 minutes",
            now,
        )
    return None


def supported(pr: ProvisioningRequest) -> bool:
    return pr.spec.provisioning_class_name in (CHECK_CAPACITY, BEST_EFFORT_ATOMIC)


def with_status(pr: ProvisioningRequest, conditions: list[Condition]) -> ProvisioningRequest:
    status = msgspec.structs.replace(pr.status, conditions=tuple(conditions))
    return msgspec.structs.replace(pr, status=status)
