"""A plan written as what the autoscaler that carries it out consumes (`scale -o yaml`).

- `auto` (the default): each pool in the form of the autoscaler that grows it
  (`autoscaler.owners`): Cluster Autoscaler's as `ca`, Karpenter's as `karpenter`.
- `ca`: per new node set a ProvisioningRequest (`autoscaling.x-k8s.io/v1`) with its
  PodTemplates, as Cluster Autoscaler's ProvisioningRequest controller reads them: class
  `best-effort-atomic-scale-up.autoscaling.x-k8s.io` (the nodes all or none; one request per
  gang the modelled scheduler places whole, one for the other pods of each pool), or
  `check-capacity.autoscaling.x-k8s.io` to ask first whether the cluster has room; podSets
  of at most 32 distinct templates, each with its count; templates pinned to the pool by the
  label that selects its nodes alone, so CA's choice is the plan's.
- `karpenter`: one `karpenter.sh/v1` NodeClaim per new node: the pool's NodeClass, the
  copied node's instance and capacity type as requirements, the pods' requests.
- `draplan`: the NodePools with `draplan.io/target-size-increase` (and ProvisioningRequests
  from the input with their new status).

A pool that cannot be written for the target (a Karpenter pool asked of Cluster Autoscaler,
which reads no ProvisioningRequest for it; a Cluster API group asked of Karpenter; a Karpenter
pool whose NodePool is not in the input; a pool no label selects alone) is refused with one
line, and the others are still written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from draplan.api.autoscaling import (
    BEST_EFFORT_ATOMIC,
    CHECK_CAPACITY,
    PodSet,
    PodTemplateRef,
    ProvisioningRequest,
    ProvisioningRequestSpec,
)
from draplan.api.codec import encode
from draplan.api.core_v1 import Pod, PodSpec, PodTemplate, PodTemplateSpec
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.karpenter import (
    CAPACITY_TYPE_LABEL,
    NODEPOOL_LABEL,
    KarpenterNodePool,
    NodeClaim,
    NodeClaimResources,
    NodeClaimSpec,
    Requirement,
)
from draplan.api.meta import ObjectMeta
from draplan.api.quantity import Quantity
from draplan.autoscaler.derived import INSTANCE_TYPE
from draplan.autoscaler.options import Option
from draplan.autoscaler.owners import CLUSTER_AUTOSCALER, KARPENTER, owner, selector, source
from draplan.autoscaler.plan import Plan
from draplan.autoscaler.provreq import CONSUME_ANNOTATION, with_status
from draplan.cluster.podresources import pod_requests
from draplan.cluster.state import ClusterState, ObjectKey

TARGETS = ("auto", "ca", "karpenter", "draplan")
_FORM = {CLUSTER_AUTOSCALER: "ca", KARPENTER: "karpenter"}
_NAMES = {CLUSTER_AUTOSCALER: "Cluster Autoscaler", KARPENTER: "Karpenter"}
TARGET_SIZE = "draplan.io/target-size-increase"
# Moves that would spare some of the pool's new nodes: the user's other choice.
MOVES_INSTEAD = "draplan.io/moves-instead"
# The pending pods a request is for: each consumes it once annotated with
# autoscaling.x-k8s.io/consume-provisioning-request=<request name>.
PODS_ANNOTATION = "draplan.io/pods"
MAX_POD_SETS = 32  # the CRD's maxItems


def _planned(plan: Plan, state: ClusterState) -> Iterable[tuple[Option, list[ObjectKey]]]:
    """Each scale-up option with the pending pods it is for (not the pods of requests that
    exist already: CA provisions those by itself)."""
    for option in plan.scale_up:
        keys = [
            k
            for k in option.pods
            if k in state.pods and CONSUME_ANNOTATION not in state.pods[k].metadata.annotations
        ]
        if keys:
            yield option, keys


def _template_spec(pod: Pod, pin: dict[str, str]) -> PodSpec:
    return msgspec.structs.replace(
        pod.spec, node_name="", node_selector={**pod.spec.node_selector, **pin}
    )


def _request(
    state: ClusterState, ns: str, name: str, keys: list[ObjectKey], cls: str, pin: dict[str, str]
) -> list[dict[str, Any]]:
    """PodTemplates and the ProvisioningRequests (32 pod sets each) for the pods `keys`."""
    specs: list[tuple[PodSpec, int]] = []
    for key in keys:
        spec = _template_spec(state.pods[key], pin)
        for i, (known, n) in enumerate(specs):
            if known == spec:
                specs[i] = (known, n + 1)
                break
        else:
            specs.append((spec, 1))
    out: list[dict[str, Any]] = []
    chunks = [specs[i : i + MAX_POD_SETS] for i in range(0, len(specs), MAX_POD_SETS)]
    for c, chunk in enumerate(chunks):
        base = name if len(chunks) == 1 else f"{name}-{c}"
        sets = []
        for i, (spec, count) in enumerate(chunk):
            template = f"{base}-{i}"
            out.append(
                encode(
                    PodTemplate(
                        metadata=ObjectMeta(name=template, namespace=ns),
                        template=PodTemplateSpec(spec=spec),
                    )
                )
            )
            sets.append(PodSet(pod_template_ref=PodTemplateRef(name=template), count=count))
        out.append(
            encode(
                ProvisioningRequest(
                    metadata=ObjectMeta(
                        name=base,
                        namespace=ns,
                        annotations={PODS_ANNOTATION: ",".join(f"{k[0]}/{k[1]}" for k in keys)},
                    ),
                    spec=ProvisioningRequestSpec(pod_sets=tuple(sets), provisioning_class_name=cls),
                )
            )
        )
    return out


def _dns_name(*parts: str) -> str:
    text = "-".join(p for p in parts if p).lower()
    cleaned = "".join(ch if ch.isalnum() or ch in "-." else "-" for ch in text).strip("-.")
    return cleaned[:253] or "draplan"


Planned = list[tuple[Option, list[ObjectKey]]]


def ca_manifests(
    plan: Plan, state: ClusterState, check_first: bool = False, planned: Planned | None = None
) -> list[dict[str, Any]]:
    """ProvisioningRequests and PodTemplates for every node set the plan adds (or those of
    `planned`), each template pinned to its pool by `owners.selector`."""
    cls = CHECK_CAPACITY if check_first else BEST_EFFORT_ATOMIC
    # CA provisions a best-effort-atomic request's pods all or none
    # (provisioningrequest/besteffortatomic/provisioning_class.go: Provision scales up for the
    # request's pods together or not at all), so a request is a unit the scheduler places whole:
    # one per gang of the plan's scheduler (`Plan.gangs`), the other pods per pool and
    # namespace.
    gangs = plan.gangs
    out: list[dict[str, Any]] = []
    taken: set[tuple[str, str]] = set()

    def unique(ns: str, name: str) -> str:
        k, candidate = 1, name
        while (ns, candidate) in taken:
            candidate, k = f"{name}-{k}", k + 1
        taken.add((ns, candidate))
        return candidate

    for option, keys in _planned(plan, state) if planned is None else planned:
        pin = selector(state, option.pool)
        groups: dict[tuple[str, ...], list[ObjectKey]] = {}
        for key in keys:
            gang = gangs.get(key)
            # A gang's pods are one request; the others of the pool, one per namespace.
            group = ("gang", *gang.key) if gang is not None else ("pool", key[0])
            groups.setdefault(group, []).append(key)
        for group, members in sorted(groups.items()):
            ns = members[0][0]
            if group[0] == "gang":
                base = _dns_name(*group[3:]) if group[3:] else _dns_name(members[0][1])
            else:
                base = _dns_name("draplan", option.pool.metadata.name)
            out.extend(_request(state, ns, unique(ns, base), members, cls, pin))
    return out


def _karpenter_pool(state: ClusterState, pool: NodePool) -> KarpenterNodePool | None:
    return next(
        (
            obj
            for obj in state.others
            if isinstance(obj, KarpenterNodePool) and obj.metadata.name == pool.metadata.name
        ),
        None,
    )


def karpenter_manifests(plan: Plan, state: ClusterState, planned: Planned) -> list[dict[str, Any]]:
    """One NodeClaim per new node of `planned`, owned by the pool's Karpenter NodePool (which
    `refusal` made sure is in the input, with a nodeClassRef)."""
    out: list[dict[str, Any]] = []
    for option, _ in planned:
        kp = _karpenter_pool(state, option.pool)
        assert kp is not None
        template = kp.spec.template
        node_class = template.spec.node_class_ref
        assert node_class is not None
        for new in option.nodes:
            name = new.node.metadata.name
            labels = new.node.metadata.labels
            requirements = [
                Requirement(key=NODEPOOL_LABEL, operator="In", values=(kp.metadata.name,))
            ]
            for key in (INSTANCE_TYPE, CAPACITY_TYPE_LABEL):
                if labels.get(key):
                    requirements.append(Requirement(key=key, operator="In", values=(labels[key],)))
            requests: dict[str, int] = {}
            for pod_key, node in plan.placed_on_new.items():
                if node == name:
                    for resource, milli in pod_requests(
                        state.pods[pod_key], state.features
                    ).items():
                        requests[resource] = requests.get(resource, 0) + milli
            claim = NodeClaim(
                metadata=ObjectMeta(
                    name=name,
                    labels={**template.metadata.labels, NODEPOOL_LABEL: kp.metadata.name},
                    annotations=dict(template.metadata.annotations),
                ),
                spec=NodeClaimSpec(
                    requirements=tuple(requirements),
                    resources=NodeClaimResources(
                        requests={r: Quantity.from_milli(m) for r, m in sorted(requests.items())}
                    ),
                    taints=template.spec.taints,
                    startup_taints=template.spec.startup_taints,
                    node_class_ref=node_class,
                    expire_after=template.spec.expire_after,
                    termination_grace_period=template.spec.termination_grace_period,
                ),
            )
            out.append(encode(claim))
    return out


def draplan_manifests(plan: Plan, state: ClusterState) -> list[dict[str, Any]]:
    """ProvisioningRequests of the input with their new status, one best-effort-atomic request
    per scaled gang (with its PodTemplates), and each pool's target size."""
    out: list[dict[str, Any]] = []
    for pr, conds in plan.provisioning:
        out.append(encode(with_status(pr, conds)))
    gangs = plan.gangs
    seen: set[tuple[str, ...]] = set()
    scaled = {k for o in plan.scale_up for k in o.pods}
    for key, gang in sorted(gangs.items()):
        if key not in scaled or gang.key in seen:
            continue
        seen.add(gang.key)
        base = "-".join(gang.key[2:]).strip("-") or key[1]
        members = [m for m in gang.members if m in state.pods]
        out.extend(_request(state, key[0], base, members, BEST_EFFORT_ATOMIC, {}))
    added: dict[str, int] = {}
    for o in plan.scale_up:
        added[o.pool.metadata.name] = added.get(o.pool.metadata.name, 0) + len(o.nodes)
    for name, n in sorted(added.items()):
        doc = encode(state.node_pools[name])
        annotations = doc.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[TARGET_SIZE] = str(n)
        instead = [m.text() for m in plan.moves if m.pool == name and not m.made]
        if instead:
            annotations[MOVES_INSTEAD] = "; ".join(instead)
        out.append(doc)
    return out


