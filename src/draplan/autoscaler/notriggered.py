"""Why a pending pod did not trigger a scale-up, node group by node group, the way Cluster
Autoscaler's NotTriggerScaleUp event says it: "pod didn't trigger scale-up: 1 node(s) had
untolerated taint(s), 1 max node group size reached" (each reason
with the number of node groups it stopped; `core/scaleup/orchestrator` aggregates the
template node's predicate reasons and the groups skipped at their maximum). Each group is
judged on the template given: a pool as draplan sees it, or the template CA itself simulates
(`ca.ca_group`) with a note where that is not what a new node of the group really is."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from draplan.api.core_v1 import Pod
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.autoscaler.templates import NodeNamer, add_new_node, make_node, pool_members
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import Scheduler
from draplan.scheduler.core import unbound

MAX_SIZE_REACHED = "max node group size reached"  # CA's skipped-group reason
FITS_ALONE = "would fit a new node alone (not added: gang, topology or budget limits)"
_AVAILABLE = re.compile(r"^0/\d+ nodes are available: (?:\d+ )?")


@dataclass
class NotTriggered:
    """One pod: each node group's reason, and CA's one-line message."""

    pod: ObjectKey
    groups: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)  # group -> why CA's template differs

    @property
    def message(self) -> str:
        counts = Counter(self.groups.values())
        return "pod didn't trigger scale-up: " + ", ".join(
            f"{n} {reason}" for reason, n in sorted(counts.items())
        )


def _reason(text: str) -> str:
    """The template node's reason without the "0/1 nodes are available: 1" frame (the
    predicates' words: CA runs no PostFilter)."""
    return _AVAILABLE.sub("", text).rstrip(".")


def not_triggered(
    state: ClusterState,
    scheduler: Scheduler,
    views: Sequence[tuple[NodePool, str]],
    pods: list[Pod],
    added: dict[str, int] | None = None,
) -> list[NotTriggered]:
    """For each pod, what an empty new node of each group's template says to it, judged
    alone; `views` are the templates (named as their groups) with a note each. `state` is
    the cluster before the plan (whose scale-down may remove a node a pool copies); `added`
    counts the nodes the plan adds per group, toward its maximum."""
    out = {key_of(p): NotTriggered(key_of(p)) for p in pods}
    for pool, note in sorted(views, key=lambda v: v[0].metadata.name):
        name = pool.metadata.name
        size = len(pool_members(state, pool)) + (added or {}).get(name, 0)
        full = size >= pool.spec.max_nodes
        with state.forked():
            node, labels = NodeNamer(state, pool).next()
            add_new_node(state, make_node(state, pool, node, labels))
            for pod in pods:
                with state.forked():
                    result = scheduler.schedule_pod(state, unbound(pod), [node])
                if result.node is None and result.reason is not None:
                    why = _reason(result.reason.filtered)
                else:
                    why = MAX_SIZE_REACHED if full else FITS_ALONE
                out[key_of(pod)].groups[name] = why
                if note:
                    out[key_of(pod)].notes[name] = note
    return [out[k] for k in sorted(out)]
