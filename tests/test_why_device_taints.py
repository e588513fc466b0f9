"""Issue 26 point 7: when the only devices that would fit a pod are tainted, `why` names the
taint (key, value, effect, the DeviceTaintRule or ResourceSlice it comes from), its fix is a
toleration on the claims' requests (checked, and checked again here by applying it to the
input), else waiting for the rule to go; nearest misses are nodes with matching devices, never
the CPU-only system nodes.
"""

from __future__ import annotations

import copy
from typing import Any

import audit_scenarios as sc
import gaudi_scenarios as g
from draplan.api.codec import decode
from draplan.api.features import feature_gates
from draplan.audit import Diagnosis, why
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler

Objs = list[dict[str, Any]]
MAINTENANCE = {"key": "gaudi.intel.com/maintenance", "value": "fw", "effect": "NoExecute"}


def load(objs: Objs) -> ClusterState:
    return ClusterState.from_objects(decode(o) for o in objs)


def verdict(objs: Objs, pod: str) -> Diagnosis:
    return {d.pod[1]: d for d in why(load(objs))}[pod]


def numa_cluster() -> Objs:
    """4 cards on one NUMA node: NUMA 0 has 4 free but card 1 is tainted by a rule, NUMA 1
    has 2 free (cards 6, 7 held)."""
    return [
        g.device_class(),
        *g.system_nodes(),
        *g.gaudi_node("gaudi-0"),
        g.taint_rule("gaudi-0", 1),
        *g.running("serve-0", "gaudi-0", [6, 7]),
        *g.pending("numa4", 4, numa=True),
    ]


def one_card_cluster() -> Objs:
    """One card asked; the only free cards are gaudi-0's card 1 (a rule) and gaudi-1's card 3
    (a NoExecute taint in its slice)."""
    return [
        g.device_class(),
        *g.system_nodes(),
        *g.gaudi_node("gaudi-0"),
        *g.gaudi_node("gaudi-1", {3: MAINTENANCE}),
        g.taint_rule("gaudi-0", 1),
        *g.running("serve-0", "gaudi-0", [0, 2, 3, 4, 5, 6, 7]),
        *g.running("serve-1", "gaudi-1", [0, 1, 2, 4, 5, 6, 7]),
        *g.pending("one", 1),
    ]


def tolerating(objs: Objs, pod: str, tolerations: list[dict[str, Any]]) -> Objs:
    """The input with the pod's template requests tolerating `tolerations` (the fix, applied
    by this file's own code)."""
    out = copy.deepcopy(objs)
    for obj in out:
        if obj["kind"] == "ResourceClaimTemplate" and obj["metadata"]["name"] == f"{pod}-cards":
            for req in obj["spec"]["spec"]["devices"]["requests"]:
                req["exactly"]["tolerations"] = tolerations
    return out


def placed(objs: Objs, pod: str) -> str | None:
    results = {r.key[1]: r for r in Scheduler().run(load(objs))}
    return results[pod].node


def test_a_numa_group_only_a_tainted_card_completes() -> None:
    objs = numa_cluster()
    assert placed(objs, "numa4") is None
    d = verdict(objs, "numa4")
    assert d.category == "DeviceTaints", d.to_dict()
    assert d.evidence["deviceTaints"] == [
        {
            "key": g.UNHEALTHY,
            "value": "ecc",
            "effect": "NoSchedule",
            "device": "gaudi.intel.com/gaudi-0/card-1",
            "deviceTaintRule": "gaudi-0-card-1-unhealthy",
        }
    ]
    assert "gaudi-0-card-1-unhealthy" in d.message and g.UNHEALTHY in d.message
    assert list(d.evidence["nearestMiss"]) == ["gaudi-0"]  # not the CPU-only nodes
    assert d.fix is not None and d.fix["verified"]
    tolerations = d.fix["deviceTolerations"]
    assert tolerations == [{"key": g.UNHEALTHY, "operator": "Exists", "effect": "NoSchedule"}]
    assert placed(tolerating(objs, "numa4", tolerations), "numa4") == "gaudi-0"


