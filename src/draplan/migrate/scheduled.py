"""`migrate --check`: schedule each original and migrated pod, alone, on the given cluster with
the real scheduler, and say what changed; when a migrated pod fits nowhere, the auditor says why.
"""

from __future__ import annotations

from draplan.api.codec import decode
from draplan.api.core_v1 import Pod
from draplan.api.meta import KubeStruct
from draplan.audit import why
from draplan.cluster.state import ClusterState, key_of
from draplan.migrate.check import CheckRow
from draplan.migrate.plan import Migration
from draplan.scheduler import Scheduler


def _place(objects: list[KubeStruct], pod: Pod) -> tuple[str | None, str]:
    """(node, reason) for `pod` scheduled alone on the cluster."""
    pod = _named(pod)
    state = ClusterState.from_objects([*objects, pod])
    for result in Scheduler().run(state):
        if result.key == key_of(pod):
            if result.node:
                return result.node, ""
            break
    diagnoses = [d for d in why(state) if d.pod == key_of(pod)]
    if diagnoses:
        return None, f"{diagnoses[0].category}: {diagnoses[0].message}"
    return None, "cannot fit"


def _named(pod: Pod) -> Pod:
    """Templates have no pod name; the check needs one to track the pod."""
    import msgspec

    if pod.metadata.name and pod.metadata.namespace:
        return pod
    meta = msgspec.structs.replace(
        pod.metadata,
        name=pod.metadata.name or "migrated",
        namespace=pod.metadata.namespace or "default",
    )
    return msgspec.structs.replace(pod, metadata=meta)


def scheduler_check(migration: Migration) -> list[CheckRow]:
    """One row per migrated pod spec: where it fits before and after."""
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
    rows = []
    for site, before, after in migration.pods():
        node_before, why_before = _place(cluster, before)
        node_after, why_after = _place([*cluster, *templates], after)
        text_before = f"fits {node_before}" if node_before else f"cannot fit ({why_before})"
        if node_after is None:
            text_after = "cannot fit any more" if node_before else "cannot fit"
        elif node_before and node_after != node_before:
            text_after = f"fits {node_after} (different node)"
        else:
            text_after = f"fits {node_after}"
        rows.append(CheckRow(site.label, text_before, text_after, why_after))
    return rows
