"""kube-scheduler's rules, all at once, on generated clusters (tests/rules_clusters.py: H100,
Gaudi3 and TPU hosts with NUMA / PCIe-root attributes, CPU workers, control-plane and system
nodes; running pods of several priorities holding devices, with anti-affinity and budgets;
pending pods with pod (anti-)affinity, topology spread, host ports, priorities and DRA claims:
templates and shared standalone claims, exact counts and firstAvailable alternatives, GB200 GPUs
partitioned through shared counters; and 1.37 Workload gangs).

The scheduler runs as `schedule` runs it (the default profile, preemption on); an independent
checker (tests/placement_rules.py, tests/dra_rules.py: plain dicts, upstream's rules, no draplan
code) replays its answers in order:
- a bound pod passes every filter of the default profile on the state at its bind, the pods
  nominated to its node of equal or higher priority included, and its devices are an
  allocation of its claim (and pass the allocator's own validator);
- a pod left unbound has no node where every filter passes;
- it preempts exactly when DefaultPreemption has a candidate: its victims are of lower
  priority, are the ones SelectVictimsOnNode picks on the nominated node (the pod then fits
  there), and no candidate ranks strictly better by pickOneNodeForPreemption's criteria;
- a gang (a PodGroup's members: kube-scheduler's pod group cycle) binds none of its pods or
  at least minCount of them (PlacementFeasible), each bound one as above; a member that does
  not bind may have fit alone, and preempts as the group (workload-aware preemption), so only
  what it does to the cluster is replayed; with TopologyAwareWorkloadScheduling a PodGroup
  asking for one rack or zone binds its pods in one, and none of its pods preempts alone.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from dra_rules import Devices
from draplan.allocator.validate import validate_allocation
from draplan.api.codec import decode
from draplan.api.features import DEFAULT_VERSION, feature_gates
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import PodResult, Scheduler, build_profile
from placement_rules import Cluster
from rules_clusters import PARTITIONED, _claim, _counters, _devices, _slice, cluster

EXAMPLES = 150


def _results(r: PodResult) -> list[tuple[str, tuple[str, str, str]]]:
    out = []
    for claim in r.claims:
        alloc = claim.status.allocation
        assert alloc is not None, (r.key, claim.metadata.name)
        out += [(x.request, (x.driver, x.pool, x.device)) for x in alloc.devices.results]
    return out


def _key(doc: dict[str, Any]) -> tuple[str, str]:
    return doc["metadata"]["namespace"], doc["metadata"]["name"]


def _names(pods: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [_key(p) for p in pods]


def check_run(seed: int, version: str = DEFAULT_VERSION, gates: str = "") -> None:
    """One generated cluster scheduled at `version` with `--feature-gates` `gates`: its
    PodGroups are gangs where kube-scheduler's gang scheduling runs (1.37; 1.36 with
    GangScheduling), their members plain pods elsewhere."""
    docs = cluster(seed)
    state = ClusterState.from_objects([decode(d) for d in docs], feature_gates(version, gates))
    results = Scheduler(build_profile(), post_filter=True).run(state)
    by_key = {
        (d["metadata"]["namespace"], d["metadata"]["name"]): d for d in docs if d["kind"] == "Pod"
    }
    topology_on = "TopologyAwareWorkloadScheduling=true" in gates
    rules = Cluster(docs, topology_gate=topology_on)
    groups = {_key(d): d for d in docs if d["kind"] == "PodGroup"}
    gangs = {k: d["spec"]["schedulingPolicy"]["gang"] for k, d in groups.items()}
    ganged = version != "1.36" or "GangScheduling=true" in gates
    # The domain label of each group kube-scheduler keeps in one domain (only with the gate).
    topology = {
        key: d["spec"]["schedulingConstraints"]["topology"][0]["key"]
        for key, d in groups.items()
        if d["spec"].get("schedulingConstraints") and topology_on
    }
    # Members of a group placed as one: all or nothing (ganged), or in one domain.
    gang_of: dict[tuple[str, str], tuple[str, str]] = {}
    for key, pod in by_key.items():
        scheduling_group = pod["spec"].get("schedulingGroup")
        if scheduling_group:
            group = (key[0], scheduling_group["podGroupName"])
            if ganged or group in topology:
                gang_of[key] = group
    bound: dict[tuple[str, str], int] = dict.fromkeys(gangs, 0) if ganged else {}
    domains: dict[tuple[str, str], set[str | None]] = {}
    for r in results:
        pod = by_key[r.key]
        where = (seed, r.key)
        if r.node:
            event("bound")
            assert rules.failures(pod, r.node) == [], (*where, r.node)
            allocated = _results(r)
            if allocated:
                event("bound with devices")
                _event_devices(allocated)
                if any(c.status.reserved_for[:-1] for c in r.claims):
                    event("bound to a claim other pods reserve")
                assert rules.devices.check(pod, r.node, allocated) == [], (*where, r.node)
                assert validate_allocation(state, state.nodes[r.node], r.claims) == [], where
                rules.devices.allocate(pod, r.node, allocated)
            rules.place(pod, r.node)
            group = gang_of.get(r.key)
            if group in bound:
                bound[group] += 1
            if group in topology:
                labels = rules.nodes[r.node]["metadata"].get("labels") or {}
                domains.setdefault(group, set()).add(labels.get(topology[group]))
            continue
        if r.key in gang_of:
            event("gang member not bound")
            if r.nominated:
                rules.preempt(pod, r.nominated, [by_key[key_of(v)] for v in r.victims])
            continue
        assert rules.feasible(pod) == [], (*where, r.reason.message if r.reason else "")
        found = rules.candidates(pod)
        if not r.nominated:
            event("unschedulable")
            assert found == {}, (*where, sorted(found), r.reason.message if r.reason else "")
            continue
        event("preempts")
        victims = [by_key[key_of(v)] for v in r.victims]
        mine = rules.priority(pod)
        assert all(rules.priority(v) < mine for v in victims), where
        assert r.nominated in found, (*where, r.nominated, sorted(found))
        expected, broken = found[r.nominated]
        assert _names(victims) == _names(expected), (*where, r.nominated)
        best = min(rules.rank(*f) for f in found.values())
        assert rules.rank(expected, broken) == best, (*where, r.nominated, found)
        if broken:
            event("preempts breaking a budget")
        rules.preempt(pod, r.nominated, victims)
    for gang, count in bound.items():
        event("gang bound" if count else "gang not bound")
        assert count == 0 or count >= gangs[gang]["minCount"], (seed, gang, count)
    for group, values in domains.items():
        event("group bound in one domain")
        assert len(values) == 1 and None not in values, (seed, group, values)


def _event_devices(allocated: list[tuple[str, tuple[str, str, str]]]) -> None:
    if any("/" in request for request, _ in allocated):
        event("bound through a firstAvailable alternative")
    if any(request.endswith(("/alt1", "/alt2")) for request, _ in allocated):
        event("bound through a later firstAvailable alternative")
    if any("-1g-" in d or "-2g-" in d for _, (_, _, d) in allocated):
        event("bound to GPU partitions")


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    gates=st.sampled_from(["", "TopologyAwareWorkloadScheduling=true"]),
)
def test_every_answer_obeys_the_plugins_rules(seed: int, gates: str) -> None:
    check_run(seed, gates=gates)


@settings(max_examples=EXAMPLES // 3, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    gates=st.sampled_from(
        [
            "",
            "GangScheduling=true",
            "TopologyAwareWorkloadScheduling=true",
            "GangScheduling=true,TopologyAwareWorkloadScheduling=true",
        ]
    ),
)
def test_in_1_36_podgroups_are_gangs_only_with_gang_scheduling(seed: int, gates: str) -> None:
    check_run(seed, "1.36", gates)


# --- the checker has teeth: what upstream's allocator would never answer, it refuses ------------


def _gb200(held: list[str]) -> list[dict[str, Any]]:
    """A GB200 host (two GPUs and their partitions), `held` by a running pod's claim."""
    driver, kind = "gpu.nvidia.com", PARTITIONED
    devices = _devices(driver, kind, 2, 1, 1)
    docs = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
        },
        _slice("gb", driver, kind, {"devices": devices}),
        _counters("gb", driver, kind, 2),
    ]
    if held:
        docs.append(_claim("held", "ml", driver, "gb", held, "runner"))
    return docs


