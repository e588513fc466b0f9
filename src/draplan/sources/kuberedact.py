"""What a snapshot must not carry: `scrub` drops field managers and last-applied copies;
`Redactor` gives node and pod names stable pseudonyms, consistently across objects.

A pseudonym is a keyed hash of the name, so the same name gets the same pseudonym wherever it
is referenced and in every snapshot made with the same key. Names derived from a node or pod
name (kubelet's ResourceSlice names, generated ResourceClaim names) keep their suffix and get
the pseudonym as prefix, so references between objects still resolve.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from typing import Any

HOSTNAME = "kubernetes.io/hostname"
_SEPARATORS = "-./"
# Written by `kubectl apply`: the whole object as applied, env values (often secrets) included.
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def scrub(item: dict[str, Any]) -> None:
    """Drop what draplan never needs and must never echo: field managers, last-applied."""
    meta = item.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        notes = meta.get("annotations")
        if isinstance(notes, dict):
            notes.pop(LAST_APPLIED, None)


class Redactor:
    """Rewrites node and pod names in objects in their JSON form."""

    def __init__(self, nodes: Iterable[str], pods: Iterable[str], key: str = "") -> None:
        self._key = hashlib.sha256(key.encode()).digest()
        self._nodes = {name: self.node(name) for name in nodes}
        # A node wins over a pod of the same name.
        self._known = {name: self.pod(name) for name in pods} | self._nodes

    @classmethod
    def for_objects(cls, objects: Iterable[dict[str, Any]], key: str = "") -> Redactor:
        """A redactor that knows every node and pod name referenced by `objects`."""
        nodes: set[str] = set()
        pods: set[str] = set()
        for obj in objects:
            kind, meta, spec = obj.get("kind"), obj.get("metadata", {}), obj.get("spec", {})
            if kind == "Node":
                nodes.add(meta.get("name", ""))
            elif kind == "Pod":
                pods.add(meta.get("name", ""))
                nodes.add(spec.get("nodeName", ""))
            elif kind == "ResourceSlice":
                nodes.add(spec.get("nodeName", ""))
        nodes.discard("")
        pods.discard("")
        return cls(nodes, pods, key)

    def _hash(self, prefix: str, name: str) -> str:
        digest = hashlib.blake2b(name.encode(), key=self._key, digest_size=6).hexdigest()
        return f"{prefix}-{digest}"

    def node(self, name: str) -> str:
        return self._hash("node", name) if name else name

    def pod(self, name: str) -> str:
        return self._hash("pod", name) if name else name

    def derived(self, name: str) -> str:
        """`name` with its longest known node or pod name prefix replaced."""
        if name in self._known:
            return self._known[name]
        for i in range(len(name) - 1, 0, -1):
            if name[i] in _SEPARATORS and name[:i] in self._known:
                return self._known[name[:i]] + name[i:]
        return name

    def value(self, text: str) -> str:
        """A label or annotation value: replaced only when it is a known node name (not a pod
        name: `app: train` must keep matching selectors when a pod happens to be `train`)."""
        return self._nodes.get(text, text)

    # --- per kind ------------------------------------------------------------------------

    def redact(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A redacted copy of one object."""
        out = copy.deepcopy(obj)
        meta = out.setdefault("metadata", {})
        kind = out.get("kind")
        self._meta_values(meta)
        if kind == "Node":
            meta["name"] = self.node(meta.get("name", ""))
        elif kind == "Pod":
            meta["name"] = self.pod(meta.get("name", ""))
            meta.pop("generateName", None)  # the pod name's prefix
            self._pod_spec(out.get("spec", {}))
            status = out.get("status", {})
            if status.get("nominatedNodeName"):
                status["nominatedNodeName"] = self.node(status["nominatedNodeName"])
            for entry in status.get("resourceClaimStatuses", []):
                if entry.get("resourceClaimName"):
                    entry["resourceClaimName"] = self.derived(entry["resourceClaimName"])
        elif kind == "PodTemplate":
            self._pod_spec(out.get("template", {}).get("spec", {}))
        elif kind == "ResourceSlice":
            self._derived_names(meta)
            self._slice(out.get("spec", {}))
        elif kind == "ResourceClaim":
            self._derived_names(meta)
            self._claim_status(out.get("status", {}))
        return out

    def _meta_values(self, meta: dict[str, Any]) -> None:
        for field in ("labels", "annotations"):
            values = meta.get(field)
            if isinstance(values, dict):
                for k, v in values.items():
                    values[k] = self.node(v) if k == HOSTNAME else self.value(v)
        for ref in meta.get("ownerReferences", []):
            if ref.get("kind") == "Node":
                ref["name"] = self.node(ref.get("name", ""))
            elif ref.get("kind") == "Pod":
                ref["name"] = self.pod(ref.get("name", ""))

    def _derived_names(self, meta: dict[str, Any]) -> None:
        for field in ("name", "generateName"):
            if meta.get(field):
                meta[field] = self.derived(meta[field])

    def _selector(self, selector: dict[str, Any] | None) -> None:
        """Node selector terms that name nodes: metadata.name fields, hostname labels."""
        for term in (selector or {}).get("nodeSelectorTerms", []):
            self._term(term)

    def _term(self, term: dict[str, Any]) -> None:
        for key in ("matchFields", "matchExpressions"):
            for req in term.get(key, []):
                if req.get("key") in ("metadata.name", HOSTNAME):
                    req["values"] = [self.node(v) for v in req.get("values", [])]

    def _pod_spec(self, spec: dict[str, Any]) -> None:
        if spec.get("nodeName"):
            spec["nodeName"] = self.node(spec["nodeName"])
        selector = spec.get("nodeSelector", {})
        if HOSTNAME in selector:
            selector[HOSTNAME] = self.node(selector[HOSTNAME])
        affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        self._selector(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
        for pref in affinity.get("preferredDuringSchedulingIgnoredDuringExecution", []):
            self._term(pref.get("preference", {}))
        for claim in spec.get("resourceClaims", []):
            if claim.get("resourceClaimName"):
                claim["resourceClaimName"] = self.derived(claim["resourceClaimName"])

    def _slice(self, spec: dict[str, Any]) -> None:
        if spec.get("nodeName"):
            spec["nodeName"] = self.node(spec["nodeName"])
        pool = spec.get("pool", {})
        if pool.get("name"):
            pool["name"] = self.derived(pool["name"])
        self._selector(spec.get("nodeSelector"))
        for device in spec.get("devices", []):
            if device.get("nodeName"):
                device["nodeName"] = self.node(device["nodeName"])
            self._selector(device.get("nodeSelector"))

    def _claim_status(self, status: dict[str, Any]) -> None:
        allocation = status.get("allocation") or {}
        self._selector(allocation.get("nodeSelector"))
        for result in (allocation.get("devices") or {}).get("results", []):
            result["pool"] = self.derived(result.get("pool", ""))
        for consumer in status.get("reservedFor", []):
            if consumer.get("resource") == "pods":
                consumer["name"] = self.pod(consumer.get("name", ""))
