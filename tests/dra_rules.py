"""An independent checker of DynamicResources' Filter for the claims the generated clusters
make (tests/rules_clusters.py): claims from ResourceClaimTemplates and standalone claims that
several pods share, each with one request (ExactCount, or `firstAvailable` subrequests tried in
order) of a class, CEL selectors of the forms `device.driver == '…'` and
`device.attributes['…'].name == '…'` joined by `&&`, and matchAttribute constraints; devices
that consume shared counters (partitionable devices). Written from the API's rules and the
structured allocator's (resource.k8s.io/v1 DeviceRequest, DeviceSubRequest, DeviceConstraint,
CounterSet, DeviceCounterConsumption; k8s.io/dynamic-resource-allocation structured: a request's
subrequests are tried in order, the first that can be satisfied wins; the counters a device
consumes, with those of every allocated device of the pool, stay within its counter sets; an
allocated claim is used where it is allocated, by every pod that reserves it) and sharing no
code with draplan: it reads the manifests as plain dicts and searches every combination of
free devices, so "no allocation" is exact where the upstream allocator's search with
backtracking is complete.
"""

from __future__ import annotations

import re
from itertools import combinations
from typing import Any

Doc = dict[str, Any]
DeviceId = tuple[str, str, str]  # driver, pool, device
Attributes = dict[str, object]
PodKey = tuple[str, str]
ClaimKey = tuple[str, str, str]  # ("claim" | "template", namespace, claim or pod name)
Counter = tuple[str, str, str, str]  # driver, pool, counter set, counter
Results = list[tuple[str, DeviceId]]  # (request or "request/subrequest", device)

_DRIVER = re.compile(r"device\.driver == '([^']*)'")
_ATTRIBUTE = re.compile(r"device\.attributes\['([^']+)'\]\.([A-Za-z0-9_]+) == '([^']*)'")


def _selected(expression: str, driver: str, attributes: Attributes) -> bool:
    for part in (p.strip() for p in expression.split("&&")):
        if m := _DRIVER.fullmatch(part):
            if driver != m.group(1):
                return False
        elif m := _ATTRIBUTE.fullmatch(part):
            if attributes.get(f"{m.group(1)}/{m.group(2)}") != m.group(3):
                return False
        else:
            raise ValueError(f"the checker reads no CEL of this form: {part}")
    return True


def _value(typed: dict[str, object]) -> object:
    (value,) = typed.values()
    return value


def _key(pod: Doc) -> PodKey:
    return pod["metadata"]["namespace"], pod["metadata"]["name"]


def _alternatives(request: Doc) -> list[tuple[str, Doc]]:
    """(the name results carry, the device spec) in the order the allocator tries them."""
    if "firstAvailable" in request:
        return [(f"{request['name']}/{s['name']}", s) for s in request["firstAvailable"]]
    return [(request["name"], request["exactly"])]