def refusal(state: ClusterState, pool: NodePool, form: str) -> str:
    """Why `pool` cannot be written as `form` ("ca" or "karpenter"); "" if it can."""
    name, where, grower = pool.metadata.name, source(pool), owner(state, pool)
    if _FORM[grower] != form:
        other = CLUSTER_AUTOSCALER if form == "ca" else KARPENTER
        return (
            f"pool {name} ({where}) is grown by {_NAMES[grower]}, not {_NAMES[other]}: "
            f"not written (--target auto or {_FORM[grower]} writes it)"
        )
    if form == "karpenter":
        kp = _karpenter_pool(state, pool)
        if kp is None:
            return (
                f"pool {name} ({where}): its NodeClaims need the karpenter.sh/v1 NodePool "
                f"{name} (its nodeClassRef), which is not in the input: not written"
            )
        if kp.spec.template.spec.node_class_ref is None:
            return (
                f"pool {name} ({where}): Karpenter NodePool {name} has no "
                "spec.template.spec.nodeClassRef for its NodeClaims: not written"
            )
    elif not selector(state, pool):
        return (
            f"pool {name} ({where}): no label selects its nodes alone, so a ProvisioningRequest "
            "could be served by another node group: not written"
        )
    return ""


def manifests(
    plan: Plan, state: ClusterState, target: str = "auto", check_first: bool = False
) -> tuple[list[dict[str, Any]], list[str]]:
    """The plan as `target` reads it, and one line per pool refused (see the module)."""
    if target == "draplan":
        return draplan_manifests(plan, state), []
    forms: dict[str, Planned] = {"ca": [], "karpenter": []}
    refused: list[str] = []
    for option, keys in _planned(plan, state):
        pool = option.pool
        form = _FORM[owner(state, pool)] if target == "auto" else target
        why = refusal(state, pool, form)
        if why:
            if why not in refused:
                refused.append(why)
            continue
        forms[form].append((option, keys))
    out = ca_manifests(plan, state, check_first, forms["ca"]) if forms["ca"] else []
    return [*out, *karpenter_manifests(plan, state, forms["karpenter"])], refused
