"""Issue 26 point 6: a device under a NoSchedule / NoExecute taint (a DeviceTaintRule's or its
slice's) is not free. On a Gaudi3 node (8 cards, two NUMA nodes) with one card tainted and two
held by a running pod: `metrics` counts 5 free and 1 tainted (its own field and column), the
stranded measure reads 5 usable cards, `allocate`'s constraint evidence counts only cards the
request tolerates, and poolStatus says unavailableDevices 1. A None taint only records; a
request that tolerates the taint may use the card; with the DRADeviceTaintRules gate off (1.36's
default) the rule is ignored, and the command says so once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import audit_scenarios as sc
import gaudi_scenarios as g
from draplan.api.codec import decode
from draplan.audit.documents import metrics_document
from draplan.audit.stranded import tainted
from draplan.cluster.state import ClusterState
from draplan.sources import load_objects

Objs = list[dict[str, Any]]
RULE_TAINT = {"key": g.UNHEALTHY, "value": "ecc", "effect": "NoSchedule"}


def cluster(rule: bool = True, slice_taint: dict[str, str] | None = None) -> Objs:
    """Card 1 tainted (by a rule, or in the slice), cards 6 and 7 held; a pending pod asks 6."""
    return [
        g.device_class(),
        *g.system_nodes(),
        *g.gaudi_node("gaudi-0", {1: slice_taint} if slice_taint else None),
        *([g.taint_rule("gaudi-0", 1)] if rule else []),
        *g.running("serve-0", "gaudi-0", [6, 7]),
        *g.pending("big", 6),
    ]


def measure(objs: Objs) -> dict[str, Any]:
    return metrics_document(ClusterState.from_objects(decode(o) for o in objs))


@pytest.mark.parametrize(
    "objs",
    [cluster(), cluster(rule=False, slice_taint=RULE_TAINT), cluster(slice_taint=RULE_TAINT)],
    ids=["rule", "slice", "both"],
)
def test_a_tainted_card_is_not_free(objs: Objs) -> None:
    doc = measure(objs)
    node = doc["nodes"]["gaudi-0"]
    assert (node["gpus"], node["gpusAllocated"]) == (8, 2)
    assert (node["freeGpus"], node["taintedGpus"]) == (5, 1)
    # The pending pod's 6 cards do not fit the 5 usable ones (they would the 6 free ones):
    # the two typical shapes (2 cards, 6 cards) weigh half each, the 6-card one strands all 5.
    assert node["strandedGpus"] == 2.5
    assert doc["cluster"]["taintedGpus"] == 1 and doc["cluster"]["freeGpus"] == 5
    (pool,) = [p for p in doc["poolStatus"] if p["poolName"] == "gaudi-0"]
    # kube-controller-manager's count agrees: 2 allocated, 5 available, 1 unavailable.
    assert (pool["allocatedDevices"], pool["availableDevices"], pool["unavailableDevices"]) == (
        2,
        5,
        1,
    )


def test_a_none_taint_only_records() -> None:
    doc = measure(cluster(rule=False, slice_taint={**RULE_TAINT, "effect": "None"}))
    node = doc["nodes"]["gaudi-0"]
    assert (node["freeGpus"], node["taintedGpus"], node["strandedGpus"]) == (6, 0, 0)


def mig_rule(device: str | None) -> dict[str, Any]:
    selector = {"driver": sc.DRIVER, "pool": "mig-0", **({"device": device} if device else {})}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": f"mig-{device or 'all'}"},
        "spec": {"deviceSelector": selector, "taint": RULE_TAINT},
    }


def test_a_partitioned_gpu_is_tainted_only_when_all_its_devices_are() -> None:
    """One GPU published whole and as 7 partitions on shared counters, 2 partitions held. A
    rule on one partition leaves the GPU free (the others still serve); a rule on the pool
    (no device named) taints all, and the GPU's unallocated part is tainted, not free."""
    one = measure([*sc.mig_node(2), mig_rule("gpu-0-mig-1g-3")])["nodes"]["mig-0"]
    assert (one["freeGpus"], one["taintedGpus"]) == (round(5 / 7, 3), 0)
    every = measure([*sc.mig_node(2), mig_rule(None)])["nodes"]["mig-0"]
    assert (every["freeGpus"], every["taintedGpus"]) == (0, round(5 / 7, 3))
    state = ClusterState.from_objects(
        decode(o) for o in [*sc.mig_node(2), mig_rule("gpu-0-mig-1g-3")]
    )
    views = [v for name in sorted(state.slices) for v in state.slice_devices(name)]
    assert [v.id[2] for v in views if tainted(v)] == ["gpu-0-mig-1g-3"]


def test_constraint_evidence_counts_only_tolerated_free_cards(tmp_path: Path, run_cli: Any) -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "numa4", "namespace": "ml"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "cards", "exactly": {"deviceClassName": g.CLASS, "count": 4}}
                ],
                "constraints": [{"matchAttribute": f"{g.DRIVER}/numa"}],
            }
        },
    }
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([*cluster(), claim]))
    out = run_cli(
        "allocate", "-f", str(path), "--node", "gaudi-0", "--claim", "ml/numa4", "-o", "json"
    )
    reason = json.loads(out.out)["reason"]
    assert reason["code"] == "ConstraintUnsatisfiable"
    (group,) = reason["constraints"]
    # NUMA 0: cards 0, 2, 3 (card 1 tainted); NUMA 1: cards 4, 5 (6, 7 held).
    assert (group["largestGroup"], group["largestFreeGroup"]) == (4, 3)
    (row,) = reason["requests"]
    assert (row["free"], row["tolerated"]) == (6, 5)
    # Tolerating the taint, the 4 free cards of NUMA 0 are the claim's.
    tolerant = json.loads(json.dumps(claim))
    tolerant["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
        {"key": g.UNHEALTHY, "operator": "Exists", "effect": "NoSchedule"}
    ]
    path.write_text(yaml.safe_dump_all([*cluster(), tolerant]))
    out = run_cli(
        "allocate", "-f", str(path), "--node", "gaudi-0", "--claim", "ml/numa4", "-o", "json"
    )
    assert json.loads(out.out)["satisfiable"] is True


def test_with_the_rules_gate_off_the_rule_is_ignored_and_said_so_once(
    tmp_path: Path, run_cli: Any
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([*cluster(), g.taint_rule("gaudi-0", 2)]))
    for command in ("metrics", "why", "scale"):
        out = run_cli(command, "-f", str(path), "--kubernetes-version", "1.36", "-o", "json")
        assert out.code == 0, out.err
        notices = [line for line in out.err.splitlines() if "DeviceTaintRule" in line]
        assert notices == [
            'notice: DeviceTaintRule "gaudi-0-card-1-unhealthy" and 1 more ignored: the '
            "DRADeviceTaintRules feature gate is off (Kubernetes 1.36's default)"
        ], command
    doc = json.loads(
        run_cli("metrics", "-f", str(path), "--kubernetes-version", "1.36", "-o", "json").out
    )
    assert (doc["nodes"]["gaudi-0"]["freeGpus"], doc["nodes"]["gaudi-0"]["taintedGpus"]) == (6, 0)
    quiet = run_cli("metrics", "-f", str(path), "-o", "json")
    assert "DeviceTaintRule" not in quiet.err
    state = ClusterState.from_objects(load_objects([str(path)]))
    assert len(state.taint_rules) == 2
