"""`migrate --check`: schedule every replica of each original and migrated pod on the given
cluster as it runs now (its bound pods and allocated claims hold their share) with the real
scheduler, and say what changed; when a replica fits nowhere, the auditor says why.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import msgspec

from draplan.api.codec import decode
from draplan.api.core_v1 import Container, Pod
from draplan.api.features import DEFAULT as DEFAULT_FEATURES
from draplan.api.features import FeatureGates
from draplan.api.meta import KubeStruct
from draplan.audit import why
from draplan.cluster.state import ClusterState, key_of
from draplan.migrate.check import CheckRow
from draplan.migrate.plan import Migration
from draplan.scheduler import Scheduler


@dataclass(frozen=True)
class Placement:
    """Where each replica went (None: nowhere), and why the first one left out fits nowhere."""

    nodes: tuple[str | None, ...]
    reason: str = ""

    @property
    def placed(self) -> list[str]:
        return [n for n in self.nodes if n]


def _place(objects: list[KubeStruct], pod: Pod, replicas: int, features: FeatureGates) -> Placement:
    """`replicas` copies of `pod` (unbound) scheduled together on the cluster."""
    pods = _replicas(pod, replicas)
    state = ClusterState.from_objects([*objects, *pods], features)
    found = {r.key: r.node for r in Scheduler().run(state)}
    nodes = tuple(found.get(key_of(p)) for p in pods)
    left = [key_of(p) for p, node in zip(pods, nodes, strict=True) if node is None]
    if not left:
        return Placement(nodes)
    # Judged on the input state: the auditor places the queue itself.
    state = ClusterState.from_objects([*objects, *pods], features)
    diagnoses = [d for d in why(state) if d.pod == left[0]]
    reason = f"{diagnoses[0].category}: {diagnoses[0].message}" if diagnoses else "cannot fit"
    return Placement(nodes, reason)


def _replicas(pod: Pod, count: int) -> list[Pod]:
    """The pod's replicas as the API server would create them (requests defaulted from
    limits), named apart (templates have no pod name), without a node."""
    name = pod.metadata.name or "migrated"
    namespace = pod.metadata.namespace or "default"
    spec = msgspec.structs.replace(
        pod.spec,
        node_name="",
        containers=tuple(_defaulted(c) for c in pod.spec.containers),
        init_containers=tuple(_defaulted(c) for c in pod.spec.init_containers),
    )
    out = []
    for i in range(count):
        meta = msgspec.structs.replace(
            pod.metadata, name=name if count == 1 else f"{name}-replica-{i}", namespace=namespace
        )
        out.append(msgspec.structs.replace(pod, metadata=meta, spec=spec))
    return out


def _defaulted(container: Container) -> Container:
    """A resource with a limit and no request requests its limit (core/v1 defaulting), so a
    manifest's `limits: {nvidia.com/gpu: 2}` asks for two GPUs."""
    res = container.resources
    requests = {**res.limits, **res.requests}
    if requests == res.requests:
        return container
    return msgspec.structs.replace(
        container, resources=msgspec.structs.replace(res, requests=requests)
    )


def _where(nodes: list[str]) -> str:
    counts = Counter(nodes)
    return ", ".join(f"{n} x{c}" if c > 1 else n for n, c in counts.items())


def _fits(p: Placement) -> str:
    placed, total = p.placed, len(p.nodes)
    if total == 1:
        return f"fits {placed[0]}"
    if len(placed) == total:
        return f"fits {total} replicas: {_where(placed)}"
    return f"fits {len(placed)} of {total} replicas: {_where(placed)}"


def _after_text(before: Placement, after: Placement) -> str:
    if not after.placed:
        return "cannot fit any more" if before.placed else "cannot fit"
    text = _fits(after)
    if len(after.placed) < len(before.placed):
        return f"{text} (fewer than the {len(before.placed)} before)"
    if before.placed and Counter(after.placed) != Counter(before.placed):
        return f"{text} (different node)"
    return text


def scheduler_check(
    migration: Migration, features: FeatureGates = DEFAULT_FEATURES
) -> list[CheckRow]:
    """One row per migrated pod spec: where its replicas fit before and after."""
    cluster = [o for o, _ in migration.cluster]
    present = {(getattr(o, "kind", ""), key_of(o)) for o in cluster}
    templates = []
    for t in migration.templates:
        obj = decode(
            {
                **t.obj,
                "metadata": {**t.obj.get("metadata", {}), "namespace": t.namespace or "default"},
            }
        )
        if (obj.kind, key_of(obj)) not in present:  # type: ignore[attr-defined]
            templates.append(obj)
    running = [o for o, _ in migration.running]
    rows = []
    for site, original, migrated in migration.pods():
        # A DaemonSet's pods (replicas None) are checked as one.
        replicas = max(1, site.site.replicas or 1)
        before = _place([*cluster, *running], original, replicas, features)
        after = _place([*cluster, *templates, *running], migrated, replicas, features)
        text_before = _fits(before) if before.placed else f"cannot fit ({before.reason})"
        rows.append(CheckRow(site.label, text_before, _after_text(before, after), after.reason))
    return rows
