"""What a snapshot must not carry: `scrub` drops field managers and last-applied copies;
`Redactor` gives node and pod names stable pseudonyms, consistently across objects.

A pseudonym is a keyed hash of the name, so the same name gets the same pseudonym wherever it
is referenced and in every snapshot made with the same key. One map is applied to every string
value of every object (never to keys, apiVersion or kind): a name is replaced wherever it stands
whole or between separators, so references (nodeName, fromNode, hostname labels, owner and
consumer references) still resolve, names derived from one (kubelet's ResourceSlice names,
generated ResourceClaim names, device UUIDs) keep their other parts, and no copy is left
behind in a label, an attribute value, a UID or a CEL expression.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from typing import Any

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
        # A node wins over a pod of the same name.
        pseudonyms = {name: self.pod(name) for name in pods}
        self._known = pseudonyms | {name: self.node(name) for name in nodes}

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

    def rewrite(self, text: str) -> str:
        """`text` with every known node or pod name in it replaced, longest first."""
        known = self._known
        if text in known:
            return known[text]
        # A name stands between characters no name holds, or "-" (names hold it, but a name
        # with a suffix is a derived name). Not "." nor "/" inside a domain or a qualified name
        # (`gpu.nvidia.com`, `nvidia.com/gpu`, `gpu.nvidia.com/numa`: the keys of attributes,
        # capacities and resources, which stay); but a "." that ends the text or comes before
        # a space ends a sentence, and a "/" after a dot-free word ends a namespace
        # (`ml/train-0`): both are separators.
        cuts: list[int] = []
        start = 0
        for i, ch in enumerate(text):
            stop = ch == "." and (i + 1 == len(text) or not text[i + 1].isalnum())
            namespaced = ch == "/" and "." not in text[start:i]
            if (not ch.isalnum() and ch not in "./") or stop or namespaced:
                cuts.append(i)
                start = i + 1
        if not cuts:
            return text
        ends = sorted({*cuts, len(text)}, reverse=True)
        out: list[str] = []
        pos = 0  # always the start of the text or just after a separator
        while pos < len(text):
            end = next((e for e in ends if e > pos and text[pos:e] in known), None)
            if end is not None:
                out.append(known[text[pos:end]])
                pos = end
                continue
            nxt = next((c for c in cuts if c >= pos), len(text))
            out.append(text[pos : nxt + 1])
            pos = nxt + 1
        return "".join(out)

    def redact(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A redacted copy of one object."""
        out = copy.deepcopy(obj)
        if out.get("kind") == "Pod":
            meta = out.get("metadata")
            if isinstance(meta, dict):
                meta.pop("generateName", None)  # the pod name's prefix
        return {k: v if k in ("apiVersion", "kind") else self._values(v) for k, v in out.items()}

    def _values(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.rewrite(value)
        if isinstance(value, dict):
            return {k: self._values(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._values(v) for v in value]
        return value


def snapshot_document(items: list[dict[str, Any]], *, redact: bool, key: str = "") -> Any:
    """The `kind: List` of `items` (JSON form), with node and pod names redacted if asked."""
    for item in items:
        scrub(item)
    if redact:
        redactor = Redactor.for_objects(items, key)
        items = [redactor.redact(item) for item in items]
    return {"apiVersion": "v1", "kind": "List", "items": items}
