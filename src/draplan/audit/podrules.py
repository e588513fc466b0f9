"""What holds a pod-placement rule against a node: the pods whose labels an anti-affinity term
selects in the node's domain, the running pods whose anti-affinity selects the pod, the domain
without a pod the pod's affinity needs, the matching pods that make a spread constraint's skew
too large, the pods holding a host port. For `why`'s evidence: computed for a few nodes only."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice

from draplan.api.core_v1 import Node, Pod
from draplan.cluster.podresources import host_ports
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler.plugins.interpodaffinity import InterPodAffinity, satisfies_affinity
from draplan.scheduler.plugins.nodeports import conflicts
from draplan.scheduler.plugins.podaffinityterms import namespace_labels, pod_terms
from draplan.scheduler.plugins.podtopologyspread import PodTopologySpread, count_matching

HOLDERS = 3  # pods named per rule


@dataclass(frozen=True)
class Held:
    """One rule that keeps a pod off a node: which, over what domain, selecting what, the pods
    that hold it there (and their nodes), and a word on the numbers."""

    rule: str  # "pod anti-affinity", "existing pods' anti-affinity", "pod affinity", ...
    domain: str  # "key=value" (the node's), or the missing key
    selector: str
    holders: tuple[tuple[ObjectKey, str], ...] = ()
    detail: str = ""

    def text(self) -> str:
        """E.g. "held by serving/web-0 on a1 (app=web in kubernetes.io/hostname=a1)"."""
        who = ", ".join(f"{ns}/{name} on {node}" for (ns, name), node in self.holders)
        where = f"{self.selector} in {self.domain}" if self.selector else self.domain
        parts = [p for p in (self.detail, f"held by {who}" if who else "") if p]
        return f"{'; '.join(parts)} ({where})"

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"rule": self.rule, "domain": self.domain}
        out["selector"] = self.selector
        if self.holders:
            out["heldBy"] = [f"{ns}/{name} on {node}" for (ns, name), node in self.holders]
        if self.detail:
            out["detail"] = self.detail
        return out


def _sorted_pods(state: ClusterState, name: str) -> list[Pod]:
    """The pods on a node by name (the order they came in is not the cluster's)."""
    return sorted(state.pods_on(name), key=key_of)


def _domain_pods(state: ClusterState, key: str, value: str) -> Iterator[tuple[Pod, str]]:
    """The pods on the domain's nodes, in name order, with their nodes."""
    nodes = (n for n, node in state.nodes.items() if node.metadata.labels.get(key) == value)
    for name in sorted(nodes):
        for other in _sorted_pods(state, name):
            yield other, name


def _first(found: Iterable[tuple[Pod, str]]) -> tuple[tuple[ObjectKey, str], ...]:
    """The first pods found, as holders of a rule."""
    return tuple((key_of(other), name) for other, name in islice(found, HOLDERS))


def affinity_holds(
    state: ClusterState, plugin: InterPodAffinity, pod: Pod, nodes: list[Node]
) -> dict[str, list[Held]]:
    """Why InterPodAffinity's filter rejects each of `nodes` for `pod` (those it rejects)."""
    fs = plugin.filter_state(state, pod)
    out: dict[str, list[Held]] = {}
    if fs is None:
        return out
    own = namespace_labels(state, pod.metadata.namespace)
    running = [(k, n, pod_terms(state.pods[k])) for k, n in sorted(state.affinity_pods.items())]
    for node in nodes:
        labels = node.metadata.labels
        held: list[Held] = []
        if not satisfies_affinity(fs, labels):
            for t in fs.terms.required_affinity:
                value = labels.get(t.topology_key)
                if value is None:
                    held.append(
                        Held(
                            "pod affinity",
                            t.topology_key,
                            t.selector.describe(),
                            (),
                            "no such label on the node",
                        )
                    )
                elif fs.affinity.get((t.topology_key, value), 0) <= 0:
                    domain = f"{t.topology_key}={value}"
                    held.append(
                        Held(
                            "pod affinity",
                            domain,
                            t.selector.describe(),
                            (),
                            "no matching pod there",
                        )
                    )
        for t in fs.terms.required_anti_affinity:
            value = labels.get(t.topology_key)
            if value is None or fs.anti.get((t.topology_key, value), 0) <= 0:
                continue
            holders = _first(
                (other, name)
                for other, name in _domain_pods(state, t.topology_key, value)
                if t.matches(other, namespace_labels(state, other.metadata.namespace))
            )
            held.append(
                Held(
                    "pod anti-affinity", f"{t.topology_key}={value}", t.selector.describe(), holders
                )
            )
        for other, where, terms in running:
            there = state.nodes.get(where)
            for t in terms.required_anti_affinity:
                value = there.metadata.labels.get(t.topology_key) if there is not None else None
                if (
                    value is not None
                    and labels.get(t.topology_key) == value
                    and t.matches(pod, own)
                ):
                    domain = f"{t.topology_key}={value}"
                    held.append(
                        Held(
                            "existing pods' anti-affinity",
                            domain,
                            t.selector.describe(),
                            ((other, where),),
                        )
                    )
        if held:
            out[node.metadata.name] = held
    return out


def spread_holds(
    state: ClusterState, plugin: PodTopologySpread, pod: Pod, nodes: list[Node]
) -> dict[str, list[Held]]:
    """Why PodTopologySpread's filter rejects each of `nodes` for `pod` (those it rejects)."""
    fs = plugin.filter_state(state, pod)
    out: dict[str, list[Held]] = {}
    if fs is None:
        return out
    for node in nodes:
        labels = node.metadata.labels
        held: list[Held] = []
        for i, c in enumerate(fs.constraints):
            selector = c.selector.describe()
            value = labels.get(c.topology_key)
            if value is None:
                held.append(
                    Held(
                        "topology spread", c.topology_key, selector, (), "no such label on the node"
                    )
                )
                continue
            count = fs.counts.get(("c", i, value), 0)
            own = 1 if c.selector.matches(pod.metadata.labels) else 0
            if count + own - fs.minimum[i] <= c.max_skew:
                continue
            holders = _first(
                (other, name)
                for other, name in _domain_pods(state, c.topology_key, value)
                if count_matching([other], c.selector, pod.metadata.namespace)
            )
            detail = (
                f"{count} matching pod(s) there, the fewest in a domain {fs.minimum[i]}, "
                f"maxSkew {c.max_skew}"
            )
            held.append(
                Held("topology spread", f"{c.topology_key}={value}", selector, holders, detail)
            )
        if held:
            out[node.metadata.name] = held
    return out


def port_holds(state: ClusterState, pod: Pod, nodes: list[Node]) -> dict[str, list[Held]]:
    """The pods on each of `nodes` holding a host port `pod` wants (nodes with none left out)."""
    wanted = host_ports(pod)
    out: dict[str, list[Held]] = {}
    for node in nodes:
        name = node.metadata.name
        held = [
            Held("host port", f"{ip}:{port}/{protocol}", "", ((key_of(other), name),))
            for other in _sorted_pods(state, name)
            for ip, protocol, port in wanted
            if conflicts(host_ports(other), (ip, protocol, port))
        ]
        if held:
            out[name] = held
    return out
