"""What a snapshot must not carry: `scrub` drops field managers and last-applied copies;
`Redactor` gives node and pod names stable pseudonyms, consistently across objects.

A pseudonym is a keyed hash of the name, so the same name gets the same pseudonym wherever it
is referenced and in every snapshot made with the same key. One map is applied to every string
value of every object (never to keys, apiVersion or kind): a name is replaced wherever it stands
whole or between separators, so references (nodeName, fromNode, hostname labels, owner and
consumer references) still resolve, names derived from one (kubelet's ResourceSlice names,
generated ResourceClaim names) keep their other parts, and no copy is left behind in a label,
an attribute value, a UID or a CEL expression.

Every other value that says which machine a node is goes through the same map: its hostnames
(the `kubernetes.io/hostname` label, `Hostname` / `InternalDNS` / `ExternalDNS` addresses)
become the node's pseudonym; its IP addresses (`InternalIP` / `ExternalIP`, kubelet's
`alpha.kubernetes.io/provided-node-ip`), also spelt with dashes as in `ip-10-1-2-3`, become
addresses of the benchmarking range 198.18.0.0/15 (IPv6: 2001:db8::/32); its instance id (the
last part of `spec.providerID`), cloud instance id, Machine, Metal3 host uuid, machine-id,
system UUID and boot id, and the UUIDs and serial numbers of its devices, become keyed values
of the same shape (digits stay digits, hex stays hex, a `GPU-` or `i-` prefix stays).
"""

from __future__ import annotations

import copy
import hashlib
import ipaddress
import re
from collections.abc import Iterable, Iterator
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


HOSTNAME_LABEL = "kubernetes.io/hostname"
PROVIDED_IP = "alpha.kubernetes.io/provided-node-ip"
_HOST_ADDRESSES = ("Hostname", "InternalDNS", "ExternalDNS")
_IP_ADDRESSES = ("InternalIP", "ExternalIP")
# Node labels and annotations whose value names the machine (not a name draplan reads).
_MACHINE_NOTES = (
    "container.googleapis.com/instance_id",  # GKE
    "cluster.x-k8s.io/machine",  # Cluster API
    "metal3.io/uuid",  # Metal3 BareMetalHost
)
_MACHINE_INFO = ("machineID", "systemUUID", "bootID")
# Device attributes that name one physical device (any driver's domain).
_DEVICE_IDS = ("uuid", "parentUUID", "serial", "serialNumber")
_PREFIX = re.compile(r"^[A-Za-z]{1,4}-")
_BENCHMARK_NET = ipaddress.IPv4Network("198.18.0.0/15")  # RFC 2544
_DOCUMENTATION_NET = ipaddress.IPv6Network("2001:db8::/32")  # RFC 3849


