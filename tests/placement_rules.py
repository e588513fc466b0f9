"""An independent checker of kube-scheduler's InterPodAffinity, PodTopologySpread and NodePorts
filters (and, for pods without claims, of the node-local filters), written from the rules as
upstream states them and sharing no code with draplan: it reads the manifests as plain dicts.

`Cluster(docs)` holds the nodes and the pods running; `violations(pod, node)` lists the rules a
placement breaks against the pods placed so far; `place(pod, node)` adds it. A property test
replays the scheduler's placements in the order it made them and checks each one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Doc = dict[str, Any]
NS_NAME_LABEL = "kubernetes.io/metadata.name"


def _labels(doc: Doc) -> dict[str, str]:
    return dict(doc.get("metadata", {}).get("labels") or {})


def selects(selector: Doc | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector: none selects nothing; {} everything."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req["key"], req["operator"], req.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _with_keys(selector: Doc | None, pod: Doc, match: list[str], mismatch: list[str]) -> Doc | None:
    """The API server's merge of matchLabelKeys (In) and mismatchLabelKeys (NotIn)."""
    if selector is None:
        return None
    labels = _labels(pod)
    extra = [{"key": k, "operator": "In", "values": [labels[k]]} for k in match if k in labels]
    extra += [
        {"key": k, "operator": "NotIn", "values": [labels[k]]} for k in mismatch if k in labels
    ]
    return {**selector, "matchExpressions": [*(selector.get("matchExpressions") or []), *extra]}


def _tolerated(taint: Doc, tolerations: Iterable[Doc]) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("key") and t["key"] != taint["key"]:
            continue
        if t.get("operator") == "Exists":
            return True
        if t.get("operator", "Equal") == "Equal" and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _untolerated(node: Doc, pod: Doc) -> bool:
    return any(
        t["effect"] in ("NoSchedule", "NoExecute")
        and not _tolerated(t, pod["spec"].get("tolerations") or [])
        for t in node.get("spec", {}).get("taints") or []
    )


def _node_selected(node: Doc, pod: Doc) -> bool:
    """nodeSelector and required node affinity (In / NotIn / Exists terms)."""
    labels = _labels(node)
    spec = pod["spec"]
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is None:
        return True
    for term in required.get("nodeSelectorTerms") or []:
        exprs = term.get("matchExpressions") or []
        if exprs and all(selects({"matchExpressions": [e]}, labels) for e in exprs):
            return True
    return False


