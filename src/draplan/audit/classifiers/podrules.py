"""PodAffinity, TopologySpread, HostPortConflict: the nodes with room for the pod are kept from it
by a rule about other pods — its pod affinity or anti-affinity, a running pod's anti-affinity,
a topology spread constraint, a host port another pod holds. The verdict names the rule and the
pods that hold it. These rules are the owner's choice (or the node's DaemonSets'): the fix
offered adds a node the rule admits, checked by the scheduler; relaxing the rule is said to be
that, never offered as a fix."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from draplan.api.core_v1 import Pod
from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.fixes import Fix
from draplan.audit.podrules import Held, affinity_holds, port_holds, spread_holds
from draplan.audit.view import NEAREST
from draplan.scheduler.plugins import names
from draplan.scheduler.plugins.interpodaffinity import InterPodAffinity
from draplan.scheduler.plugins.podtopologyspread import PodTopologySpread

# The category of each rule, and what relaxing it would mean (said, not offered).
CATEGORY = {
    "pod affinity": "PodAffinity",
    "pod anti-affinity": "PodAffinity",
    "existing pods' anti-affinity": "PodAffinity",
    "topology spread": "TopologySpread",
    "host port": "HostPortConflict",
}
RELAX = {
    "PodAffinity": "relax the pod affinity or anti-affinity rule (preferred instead of required, "
    "or a wider topology key) only if it is no longer wanted",
    "TopologySpread": "relax the spread constraint (a larger maxSkew, or ScheduleAnyway) only if "
    "it is no longer wanted",
    "HostPortConflict": "free the host port (drop hostPort from one of the pods) only if the "
    "pods need not bind it on the node",
}
# kube-scheduler's words for the nodes each rule rejects.
WORDS = {
    "pod affinity": "didn't match pod affinity rules",
    "pod anti-affinity": "didn't match pod anti-affinity rules",
    "existing pods' anti-affinity": "didn't satisfy existing pods anti-affinity rules",
    "topology spread": "didn't match pod topology spread constraints",
    "host port": "didn't have free ports for the requested pod ports",
}


class PodRules:
    name = "PodRules"
    categories = ("PodAffinity", "TopologySpread", "HostPortConflict")
    shared = True  # the plugins' part of the shape tells apart pods the rules treat apart

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        rooms = [s.node for s in case.supplies if s.devices_suffice() and s.fits_resources]
        if not rooms:
            return None
        state, pod = audit.state, case.pod
        nodes = [state.nodes[n] for n in rooms]
        held: dict[str, list[Held]] = {}
        for plugin in audit.profile.filters:
            if isinstance(plugin, InterPodAffinity):
                found = affinity_holds(state, plugin, pod, nodes)
            elif isinstance(plugin, PodTopologySpread):
                found = spread_holds(state, plugin, pod, nodes)
            elif plugin.name == names.NODE_PORTS:
                found = port_holds(state, pod, nodes)
            else:
                continue
            for node, rules in found.items():
                held.setdefault(node, []).extend(rules)
        if not held:
            return None
        # The category most of the nodes with room are held by (in the rules' order on ties).
        counts = Counter(CATEGORY[rules[0].rule] for rules in held.values())
        order = list(dict.fromkeys(CATEGORY.values()))
        category = min(counts, key=lambda c: (-counts[c], order.index(c)))
        mine = {n: [h for h in rules if CATEGORY[h.rule] == category] for n, rules in held.items()}
        mine = {n: rules for n, rules in mine.items() if rules}
        shown = sorted(mine)[:NEAREST]
        first = mine[shown[0]][0]
        message = (
            f"{len(mine)} node(s) with room for the pod {WORDS[first.rule]}, e.g. {shown[0]}: "
            f"{first.text()}"
        )
        evidence = {
            "rules": {n: [h.to_dict() for h in mine[n]] for n in shown},
            "nodesWithRoom": len(rooms),
        }
        hosts = [s.node for s in case.hosts]
        # New nodes like a host the rule does not hold first: a copy of a node is in the same
        # domains but its own hostname.
        likes = sorted(hosts, key=lambda n: (n in mine, n))[:NEAREST]

        def proposals(_: Pod) -> Iterator[Fix]:
            for like in likes:
                yield Fix(f"add a node like {like}", "add nodes", add=1, like=like)

        return case.diagnosis(
            category,
            message,
            evidence,
            proposals=proposals,
            otherwise=f"the rule is the pod's owner's choice: {RELAX[category]}",
        )