def test_only_the_taints_of_the_devices_it_gets_are_tolerated() -> None:
    objs = one_card_cluster()
    d = verdict(objs, "one")
    assert d.category == "DeviceTaints", d.to_dict()
    (taint,) = d.evidence["deviceTaints"]
    assert d.fix is not None
    (toleration,) = d.fix["deviceTolerations"]
    assert (toleration["key"], toleration["effect"]) == (taint["key"], taint["effect"])
    assert placed(tolerating(objs, "one", d.fix["deviceTolerations"]), "one") is not None


def test_a_slice_taint_names_its_slice() -> None:
    objs = [o for o in one_card_cluster() if o["kind"] != "DeviceTaintRule"]
    objs = [
        o
        for o in objs
        if not (o["kind"] == "Pod" and o["metadata"]["name"] == "serve-0")
        and not (o["kind"] == "ResourceClaim" and o["metadata"]["name"] == "serve-0-cards")
    ]
    objs += g.running("serve-0", "gaudi-0", list(range(8)))
    d = verdict(objs, "one")
    assert d.category == "DeviceTaints", d.to_dict()
    assert d.evidence["deviceTaints"] == [
        {
            **MAINTENANCE,
            "device": "gaudi.intel.com/gaudi-1/card-3",
            "resourceSlice": "gaudi-1-gaudi",
        }
    ]
    assert "the taint in ResourceSlice gaudi-1-gaudi" in d.message


def test_a_taint_that_only_records_is_not_the_reason() -> None:
    objs = one_card_cluster()
    for obj in objs:
        if obj["kind"] == "DeviceTaintRule":
            obj["spec"]["taint"]["effect"] = "None"
    # gaudi-0's card 1 is free to take: the pod fits now.
    assert verdict(objs, "one").category == "Schedulable"


def test_with_the_gate_off_device_taints_are_no_reason() -> None:
    features = feature_gates("1.37", "DRADeviceTaints=false")
    state = ClusterState.from_objects((decode(o) for o in numa_cluster()), features)
    # Without the DRADeviceTaints gate the allocator ignores the taint: it fits now.
    assert {d.pod[1]: d for d in why(state)}["numa4"].category == "Schedulable"


def gang_cluster(tainted_cards: int) -> Objs:
    """A gang of two 1-GPU pods; node-0's GPUs are all held but 2, of which `tainted_cards`
    are under rules."""
    objs = [
        sc.device_class(),
        *sc.gpu_node("node-0", held_by=sc.holding("node-0", 2)),
        sc.gpu_template("one", 1),
        sc.pod_group("duo", 2),
        *[sc.gang_member(f"duo-{i}", "duo", "one") for i in range(2)],
    ]
    for card in range(6, 6 + tainted_cards):
        objs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceTaintRule",
                "metadata": {"name": f"gpu-{card}-drain"},
                "spec": {
                    "deviceSelector": {
                        "driver": sc.DRIVER,
                        "pool": "node-0",
                        "device": f"gpu-{card}",
                    },
                    "taint": {"key": "example.com/drain", "effect": "NoSchedule"},
                },
            }
        )
    return objs


def test_a_gang_is_told_of_device_taints_only_when_tolerating_them_fits_it_whole() -> None:
    both = verdict(gang_cluster(2), "duo-0")
    assert both.category == "DeviceTaints", both.to_dict()
    assert {t["deviceTaintRule"] for t in both.evidence["deviceTaints"]} == {
        "gpu-6-drain",
        "gpu-7-drain",
    }
    assert both.fix is not None and both.fix["verified"]
    # One free GPU tainted, one not: tolerating gives the gang 2, so the taint is the reason.
    one = verdict(gang_cluster(1), "duo-0")
    assert one.category == "DeviceTaints", one.to_dict()
    # A gang of three: even tolerating both taints leaves one member without a GPU.
    objs = gang_cluster(2)
    objs[3]["spec"]["minMember"] = 3
    objs.append(sc.gang_member("duo-2", "duo", "one"))
    assert verdict(objs, "duo-0").category != "DeviceTaints"