class Devices:
    def __init__(self, docs: list[Doc]) -> None:
        # Per node, its devices with their attributes by qualified name (an unqualified
        # name is in the driver's domain: resource.k8s.io/v1 QualifiedName).
        self.on_node: dict[str, dict[DeviceId, Attributes]] = {}
        self.consumes: dict[DeviceId, dict[Counter, int]] = {}
        self.capacity: dict[Counter, int] = {}
        for d in docs:
            if d["kind"] != "ResourceSlice":
                continue
            spec = d["spec"]
            driver, pool = spec["driver"], spec["pool"]["name"]
            for counter_set in spec.get("sharedCounters") or []:
                for name, c in counter_set["counters"].items():
                    self.capacity[(driver, pool, counter_set["name"], name)] = int(c["value"])
            here = self.on_node.setdefault(spec["nodeName"], {})
            for dev in spec.get("devices") or []:
                dev_id = (driver, pool, dev["name"])
                here[dev_id] = {
                    (name if "/" in name else f"{driver}/{name}"): _value(v)
                    for name, v in (dev.get("attributes") or {}).items()
                }
                self.consumes[dev_id] = {
                    (driver, pool, use["counterSet"], name): int(c["value"])
                    for use in dev.get("consumesCounters") or []
                    for name, c in use["counters"].items()
                }
        self.classes = {
            d["metadata"]["name"]: [s["cel"]["expression"] for s in d["spec"].get("selectors", [])]
            for d in docs
            if d["kind"] == "DeviceClass"
        }
        self.templates = {
            (d["metadata"]["namespace"], d["metadata"]["name"]): d["spec"]["spec"]["devices"]
            for d in docs
            if d["kind"] == "ResourceClaimTemplate"
        }
        # Standalone claims: their devices spec; the allocated ones' node and results, and
        # the pods that reserve them. A device allocated belongs to its claim.
        self.specs: dict[ClaimKey, Doc] = {}
        self.allocated: dict[ClaimKey, tuple[str, Results]] = {}
        self.reserved: dict[ClaimKey, set[PodKey]] = {}
        self.taken: dict[DeviceId, ClaimKey] = {}
        node_of = {dev: node for node, devs in self.on_node.items() for dev in devs}
        for d in docs:
            if d["kind"] != "ResourceClaim":
                continue
            ns = d["metadata"]["namespace"]
            key = ("claim", ns, d["metadata"]["name"])
            self.specs[key] = d["spec"]["devices"]
            alloc = d.get("status", {}).get("allocation")
            if not alloc:
                continue
            results = [
                (r["request"], (r["driver"], r["pool"], r["device"]))
                for r in alloc["devices"]["results"]
            ]
            self.allocated[key] = (node_of[results[0][1]], results)
            self.reserved[key] = {(ns, r["name"]) for r in d["status"]["reservedFor"]}
            for _, dev in results:
                self.taken[dev] = key

    def _claims(self, pod: Doc) -> list[tuple[ClaimKey, Doc]]:
        """The pod's claims: the one each template generates for it, the standalone ones it
        names; with their devices spec."""
        ns, name = _key(pod)
        out = []
        for ref in pod["spec"].get("resourceClaims") or []:
            if ref.get("resourceClaimTemplateName"):
                spec = self.templates[(ns, ref["resourceClaimTemplateName"])]
                out.append((("template", ns, f"{name}-{ref['name']}"), spec))
            elif ref.get("resourceClaimName"):
                key = ("claim", ns, ref["resourceClaimName"])
                out.append((key, self.specs[key]))
        return out

    def _matches(self, spec: Doc, dev: DeviceId, attributes: Attributes) -> bool:
        expressions = [
            *self.classes[spec["deviceClassName"]],
            *(s["cel"]["expression"] for s in spec.get("selectors") or []),
        ]
        return all(_selected(e, dev[0], attributes) for e in expressions)

    def _counters_left(self) -> dict[Counter, int]:
        left = dict(self.capacity)
        for dev in self.taken:
            for counter, used in self.consumes.get(dev, {}).items():
                left[counter] -= used
        return left

    def _within(self, devices: list[DeviceId], left: dict[Counter, int]) -> bool:
        """The devices' counters all fit what their counter sets have left (a counter no set
        of the pool declares has nothing)."""
        need: dict[Counter, int] = {}
        for dev in devices:
            for counter, used in self.consumes.get(dev, {}).items():
                need[counter] = need.get(counter, 0) + used
        return all(n <= left.get(c, 0) for c, n in need.items())

    @staticmethod
    def _constraints_hold(
        spec: Doc, chosen: dict[str, list[DeviceId]], attributes: dict[DeviceId, Attributes]
    ) -> bool:
        """matchAttribute: every device of the named requests (all requests when none are
        named; a request's name covers the subrequest chosen for it) has the attribute, with
        one value; a device without it fails."""
        for c in spec.get("constraints") or []:
            names = c.get("requests") or [r["name"] for r in spec["requests"]]
            devices = [d for n in names for d in chosen.get(n, [])]
            values = {attributes[d].get(c["matchAttribute"], _MISSING) for d in devices}
            if _MISSING in values or len(values) > 1:
                return False
        return True

    def _options(self, spec: Doc, node: str) -> dict[DeviceId, Attributes]:
        here = self.on_node.get(node, {})
        return {d: a for d, a in here.items() if d not in self.taken}

    def _first(self, spec: Doc, node: str) -> tuple[str, list[DeviceId]] | None:
        """The allocation the structured allocator finds for the claim on `node` (its one
        request): the first alternative some choice of free devices satisfies, with the
        counters and constraints; None when none does."""
        (request,) = spec["requests"]
        free = self._options(spec, node)
        left = self._counters_left()
        for name, alternative in _alternatives(request):
            options = sorted(d for d, a in free.items() if self._matches(alternative, d, a))
            for combo in combinations(options, alternative.get("count", 1)):
                if self._within(list(combo), left) and self._constraints_hold(
                    spec, {request["name"]: list(combo)}, free
                ):
                    return name, list(combo)
        return None

    def fits(self, pod: Doc, node: str) -> bool:
        """Every claim of the pod can be used on the node: an allocated one is allocated there,
        the others have an allocation from its free devices (the generated pods have one)."""
        claims = self._claims(pod)
        for key, spec in claims:
            if key in self.allocated:
                if self.allocated[key][0] != node:
                    return False
            elif self._first(spec, node) is None:
                return False
        return True

    def check(self, pod: Doc, node: str, results: Results) -> list[str]:
        """What is wrong with an allocation the scheduler gives the pod's one claim on `node`
        ((request, device) pairs): an allocated claim's must be the allocation it has; a new
        one must use free devices of the node, of the alternative the allocator reaches first
        (its class, selectors and count), within the counters and the constraints."""
        ((key, spec),) = self._claims(pod)
        if key in self.allocated:
            where, had = self.allocated[key]
            if (where, sorted(had)) != (node, sorted(results)):
                return [f"{key} is allocated on {where} as {had}, not {results}"]
            return []
        here = self.on_node.get(node, {})
        problems = []
        for _, dev in results:
            if dev not in here:
                problems.append(f"{dev} is not on {node}")
            elif dev in self.taken:
                problems.append(f"{dev} is held by {self.taken[dev]}")
        if len({d for _, d in results}) != len(results):
            problems.append("a device allocated twice")
        first = self._first(spec, node)
        if first is None:
            return [*problems, "no allocation exists on the node"]
        names = {r for r, _ in results}
        if names != {first[0]}:
            problems.append(f"requests {sorted(names)}, but {first[0]} is the first that fits")
            return problems
        (request,) = spec["requests"]
        alternative = dict(_alternatives(request))[first[0]]
        got = [d for _, d in results]
        if len(got) != alternative.get("count", 1):
            problems.append(f"{first[0]}: {len(got)} devices")
        problems += [
            f"{d} does not match {first[0]}"
            for d in got
            if d in here and not self._matches(alternative, d, here[d])
        ]
        if not self._within(got, self._counters_left()):
            problems.append("the devices' counters exceed their counter sets")
        if not problems and not self._constraints_hold(spec, {request["name"]: got}, here):
            problems.append("a constraint does not hold")
        return problems

    def allocate(self, pod: Doc, node: str, results: Results) -> None:
        """The pod bound: its claim allocated (a standalone one once, then reserved by every
        pod that uses it)."""
        ((key, _),) = self._claims(pod)
        if key not in self.allocated:
            self.allocated[key] = (node, list(results))
            for _, dev in results:
                self.taken[dev] = key
        self.reserved.setdefault(key, set()).add(_key(pod))

    def release(self, pod: Doc) -> None:
        """The pod deleted: a claim generated for it goes with it; a standalone one loses its
        reservation and, reserved by no pod, is deallocated by the resourceclaim controller."""
        pod_key = _key(pod)
        for key, _ in self._claims(pod):
            users = self.reserved.get(key, set())
            users.discard(pod_key)
            if users or key not in self.allocated:
                continue
            del self.allocated[key]
            self.taken = {d: k for d, k in self.taken.items() if k != key}


_MISSING = object()
