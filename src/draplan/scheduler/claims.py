"""Resolve a pod's spec.resourceClaims to ResourceClaim objects, naming generated claims as
the resourceclaim controller does."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import msgspec

from draplan.api.core_v1 import Node, Pod, PodResourceClaim
from draplan.api.meta import ObjectMeta, OwnerReference
from draplan.api.resource_v1 import (
    POD_CLAIM_ANNOTATION,
    PODGROUP_CLAIM_ANNOTATION,
    ResourceClaim,
    ResourceClaimConsumerReference,
)
from draplan.api.scheduling import PodGroupV1Beta1
from draplan.cluster.nodeselector import selector_matches
from draplan.cluster.state import ClusterState, ObjectKey

# The API server's generateName alphabet (no vowels, no confusable digits).
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_BASE = 57  # 63 minus a hyphen and five generated characters


def unavailable_on(node: Node, claims: Iterable[ResourceClaim]) -> list[ResourceClaim]:
    """The allocated claims whose allocation's nodeSelector leaves `node` out: kube-scheduler
    rejects such a node whatever else it has (DynamicResources.Filter, "resourceclaim not
    available on the node", kubernetes `pkg/scheduler/framework/plugins/dynamicresources`)."""
    return [
        claim
        for claim in claims
        if claim.status.allocation is not None
        and claim.status.allocation.node_selector is not None
        and not selector_matches(claim.status.allocation.node_selector, node)
    ]


class ClaimNotFound(Exception):
    """A named claim, or the template of a generated claim, does not exist."""


def generated_claim_name(pod: Pod, pod_claim: str) -> str:
    """`<pod>-<podClaim>-xxxxx`; when too long both parts are cut in proportion (upstream does
    the same so the claim name keeps part of each). The suffix is derived from the pod, so the
    same input always gives the same name."""
    base = f"{pod.metadata.name}-{pod_claim}-"
    if len(base) > MAX_BASE:
        pod_name = pod.metadata.name
        base = (
            pod_name[: len(pod_name) * MAX_BASE // len(base)]
            + "-"
            + pod_claim[: len(pod_claim) * MAX_BASE // len(base)]
        )
    return base + generated_suffix(
        f"{pod.metadata.namespace}/{pod.metadata.name}/{pod.metadata.uid}/{pod_claim}"
    )


def generated_suffix(seed: str) -> str:
    """Five generateName characters derived from `seed`: the same input, the same name."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])


def pod_group(state: ClusterState, pod: Pod) -> PodGroupV1Beta1 | None:
    """The PodGroup whose claims the pod shares (DRAWorkloadResourceClaims, KEP-5729), if any."""
    sg = pod.spec.scheduling_group
    if sg is None or "DRAWorkloadResourceClaims" not in state.features:
        return None
    ns = pod.metadata.namespace
    return next(
        (
            o
            for o in state.others
            if isinstance(o, PodGroupV1Beta1)
            and o.metadata.namespace == ns
            and o.metadata.name == sg.pod_group_name
        ),
        None,
    )


def shared_with_group(group: PodGroupV1Beta1 | None, ref: PodResourceClaim) -> bool:
    """A pod's claim entry is its PodGroup's when it matches one of the group's exactly."""
    return group is not None and any(
        c.name == ref.name
        and c.resource_claim_name == ref.resource_claim_name
        and c.resource_claim_template_name == ref.resource_claim_template_name
        for c in group.spec.resource_claims
    )


def group_consumer(group: PodGroupV1Beta1) -> ResourceClaimConsumerReference:
    """A PodGroup's claim is reserved for the group, not for its pods."""
    return ResourceClaimConsumerReference(
        api_group="scheduling.k8s.io",
        resource="podgroups",
        name=group.metadata.name,
        uid=group.metadata.uid,
    )


def _group_claim(
    state: ClusterState, group: PodGroupV1Beta1, ref: PodResourceClaim
) -> ResourceClaim:
    """The group's claim: named, or made once from its template for the whole group (named
    `<group>-<claim>-xxxxx`, or as podgroup.status.resourceClaimStatuses records it)."""
    ns = group.metadata.namespace
    if ref.resource_claim_name is not None:
        return _named_claim(state, ns, ref.resource_claim_name)
    recorded = {s.name: s.resource_claim_name for s in group.status.resource_claim_statuses}
    name = recorded.get(ref.name) or (
        f"{group.metadata.name}-{ref.name}-"[: MAX_BASE + 1]
        + generated_suffix(f"{ns}/{group.metadata.name}/{group.metadata.uid}/{ref.name}")
    )
    existing = state.claims.get((ns, name))
    if existing is not None:
        return existing
    annotations = {PODGROUP_CLAIM_ANNOTATION: ref.name}
    return _from_template(
        state, ref, name, group.api_version, "PodGroup", group.metadata, annotations
    )


def _named_claim(state: ClusterState, ns: str, name: str) -> ResourceClaim:
    claim = state.claims.get((ns, name))
    if claim is None:
        raise ClaimNotFound(f'resourceclaim "{ns}/{name}" not found')
    return claim


def _from_template(
    state: ClusterState,
    ref: PodResourceClaim,
    name: str,
    api_version: str,
    kind: str,
    owner: ObjectMeta,
    annotations: dict[str, str],
) -> ResourceClaim:
    """The claim the controller makes from `ref`'s template for its owner (a Pod or a
    PodGroup), as it would create it."""
    ns = owner.namespace
    template = state.claim_templates.get((ns, ref.resource_claim_template_name or ""))
    if template is None:
        raise ClaimNotFound(
            f'resourceclaimtemplate "{ns}/{ref.resource_claim_template_name}" not found'
        )
    reference = OwnerReference(
        api_version=api_version,
        kind=kind,
        name=owner.name,
        uid=owner.uid,
        controller=True,
        block_owner_deletion=True,
    )
    meta = ObjectMeta(
        name=name,
        namespace=ns,
        labels=template.spec.metadata.labels,
        annotations={**template.spec.metadata.annotations, **annotations},
        owner_references=(reference,),
    )
    return ResourceClaim(metadata=meta, spec=template.spec.spec)


def group_claims(state: ClusterState, pod: Pod) -> tuple[PodGroupV1Beta1 | None, set[ObjectKey]]:
    """The pod's PodGroup and which of the pod's claims are the group's."""
    group = pod_group(state, pod)
    if group is None:
        return None, set()
    ns = pod.metadata.namespace
    return group, {
        (ns, _group_claim(state, group, ref).metadata.name)
        for ref in pod.spec.resource_claims
        if shared_with_group(group, ref)
    }


def held_claims(state: ClusterState, key: ObjectKey) -> list[ResourceClaim]:
    """The claims a pod names or had generated, as they are in the state, by name."""
    pod = state.pods[key]
    names = {r.resource_claim_name or "" for r in pod.spec.resource_claims}
    names |= {s.resource_claim_name or "" for s in pod.status.resource_claim_statuses}
    found = (state.claims.get((key[0], n)) for n in sorted(names - {""}))
    return [c for c in found if c is not None]


def unreserve(state: ClusterState, key: ObjectKey) -> None:
    """The pod `key` no longer reserves its claims: a claim left reserved by nothing is
    deallocated (its devices free), one others still reserve keeps its allocation."""
    for claim in held_claims(state, key):
        state.unreserve_claim(claim, key)


def pod_claims(state: ClusterState, pod: Pod) -> list[ResourceClaim]:
    """The pod's claims in spec.resourceClaims order; a template claim not yet created is built
    from its template (as the controller would create it), once for a whole PodGroup when the
    entry is the group's."""
    return [claim for _, claim in pod_claim_entries(state, pod)]


def pod_claim_entries(
    state: ClusterState, pod: Pod
) -> list[tuple[PodResourceClaim, ResourceClaim]]:
    """`pod_claims` beside the spec.resourceClaims entry each claim is for (an entry the
    controller decided needs no claim has none)."""
    ns = pod.metadata.namespace
    statuses = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    group = pod_group(state, pod)
    out = []
    for ref in pod.spec.resource_claims:
        if group is not None and shared_with_group(group, ref):
            out.append((ref, _group_claim(state, group, ref)))
            continue
        if ref.resource_claim_name is not None:
            out.append((ref, _named_claim(state, ns, ref.resource_claim_name)))
            continue
        if ref.name in statuses and statuses[ref.name] is None:
            continue  # the controller decided no claim is needed
        existing = statuses.get(ref.name)
        if existing:
            claim = state.claims.get((ns, existing))
            if claim is not None:
                out.append((ref, claim))
                continue
        name = existing or generated_claim_name(pod, ref.name)
        annotations = {POD_CLAIM_ANNOTATION: ref.name}
        out.append((ref, _from_template(state, ref, name, "v1", "Pod", pod.metadata, annotations)))
    return out


def requested_devices(claims: list[ResourceClaim]) -> int:
    """Devices the claims ask for (ExactCount counts; the first alternative of a prioritized
    list; `All` as one): a pod's size for ordering and reports."""
    n = 0
    for claim in claims:
        for req in claim.spec.devices.requests:
            spec = req.exactly or (req.first_available[0] if req.first_available else None)
            if spec is not None:
                n += spec.count or 1
    return n


def release_claims(
    state: ClusterState, pods: set[ObjectKey], among: Iterable[ResourceClaim] | None = None
) -> str:
    """Release the allocated claims of `pods` so that they can be allocated again elsewhere
    (a drain, in simulation); a claim also used by another pod cannot move, as upstream never
    reallocates it: returns why, having released nothing of it. `among`: the claims to look
    at, when the caller knows them (default: every claim)."""
    for claim in list(state.claims.values() if among is None else among):
        alloc = claim.status.allocation
        if alloc is None:
            continue
        users = {(claim.metadata.namespace, r.name) for r in claim.status.reserved_for}
        if not users & pods:
            continue
        if users - pods:
            return (
                f"claim {claim.metadata.namespace}/{claim.metadata.name} is also used by "
                "pods on other nodes"
            )
        status = msgspec.structs.replace(claim.status, allocation=None, reserved_for=())
        state.put_claim(msgspec.structs.replace(claim, status=status))
    return ""
