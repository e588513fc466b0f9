"""An independent checker of kube-scheduler's default filters (NodeUnschedulable,
TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, PodTopologySpread, InterPodAffinity
and, through dra_rules, DynamicResources) and of DefaultPreemption, written from the rules as
upstream states them and sharing no code with draplan: it reads the manifests as plain dicts.

`Cluster(docs)` holds the nodes and the pods running; `violations(pod, node)` lists what the
three inter-pod filters have against a placement, `failures(pod, node)` what every filter has
(with the pods nominated to the node); `candidates(pod)` the nodes and victims preemption could
choose, `rank` pickOneNodeForPreemption's order; `place` and `preempt` replay an answer. The
property tests replay the scheduler's answers in the order it gave them and check each one."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dra_rules import Devices

Doc = dict[str, Any]
NS_NAME_LABEL = "kubernetes.io/metadata.name"
# The classes kube-apiserver creates itself (scheduling/types.go): (value, preemptionPolicy).
SYSTEM_CLASSES: dict[str, tuple[int, str | None]] = {
    "system-cluster-critical": (2000000000, None),
    "system-node-critical": (2000001000, None),
}
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


@dataclass(frozen=True)
class Failure:
    """A filter plugin's answer against a node: its reasons, and whether preemption might
    resolve it (Unschedulable) or not (UnschedulableAndUnresolvable)."""

    plugin: str
    reasons: list[str]
    resolvable: bool


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


_SUFFIXES = {"m": 1, "Ki": 1000 * 2**10, "Mi": 1000 * 2**20, "Gi": 1000 * 2**30}


def _milli(quantity: str | int) -> int:
    """A resource quantity in thousandths (the forms the generated clusters write)."""
    text = str(quantity)
    for suffix, factor in _SUFFIXES.items():
        if text.endswith(suffix):
            return int(text[: -len(suffix)]) * factor
    return int(text) * 1000


def _requests(pod: Doc) -> dict[str, int]:
    """The app containers' requests (the generated pods have no init containers or overhead,
    where PodRequests would take their maximum and sum)."""
    out: dict[str, int] = {}
    for c in pod["spec"]["containers"]:
        for name, q in ((c.get("resources") or {}).get("requests") or {}).items():
            out[name] = out.get(name, 0) + _milli(q)
    return out


class Cluster:
    def __init__(self, docs: list[Doc], topology_gate: bool = False) -> None:
        # TopologyAwareWorkloadScheduling on: a PodGroup's pod never preempts alone.
        self.topology_gate = topology_gate
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
        # Pods waiting for the node preemption nominated them to.
        self.nominated: list[tuple[Doc, str]] = []
        self.classes = {
            **SYSTEM_CLASSES,
            **{
                d["metadata"]["name"]: (d["value"], d.get("preemptionPolicy"))
                for d in docs
                if d["kind"] == "PriorityClass"
            },
        }
        self.budgets = [d for d in docs if d["kind"] == "PodDisruptionBudget"]
        self.devices = Devices(docs)

    def place(self, pod: Doc, node: str) -> None:
        self.placed.append((pod, node))

    @contextmanager
    def _placed(self, placed: list[tuple[Doc, str]]) -> Iterator[None]:
        """The filters asked of another set of placed pods (nominated ones added, victims
        taken off) for the body."""
        kept, self.placed = self.placed, placed
        try:
            yield
        finally:
            self.placed = kept

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
        if n["spec"].get("unschedulable") and not _tolerated(
            UNSCHEDULABLE_TAINT, pod["spec"].get("tolerations") or []
        ):
            out.append("cordoned")
        if _untolerated(n, pod):
            out.append("taint")
        if not _node_selected(n, pod):
            out.append("node selector")
        out += [m for m, _ in self.resource_failures(pod, node)]
        return out

    def resource_failures(self, pod: Doc, node: str) -> list[tuple[str, bool]]:
        """NodeResourcesFit's Filter (fit.go, fitsRequest): each requested resource beyond
        allocatable less what the node's pods request, and the pod count; a request larger
        than allocatable itself is unresolvable (InsufficientResource.Unresolvable), a full
        pod count never. (message, resolvable) pairs."""
        allocatable = self.nodes[node]["status"]["allocatable"]
        here = [other for other, where in self.placed if where == node]
        out = []
        if len(here) + 1 > int(allocatable["pods"]):
            out.append(("Too many pods", True))
        for name, amount in sorted(_requests(pod).items()):
            if amount == 0:
                continue
            have = _milli(allocatable.get(name, 0))
            used = sum(_requests(o).get(name, 0) for o in here)
            if used + amount > have:
                out.append((f"Insufficient {name}", amount <= have))
        return out

    def violations(self, pod: Doc, node: str) -> list[str]:
        """What the three plugins' filters have against placing `pod` on `node` now."""
        return [
            *self.affinity_violations(pod, node),
            *self.spread_violations(pod, node),
            *self.port_violations(pod, node),
        ]

    # --- the whole filter chain, with nominated pods ---------------------------------------------

    def affinity_skipped(self, pod: Doc) -> bool:
        """InterPodAffinity's PreFilter says Skip (interpodaffinity/filtering.go): the pod has
        no required terms and no running pod's required anti-affinity selects it. Its Filter
        is then skipped everywhere in the cycle, the nominated pods' run and preemption's
        trials included (the framework skips a plugin's AddPod / RemovePod then too)."""
        affinity = pod["spec"].get("affinity") or {}
        if any(
            (affinity.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
            for kind in ("podAffinity", "podAntiAffinity")
        ):
            return False
        return not any(
            self._term_selects(t, other, pod) and self._domain(where, t["topologyKey"]) is not None
            for other, where in self.placed
            for t in (
                ((other["spec"].get("affinity") or {}).get("podAntiAffinity") or {}).get(
                    "requiredDuringSchedulingIgnoredDuringExecution"
                )
                or []
            )
        )

    def _filter(self, pod: Doc, node: str, skip_affinity: bool) -> list[Failure]:
        """Every filter of the default profile that fails, in its order (default_plugins.go:
        NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit,
        PodTopologySpread, InterPodAffinity, DynamicResources), each with whether preemption
        might resolve it: the node-local rules never; NodeResourcesFit unless a request
        exceeds allocatable; PodTopologySpread's missing topology label and InterPodAffinity's
        required affinity never (podtopologyspread/filtering.go and interpodaffinity/
        filtering.go, Filter: UnschedulableAndUnresolvable), their skew and anti-affinity
        answers may; DynamicResources' "cannot allocate all claims" may (dynamicresources.go,
        Filter: statusUnschedulable)."""
        out: list[Failure] = []
        local = self.local_violations(pod, node)
        for plugin, words in (
            ("NodeUnschedulable", ("cordoned",)),
            ("TaintToleration", ("taint",)),
            ("NodeAffinity", ("node selector",)),
        ):
            if any(m in words for m in local):
                out.append(Failure(plugin, [m for m in local if m in words], False))
        ports = self.port_violations(pod, node)
        if ports:
            out.append(Failure("NodePorts", ports, True))
        resources = self.resource_failures(pod, node)
        if resources:
            out.append(
                Failure("NodeResourcesFit", [m for m, _ in resources], all(r for _, r in resources))
            )
        spread = self.spread_violations(pod, node)
        if spread:
            out.append(Failure("PodTopologySpread", spread, not spread[0].endswith("missing")))
        affinity = [] if skip_affinity else self.affinity_violations(pod, node)
        if affinity:
            out.append(
                Failure("InterPodAffinity", affinity, not affinity[0].startswith("affinity:"))
            )
        if not self.devices.fits(pod, node):
            out.append(Failure("DynamicResources", ["cannot allocate all claims"], True))
        return out

    def priority(self, pod: Doc) -> int:
        """spec.priority, as priority admission sets it from the pod's class (0 without)."""
        spec = pod["spec"]
        if spec.get("priority") is not None:
            return int(spec["priority"])
        return self.classes.get(spec.get("priorityClassName") or "", (0, None))[0]

    def preempts(self, pod: Doc) -> bool:
        """PodEligibleToPreemptOthers' first rules: with TopologyAwareWorkloadScheduling a pod
        of a PodGroup never preempts (its group's placements would each preempt); nor does
        one of preemptionPolicy Never."""
        if self.topology_gate and pod["spec"].get("schedulingGroup"):
            return False
        policy = (
            pod["spec"].get("preemptionPolicy")
            or self.classes.get(pod["spec"].get("priorityClassName") or "", (0, None))[1]
        )
        return policy != "Never"

    def failures(self, pod: Doc, node: str, skip_affinity: bool | None = None) -> list[Failure]:
        """RunFilterPluginsWithNominatedPods (framework/runtime/framework.go): the filters
        run with the pods nominated to the node of equal or higher priority added to it
        (addGENominatedPods; they hold no devices: their claims are not allocated), and,
        if some were and every filter passed, again without them; the first run that fails
        is the node's answer. `skip_affinity`: affinity_skipped as the cycle began."""
        if skip_affinity is None:
            skip_affinity = self.affinity_skipped(pod)
        mine = self.priority(pod)
        extra = [
            (other, where)
            for other, where in self.nominated
            if where == node and other is not pod and self.priority(other) >= mine
        ]
        if extra:
            with self._placed([*self.placed, *extra]):
                first = self._filter(pod, node, skip_affinity)
            if first:
                return first
        return self._filter(pod, node, skip_affinity)

    def feasible(self, pod: Doc) -> list[str]:
        return [n for n in self.nodes if not self.failures(pod, n)]

    # --- DefaultPreemption ------------------------------------------------------------------------

    def _importance(self, pod: Doc) -> tuple[int, str]:
        """util.MoreImportantPod: higher priority, then the earlier start (a pod not started
        counts as starting now, after every start time in the generated clusters)."""
        return (-self.priority(pod), pod["status"].get("startTime") or "9999")

    def _breaks_budgets(self, victims: list[Doc]) -> tuple[list[Doc], list[Doc]]:
        """filterPodsWithPDBViolation (default_preemption.go): in the order given, each pod a
        budget of its namespace selects (a budget with an empty selector selects none) takes
        one of its disruptionsAllowed; a pod that drives one below zero violates it."""
        left = [b.get("status", {}).get("disruptionsAllowed", 0) for b in self.budgets]
        violating, fine = [], []
        for pod in victims:
            broken = False
            for i, budget in enumerate(self.budgets):
                selector = budget["spec"].get("selector")
                if (
                    budget["metadata"]["namespace"] != pod["metadata"]["namespace"]
                    or not selector
                    or not selects(selector, _labels(pod))
                ):
                    continue
                left[i] -= 1
                broken = broken or left[i] < 0
            (violating if broken else fine).append(pod)
        return violating, fine

    def select_victims(
        self, pod: Doc, node: str, skip_affinity: bool
    ) -> tuple[list[Doc], int] | None:
        """SelectVictimsOnNode (defaultpreemption/default_preemption.go): every pod of lower
        priority off the node; if the pod then fits, put them back one by one, the budget-
        violating ones first, most important first within each, keeping those it still fits
        beside; the others are the victims (and how many of them violate a budget). Their
        devices stay allocated throughout (DynamicResources keeps a victim's claim until
        it is deleted, kube-scheduler 1.36 / 1.37). None: no candidate."""
        mine = self.priority(pod)
        lower = [o for o, where in self.placed if where == node and self.priority(o) < mine]
        if not lower:
            return None
        gone = {id(o) for o in lower}
        kept = [(o, where) for o, where in self.placed if id(o) not in gone]
        with self._placed(kept):
            if self.failures(pod, node, skip_affinity):
                return None
        violating, fine = self._breaks_budgets(sorted(lower, key=self._importance))
        victims, broken = [], 0
        for other in [*violating, *fine]:
            with self._placed([*kept, (other, node)]):
                fits = not self.failures(pod, node, skip_affinity)
            if fits:
                kept.append((other, node))
            else:
                victims.append(other)
                broken += any(other is v for v in violating)
        return sorted(victims, key=self._importance), broken

    def candidates(self, pod: Doc) -> dict[str, tuple[list[Doc], int]]:
        """findCandidates / DryRunPreemption (framework/preemption/preemption.go): on the
        nodes where preemption might help (nodesWherePreemptionMightHelp: the node's filter
        answer is not UnschedulableAndUnresolvable), the victims SelectVictimsOnNode finds.
        With fewer than 100 nodes every such node is tried (minCandidateNodesAbsolute)."""
        if not self.preempts(pod):
            return {}
        out = {}
        skip = self.affinity_skipped(pod)
        for node in self.nodes:
            failed = self.failures(pod, node, skip)
            if not failed or not failed[0].resolvable:
                continue
            found = self.select_victims(pod, node, skip)
            if found is not None:
                out[node] = found
        return out

    def rank(self, victims: list[Doc], broken: int) -> tuple[int, int, int, int]:
        """pickOneNodeForPreemption's first criteria, lower better: fewest budget
        violations, the lowest highest victim priority, the lowest sum of victim priorities
        (each offset by MaxInt32 + 1), fewest victims."""
        prios = [self.priority(v) for v in victims]
        return (broken, max(prios), sum(p + 2**31 for p in prios), len(prios))

    def preempt(self, pod: Doc, node: str, victims: list[Doc]) -> None:
        """prepareCandidate: the victims deleted (their claims' devices freed), the lower-
        priority pods nominated to the node sent back, the pod nominated there."""
        gone = {id(v) for v in victims}
        self.placed = [(o, w) for o, w in self.placed if id(o) not in gone]
        for v in victims:
            self.devices.release(v)
        mine = self.priority(pod)
        self.nominated = [
            (o, w) for o, w in self.nominated if w != node or self.priority(o) >= mine
        ]
        self.nominated.append((pod, node))
