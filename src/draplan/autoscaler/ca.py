"""Cluster Autoscaler 1.36 as it is, so that draplan's choice can be put beside CA's.

- Node groups: the pools CA manages — NodePools, and the pools derived from Cluster API and
  from cloud node-group labels — not Karpenter's (another autoscaler adds those nodes).
- Templates (`processors/nodeinfosprovider/mixed_nodeinfos_processor.go`, `Process`): a copy of
  a node of the group that has been Ready for a minute and is schedulable
  (`isNodeGoodTemplateCandidate`), with its ResourceSlices (`TemplateNodeInfoFromExampleNodeInfo`
  sanitizes them with the node); else the cloud provider's template: for Cluster API the node
  the capacity annotations describe (`clusterapi_nodegroup.go`, `TemplateNodeInfo`), whose one
  `dra-driver` ResourceSlice CA 1.36.1 writes without `resourceSliceCount`, so the allocator
  takes the pool for incomplete and allocates no claim from it: CA never scales such a group
  from zero for a DRA claim; for AWS and GCE groups the instance template, which carries no
  ResourceSlices (`AwsNodeGroup.TemplateNodeInfo`); a NodePool's template as written; last, a
  node that is not Ready. A node without a Ready condition (a hand-written dump) counts as
  Ready for long.
- Options: for each group, the pending pods its template's nodes take, pod by pod (no gangs,
  no topology domains), with DRA claims allocated on the template's devices — after the pods
  that fit existing nodes are set aside (`core/podlistprocessor/filter_out_schedulable.go`).
- `least-waste` (`expander/waste`) scores an option by the unused fraction of cpu plus that of
  memory on its new nodes: devices do not count. Ties go to the smallest group name here (CA
  picks one at random)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import msgspec

from draplan.api import clusterapi
from draplan.api.core_v1 import Node
from draplan.api.draplan_v1alpha1 import NodePool, NodeTemplate, NodeTemplateMeta
from draplan.autoscaler.derived import LABEL, NODE_GROUP_ID, from_zero, origin
from draplan.autoscaler.options import Limits
from draplan.autoscaler.owners import CLUSTER_AUTOSCALER, owner
from draplan.autoscaler.provreq import parse_time
from draplan.autoscaler.scaleup import ScaleUpPlanner, scaled_for
from draplan.autoscaler.templates import NodeNamer, add_new_node, make_node, pool_members
from draplan.cluster.podresources import node_allocatable
from draplan.cluster.state import ClusterState, ObjectKey
from draplan.scheduler import Scheduler, build_profile

VERSION = "1.36"
STABILIZATION = timedelta(minutes=1)  # mixed_nodeinfos_processor.go: stabilizationDelay
# CA 1.36.1 writes its scale-from-zero ResourceSlice with no resourceSliceCount (0), which the
# API server would refuse; a count above the slices present is the same to the allocator.
_INCOMPLETE_COUNT = 2
INCOMPLETE = (
    "its template's ResourceSlice has no resourceSliceCount (CA 1.36), so the allocator "
    "takes the pool for incomplete and allocates no claim on it"
)


@dataclass(frozen=True)
class CAGroup:
    """A node group as CA sees it: the pool (what a real new node is) and the template CA
    simulates with (None: CA has none and leaves the group out), and where it comes from."""

    pool: NodePool
    template: NodePool | None
    source: str
    note: str = ""  # why CA's template differs from what a new node really is


@dataclass(frozen=True)
class CAOption:
    """One node group's scale-up option: `node_count` new nodes of `pool` for `pods`."""

    pool: NodePool
    node_count: int
    pods: tuple[ObjectKey, ...]


def readiness(node: Node) -> tuple[bool, datetime | None]:
    """Whether the node is Ready, and since when (`utils/kubernetes` GetReadinessState); a node
    without a Ready condition counts as Ready, since an unknown time."""
    for cond in node.status.conditions:
        if cond.type == "Ready":
            return cond.status == "True", parse_time(cond.last_transition_time)
    return True, None


def good_template(node: Node, now: datetime) -> bool:
    """`isNodeGoodTemplateCandidate`: Ready for a minute, and schedulable."""
    ready, since = readiness(node)
    stable = since is None or since + STABILIZATION < now
    return ready and stable and not node.spec.unschedulable