def _host_ports(pod: Doc) -> list[tuple[str, str, int]]:
    containers = [
        c for c in pod["spec"].get("initContainers") or [] if c.get("restartPolicy") == "Always"
    ]
    containers += pod["spec"].get("containers") or []
    return [
        (p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", p["hostPort"])
        for c in containers
        for p in c.get("ports") or []
        if p.get("hostPort")
    ]


def _cpu(pod: Doc) -> int:
    return sum(int(c["resources"]["requests"].get("cpu", "0")) for c in pod["spec"]["containers"])


class Cluster:
    def __init__(self, docs: list[Doc]) -> None:
        self.nodes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Node"}
        self.namespaces = {
            d["metadata"]["name"]: _labels(d) for d in docs if d["kind"] == "Namespace"
        }
        self.placed: list[tuple[Doc, str]] = [
            (d, d["spec"]["nodeName"])
            for d in docs
            if d["kind"] == "Pod"
            and d["spec"].get("nodeName")
            and d["status"].get("phase") not in ("Succeeded", "Failed")
        ]

    def place(self, pod: Doc, node: str) -> None:
        self.placed.append((pod, node))

    def ns_labels(self, ns: str) -> dict[str, str]:
        return {**self.namespaces.get(ns, {}), NS_NAME_LABEL: ns}

    # --- pod affinity -------------------------------------------------------------------------

    def _term_selects(self, term: Doc, owner: Doc, pod: Doc) -> bool:
        """Does `owner`'s term select `pod`?"""
        names = term.get("namespaces") or []
        ns_selector = term.get("namespaceSelector")
        pod_ns = pod["metadata"]["namespace"]
        if not names and ns_selector is None:
            in_scope = pod_ns == owner["metadata"]["namespace"]
        else:
            in_scope = pod_ns in names or selects(ns_selector, self.ns_labels(pod_ns))
        if not in_scope:
            return False
        selector = _with_keys(
            term.get("labelSelector"),
            owner,
            term.get("matchLabelKeys") or [],
            term.get("mismatchLabelKeys") or [],
        )
        return selects(selector, _labels(pod))

    def _domain(self, node: str, key: str) -> str | None:
        return _labels(self.nodes[node]).get(key)

    def affinity_violations(self, pod: Doc, node: str) -> list[str]:
        out = []
        affinity = pod["spec"].get("affinity") or {}
        required = (affinity.get("podAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or []
        if required:
            if any(self._domain(node, t["topologyKey"]) is None for t in required):
                out.append("affinity: topology key missing")
            else:
                # A pod counts when it matches every term, in each term's domain.
                matching = [
                    where
                    for other, where in self.placed
                    if all(self._term_selects(t, pod, other) for t in required)
                ]
                in_domain = all(
                    any(
                        self._domain(where, t["topologyKey"])
                        == self._domain(node, t["topologyKey"])
                        for where in matching
                    )
                    for t in required
                )
                # The first of a set: no running pod (on a node with the keys) matches every
                # term, and the pod matches them itself.
                anyone = any(
                    any(self._domain(where, t["topologyKey"]) is not None for t in required)
                    for where in matching
                )
                itself = all(self._term_selects(t, pod, pod) for t in required)
                if not in_domain and (anyone or not itself):
                    out.append("affinity: no matching pod in the domain")
        anti = (affinity.get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or []
        for t in anti:
            value = self._domain(node, t["topologyKey"])
            if value is None:
                continue
            for other, where in self.placed:
                if (
                    self._term_selects(t, pod, other)
                    and self._domain(where, t["topologyKey"]) == value
                ):
                    out.append(f"anti-affinity: {other['metadata']['name']} on {where}")
        for other, where in self.placed:
            terms = (
                ((other["spec"].get("affinity") or {}).get("podAntiAffinity") or {}).get(
                    "requiredDuringSchedulingIgnoredDuringExecution"
                )
            ) or []
            for t in terms:
                value = self._domain(where, t["topologyKey"])
                if (
                    value is not None
                    and self._term_selects(t, other, pod)
                    and self._domain(node, t["topologyKey"]) == value
                ):
                    out.append(f"existing anti-affinity: {other['metadata']['name']} on {where}")
        return out

    # --- topology spread ------------------------------------------------------------------------

    def spread_violations(self, pod: Doc, node: str) -> list[str]:
        constraints = [
            c
            for c in pod["spec"].get("topologySpreadConstraints") or []
            if c["whenUnsatisfiable"] == "DoNotSchedule"
        ]
        out = []
        keys = [c["topologyKey"] for c in constraints]
        ns = pod["metadata"]["namespace"]
        for c in constraints:
            key = c["topologyKey"]
            if self._domain(node, key) is None:
                out.append(f"spread: {key} missing")
                continue
            selector = _with_keys(c.get("labelSelector"), pod, c.get("matchLabelKeys") or [], [])
            counts: dict[str, int] = {}
            for name, n in self.nodes.items():
                labels = _labels(n)
                if any(k not in labels for k in keys):
                    continue
                if c.get("nodeAffinityPolicy", "Honor") == "Honor" and not _node_selected(n, pod):
                    continue
                if c.get("nodeTaintsPolicy", "Ignore") == "Honor" and _untolerated(n, pod):
                    continue
                counts.setdefault(labels[key], 0)
                counts[labels[key]] += sum(
                    1
                    for other, where in self.placed
                    if where == name
                    and other["metadata"]["namespace"] == ns
                    and not other["metadata"].get("deletionTimestamp")
                    and selects(selector, _labels(other))
                )
            lowest = min(counts.values()) if len(counts) >= c.get("minDomains", 1) else 0
            own = 1 if selects(selector, _labels(pod)) else 0
            skew = counts.get(self._domain(node, key) or "", 0) + own - lowest
            if skew > c["maxSkew"]:
                out.append(f"spread: {key} skew {skew} > {c['maxSkew']}")
        return out

    # --- host ports and the node-local filters ----------------------------------------------------

    def port_violations(self, pod: Doc, node: str) -> list[str]:
        used = [hp for other, where in self.placed if where == node for hp in _host_ports(other)]
        out = []
        for ip, protocol, port in _host_ports(pod):
            for u_ip, u_protocol, u_port in used:
                if (
                    port == u_port
                    and protocol == u_protocol
                    and (ip == "0.0.0.0" or u_ip in ("0.0.0.0", ip))
                ):
                    out.append(f"host port {port}/{protocol} taken")
        return out

    def local_violations(self, pod: Doc, node: str) -> list[str]:
        """NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit (cpu, pods)."""
        n = self.nodes[node]
        out = []
        if n["spec"].get("unschedulable"):
            out.append("cordoned")
        if _untolerated(n, pod):
            out.append("taint")
        if not _node_selected(n, pod):
            out.append("node selector")
        here = [other for other, where in self.placed if where == node]
        if sum(_cpu(o) for o in here) + _cpu(pod) > int(n["status"]["allocatable"]["cpu"]):
            out.append("cpu")
        if len(here) + 1 > int(n["status"]["allocatable"]["pods"]):
            out.append("pods")
        return out

    def violations(self, pod: Doc, node: str) -> list[str]:
        """What the three plugins' filters have against placing `pod` on `node` now."""
        return [
            *self.affinity_violations(pod, node),
            *self.spread_violations(pod, node),
            *self.port_violations(pod, node),
        ]
