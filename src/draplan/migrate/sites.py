"""Where the pod specs of an object are: a Pod, and every pod template its spec holds.

A template is any mapping under a key named `template` or `...Template` whose `spec` has a
`containers` list. That one rule covers Deployment, StatefulSet, DaemonSet, ReplicaSet, Job,
CronJob (`spec.jobTemplate.spec.template`), PodTemplate, Kubeflow's `spec.<x>ReplicaSpecs.<Role>
.template`, JobSet, LeaderWorkerSet and Ray, without a list of kinds to keep up to date.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]

# Kinds that describe the cluster or DRA objects: never rewritten.
_SKIP_KINDS = {"Node", "ResourceSlice", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate"}


@dataclass(frozen=True)
class PodSite:
    """One pod spec inside an object."""

    path: Path  # to the pod spec mapping, from the object
    replicas: int | None  # pods made from it, where the owner says (None: per node)

    @property
    def template(self) -> str:
        """The pod template's field path (`spec.template`); empty for a Pod."""
        return dotted(self.path[:-1])


def dotted(path: Path) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


def pod_sites(obj: dict[str, Any]) -> list[PodSite]:
    """The pod specs of one object, in document order."""
    kind = obj.get("kind")
    if kind in _SKIP_KINDS:
        return []
    if kind == "Pod":
        return [PodSite(("spec",), 1)] if _is_pod_spec(obj.get("spec")) else []
    if kind == "PodTemplate":
        return [PodSite(("template", "spec"), None)] if _has_template(obj, "template") else []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    daemon = kind == "DaemonSet"
    return list(_walk(spec, ("spec",), daemon))


def _is_pod_spec(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("containers"), list)


def _has_template(parent: dict[str, Any], key: str) -> bool:
    template = parent.get(key)
    return isinstance(template, dict) and _is_pod_spec(template.get("spec"))


def _walk(value: Any, path: Path, daemon: bool) -> Iterator[PodSite]:
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, (*path, i), daemon)
        return
    if not isinstance(value, dict):
        return
    for key, child in value.items():
        if not isinstance(key, str):
            continue
        if (key == "template" or key.endswith("Template")) and _has_template(value, key):
            yield PodSite((*path, key, "spec"), None if daemon else _replicas(value))
        else:
            yield from _walk(child, (*path, key), daemon)


def _replicas(owner: dict[str, Any]) -> int:
    # `replicas` (Deployment, StatefulSet, Kubeflow roles, Ray groups) or a Job's parallelism.
    for key in ("replicas", "parallelism"):
        value = owner.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 1