def managed(state: ClusterState, pool: NodePool) -> bool:
    """Whether CA manages the pool's node group (`owners`: not Karpenter's)."""
    return owner(state, pool) == CLUSTER_AUTOSCALER


def _copying(pool: NodePool, node: Node) -> NodePool:
    spec = msgspec.structs.replace(
        pool.spec, from_node=node.metadata.name, template=None, resource_slices=()
    )
    return msgspec.structs.replace(pool, spec=spec)


def _provider_template(state: ClusterState, pool: NodePool) -> tuple[NodePool, str, str] | None:
    """The cloud provider's template of the group, where it has one: the template, where it
    comes from, and how it differs from a real new node."""
    group_id = pool.metadata.annotations.get(NODE_GROUP_ID, "")
    source = origin(pool)
    if group_id:
        res = next(
            (
                o
                for o in state.others
                if isinstance(o, clusterapi.MachineDeployment | clusterapi.MachinePool)
                and clusterapi.node_group_id(o) == group_id
            ),
            None,
        )
        notes = res.metadata.annotations if res is not None else {}
        if res is None or not (notes.get(clusterapi.CPU) and notes.get(clusterapi.MEMORY)):
            return None
        template, slices = from_zero(res)
        incomplete = tuple(
            msgspec.structs.replace(
                s, pool=msgspec.structs.replace(s.pool, resource_slice_count=_INCOMPLETE_COUNT)
            )
            for s in slices
        )
        spec = msgspec.structs.replace(
            pool.spec, from_node="", template=template, resource_slices=incomplete
        )
        where = f"the scale-from-zero annotations of {source}"
        return msgspec.structs.replace(pool, spec=spec), where, INCOMPLETE if slices else ""
    if source is not None and source.kind == LABEL:
        members = pool_members(state, pool)
        if not members:
            return None
        donor = members[0]
        template = NodeTemplate(
            metadata=NodeTemplateMeta(labels=dict(donor.metadata.labels)),
            spec=donor.spec,
            status=msgspec.structs.replace(donor.status, conditions=()),
        )
        spec = msgspec.structs.replace(
            pool.spec, from_node="", template=template, resource_slices=()
        )
        note = "the cloud provider's instance template carries no ResourceSlices"
        return msgspec.structs.replace(pool, spec=spec), "the instance template", note
    return pool, "the NodePool's template", ""


def ca_group(state: ClusterState, pool: NodePool, now: datetime) -> CAGroup:
    """CA's template of one group at `now`."""
    members = pool_members(state, pool)
    good = next((n for n in members if good_template(n, now)), None)
    if good is not None:
        return CAGroup(pool, _copying(pool, good), f"node {good.metadata.name}")
    provided = _provider_template(state, pool)
    if provided is not None:
        template, source, note = provided
        if members:
            source += " (no node of the group has been Ready and schedulable for a minute)"
        return CAGroup(pool, template, source, note)
    if members:
        return CAGroup(pool, _copying(pool, members[0]), f"node {members[0].metadata.name}")
    return CAGroup(pool, None, "no node and no provider template: CA leaves the group out")


def ca_scheduler() -> Scheduler:
    """The scheduler of CA's simulations: kube-scheduler's default profile, pod by pod."""
    return Scheduler(build_profile(), gangs=False)


def ca_groups(state: ClusterState, now: datetime) -> list[CAGroup]:
    pools = [p for _, p in sorted(state.node_pools.items()) if managed(state, p)]
    return [ca_group(state, p, now) for p in pools]


