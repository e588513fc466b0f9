"""Protobuf-serialised v1.Pod / v1.Node (as Cluster Autoscaler sends them) → draplan's API types.

The messages are draplan's own (`protos/k8s.proto`, upstream's field numbers); what they carry
is rebuilt as the JSON form the API server would serve, then converted like any input."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from google.protobuf.message import DecodeError

from draplan.api.codec import convert
from draplan.api.core_v1 import Node, Pod
from draplan.api.errors import BadInput
from draplan.grpcplugin.protos import k8s_pb2


class MalformedObject(ValueError):
    """Bytes that are not a protobuf v1.Pod / v1.Node draplan can read."""


def _time(t: k8s_pb2.Time) -> str:
    when = datetime.fromtimestamp(t.seconds, UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _quantities(m: Mapping[str, k8s_pb2.Quantity]) -> dict[str, str]:
    return {k: v.string for k, v in sorted(m.items())}


def _meta(m: k8s_pb2.ObjectMeta) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": m.name,
        "generateName": m.generateName,
        "namespace": m.namespace,
        "uid": m.uid,
        "resourceVersion": m.resourceVersion,
        "generation": m.generation,
        "labels": dict(m.labels),
        "annotations": dict(m.annotations),
        "ownerReferences": [
            {
                "apiVersion": o.apiVersion,
                "kind": o.kind,
                "name": o.name,
                "uid": o.uid,
                **({"controller": o.controller} if o.HasField("controller") else {}),
            }
            for o in m.ownerReferences
        ],
        "finalizers": list(m.finalizers),
    }
    if m.HasField("creationTimestamp"):
        out["creationTimestamp"] = _time(m.creationTimestamp)
    if m.HasField("deletionTimestamp"):
        out["deletionTimestamp"] = _time(m.deletionTimestamp)
    return out


def _requirement(r: k8s_pb2.NodeSelectorRequirement) -> dict[str, Any]:
    return {"key": r.key, "operator": r.operator, "values": list(r.values)}


def _term(t: k8s_pb2.NodeSelectorTerm) -> dict[str, Any]:
    return {
        "matchExpressions": [_requirement(r) for r in t.matchExpressions],
        "matchFields": [_requirement(r) for r in t.matchFields],
    }


def _affinity(a: k8s_pb2.Affinity) -> dict[str, Any]:
    if not a.HasField("nodeAffinity"):
        return {}
    na = a.nodeAffinity
    out: dict[str, Any] = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": p.weight, "preference": _term(p.preference)}
            for p in na.preferredDuringSchedulingIgnoredDuringExecution
        ]
    }
    if na.HasField("requiredDuringSchedulingIgnoredDuringExecution"):
        req = na.requiredDuringSchedulingIgnoredDuringExecution
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_term(t) for t in req.nodeSelectorTerms]
        }
    return {"nodeAffinity": out}


def _container(c: k8s_pb2.Container) -> dict[str, Any]:
    r = c.resources
    return {
        "name": c.name,
        "image": c.image,
        "resources": {
            "requests": _quantities(r.requests),
            "limits": _quantities(r.limits),
            "claims": [{"name": x.name, "request": x.request} for x in r.claims],
        },
    }


def _claim(c: k8s_pb2.PodResourceClaim) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name}
    if c.HasField("resourceClaimName"):
        out["resourceClaimName"] = c.resourceClaimName
    if c.HasField("resourceClaimTemplateName"):
        out["resourceClaimTemplateName"] = c.resourceClaimTemplateName
    return out


def pod_document(p: k8s_pb2.Pod) -> dict[str, Any]:
    s = p.spec
    spec: dict[str, Any] = {
        "nodeName": s.nodeName,
        "nodeSelector": dict(s.nodeSelector),
        "tolerations": [
            {
                "key": t.key,
                "operator": t.operator,
                "value": t.value,
                "effect": t.effect,
                **(
                    {"tolerationSeconds": t.tolerationSeconds}
                    if t.HasField("tolerationSeconds")
                    else {}
                ),
            }
            for t in s.tolerations
        ],
        "containers": [_container(c) for c in s.containers],
        "initContainers": [_container(c) for c in s.initContainers],
        "overhead": _quantities(s.overhead),
        "resourceClaims": [_claim(c) for c in s.resourceClaims],
        "priorityClassName": s.priorityClassName,
        "schedulerName": s.schedulerName,
        "schedulingGates": [{"name": g.name} for g in s.schedulingGates],
    }
    if s.HasField("priority"):
        spec["priority"] = s.priority
    if s.HasField("affinity"):
        spec["affinity"] = _affinity(s.affinity)
    return {
        "metadata": _meta(p.metadata),
        "spec": spec,
        "status": {"phase": p.status.phase, "nominatedNodeName": p.status.nominatedNodeName},
    }


def node_document(n: k8s_pb2.Node) -> dict[str, Any]:
    return {
        "metadata": _meta(n.metadata),
        "spec": {
            "providerID": n.spec.providerID,
            "unschedulable": n.spec.unschedulable,
            "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in n.spec.taints],
        },
        "status": {
            "capacity": _quantities(n.status.capacity),
            "allocatable": _quantities(n.status.allocatable),
        },
    }


def _parse(raw: bytes, message: k8s_pb2.Pod | k8s_pb2.Node, what: str) -> None:
    try:
        message.ParseFromString(raw)
    except DecodeError as err:
        raise MalformedObject(f"{what}: not a protobuf v1.{what}: {err}") from None


def _convert(doc: dict[str, Any], tp: type[Pod] | type[Node], what: str) -> Any:
    try:
        return convert(doc, tp)
    except BadInput as err:
        raise MalformedObject(f"{what}: {err}") from None


def pod_from_message(p: k8s_pb2.Pod) -> Pod:
    pod: Pod = _convert(pod_document(p), Pod, "Pod")
    return pod


def node_from_message(n: k8s_pb2.Node) -> Node:
    node: Node = _convert(node_document(n), Node, "Node")
    return node


def pod_from_bytes(raw: bytes) -> Pod:
    message = k8s_pb2.Pod()
    _parse(raw, message, "Pod")
    return pod_from_message(message)


def node_from_bytes(raw: bytes) -> Node:
    message = k8s_pb2.Node()
    _parse(raw, message, "Node")
    return node_from_message(message)