class Redactor:
    """Rewrites node and pod names, and the values that identify a node, in objects in their
    JSON form."""

    def __init__(
        self,
        nodes: Iterable[str],
        pods: Iterable[str],
        key: str = "",
        *,
        hostnames: Iterable[tuple[str, str]] = (),
        addresses: Iterable[str] = (),
        machine_ids: Iterable[str] = (),
    ) -> None:
        """`hostnames`: (hostname, node name) pairs; `addresses`: the nodes' IP addresses;
        `machine_ids`: other values that identify a machine or a device."""
        self._key = hashlib.sha256(key.encode()).digest()
        known = {name: self.pod(name) for name in pods}
        known |= {value: self.machine_id(value) for value in machine_ids}
        for ip in addresses:
            pseudo = self.address(ip)
            known[ip] = pseudo
            if "." in ip:  # `ip-10-1-2-3`: the address spelt with dashes
                known[ip.replace(".", "-")] = pseudo.replace(".", "-")
        known |= {host: self.node(node) for host, node in hostnames}
        # A node wins over anything else of the same name.
        self._known = known | {name: self.node(name) for name in nodes}

    @classmethod
    def for_objects(cls, objects: Iterable[dict[str, Any]], key: str = "") -> Redactor:
        """A redactor that knows every node and pod name referenced by `objects`, and what
        identifies each node."""
        nodes: set[str] = set()
        pods: set[str] = set()
        hostnames: set[tuple[str, str]] = set()
        addresses: set[str] = set()
        machine_ids: set[str] = set()
        for obj in objects:
            kind, meta, spec = obj.get("kind"), obj.get("metadata", {}), obj.get("spec", {})
            if kind == "Node":
                name = meta.get("name", "")
                nodes.add(name)
                hostnames.update((h, name) for h in _hostnames(obj) if h != name)
                addresses.update(_addresses(obj))
                machine_ids.update(_machine_ids(obj, name))
            elif kind == "Pod":
                pods.add(meta.get("name", ""))
                nodes.add(spec.get("nodeName", ""))
            elif kind == "ResourceSlice":
                nodes.add(spec.get("nodeName", ""))
                machine_ids.update(_device_ids(spec))
        nodes.discard("")
        pods.discard("")
        addresses.discard("")
        machine_ids.discard("")
        return cls(
            nodes,
            pods,
            key,
            hostnames=sorted(hostnames),
            addresses=sorted(addresses),
            machine_ids=sorted(machine_ids),
        )

    def _digest(self, text: str, size: int = 6) -> bytes:
        return hashlib.blake2b(text.encode(), key=self._key, digest_size=size).digest()

    def _hash(self, prefix: str, name: str) -> str:
        return f"{prefix}-{self._digest(name).hex()}"

    def address(self, ip: str) -> str:
        """An IP address's pseudonym: an address of a range no real node has."""
        try:
            parsed = ipaddress.ip_address(ip)
        except ValueError:
            return self.machine_id(ip)
        net: ipaddress.IPv4Network | ipaddress.IPv6Network
        net = _BENCHMARK_NET if parsed.version == 4 else _DOCUMENTATION_NET
        offset = int.from_bytes(self._digest(f"ip:{ip}", 16)) % net.num_addresses
        return str(net.network_address + offset)

    def machine_id(self, value: str) -> str:
        """A value of the same shape: each digit a digit, each hex letter a hex letter, each
        other letter a letter of its case; separators and a short prefix (`GPU-`) kept."""
        prefix = m.group(0) if (m := _PREFIX.match(value)) else ""
        stream = _keyed_stream(self._digest(f"id:{value}", 32))
        out = []
        for ch in value[len(prefix) :]:
            if ch.isdigit():
                out.append(str(next(stream) % 10))
            elif ch in "abcdef" or ch in "ABCDEF":
                letter = "abcdef"[next(stream) % 6]
                out.append(letter.upper() if ch.isupper() else letter)
            elif ch.isascii() and ch.isalpha():
                letter = chr(ord("a") + next(stream) % 26)
                out.append(letter.upper() if ch.isupper() else letter)
            else:
                out.append(ch)
        return prefix + "".join(out)

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


def _keyed_stream(seed: bytes) -> Iterator[int]:
    """Bytes from `seed`, then from hashes of it: as long a stream as a value needs."""
    block = seed
    while True:
        yield from block
        block = hashlib.blake2b(block, digest_size=32).digest()


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value


def _hostnames(node: dict[str, Any]) -> Iterator[str]:
    labels = node.get("metadata", {}).get("labels") or {}
    yield from _strings(labels.get(HOSTNAME_LABEL))
    for address in node.get("status", {}).get("addresses") or ():
        if isinstance(address, dict) and address.get("type") in _HOST_ADDRESSES:
            yield from _strings(address.get("address"))


def _addresses(node: dict[str, Any]) -> Iterator[str]:
    notes = node.get("metadata", {}).get("annotations") or {}
    provided = notes.get(PROVIDED_IP)
    if isinstance(provided, str):
        yield from (ip.strip() for ip in provided.split(","))  # dual-stack: "v4,v6"
    for address in node.get("status", {}).get("addresses") or ():
        if isinstance(address, dict) and address.get("type") in _IP_ADDRESSES:
            yield from _strings(address.get("address"))


def _machine_ids(node: dict[str, Any], name: str) -> Iterator[str]:
    meta = node.get("metadata", {})
    for table in (meta.get("labels") or {}, meta.get("annotations") or {}):
        for key in _MACHINE_NOTES:
            yield from _strings(table.get(key))
    provider = node.get("spec", {}).get("providerID")
    if isinstance(provider, str) and "://" in provider:
        last = provider.rstrip("/").rpartition("/")[2]
        if last and last != name:  # the node name itself goes as a name
            yield last
    info = node.get("status", {}).get("nodeInfo") or {}
    for key in _MACHINE_INFO:
        yield from _strings(info.get(key))


def _device_ids(spec: dict[str, Any]) -> Iterator[str]:
    for device in spec.get("devices") or ():
        attributes = device.get("attributes") if isinstance(device, dict) else None
        for qualified, attribute in (attributes or {}).items():
            if qualified.rpartition("/")[2] in _DEVICE_IDS and isinstance(attribute, dict):
                yield from _strings(attribute.get("string"))


def snapshot_document(items: list[dict[str, Any]], *, redact: bool, key: str = "") -> Any:
    """The `kind: List` of `items` (JSON form), with node and pod names redacted if asked."""
    for item in items:
        scrub(item)
    if redact:
        redactor = Redactor.for_objects(items, key)
        items = [redactor.redact(item) for item in items]
    return {"apiVersion": "v1", "kind": "List", "items": items}