def ca_options(
    state: ClusterState,
    now: datetime,
    limits: Limits | None = None,
    groups: Sequence[CAGroup] | None = None,
    scheduler: Scheduler | None = None,
) -> list[CAOption]:
    """Each group's option for the pending pods, simulated pod by pod on CA's template after
    the pods that fit existing nodes there are set aside (CA's filter_out_schedulable).
    `scheduler`: `ca_scheduler()`'s, kept by the caller between plans of one changing state
    (its evaluations are cached per node version)."""
    groups = ca_groups(state, now) if groups is None else groups
    scheduler = scheduler or ca_scheduler()
    out = []
    with state.forked():
        scheduler.run(state, placements_only=True)
        pending = scaled_for(state, (limits or Limits()).expendable_priority_cutoff)
        if not pending:
            return []
        templates = [g.template for g in groups if g.template is not None]
        planner = ScaleUpPlanner(scheduler, templates, limits)
        for group in groups:
            if group.template is None:
                continue
            option = planner.simulate(state, group.template, pending)
            if option is not None:
                out.append(CAOption(group.pool, len(option.nodes), tuple(option.pods)))
    return out


def wasted_score(state: ClusterState, option: CAOption) -> float:
    """CA's least-waste score of an option: unused cpu fraction plus unused memory fraction."""
    cpu = memory = 0
    for key in option.pods:
        for c in state.pods[key].spec.containers:
            cpu += c.resources.requests["cpu"].milli_value() if "cpu" in c.resources.requests else 0
            if "memory" in c.resources.requests:
                memory += c.resources.requests["memory"].value()
    template = make_node(state, option.pool, f"{option.pool.metadata.name}-template", {}).node
    node = node_allocatable(template)
    avail_cpu = node.get("cpu", 0) * option.node_count
    avail_memory = node.get("memory", 0) // 1000 * option.node_count
    wasted = 0.0
    for avail, used in ((avail_cpu, cpu), (avail_memory, memory)):
        wasted += (avail - used) / avail if avail else 0.0
    return wasted


def least_waste(state: ClusterState, options: Sequence[CAOption]) -> CAOption | None:
    """CA's least-waste pick (ties: the smallest group name)."""
    if not options:
        return None
    return min(options, key=lambda o: (wasted_score(state, o), o.pool.metadata.name))


@dataclass(frozen=True)
class CAOutcome:
    """What Cluster Autoscaler 1.36 (`--expander=least-waste`) does in one loop: its groups'
    templates, its options, the one it adds, and which pods that starts."""

    groups: list[CAGroup]
    options: list[CAOption]
    chosen: CAOption | None
    started: tuple[ObjectKey, ...]  # pending pods that start only once CA's new nodes are there

    def to_dict(self) -> dict[str, object]:
        def pods(keys: Sequence[ObjectKey]) -> list[str]:
            return [f"{k[0]}/{k[1]}" for k in keys]

        chosen = self.chosen
        return {
            "version": VERSION,
            "expander": "least-waste",
            "nodeGroups": [
                {
                    "nodeGroup": g.pool.metadata.name,
                    "template": g.source,
                    **({"note": g.note} if g.note else {}),
                }
                for g in self.groups
            ],
            "options": [
                {"nodeGroup": o.pool.metadata.name, "add": o.node_count, "pods": pods(o.pods)}
                for o in self.options
            ],
            "scaleUp": None
            if chosen is None
            else {
                "nodeGroup": chosen.pool.metadata.name,
                "add": chosen.node_count,
                "pods": pods(chosen.pods),
                "podsStarted": pods(self.started),
            },
        }


def ca_outcome(
    state: ClusterState,
    now: datetime,
    limits: Limits | None = None,
    scheduler: Scheduler | None = None,
) -> CAOutcome:
    """CA's loop on `state` (left as it was): its least-waste pick among its options, added
    whole, and the pods the real scheduler then places on those nodes; `scheduler` as for
    `ca_options`."""
    groups = ca_groups(state, now)
    options = ca_options(state, now, limits, groups, scheduler)
    chosen = least_waste(state, options)
    started: tuple[ObjectKey, ...] = ()
    if chosen is not None:
        scheduler = Scheduler(build_profile())
        with state.forked():
            scheduler.run(state, placements_only=True)  # what fits existing nodes first
            namer = NodeNamer(state, chosen.pool)
            for _ in range(chosen.node_count):
                name, labels = namer.next()
                add_new_node(state, make_node(state, chosen.pool, name, labels))
            results = scheduler.run(state, placements_only=True)
            started = tuple(sorted(r.key for r in results if r.node))
    return CAOutcome(groups, options, chosen, started)
