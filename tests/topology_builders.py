"""Small builders for pod affinity, topology spread and host port tests: manifests as plain
dicts (as a user writes them), decoded and validated like any input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from draplan.api.codec import decode
from draplan.api.core_v1 import Node, Pod
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler.framework import SKIP, CycleState, PodInfo
from draplan.scheduler.plugins.clusterplugin import ClusterPlugin

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
RACK = "example.com/rack"


def node(
    name: str,
    zone: str | None = None,
    *,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    cpu: str = "64",
) -> dict[str, Any]:
    meta_labels = {HOSTNAME: name, **({ZONE: zone} if zone else {}), **(labels or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": meta_labels},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": cpu, "memory": "256Gi", "pods": "110"}},
    }


def pod(
    name: str,
    *,
    ns: str = "default",
    labels: dict[str, str] | None = None,
    on: str = "",
    affinity: dict[str, Any] | None = None,
    spread: list[dict[str, Any]] | None = None,
    ports: list[dict[str, Any]] | None = None,
    owner: tuple[str, str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    deleting: bool = False,
    cpu: str = "1",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels or {}}
    if owner is not None:
        api_version, kind, owner_name = owner
        meta["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": owner_name, "controller": True}
        ]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    container: dict[str, Any] = {"name": "main", "resources": {"requests": {"cpu": cpu}}}
    if ports:
        container["ports"] = ports
    spec: dict[str, Any] = {"containers": [container]}
    if on:
        spec["nodeName"] = on
    if affinity:
        spec["affinity"] = affinity
    if spread:
        spec["topologySpreadConstraints"] = spread
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    phase = "Running" if on else "Pending"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }


def term(
    key: str,
    match: dict[str, str] | None = None,
    *,
    namespaces: list[str] | None = None,
    namespace_selector: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {"topologyKey": key}
    if match is not None:
        out["labelSelector"] = {"matchLabels": match}
    if namespaces is not None:
        out["namespaces"] = namespaces
    if namespace_selector is not None:
        out["namespaceSelector"] = namespace_selector
    out.update(extra)
    return out


def required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    """{"podAffinity" | "podAntiAffinity": {required...: terms}}."""
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def preferred(kind: str, *weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in weighted
            ]
        }
    }


def spread(
    key: str,
    max_skew: int = 1,
    match: dict[str, str] | None = None,
    *,
    when: str = "DoNotSchedule",
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if match is not None:
        out["labelSelector"] = {"matchLabels": match}
    out.update(extra)
    return out


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def state_of(*docs: dict[str, Any]) -> ClusterState:
    return ClusterState.from_objects([decode(d) for d in docs])


def typed_pod(doc: dict[str, Any]) -> Pod:
    obj = decode(doc)
    assert isinstance(obj, Pod)
    return obj


def typed_node(state: ClusterState, name: str) -> Node:
    return state.nodes[name]


@dataclass
class Scored:
    name: str
    score: int


def info(p: Pod) -> PodInfo:
    return PodInfo(p, key_of(p), {}, b"")


def filter_verdicts(plugin: ClusterPlugin[Any, Any], state: ClusterState, p: Pod) -> dict[str, str]:
    """Each node's Filter outcome through PreFilter and Filter: "ok" or the first reason."""
    cycle = CycleState()
    if plugin.pre_filter(state, cycle, info(p)) == SKIP:
        return {name: "ok" for name in sorted(state.nodes)}
    out = {}
    for name, n in sorted(state.nodes.items()):
        status = plugin.filter(state, cycle, info(p), n)
        out[name] = "ok" if status.ok else status.reasons[0]
    return out


def plugin_scores(
    plugin: ClusterPlugin[Any, Any], state: ClusterState, p: Pod, names: list[str] | None = None
) -> dict[str, int]:
    """PreScore, Score and NormalizeScore over `names` (default every node); {} on Skip."""
    nodes = [state.nodes[n] for n in (names or sorted(state.nodes))]
    cycle = CycleState()
    if plugin.pre_score(state, cycle, info(p), nodes) == SKIP:
        return {}
    out = [Scored(n.metadata.name, plugin.score(state, cycle, info(p), n)) for n in nodes]
    plugin.normalize_score(state, cycle, info(p), out)
    return {s.name: s.score for s in out}
