"""PodGroup-level ResourceClaims (KEP-5729, DRAWorkloadResourceClaims, beta and off in 1.37):
a claim the PodGroup names is allocated once for the whole gang and reserved for the group;
every member lands where that allocation is reachable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from draplan.api.features import FeatureGates, defaults, feature_gates
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.api.scheduling import (
    GangSchedulingPolicy,
    PodGroupPolicy,
    PodGroupResourceClaim,
    PodGroupSpecV1Beta1,
    PodGroupV1Beta1,
)
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler, build_profile
from scheduler_builders import MakeClaim, MakeNode, MakePod, MakeSlice, device_class

ON = feature_gates("1.37", "DRAWorkloadResourceClaims=true")


def group(claim: PodGroupResourceClaim, min_count: int = 2) -> PodGroupV1Beta1:
    return PodGroupV1Beta1(
        metadata=ObjectMeta(name="pg", namespace="default", uid="uid-pg"),
        spec=PodGroupSpecV1Beta1(
            scheduling_policy=PodGroupPolicy(gang=GangSchedulingPolicy(min_count=min_count)),
            resource_claims=(claim,),
        ),
    )


def cluster(gates: FeatureGates, members: int = 2, min_count: int = 2) -> ClusterState:
    objects: list[KubeStruct] = [device_class()]
    for name in ("n1", "n2"):
        objects.append(MakeNode().name(name).capacity(cpu="8", memory="8Gi", pods="10").obj())
        objects.append(MakeSlice().node(name).gpus(2).obj())
    objects.append(MakeClaim().name("one-gpu").gpus(1).template())
    shared = PodGroupResourceClaim(name="gpu", resource_claim_template_name="one-gpu")
    objects.append(group(shared, min_count))
    for i in range(members):
        pod = MakePod().name(f"w{i}").req(cpu="3").scheduling_group("pg")
        objects.append(pod.template_claim("gpu", "one-gpu").obj())
    return ClusterState.from_objects(objects, gates)


def test_the_group_claim_is_allocated_once_and_keeps_the_gang_together() -> None:
    state = cluster(ON)
    results = Scheduler(build_profile()).run(state)
    nodes = {r.key[1]: r.node for r in results}
    assert nodes["w0"] is not None and nodes["w0"] == nodes["w1"]
    claims = list(state.claims.values())
    assert len(claims) == 1
    claim = claims[0]
    assert claim.metadata.name.startswith("pg-gpu-")
    assert [o.kind for o in claim.metadata.owner_references] == ["PodGroup"]
    assert [(r.resource, r.name) for r in claim.status.reserved_for] == [("podgroups", "pg")]
    alloc = claim.status.allocation
    assert alloc is not None and len(alloc.devices.results) == 1


def test_members_that_cannot_reach_the_allocation_do_not_fit() -> None:
    # Each node has cpu for two members of 3. With minCount 2 the third member cannot join
    # the others' node and no other node reaches the group's GPU; with minCount 3 the gang
    # does not fit at all.
    state = cluster(ON, members=3)
    results = {r.key[1]: r for r in Scheduler(build_profile()).run(state)}
    assert results["w0"].node == results["w1"].node is not None
    third = results["w2"]
    assert third.node is None and third.reason is not None
    assert "resourceclaim not available on the node" in third.reason.message
    whole = Scheduler(build_profile()).run(cluster(ON, members=3, min_count=3))
    assert all(r.node is None for r in whole)


def test_with_the_gate_off_every_pod_gets_its_own_claim() -> None:
    state = cluster(defaults("1.37"))
    results = Scheduler(build_profile()).run(state)
    assert all(r.node is not None for r in results)
    assert len(state.claims) == 2
    assert all(c.status.reserved_for[0].resource == "pods" for c in state.claims.values())


def test_why_names_the_group_claim_a_gang_cannot_get() -> None:
    # The group's claim wants three GPUs; no node has more than two. The verdict names the
    # PodGroup's claim (not the generated ResourceClaim's random name) and lists it.
    from draplan.audit.why import why

    objects: list[KubeStruct] = [device_class()]
    for name in ("n1", "n2"):
        objects.append(MakeNode().name(name).capacity(cpu="8", memory="8Gi", pods="10").obj())
        objects.append(MakeSlice().node(name).gpus(2).obj())
    objects.append(MakeClaim().name("three-gpus").gpus(3).template())
    objects.append(
        group(PodGroupResourceClaim(name="gpu", resource_claim_template_name="three-gpus"))
    )
    for i in range(2):
        pod = MakePod().name(f"w{i}").req(cpu="1").scheduling_group("pg")
        objects.append(pod.template_claim("gpu", "three-gpus").obj())
    verdicts = why(ClusterState.from_objects(objects, ON))
    assert [d.category for d in verdicts] == ["CapacityExhausted"] * 2
    for d in verdicts:
        assert "PodGroup 'pg' claim 'gpu'" in d.message
        (entry,) = d.evidence["groupClaims"]["claims"]
        assert d.evidence["groupClaims"]["podGroup"] == "default/pg"
        assert entry["name"] == "gpu" and entry["resourceClaim"].startswith("default/pg-gpu-")
        assert entry["allocated"] is False
    # With the gate off each pod has its own claim: nothing names a group claim.
    off = why(ClusterState.from_objects(objects, defaults("1.37")))
    assert all("groupClaims" not in d.evidence for d in off)


def test_a_generated_group_claim_is_annotated_with_the_groups_entry() -> None:
    state = cluster(ON)
    Scheduler(build_profile()).run(state)
    (claim,) = state.claims.values()
    assert claim.metadata.annotations["resource.kubernetes.io/podgroup-claim-name"] == "gpu"


K137 = Path(__file__).parent / "data" / "k137"
GATE = ("--feature-gates", "DRAWorkloadResourceClaims=true")


def test_the_autoscaler_adds_one_node_for_the_group_claim(run_cli: Any) -> None:
    files = ("-f", str(K137 / "cluster.yaml"), "-f", str(K137 / "group-claims.yaml"))
    result = run_cli("scale", *files, *GATE, "-o", "json")
    assert result.code == 0, result.err
    (up,) = json.loads(result.out)["scaleUp"]
    assert (up["pool"], up["add"], up["pods"]) == ("h100", 1, ["default/pair-0", "default/pair-1"])
    why = json.loads(run_cli("why", *files, *GATE, "-o", "json").out)
    pair = [p for p in why["pods"] if p["pod"].startswith("default/pair-")]
    assert [p["category"] for p in pair] == ["WaitingForScaleUp"] * 2
    assert all(p["evidence"]["groupClaims"]["podGroup"] == "default/pair" for p in pair)


def test_no_pool_can_fit_a_group_claim_no_node_holds(run_cli: Any, tmp_path: Path) -> None:
    text = (K137 / "group-claims.yaml").read_text().replace("count: 2", "count: 3")
    (tmp_path / "three.yaml").write_text(text)
    files = ("-f", str(K137 / "cluster.yaml"), "-f", str(tmp_path / "three.yaml"))
    why = json.loads(run_cli("why", *files, *GATE, "-o", "json").out)
    pair = [p for p in why["pods"] if p["pod"].startswith("default/pair-")]
    assert [p["category"] for p in pair] == ["NoPoolCanFit"] * 2
    for p in pair:
        assert "PodGroup 'pair' claim 'gpus' request gpus needs 3 device(s)" in p["message"]
        assert p["evidence"]["groupClaims"]["claims"][0]["name"] == "gpus"
