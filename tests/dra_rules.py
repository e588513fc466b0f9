"""An independent checker of DynamicResources' Filter for the claims the generated clusters
make (tests/rules_clusters.py): ResourceClaimTemplates with ExactCount requests of a class, CEL
selectors of the forms `device.driver == '…'` and `device.attributes['…'].name == '…'` joined
by `&&`, and matchAttribute constraints. Written from the API's rules (resource.k8s.io/v1
DeviceRequest, DeviceConstraint) and sharing no code with draplan: it reads the manifests as
plain dicts and searches every combination of free devices, so "no allocation" is exact where
the upstream allocator's first-fit search with backtracking is complete.
"""

from __future__ import annotations

import re
from itertools import combinations
from typing import Any

Doc = dict[str, Any]
DeviceId = tuple[str, str, str]  # driver, pool, device
Attributes = dict[str, object]
PodKey = tuple[str, str]

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


class Devices:
    def __init__(self, docs: list[Doc]) -> None:
        # Per node, its devices with their attributes by qualified name (an unqualified
        # name is in the driver's domain: resource.k8s.io/v1 QualifiedName).
        self.on_node: dict[str, dict[DeviceId, Attributes]] = {}
        for d in docs:
            if d["kind"] != "ResourceSlice":
                continue
            spec = d["spec"]
            driver, pool = spec["driver"], spec["pool"]["name"]
            here = self.on_node.setdefault(spec["nodeName"], {})
            for dev in spec.get("devices") or []:
                attributes = {
                    (name if "/" in name else f"{driver}/{name}"): _value(v)
                    for name, v in (dev.get("attributes") or {}).items()
                }
                here[(driver, pool, dev["name"])] = attributes
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
        # Each allocated device and the pod its claim is reserved for.
        self.taken: dict[DeviceId, PodKey] = {}
        for d in docs:
            alloc = d["kind"] == "ResourceClaim" and d.get("status", {}).get("allocation")
            if not alloc:
                continue
            (holder,) = d["status"]["reservedFor"]
            for r in alloc["devices"]["results"]:
                self.taken[(r["driver"], r["pool"], r["device"])] = (
                    d["metadata"]["namespace"],
                    holder["name"],
                )

    def _claims(self, pod: Doc) -> list[Doc]:
        """The device specs of the claims the pod's templates generate (a pod naming a claim
        is a running one in the generated clusters)."""
        ns = pod["metadata"]["namespace"]
        return [
            self.templates[(ns, ref["resourceClaimTemplateName"])]
            for ref in pod["spec"].get("resourceClaims") or []
            if ref.get("resourceClaimTemplateName")
        ]

    def _matches(self, request: Doc, dev: DeviceId, attributes: Attributes) -> bool:
        exactly = request["exactly"]
        expressions = [
            *self.classes[exactly["deviceClassName"]],
            *(s["cel"]["expression"] for s in exactly.get("selectors") or []),
        ]
        return all(_selected(e, dev[0], attributes) for e in expressions)

    @staticmethod
    def _constraints_hold(
        spec: Doc, chosen: dict[str, list[DeviceId]], attributes: dict[DeviceId, Attributes]
    ) -> bool:
        """matchAttribute: every device of the named requests (all requests when none are
        named) has the attribute, with one value; a device without it fails."""
        for c in spec.get("constraints") or []:
            names = c.get("requests") or [r["name"] for r in spec["requests"]]
            devices = [d for n in names for d in chosen.get(n, [])]
            values = {attributes[d].get(c["matchAttribute"], _MISSING) for d in devices}
            if _MISSING in values or len(values) > 1:
                return False
        return True

    def fits(self, pod: Doc, node: str) -> bool:
        """Some choice of free devices on the node satisfies every claim of the pod."""
        specs = self._claims(pod)
        if not specs:
            return True
        here = self.on_node.get(node, {})
        free = {d: a for d, a in here.items() if d not in self.taken}
        return self._search(specs, 0, free, {})

    def _search(
        self,
        specs: list[Doc],
        i: int,
        free: dict[DeviceId, Attributes],
        chosen: dict[str, list[DeviceId]],
    ) -> bool:
        if i == len(specs):
            return True
        spec = specs[i]
        requests = spec["requests"]

        def pick(j: int, left: dict[DeviceId, Attributes]) -> bool:
            if j == len(requests):
                return self._constraints_hold(spec, chosen, free) and self._search(
                    specs, i + 1, left, {}
                )
            request = requests[j]
            options = sorted(d for d, a in left.items() if self._matches(request, d, a))
            for combo in combinations(options, request["exactly"].get("count", 1)):
                chosen[request["name"]] = list(combo)
                rest = {d: a for d, a in left.items() if d not in combo}
                if pick(j + 1, rest):
                    return True
            chosen.pop(request["name"], None)
            return False

        return pick(0, free)

    def check(self, pod: Doc, node: str, results: list[tuple[str, DeviceId]]) -> list[str]:
        """What is wrong with an allocation the scheduler made for the pod's one claim on
        `node` ((request, device) pairs): devices elsewhere or taken, not of the request's
        class and selectors, a wrong count, a broken constraint."""
        (spec,) = self._claims(pod)
        here = self.on_node.get(node, {})
        problems = []
        chosen: dict[str, list[DeviceId]] = {}
        for request, dev in results:
            chosen.setdefault(request, []).append(dev)
            if dev not in here:
                problems.append(f"{dev} is not on {node}")
            elif dev in self.taken:
                problems.append(f"{dev} is held by {self.taken[dev]}")
        if len({d for _, d in results}) != len(results):
            problems.append("a device allocated twice")
        for request in spec["requests"]:
            got = chosen.get(request["name"], [])
            if len(got) != request["exactly"].get("count", 1):
                problems.append(f"request {request['name']}: {len(got)} devices")
            problems += [
                f"{d} does not match request {request['name']}"
                for d in got
                if d in here and not self._matches(request, d, here[d])
            ]
        if not problems and not self._constraints_hold(spec, chosen, here):
            problems.append("a constraint does not hold")
        return problems

    def allocate(self, pod: Doc, results: list[tuple[str, DeviceId]]) -> None:
        for _, dev in results:
            self.taken[dev] = _key(pod)

    def release(self, pod: Doc) -> None:
        """The pod deleted: the resourceclaim controller frees the claims only it held."""
        key = _key(pod)
        self.taken = {d: k for d, k in self.taken.items() if k != key}


_MISSING = object()
