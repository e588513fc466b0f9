"""BestOptions requests shaped exactly as Cluster Autoscaler sends them.

CA 1.35 and later (`expander/grpcplugin/protos/expander.proto`: writers cannot set the
deprecated message fields from Kubernetes 1.35, whose API types are no longer protobuf
messages of their own) write `nodeBytesMap` (field 3) and each option's `podBytes` (field 5)
only; 1.34 wrote `nodeMap` (2) and `pod` (4). Either way the map holds every node group's
template (`populateNodeInfoForGRPC` over all of the loop's node infos, not only the offered
groups), and every option repeats the bytes of each pod it is for. A template is the node CA's
`SanitizeNode` makes: named `template-node-for-<group id>-<random>`, its hostname label set to
that name, and it carries the fields draplan's messages do not model (status conditions, node
info), as a pod carries its status conditions: they are appended here byte by byte from
k8s.io/api core/v1 generated.proto's field numbers, so the decoder must skip them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from draplan.api.core_v1 import Node, Pod
from draplan.grpcplugin.encode import node_message, pod_message
from draplan.grpcplugin.protos import expander_pb2

HOSTNAME = "kubernetes.io/hostname"


def varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


# Node.status (3): conditions (4) {type 1, status 2, reason 5}, nodeInfo (7) {kubeletVersion 7}.
_NODE_EXTRA = field(
    3,
    field(4, field(1, b"Ready") + field(2, b"True") + field(5, b"KubeletReady"))
    + field(7, field(7, b"v1.36.3")),
)
# Pod.status (3): conditions (2) {type 1, status 2, reason 5}, qosClass (9); Pod.spec (2):
# restartPolicy (3), terminationGracePeriodSeconds (4, varint).
_POD_EXTRA = field(
    3,
    field(2, field(1, b"PodScheduled") + field(2, b"False") + field(5, b"Unschedulable"))
    + field(9, b"Burstable"),
) + field(2, field(3, b"Always") + varint(4 << 3) + varint(30))


def template_node(group_id: str, node: Node, suffix: str = "5577006791947779410") -> Node:
    """`node` as CA's template of group `group_id`: its name and hostname label replaced."""
    name = f"template-node-for-{group_id}-{suffix}"
    labels = {**node.metadata.labels, HOSTNAME: name}
    meta = msgspec.structs.replace(node.metadata, name=name, labels=labels)
    return msgspec.structs.replace(node, metadata=meta)


def pod_bytes(pod: Pod) -> bytes:
    return pod_message(pod).SerializeToString() + _POD_EXTRA


def node_bytes(node: Node) -> bytes:
    return node_message(node).SerializeToString() + _NODE_EXTRA


def best_options_request(
    templates: Mapping[str, Node],
    options: Sequence[tuple[str, int, Sequence[Pod]]],
    version: str = "1.36",
) -> expander_pb2.BestOptionsRequest:
    """The request of CA `version` (1.34 to 1.37): every group's template, each option with
    its node count, CA's debug text and its pods. `templates` are real nodes (or CA's
    from-zero templates); they are sanitized as CA does."""
    req = expander_pb2.BestOptionsRequest()
    bytes_format = version != "1.34"
    for group, node in sorted(templates.items()):
        sanitized = template_node(group, node)
        if bytes_format:
            req.nodeBytesMap[group] = node_bytes(sanitized)
        else:
            req.nodeMap[group].ParseFromString(node_bytes(sanitized))
    for group, count, pods in options:
        option = req.options.add(nodeGroupId=group, nodeCount=count, debug=f"{group} {count}")
        if bytes_format:
            option.podBytes.extend(pod_bytes(p) for p in pods)
        else:
            for p in pods:
                option.pod.add().ParseFromString(pod_bytes(p))
    return req
