"""TopologySpread, by its node inclusion policies: a DoNotSchedule constraint counts domains
whose every node the pod cannot go to, because its nodeTaintsPolicy is Ignore (the default)
or its nodeAffinityPolicy is Ignore, and those empty domains hold the skew's minimum down so
the nodes the pod may use are refused. kube-scheduler's PodTopologySpread does exactly that
(podtopologyspread/common.go, matchNodeInclusionPolicies; filtering.go, calPreFilterState
counts only the nodes it admits and Filter compares with their minimum): the non-invasive fix
is the policy set to Honor, not a toleration or an affinity that sends the pod where its owner
did not mean it to go. The fix is checked by the scheduler, with a new node where the nodes
the pod may use are full."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from draplan.api.core_v1 import Node, Pod
from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.fixes import Fix, honored
from draplan.audit.view import NEAREST
from draplan.scheduler.plugins.podtopologyspread import PodTopologySpread, included

TAINTS, AFFINITY = "nodeTaintsPolicy", "nodeAffinityPolicy"


class SpreadPolicy:
    name = "SpreadPolicy"
    categories = ("TopologySpread",)
    shared = True  # the pod's constraints, tolerations and node constraints are in its shape

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        pod = case.pod
        constraints = [
            c
            for c in pod.spec.topology_spread_constraints
            if c.when_unsatisfiable == "DoNotSchedule"
        ]
        policies = tuple(
            p
            for p, ignored in (
                (TAINTS, any(c.node_taints_policy != "Honor" for c in constraints)),
                (AFFINITY, any(c.node_affinity_policy == "Ignore" for c in constraints)),
            )
            if ignored
        )
        plugin = next((p for p in audit.profile.filters if isinstance(p, PodTopologySpread)), None)
        if not policies or plugin is None:
            return None
        state = audit.state
        nodes = [state.nodes[n] for n in sorted(state.nodes)]
        # Domains only the Ignore policies count: every node of theirs that counts now is one
        # the pod cannot go to.
        keys = {c.topology_key for c in constraints}
        usable = [n for n in nodes if _admits(pod, n, (TAINTS, AFFINITY))]
        counted = [
            n
            for n in nodes
            if _admits(pod, n, tuple(p for p in (TAINTS, AFFINITY) if p not in policies))
        ]
        counting = _domains(counted, keys)
        ignored = sorted(counting - _domains(usable, keys))
        # Only the policies whose Ignore lets some of those domains count.
        policies = tuple(
            p
            for p in policies
            if counting - _domains([n for n in counted if _admits(pod, n, (p,))], keys)
        )
        if not ignored or not policies:
            return None
        now = plugin.filter_state(state, pod)
        spread = honored(pod.spec.topology_spread_constraints, policies)
        changed = msgspec.structs.replace(
            pod, spec=msgspec.structs.replace(pod.spec, topology_spread_constraints=spread)
        )
        after = plugin.filter_state(state, changed)
        if now is None or after is None:
            return None
        # The nodes the pod may go to that the spread refuses now and would admit with Honor.
        freed = [
            n
            for n in usable
            if not plugin.filter_node(now, pod, n).ok and plugin.filter_node(after, changed, n).ok
        ]
        if not freed:
            return None
        policy = " and ".join(f"{p}: Honor" for p in policies)
        domains = ", ".join(f"{k}={v}" for k, v in ignored[:NEAREST])
        more = f" and {len(ignored) - NEAREST} more" if len(ignored) > NEAREST else ""
        reason = " or ".join(
            {TAINTS: "taints it does not tolerate", AFFINITY: "labels its node affinity refuses"}[p]
            for p in policies
        )
        default = " (the default)" if policies == (TAINTS,) else ""
        message = (
            f"Its topology spread counts domain(s) {domains}{more}, whose nodes all have "
            f"{reason}, because its constraint's {' and '.join(policies)} is Ignore{default}: "
            f"the few matching pods there set the skew's minimum, so {len(freed)} node(s) it "
            f"may go to are refused (e.g. {freed[0].metadata.name})"
        )
        evidence = {
            "spreadPolicy": {
                "ignoredDomains": [f"{k}={v}" for k, v in ignored],
                "refusedNodes": [n.metadata.name for n in freed[:NEAREST]],
            }
        }
        # One node of each domain the pod may go to, for a new node where they are full: one
        # an empty copy of which holds the pod where there is one.
        hostable = {s.node for s in case.hosts}
        likes: dict[tuple[str, ...], str] = {}
        for n in sorted(usable, key=lambda n: n.metadata.name not in hostable):
            likes.setdefault(
                tuple(n.metadata.labels.get(k, "") for k in sorted(keys)), n.metadata.name
            )
        text = f"set {policy} on its topology spread constraints"

        def proposals(_: Pod) -> Iterator[Fix]:
            yield Fix(text, "honor node inclusion policies", honor=policies)
            for like in list(likes.values())[:NEAREST]:
                yield Fix(
                    f"{text} and add a node like {like}",
                    "honor node inclusion policies and add nodes",
                    honor=policies,
                    add=1,
                    like=like,
                )

        return case.diagnosis(
            "TopologySpread",
            message,
            evidence,
            proposals=proposals,
            otherwise=f"{text} (no change draplan tried makes it schedulable now)",
        )


def _admits(pod: Pod, node: Node, policies: tuple[str, ...]) -> bool:
    """matchNodeInclusionPolicies with `policies` Honor (the scheduler's rule)."""
    return included(pod, node, AFFINITY in policies, TAINTS in policies)


def _domains(nodes: list[Node], keys: set[str]) -> set[tuple[str, str]]:
    return {(k, n.metadata.labels[k]) for n in nodes for k in keys if k in n.metadata.labels}
