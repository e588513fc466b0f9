"""Pools from what a cluster already has, for clusters without hand-written NodePools.

Precedence (a node belongs to the first source that claims it; a name is taken once):
1. Cluster Autoscaler's clusterapi node groups: MachineDeployments and MachinePools with the
   `cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size` annotation (CA scales only
   those); min and max from the size annotations. With nodes, a `fromNode` copy of one; with
   none, a template from the `capacity.cluster-autoscaler.kubernetes.io/*` scale-from-zero
   annotations (cpu and memory required, as CA requires them), and for `dra-driver` the one
   ResourceSlice CA's provider makes: `gpu-count` devices `gpu-<i>` with `type: gpu`, in a
   pool named after the node (`InstanceResourceSlices`).
2. Karpenter `karpenter.sh/v1` NodePools: a copy of one of their nodes; a NodePool without
   nodes copies the capacity and devices of a node of an instance type its requirements name,
   with the NodePool's labels, single-valued requirements and taints. maxNodes from
   `spec.limits` against the nodes' capacity (as Karpenter sums it); priority from `weight`.
3. Nodes' node-group labels (`karpenter.sh/nodepool`, `eks.amazonaws.com/nodegroup`,
   `cloud.google.com/gke-nodepool`): one pool per value, a copy of one node, at most
   `default_max_nodes` nodes (no limit is written anywhere a dump shows).
The node copied is the first member by name, so the same dump gives the same pools. Prices:
the price table by pool name, else by the node's instance type, else the node's
`draplan.io/price-per-hour` label, else 0.

Slices and domains: a pool whose nodes are the hosts of one multi-host TPU slice (GKE's
`cloud.google.com/gke-tpu-topology`, chips per host from `gke-accelerator-count`, the
`google.com/tpu` allocatable or the node's TPU devices) is that slice: GKE makes a multi-host
slice a node pool of its own, created and deleted whole, so the pool holds at most its hosts
(`draplan.io/max-nodes-reason` says so in messages) and shrinks only whole
(`draplan.io/slice-nodes`). A label a gang's topology constraint names, carried by every node
of a pool, becomes the pool's topology: new nodes join the domain their copy names, or with
several domains, domains of as many nodes as the largest has.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import msgspec

from draplan.api import clusterapi
from draplan.api.clusterapi import ScalableResource
from draplan.api.codec import convert, to_builtins
from draplan.api.core_v1 import Node, NodeSpec, NodeStatus
from draplan.api.draplan_v1alpha1 import (
    NODE_NAME_PLACEHOLDER,
    PRICE_LABEL,
    NodePool,
    NodePoolSpec,
    NodeTemplate,
    NodeTemplateMeta,
    TopologyPlacement,
)
from draplan.api.karpenter import CAPACITY_TYPE_LABEL, NODEPOOL_LABEL, KarpenterNodePool
from draplan.api.meta import ObjectMeta
from draplan.api.quantity import Quantity
from draplan.api.resource_v1 import ResourceSliceSpec
from draplan.autoscaler.templates import node_copy
from draplan.cluster.nodepools import NODE_GROUP_LABELS
from draplan.cluster.state import ClusterState
from draplan.scheduler.gangs import gangs_under

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
DERIVED_FROM = "draplan.io/derived-from"  # annotation on a derived pool: its source
# Annotation on a pool derived from a Cluster API node group: the id Cluster Autoscaler's
# clusterapi provider gives the group, `<Kind>/<namespace>/<name>` (`clusterapi_unstructured.go`,
# `unstructuredScalableResource.ID`), by which the gRPC expander finds the pool.
NODE_GROUP_ID = "draplan.io/node-group-id"
# On a pool whose size is fixed by what it is, not by a setting: why it holds no more nodes.
MAX_NODES_REASON = "draplan.io/max-nodes-reason"
# On a pool that is one multi-host slice: its hosts, added and removed only together.
SLICE_NODES = "draplan.io/slice-nodes"
TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"

CAPI_KINDS = ("MachineDeployment", "MachinePool")
KARPENTER_NODEPOOL = "Karpenter NodePool"
LABEL = "label"


@dataclass(frozen=True)
class Origin:
    """Where a derived pool came from, as its DERIVED_FROM annotation writes it:
    `<kind> <name>`, kind one of CAPI_KINDS (name `namespace/name`), KARPENTER_NODEPOOL, or
    LABEL (name the node-group label's key)."""

    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"

    @property
    def capi(self) -> bool:
        return self.kind in CAPI_KINDS


def origin(pool: NodePool) -> Origin | None:
    """The pool's origin; None for a NodePool given as such."""
    text = pool.metadata.annotations.get(DERIVED_FROM, "")
    for kind in (*CAPI_KINDS, KARPENTER_NODEPOOL, LABEL):
        if text.startswith(kind + " "):
            return Origin(kind, text.removeprefix(kind + " "))
    return None


TPU_CHIPS = "cloud.google.com/gke-accelerator-count"
TPU_RESOURCE = "google.com/tpu"
DEFAULT_MAX_NODES = 100


def tpu_slice(state: ClusterState, members: list[Node]) -> tuple[str, int] | None:
    """(topology, hosts) when `members` are hosts of one multi-host TPU slice."""
    topologies = {n.metadata.labels.get(TPU_TOPOLOGY, "") for n in members}
    if len(topologies) != 1 or not (topology := topologies.pop()):
        return None
    dims = topology.split("x")
    if not all(d.isdigit() and int(d) > 0 for d in dims):
        return None
    chips = math.prod(int(d) for d in dims)
    rep = members[0]
    per_host = rep.metadata.labels.get(TPU_CHIPS, "")
    allocatable = rep.status.allocatable.get(TPU_RESOURCE)
    if per_host.isdigit() and int(per_host) > 0:
        host_chips = int(per_host)
    elif allocatable is not None and allocatable.sign() > 0:
        host_chips = int(allocatable.as_fraction())
    else:
        host_chips = sum(len(rs.spec.devices) for rs in state.node_slices(rep.metadata.name))
    hosts = -(-chips // host_chips) if host_chips else 1
    return (topology, hosts) if hosts > 1 else None


def _shaped(state: ClusterState, pool: NodePool, members: list[Node], keys: set[str]) -> NodePool:
    """`pool` with the topology its members carry for `keys` (gangs' domain labels), and, for
    the hosts of one multi-host TPU slice, that slice's size and whole shrinking."""
    placements = []
    for key in sorted(keys):
        values = Counter(n.metadata.labels.get(key) for n in members)
        if not members or None in values:
            continue
        per_domain = 0 if len(values) == 1 else max(values.values())
        placements.append(TopologyPlacement(key=key, nodes_per_domain=per_domain))
    spec = msgspec.structs.replace(pool.spec, topology=tuple(placements))
    notes = dict(pool.metadata.annotations)
    found = tpu_slice(state, members) if members else None
    if found is not None:
        topology, hosts = found
        spec = msgspec.structs.replace(spec, min_nodes=0, max_nodes=hosts)
        notes[SLICE_NODES] = str(hosts)
        notes[MAX_NODES_REASON] = (
            f"it is one {topology} TPU slice of {hosts} hosts, and GKE adds a multi-host slice "
            "only whole, as a node pool of its own"
        )
    meta = msgspec.structs.replace(pool.metadata, annotations=notes)
    return msgspec.structs.replace(pool, metadata=meta, spec=spec)


@dataclass
class Derived:
    """The derived pools (by name), what was left out and why, and the pools no price was
    found for."""

    pools: dict[str, NodePool] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    unpriced: list[str] = field(default_factory=list)

    def price(
        self, prices: Mapping[str, str], names: tuple[str, ...], labels: Mapping[str, str]
    ) -> str:
        """The table's price by the pool's names (its name, and for a Cluster API group the id
        CA gives it), else by instance type; else the price label of the node (or, for a group
        with no node, of the labels its nodes get); else 0, the pool named in `unpriced`."""
        for key in (*names, labels.get(INSTANCE_TYPE, "")):
            if key and key in prices:
                return prices[key]
        label = labels.get(PRICE_LABEL)
        if label:
            return label
        self.unpriced.append(names[0])
        return "0"


def _pool(name: str, source: Origin, spec: NodePoolSpec, group_id: str = "") -> NodePool:
    notes = {DERIVED_FROM: str(source), **({NODE_GROUP_ID: group_id} if group_id else {})}
    return NodePool(metadata=ObjectMeta(name=name, annotations=notes), spec=spec)


def _capi_members(state: ClusterState, res: ScalableResource) -> list[Node]:
    name = res.metadata.name
    ids = set(res.spec.provider_id_list)
    out = []
    for _, node in sorted(state.nodes.items()):
        owner = node.metadata.annotations.get(clusterapi.OWNER_NAME, "")
        if (
            (node.spec.provider_id and node.spec.provider_id in ids)
            or owner == name
            or (isinstance(res, clusterapi.MachineDeployment) and owner.rpartition("-")[0] == name)
        ):
            out.append(node)
    return out


def from_zero(res: ScalableResource) -> tuple[NodeTemplate, tuple[ResourceSliceSpec, ...]]:
    """The node CA's clusterapi provider builds for an empty group (`TemplateNodeInfo`)."""
    notes = res.metadata.annotations
    capacity = {
        "cpu": Quantity.parse(notes[clusterapi.CPU]),
        "memory": Quantity.parse(notes[clusterapi.MEMORY]),
        "pods": Quantity.from_int(
            int(notes.get(clusterapi.MAX_PODS) or clusterapi.DEFAULT_MAX_PODS)
        ),
    }
    if notes.get(clusterapi.EPHEMERAL_DISK):
        capacity["ephemeral-storage"] = Quantity.parse(notes[clusterapi.EPHEMERAL_DISK])
    gpus = int(notes.get(clusterapi.GPU_COUNT) or 0)
    if gpus and notes.get(clusterapi.GPU_TYPE):
        capacity[notes[clusterapi.GPU_TYPE]] = Quantity.from_int(gpus)
    labels = {
        "kubernetes.io/arch": "amd64",  # CA's default scale-from-zero architecture
        "kubernetes.io/os": "linux",
        **res.spec.template.metadata.labels,
        **clusterapi.parse_labels(notes.get(clusterapi.LABELS, "")),
    }
    template = NodeTemplate(
        metadata=NodeTemplateMeta(labels=labels),
        spec=NodeSpec(taints=clusterapi.scalable_taints(res)),
        status=NodeStatus(capacity=capacity, allocatable=capacity),
    )
    driver = notes.get(clusterapi.DRA_DRIVER, "")
    if not driver or not gpus:
        return template, ()
    slice_spec = convert(
        {
            "driver": driver,
            "nodeName": NODE_NAME_PLACEHOLDER,
            "pool": {"name": NODE_NAME_PLACEHOLDER, "resourceSliceCount": 1},
            "devices": [
                {"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}}} for i in range(gpus)
            ],
        },
        ResourceSliceSpec,
    )
    return template, (slice_spec,)


def _from_capi(
    state: ClusterState,
    prices: Mapping[str, str],
    out: Derived,
    claimed: set[str],
    keys: set[str],
) -> None:
    resources = sorted(
        (
            o
            for o in state.others
            if isinstance(o, clusterapi.MachineDeployment | clusterapi.MachinePool)
        ),
        key=lambda r: (r.metadata.namespace, r.metadata.name, r.kind),
    )
    for res in resources:
        notes = res.metadata.annotations
        namespace, name = res.metadata.namespace, res.metadata.name
        source = Origin(res.kind, f"{namespace}/{name}".lstrip("/"))
        where = str(source)
        group_id = clusterapi.node_group_id(res)
        high = int(notes.get(clusterapi.MAX_SIZE) or 0)
        low = int(notes.get(clusterapi.MIN_SIZE) or 0)
        if high == 0:
            continue  # CA skips a group whose max is 0
        if name in out.pools:
            # The same name in another namespace: CA's ids tell them apart, so do the pools.
            name = f"{name}.{namespace}"
            if name in out.pools:
                continue
        members = [n for n in _capi_members(state, res) if n.metadata.name not in claimed]
        if members:
            rep = members[0]
            spec = NodePoolSpec(
                min_nodes=low,
                max_nodes=high,
                price_per_hour=out.price(prices, (name, group_id), rep.metadata.labels),
                from_node=rep.metadata.name,
            )
        elif notes.get(clusterapi.CPU) and notes.get(clusterapi.MEMORY):
            template, slices = from_zero(res)
            spec = NodePoolSpec(
                min_nodes=low,
                max_nodes=high,
                price_per_hour=out.price(prices, (name, group_id), template.metadata.labels),
                template=template,
                resource_slices=slices,
            )
        else:
            out.skipped.append(f"{where}: no node and no cpu/memory capacity annotations")
            continue
        out.pools[name] = _shaped(state, _pool(name, source, spec, group_id), members, keys)
        claimed.update(n.metadata.name for n in members)


def _summed(members: list[Node], resource: str) -> Fraction:
    """The capacity of `resource` the nodes have together, as Karpenter sums it for limits."""
    return sum(
        (
            (n.status.capacity or n.status.allocatable).get(resource, Quantity(0)).as_fraction()
            for n in members
        ),
        Fraction(0),
    )


def _room(limits: Mapping[str, Quantity], like: Node, members: list[Node]) -> int | None:
    """How many more nodes like `like` fit under Karpenter's limits, which cap the summed
    capacity of the pool's nodes (`members`); None when no limit applies to such a node."""
    per_node = like.status.capacity or like.status.allocatable
    room: int | None = None
    for resource, limit in sorted(limits.items()):
        each = per_node.get(resource)
        if each is None or each.sign() <= 0:
            continue  # a node without this resource does not count toward it
        used = _summed(members, resource)
        fits = max(0, int((limit.as_fraction() - used) // each.as_fraction()))
        room = fits if room is None else min(room, fits)
    return room


def _amount(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{math.ceil(x * 1000)}m"


def raise_to(state: ClusterState, pool: NodePool, need: int) -> tuple[str, dict[str, Any]] | None:
    """For a pool derived from a node group, where its maximum is written and what it must
    become for `need` nodes: the words of the fix, and its fields. None for a NodePool given
    as such (its own maxNodes is the setting)."""
    source = origin(pool)
    if source is None:
        return None
    where = str(source)
    if source.capi:
        # CA's clusterapi provider reads the group's max from this annotation.
        return (
            f"raise the {clusterapi.MAX_SIZE} annotation of {where} to {need}",
            {"object": where, "annotation": clusterapi.MAX_SIZE, "value": str(need)},
        )
    if source.kind == KARPENTER_NODEPOOL:
        name = source.name
        kp = next(
            o for o in state.others if isinstance(o, KarpenterNodePool) and o.metadata.name == name
        )
        members = [
            n
            for _, n in sorted(state.nodes.items())
            if n.metadata.labels.get(NODEPOOL_LABEL) == name
        ]
        rep = members[0] if members else _donor(state, kp)
        if rep is None:
            return None
        per_node = rep.status.capacity or rep.status.allocatable
        limits: dict[str, str] = {}
        for resource, limit in sorted(kp.spec.limits.items()):
            each = per_node.get(resource)
            if each is None or each.sign() <= 0:
                continue
            wanted = _summed(members, resource) + (need - len(members)) * each.as_fraction()
            limits[resource] = _amount(max(limit.as_fraction(), wanted))
        shown = ", ".join(f"{k}: {v}" for k, v in limits.items())
        return f"raise spec.limits of {where} to {shown}", {"object": where, "limits": limits}
    return (
        f"raise the maximum size of its node group ({where}; the input does not show it, "
        f"draplan took {pool.spec.max_nodes}) to {need}",
        {"object": where, "value": str(need)},
    )


def _donor(state: ClusterState, kp: KarpenterNodePool) -> Node | None:
    """For a NodePool without nodes, the first node (by name) of an instance type its
    requirements name (`node.kubernetes.io/instance-type In`); None if they name none."""
    allowed: set[str] = set()
    for req in kp.spec.template.spec.requirements:
        if req.key == INSTANCE_TYPE and req.operator == "In":
            allowed = set(req.values) if not allowed else allowed & set(req.values)
    for req in kp.spec.template.spec.requirements:
        if req.key == INSTANCE_TYPE and req.operator == "NotIn":
            allowed -= set(req.values)
    return next(
        (
            n
            for _, n in sorted(state.nodes.items())
            if n.metadata.labels.get(INSTANCE_TYPE) in allowed
        ),
        None,
    )


def _karpenter_template(
    state: ClusterState, kp: KarpenterNodePool, donor: Node
) -> tuple[NodeTemplate, tuple[ResourceSliceSpec, ...]]:
    """A node Karpenter would launch for `kp`: the donor's capacity and devices with the
    NodePool's labels, single-valued requirements and taints (not the donor's)."""
    node, slices = node_copy(state, donor)
    template = kp.spec.template
    labels = {
        k: v
        for k, v in node["metadata"]["labels"].items()
        if k not in NODE_GROUP_LABELS and k != CAPACITY_TYPE_LABEL
    }
    for req in template.spec.requirements:
        if req.operator == "In" and len(req.values) == 1:
            labels[req.key] = req.values[0]
    labels.update(template.metadata.labels)
    labels[NODEPOOL_LABEL] = kp.metadata.name
    # A new node is neither the donor's instance nor cordoned as the donor may be.
    spec = {
        k: v for k, v in node["spec"].items() if k not in ("providerID", "taints", "unschedulable")
    }
    spec["taints"] = [to_builtins(t) for t in template.spec.taints]
    doc = {"metadata": {"labels": labels}, "spec": spec, "status": node["status"]}
    return convert(doc, NodeTemplate), tuple(convert(d, ResourceSliceSpec) for d in slices)


def _from_karpenter(
    state: ClusterState,
    prices: Mapping[str, str],
    out: Derived,
    claimed: set[str],
    default_max: int,
    keys: set[str],
) -> None:
    pools = sorted(
        (o for o in state.others if isinstance(o, KarpenterNodePool)), key=lambda p: p.metadata.name
    )
    for kp in pools:
        name = kp.metadata.name
        if name in out.pools:
            continue
        members = [
            n
            for _, n in sorted(state.nodes.items())
            if n.metadata.labels.get(NODEPOOL_LABEL) == name and n.metadata.name not in claimed
        ]
        rep = members[0] if members else _donor(state, kp)
        if rep is None:
            out.skipped.append(
                f"Karpenter NodePool {name}: no node of it, nor of an instance type it names"
            )
            continue
        room = _room(kp.spec.limits, rep, members)
        spec = NodePoolSpec(
            max_nodes=default_max if room is None else len(members) + room,
            price_per_hour=out.price(prices, (name,), rep.metadata.labels),
            priority=kp.spec.weight or 0,
        )
        if members:
            spec = msgspec.structs.replace(spec, from_node=rep.metadata.name)
        else:
            template, slices = _karpenter_template(state, kp, rep)
            spec = msgspec.structs.replace(spec, template=template, resource_slices=slices)
        pool = _pool(name, Origin(KARPENTER_NODEPOOL, name), spec)
        out.pools[name] = _shaped(state, pool, members, keys)
        claimed.update(n.metadata.name for n in members)


def _from_labels(
    state: ClusterState,
    prices: Mapping[str, str],
    out: Derived,
    claimed: set[str],
    default_max: int,
    keys: set[str],
) -> None:
    groups: dict[str, tuple[str, list[Node]]] = {}
    for _, node in sorted(state.nodes.items()):
        if node.metadata.name in claimed:
            continue
        key = next((k for k in NODE_GROUP_LABELS if node.metadata.labels.get(k)), None)
        if key is not None:
            value = node.metadata.labels[key]
            groups.setdefault(value, (key, []))[1].append(node)
    for name, (key, members) in sorted(groups.items()):
        if name in out.pools:
            out.skipped.append(f"label {key}={name}: the name is taken by a pool derived before")
            continue
        rep = members[0]
        spec = NodePoolSpec(
            max_nodes=max(default_max, len(members)),
            price_per_hour=out.price(prices, (name,), rep.metadata.labels),
            from_node=rep.metadata.name,
        )
        out.pools[name] = _shaped(state, _pool(name, Origin(LABEL, key), spec), members, keys)


def derive_pools(
    state: ClusterState,
    prices: Mapping[str, str] | None = None,
    default_max_nodes: int = DEFAULT_MAX_NODES,
    kube: bool = True,
) -> Derived:
    """Pools for `state`'s node groups, by the precedence above; `kube`: the scheduler modelled
    is kube-scheduler (else draplan's profile), whose gangs' domains the pools carry."""
    out = Derived()
    claimed: set[str] = set()
    table = prices or {}
    # The labels the modelled scheduler's gangs ask their domains by (`gangs_under`: under a
    # kube-scheduler profile a PodGroup's topology constraint only with its gate, never Kueue's
    # annotations): a pool whose nodes carry one has such domains.
    gangs = gangs_under(state, kube).values()
    keys = {g.topology.key for g in gangs if g.topology is not None}
    _from_capi(state, table, out, claimed, keys)
    _from_karpenter(state, table, out, claimed, default_max_nodes, keys)
    _from_labels(state, table, out, claimed, default_max_nodes, keys)
    return out


def derive_again(
    state: ClusterState,
    before: Mapping[str, NodePool],
    prices: Mapping[str, str] | None = None,
    kube: bool = True,
) -> dict[str, NodePool]:
    """For a state kept between passes (nodes come and go): take out the pools derived for
    it `before`, and with no NodePool left, derive and add them again; the pools derived."""
    for name, pool in before.items():
        if state.node_pools.get(name) is pool:
            del state.node_pools[name]
    derived = {} if state.node_pools else derive_pools(state, prices, kube=kube).pools
    state.node_pools.update(derived)
    return derived