def _claiming(docs: list[dict[str, Any]], request: dict[str, Any]) -> dict[str, Any]:
    docs.append(
        {
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [request]}}},
        }
    )
    return {
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"resourceClaims": [{"name": "dev", "resourceClaimTemplateName": "t"}]},
    }


def _dev(name: str) -> tuple[str, str, str]:
    return ("gpu.nvidia.com", "gb", name)


def test_the_checker_refuses_partitions_whose_counters_are_spent() -> None:
    docs = _gb200(["gb200-0"])
    pod = _claiming(docs, {"name": "dev", "exactly": {"deviceClassName": "gpu.nvidia.com"}})
    devices = Devices(docs)
    assert devices.check(pod, "gb", [("dev", _dev("gb200-0-1g-0"))]) != []
    assert devices.check(pod, "gb", [("dev", _dev("gb200-1-1g-0"))]) == []


def test_the_checker_refuses_a_later_alternative_when_an_earlier_one_fits() -> None:
    docs = _gb200(["gb200-0"])
    pick = [{"name": n, "deviceClassName": "gpu.nvidia.com"} for n in ("a", "b")]
    pod = _claiming(docs, {"name": "dev", "firstAvailable": [{**pick[0], "count": 2}, pick[1]]})
    devices = Devices(docs)
    assert devices.check(pod, "gb", [("dev/b", _dev("gb200-1"))]) != []
    # Two free devices whose counters fit together: two halves of GPU 1.
    two = [("dev/a", _dev("gb200-1-2g-0")), ("dev/a", _dev("gb200-1-2g-1"))]
    assert devices.check(pod, "gb", two) == []
    whole_and_half = [("dev/a", _dev("gb200-1")), ("dev/a", _dev("gb200-1-2g-0"))]
    assert devices.check(pod, "gb", whole_and_half) != []


def test_the_checker_holds_a_shared_claim_to_its_node() -> None:
    docs = _gb200([])
    docs.append(
        {
            "kind": "ResourceClaim",
            "metadata": {"name": "shared", "namespace": "ml"},
            "spec": {
                "devices": {
                    "requests": [{"name": "dev", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]
                }
            },
        }
    )
    first, second = (
        {
            "metadata": {"name": n, "namespace": "ml"},
            "spec": {"resourceClaims": [{"name": "dev", "resourceClaimName": "shared"}]},
        }
        for n in ("p1", "p2")
    )
    devices = Devices(docs)
    devices.allocate(first, "gb", [("dev", _dev("gb200-0"))])
    assert not devices.fits(second, "elsewhere") and devices.fits(second, "gb")
    assert devices.check(second, "gb", [("dev", _dev("gb200-1"))]) != []
    devices.release(first)  # p2 has not reserved it yet: the claim is deallocated
    assert devices.allocated == {}
