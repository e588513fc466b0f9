"""draplan's Pod / Node as the protobuf v1.Pod / v1.Node messages Cluster Autoscaler sends
(the fields `protos/k8s.proto` models): for clients of the expander, its tests and benchmark."""

from __future__ import annotations

from draplan.api.core_v1 import Container, Node, NodeSelectorTerm, Pod
from draplan.grpcplugin.protos import k8s_pb2


def _meta(m: k8s_pb2.ObjectMeta, name: str, namespace: str, labels: dict[str, str]) -> None:
    m.name = name
    m.namespace = namespace
    m.labels.update(labels)


def _container(mc: k8s_pb2.Container, c: Container) -> None:
    mc.name = c.name
    mc.image = c.image
    for k, q in sorted(c.resources.requests.items()):
        mc.resources.requests[k].string = str(q)
    for k, q in sorted(c.resources.limits.items()):
        mc.resources.limits[k].string = str(q)
    for claim in c.resources.claims:
        mc.resources.claims.add(name=claim.name, request=claim.request)


def _term(mt: k8s_pb2.NodeSelectorTerm, t: NodeSelectorTerm) -> None:
    for r in t.match_expressions:
        mt.matchExpressions.add(key=r.key, operator=r.operator, values=r.values)
    for r in t.match_fields:
        mt.matchFields.add(key=r.key, operator=r.operator, values=r.values)


def pod_message(pod: Pod) -> k8s_pb2.Pod:
    out = k8s_pb2.Pod()
    _meta(out.metadata, pod.metadata.name, pod.metadata.namespace, pod.metadata.labels)
    out.metadata.uid = pod.metadata.uid
    out.metadata.annotations.update(pod.metadata.annotations)
    for o in pod.metadata.owner_references:
        mo = out.metadata.ownerReferences.add(
            apiVersion=o.api_version, kind=o.kind, name=o.name, uid=o.uid
        )
        if o.controller is not None:
            mo.controller = o.controller
    spec = pod.spec
    for c in spec.containers:
        _container(out.spec.containers.add(), c)
    for c in spec.init_containers:
        _container(out.spec.initContainers.add(), c)
    out.spec.nodeName = spec.node_name
    out.spec.nodeSelector.update(spec.node_selector)
    for t in spec.tolerations:
        mt = out.spec.tolerations.add(
            key=t.key, operator=t.operator, value=t.value, effect=t.effect
        )
        if t.toleration_seconds is not None:
            mt.tolerationSeconds = t.toleration_seconds
    affinity = spec.affinity.node_affinity if spec.affinity is not None else None
    if affinity is not None:
        na = out.spec.affinity.nodeAffinity
        required = affinity.required_during_scheduling_ignored_during_execution
        if required is not None:
            for term in required.node_selector_terms:
                _term(
                    na.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.add(), term
                )
        for p in affinity.preferred_during_scheduling_ignored_during_execution:
            mp = na.preferredDuringSchedulingIgnoredDuringExecution.add(weight=p.weight)
            _term(mp.preference, p.preference)
    for k, q in sorted(spec.overhead.items()):
        out.spec.overhead[k].string = str(q)
    if spec.priority is not None:
        out.spec.priority = spec.priority
    out.spec.priorityClassName = spec.priority_class_name
    out.spec.schedulerName = spec.scheduler_name
    for g in spec.scheduling_gates:
        out.spec.schedulingGates.add(name=g.name)
    for rc in spec.resource_claims:
        mrc = out.spec.resourceClaims.add(name=rc.name)
        if rc.resource_claim_template_name is not None:
            mrc.resourceClaimTemplateName = rc.resource_claim_template_name
        if rc.resource_claim_name is not None:
            mrc.resourceClaimName = rc.resource_claim_name
    out.status.phase = pod.status.phase or "Pending"
    return out


def node_message(node: Node) -> k8s_pb2.Node:
    out = k8s_pb2.Node()
    _meta(out.metadata, node.metadata.name, "", node.metadata.labels)
    out.metadata.annotations.update(node.metadata.annotations)
    for k, q in sorted(node.status.allocatable.items()):
        out.status.allocatable[k].string = str(q)
    for k, q in sorted(node.status.capacity.items()):
        out.status.capacity[k].string = str(q)
    out.spec.unschedulable = node.spec.unschedulable
    out.spec.providerID = node.spec.provider_id
    for t in node.spec.taints:
        out.spec.taints.add(key=t.key, value=t.value, effect=t.effect)
    return out
