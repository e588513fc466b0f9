"""Property test of the scheduler: random small clusters and pods.

Clusters: 2-5 nodes with zone / rack labels, taints of every effect, the odd cordoned node, a
cpu size and one GPU slice each (0-4 GPUs, one or two NUMA groups). Pods: a cpu request, maybe
a nodeSelector, tolerations, a template claim for 1-3 GPUs (maybe with matchAttribute on
NUMA), maybe a shared named claim, some in coscheduling gangs (some of those with a Kueue
topology annotation on the rack label), under draplan's profile, whose gang policy places
such groups all or nothing (kube-scheduler's takes them pod by pod: test_gang_semantics).

For every example, checked by hand against the final state (no scheduler code reused):
every placement passes every filter, cpu and pod counts fit each node, every placed pod's
claims pass `validate_allocation`, the device ledger is exactly what allocated claims hold,
no claim is left reserved for a pod that is not bound, gangs are never partially bound,
required topology keeps a gang in one rack, and the same input gives the same output.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from draplan.allocator.validate import validate_allocation
from draplan.api.core_v1 import Node, Pod, Taint, Toleration
from draplan.api.meta import KubeStruct
from draplan.cluster.state import ClusterState
from draplan.scheduler import PodResult, Scheduler
from draplan.scheduler.profile import draplan_profile
from scheduler_builders import (
    NUMA,
    RACK,
    MakeClaim,
    MakeNode,
    MakePod,
    MakeSlice,
    coscheduling_podgroup,
    device_class,
)

EXAMPLES = 400
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
GANG_LABEL = "scheduling.x-k8s.io/pod-group"

TAINTS = [
    ("dedicated", "gpu", "NoSchedule"),
    ("dedicated", "infra", "NoExecute"),
    ("soft", "x", "PreferNoSchedule"),
]
TOLERATIONS = [
    ("dedicated", "gpu", "NoSchedule", "Equal"),
    ("dedicated", "", "", "Exists"),
    ("dedicated", "infra", "NoSchedule", "Equal"),  # wrong effect for the infra taint
    (UNSCHEDULABLE_TAINT, "", "NoSchedule", "Exists"),
]


@dataclass(frozen=True)
class NodeSpec:
    zone: str
    rack: str
    cpu_milli: int
    pods: int
    taints: tuple[int, ...]
    cordoned: bool
    gpus: int
    numa_groups: int


@dataclass(frozen=True)
class PodSpec:
    cpu_milli: int
    zone: str | None
    tolerations: tuple[int, ...]
    gpus: int  # 0: no template claim
    numa: bool
    shared: bool
    gang: int | None
    priority: int


@dataclass(frozen=True)
class GangSpec:
    min_member: int
    topology: str  # "", "required", "preferred"


@st.composite
def node_specs(draw: st.DrawFn) -> NodeSpec:
    return NodeSpec(
        zone=draw(st.sampled_from(["a", "b"])),
        rack=draw(st.sampled_from(["r0", "r1"])),
        cpu_milli=draw(st.integers(2, 16)) * 500,
        pods=draw(st.integers(1, 6)),
        taints=draw(st.sampled_from([(), (), (), (0,), (1,), (2,), (0, 1)])),
        cordoned=draw(st.integers(0, 9)) == 0,
        gpus=draw(st.integers(0, 4)),
        numa_groups=draw(st.integers(1, 2)),
    )


@st.composite
def pod_specs(draw: st.DrawFn, gangs: int) -> PodSpec:
    gpus = draw(st.sampled_from([0, 0, 1, 2, 3]))
    return PodSpec(
        cpu_milli=draw(st.integers(0, 6)) * 500,
        zone=draw(st.sampled_from([None, None, "a", "b"])),
        tolerations=tuple(
            draw(st.lists(st.integers(0, len(TOLERATIONS) - 1), max_size=2, unique=True))
        ),
        gpus=gpus,
        numa=gpus > 1 and draw(st.booleans()),
        shared=draw(st.integers(0, 5)) == 0,
        gang=draw(st.none() | st.integers(0, gangs - 1)) if gangs else None,
        priority=draw(st.integers(0, 2)),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[NodeSpec], list[GangSpec], list[PodSpec]]:
    nodes = draw(st.lists(node_specs(), min_size=2, max_size=5))
    gangs = draw(
        st.lists(
            st.builds(
                GangSpec,
                min_member=st.integers(1, 3),
                topology=st.sampled_from(["", "", "required", "preferred"]),
            ),
            max_size=2,
        )
    )
    pods = draw(st.lists(pod_specs(len(gangs)), min_size=2, max_size=8))
    return nodes, gangs, pods


def build(nodes: list[NodeSpec], gangs: list[GangSpec], pods: list[PodSpec]) -> list[KubeStruct]:
    objs: list[KubeStruct] = [device_class()]
    for i, n in enumerate(nodes):
        name = f"n{i}"
        node = MakeNode().name(name).label("zone", n.zone).label(RACK, n.rack)
        node.capacity(cpu=f"{n.cpu_milli}m", pods=str(n.pods))
        for t in n.taints:
            node.taint(*TAINTS[t])
        if n.cordoned:
            node.unschedulable()
        objs.append(node.obj())
        if n.gpus:
            objs.append(MakeSlice().node(name).gpus(n.gpus, n.numa_groups).obj())
    for count in (1, 2, 3):
        objs.append(MakeClaim().name(f"g{count}").gpus(count).template())
        objs.append(MakeClaim().name(f"g{count}n").gpus(count).match_attribute(NUMA).template())
    if any(p.shared for p in pods):
        objs.append(MakeClaim().name("shared").gpus(1).obj())
    for g, gang in enumerate(gangs):
        objs.append(coscheduling_podgroup(f"gang{g}", gang.min_member))
    for i, p in enumerate(pods):
        pod = MakePod().name(f"p{i}").created(f"2025-01-01T00:00:{i:02d}Z").priority(p.priority)
        if p.cpu_milli:
            pod.req(cpu=f"{p.cpu_milli}m")
        if p.zone:
            pod.node_selector("zone", p.zone)
        for t in p.tolerations:
            key, value, effect, op = TOLERATIONS[t]
            pod.toleration(key, value, effect, operator=op)
        if p.gpus:
            pod.template_claim("gpu", f"g{p.gpus}" + ("n" if p.numa else ""))
        if p.shared:
            pod.claim("shared", "shared")
        if p.gang is not None:
            pod.pod_group(f"gang{p.gang}")
            topo = gangs[p.gang].topology
            if topo:
                pod.annotation(KUEUE_REQUIRED if topo == "required" else KUEUE_PREFERRED, RACK)
        objs.append(pod.obj())
    return objs


# --- the rules, written again from the Kubernetes semantics ------------------------------


def tolerated(taint: Taint, tolerations: tuple[Toleration, ...]) -> bool:
    for tol in tolerations:
        if tol.effect not in ("", taint.effect):
            continue
        if tol.key not in ("", taint.key):
            continue
        if tol.operator == "Exists" or (tol.operator in ("", "Equal") and tol.value == taint.value):
            return True
    return False


def filter_problems(pod: Pod, node: Node) -> list[str]:
    out = []
    for taint in node.spec.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not tolerated(
            taint, pod.spec.tolerations
        ):
            out.append(f"untolerated taint {taint.key}={taint.value}:{taint.effect}")
    if node.spec.unschedulable and not tolerated(
        Taint(key=UNSCHEDULABLE_TAINT, effect="NoSchedule"), pod.spec.tolerations
    ):
        out.append("cordoned")
    for key, value in pod.spec.node_selector.items():
        if node.metadata.labels.get(key) != value:
            out.append(f"selector {key}={value}")
    return out


def cpu_milli(pod: Pod) -> int:
    return sum(
        c.resources.requests["cpu"].milli_value()
        for c in pod.spec.containers
        if "cpu" in c.resources.requests
    )


def device_ids(state: ClusterState) -> Counter[tuple[str, str, str]]:
    used: Counter[tuple[str, str, str]] = Counter()
    for claim in state.claims.values():
        if claim.status.allocation is not None:
            for r in claim.status.allocation.devices.results:
                used[(r.driver, r.pool, r.device)] += 1
    return used


def placements(results: list[PodResult]) -> list[tuple[str, str | None, list[str]]]:
    return [(r.key[1], r.node, [c.metadata.name for c in r.claims]) for r in results]


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenarios())
def test_scheduler_properties(
    scenario: tuple[list[NodeSpec], list[GangSpec], list[PodSpec]],
) -> None:
    nodes, gangs, pods = scenario
    objs = build(nodes, gangs, pods)
    state = ClusterState.from_objects(objs)
    results = Scheduler(draplan_profile()).run(state)

    # One result per pending pod.
    assert sorted(r.key[1] for r in results) == sorted(f"p{i}" for i in range(len(pods)))
    placed = [r for r in results if r.node]
    event(f"placed {len(placed)} of {len(results)}")
    event(f"placed pods with claims: {min(3, sum(1 for r in placed if r.claims))}")

    for r in results:
        live = state.pods[r.key]
        if r.node is None:
            assert not live.spec.node_name, r.key
            assert r.reason is not None
            m = re.match(r"0/(\d+) nodes are available", r.reason.message)
            assert m is not None, r.reason
            g = pods[int(r.key[1][1:])].gang
            if g is None or not gangs[g].topology:
                # (Inside a topology domain the count is the domain's; see the gang tests.)
                assert int(m.group(1)) == len(nodes), r.reason
            assert r.claims == []
            continue
        node = state.nodes[r.node]
        assert live.spec.node_name == r.node
        assert r.pod.spec.node_name == r.node
        assert r.reason is None
        assert filter_problems(live, node) == [], (r.key, r.node)
        spec = pods[int(r.key[1][1:])]
        assert len(r.claims) == (1 if spec.gpus else 0) + (1 if spec.shared else 0)
        live_claims = []
        for claim in r.claims:
            # The result holds the claim as bound; a shared claim gains consumers later.
            current = state.claims[(claim.metadata.namespace, claim.metadata.name)]
            assert claim.status.allocation is not None
            assert current.status.allocation == claim.status.allocation
            assert any(c.name == r.key[1] for c in current.status.reserved_for)
            live_claims.append(current)
        problems = validate_allocation(state, node, live_claims)
        assert problems == [], (r.key, r.node, problems)

    # Capacity, by hand over every bound pod.
    cpu: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for pod in state.pods.values():
        if pod.spec.node_name:
            cpu[pod.spec.node_name] += cpu_milli(pod)
            count[pod.spec.node_name] += 1
    for i, n in enumerate(nodes):
        assert cpu[f"n{i}"] <= n.cpu_milli
        assert count[f"n{i}"] <= n.pods

    # Ledgers: exactly the devices allocated claims hold, each once.
    used = device_ids(state)
    assert all(v == 1 for v in used.values()), used
    assert sorted(state.exclusive.keys()) == sorted(used)
    bound = {k[1] for k, p in state.pods.items() if p.spec.node_name}
    for claim in state.claims.values():
        holders = {c.name for c in claim.status.reserved_for}
        assert holders <= bound, (claim.metadata.name, holders, bound)
        if claim.metadata.name != "shared":
            # A generated claim exists only for a placed pod, allocated and reserved for it.
            assert claim.status.allocation is not None
            assert len(holders) == 1
    shared_nodes = {r.node for r in placed if pods[int(r.key[1][1:])].shared}
    assert len(shared_nodes) <= 1

    # Gangs: all or nothing (at least minMember newly bound, or none); required topology
    # keeps the bound members in one rack.
    members: dict[int, list[PodResult]] = defaultdict(list)
    for r in results:
        g = pods[int(r.key[1][1:])].gang
        if g is not None:
            members[g].append(r)
    for g, rs in members.items():
        n_bound = sum(1 for r in rs if r.node)
        assert n_bound == 0 or n_bound >= gangs[g].min_member, (g, n_bound, gangs[g])
        if n_bound and gangs[g].topology == "required":
            racks = {state.nodes[r.node].metadata.labels[RACK] for r in rs if r.node}
            assert len(racks) == 1, racks
        event(f"gang {gangs[g].topology or 'plain'} {'bound' if n_bound else 'unbound'}")

    # Determinism: a fresh run on the same input gives the same placements and claim names.
    again = Scheduler(draplan_profile()).run(ClusterState.from_objects(build(nodes, gangs, pods)))
    assert placements(again) == placements(results)
