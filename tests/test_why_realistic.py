"""`why` and `allocate` on the platform engineer's dump (tests/data/realistic, issue 15):
taints are never mistaken for capacity, an impossible PCIe-root pairing is TopologyMismatch
with the largest group any node offers, and every fix is verified (the move lands on the
cheapest node that takes the pod).

The Kueue-gated pod is left out: it is not scheduled (its gate is another test's subject) and
must not take room here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA
from draplan.audit import CATEGORIES, Diagnosis, why
from scale_scenarios import load, write

REALISTIC = DATA / "realistic"
Objs = list[dict[str, Any]]
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def dump(pools: bool = False) -> Objs:
    docs = yaml.safe_load((REALISTIC / "cluster.yaml").read_text())["items"]
    objs = [o for o in docs if o["metadata"]["name"] != "kueue-job-0"]
    if pools:
        objs += list(yaml.safe_load_all((REALISTIC / "pools.yaml").read_text()))
    return objs


def busy(node: str, gpus: int) -> Objs:
    """A running pod (tolerating the taint) holding the first `gpus` L4s of `node`."""
    name = f"busy-{node}"
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "serving", "uid": f"uid-claim-{name}"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpus",
                        "exactly": {"deviceClassName": "gpu.nvidia.com", "count": gpus},
                    }
                ]
            }
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpus",
                            "driver": "gpu.nvidia.com",
                            "pool": node,
                            "device": f"gpu-{i}",
                        }
                        for i in range(gpus)
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": name, "uid": f"uid-{name}"}],
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "serving", "uid": f"uid-{name}"},
        "spec": {
            "nodeName": node,
            "tolerations": [TOLERATION],
            "containers": [
                {
                    "name": "main",
                    "resources": {"requests": {"cpu": "4"}, "claims": [{"name": "gpu"}]},
                }
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
        },
        "status": {"phase": "Running"},
    }
    return [claim, pod]


def full_l4(pools: bool = False) -> Objs:
    return [*dump(pools), *busy("gpu-l4-a", 4), *busy("gpu-l4-b", 4)]


def audit(objs: Objs) -> dict[str, Diagnosis]:
    return {d.pod[1]: d for d in why(load(objs))}


# --- point 1: taints are not capacity ---------------------------------------------------------


def test_untolerated_taint_with_room_asks_for_the_toleration() -> None:
    d = audit(dump())["infer-l4-0"]
    assert d.category == "NodeConstraints"
    assert "untolerated taint(s)" in d.message
    assert d.message.endswith("; add a toleration for nvidia.com/gpu.")
    assert d.fix == {"action": "add a toleration", "tolerations": [TOLERATION], "verified": True}


@pytest.mark.parametrize("pools", [False, True])
def test_untolerated_taint_on_full_nodes_is_not_capacity(pools: bool) -> None:
    """Every L4 is taken: the taint still excludes every node that could ever hold the pod,
    so the answer names it; the toleration alone is not enough, so a node comes with it (of
    pool l4 when NodePools are given)."""
    d = audit(full_l4(pools))["infer-l4-0"]
    assert d.category == "NodeConstraints", d.to_dict()
    assert "untolerated taint(s)" in d.message
    assert d.evidence["taints"] == ["nvidia.com/gpu: present"]
    assert d.fix is not None and d.fix["verified"]
    assert d.fix["tolerations"] == [TOLERATION]
    if pools:
        assert d.fix["pool"] == "l4" and d.fix["add"] == 1
        assert "pool l4 adds a node for it" in d.message
    else:
        assert d.fix["like"] in ("gpu-l4-a", "gpu-l4-b") and d.fix["add"] == 1


def test_untolerated_taint_when_the_pod_needs_more_than_is_free() -> None:
    """Three of the four L4s of each node are taken and the pod asks for two."""
    objs = [*dump(), *busy("gpu-l4-a", 3), *busy("gpu-l4-b", 3)]
    for obj in objs:
        if obj["kind"] == "ResourceClaimTemplate" and obj["metadata"]["name"] == "l4-1gpu":
            obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    d = audit(objs)["infer-l4-0"]
    assert d.category == "NodeConstraints", d.to_dict()
    assert d.fix is not None and d.fix["verified"] and d.fix["add"] == 1


# --- point 2: an impossible PCIe-root pairing -------------------------------------------------


@pytest.mark.parametrize("pools", [False, True])
def test_impossible_pcie_root_is_topology_mismatch(pools: bool) -> None:
    d = audit(dump(pools))["train-pcie-0"]
    assert d.category == "TopologyMismatch", d.to_dict()
    assert d.evidence["constraint"]["largestGroup"] == 2
    assert d.evidence["constraint"]["needed"] == 4
    where = "on any node or pool" if pools else "on any node,"
    assert (
        f"At most 2 of the 4 devices it needs share one resource.kubernetes.io/pcieRoot {where}"
        in d.message
    )
    # Never a node like the existing ones as it stands: only with the constraint dropped.
    assert d.fix is not None and d.fix["verified"]
    assert d.fix["dropConstraints"] == ["resource.kubernetes.io/pcieRoot"]


def test_the_dropped_constraint_fix_finds_its_claim_past_an_entry_without_one() -> None:
    # A first claim entry the controller decided needs no claim (its status names none): the
    # fix must still drop the constraint of the pcieRoot claim, the pod's second entry.
    objs = dump()
    pod = next(o for o in objs if o["kind"] == "Pod" and o["metadata"]["name"] == "train-pcie-0")
    pod["spec"]["resourceClaims"].insert(
        0, {"name": "optional", "resourceClaimTemplateName": "h100-4-same-pcie"}
    )
    pod["status"]["resourceClaimStatuses"] = [{"name": "optional"}]
    d = audit(objs)["train-pcie-0"]
    assert d.category == "TopologyMismatch", d.to_dict()
    assert d.fix is not None and d.fix["verified"]
    assert d.fix["dropConstraints"] == ["resource.kubernetes.io/pcieRoot"]


def test_allocate_gives_the_largest_group(run_cli: Any, tmp_path: Path) -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "pcie-4", "namespace": "research"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpus",
                        "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 4},
                    }
                ],
                "constraints": [
                    {"requests": ["gpus"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
                ],
            }
        },
    }
    path = write(tmp_path, [*dump(), claim])
    out = run_cli(
        "allocate", "-f", path, "--node", "gpu-h100-b", "--claim", "research/pcie-4", "-o", "json"
    )
    assert out.code == 0, out.err
    reason = out.json()["reason"]
    assert reason["code"] == "ConstraintUnsatisfiable"
    assert (
        "at most 2 of the 4 devices it needs share one resource.kubernetes.io/pcieRoot"
        in (reason["message"])
    )
    assert reason["constraints"] == [
        {
            "claim": "research/pcie-4",
            "matchAttribute": "resource.kubernetes.io/pcieRoot",
            "needed": 4,
            "largestGroup": 2,
            "largestFreeGroup": 2,
            "value": "pci0000:00",
        }
    ]
    wide = run_cli(
        "allocate", "-f", path, "--node", "gpu-h100-b", "--claim", "research/pcie-4", "-o", "wide"
    )
    assert "at most 2 of the 4 devices" in wide.out


# --- point 6: verified fixes, cheapest move -----------------------------------------------------


def test_numa_pod_is_fixed_by_moving_the_small_pod_to_the_cheapest_node() -> None:
    """finetune-numa-0 needs 4 H100s on one NUMA node; gpu-h100-b has 3 free on NUMA 1 besides
    serving/embed-0's GPU. embed-0 tolerates the taint and fits an L4, the smallest (so
    cheapest, nothing pricing them) node: that is where it goes, not the other H100 (either
    L4: the two are alike and empty, kube-scheduler draws one)."""
    d = audit(dump())["finetune-numa-0"]
    assert d.category == "Fragmentation", d.to_dict()
    assert d.fix is not None
    assert d.fix["move"]["serving/embed-0"] in ("gpu-l4-a", "gpu-l4-b")
    assert d.fix == {
        "action": "move pods to defragment",
        "node": "gpu-h100-b",
        "move": {"serving/embed-0": d.fix["move"]["serving/embed-0"]},
        "verified": True,
    }


def test_moves_follow_the_price_label() -> None:
    """With prices on the nodes, the cheapest that takes the pod wins."""
    objs = dump()
    prices = {"gpu-l4-a": "9", "gpu-l4-b": "8", "gpu-a100-a": "1", "gpu-a100-b": "1"}
    for obj in objs:
        if obj["kind"] == "Node":
            price = prices.get(obj["metadata"]["name"], "98")
            obj["metadata"]["labels"]["draplan.io/price-per-hour"] = price
    d = audit(objs)["finetune-numa-0"]
    assert d.fix is not None
    target = d.fix["move"]["serving/embed-0"]
    assert target in ("gpu-a100-a", "gpu-a100-b"), d.fix


def test_two_pods_are_not_promised_the_same_room() -> None:
    """Two NUMA pods of one shape: one move frees gpu-h100-b for the first; the second gets
    another verified fix, not the same one."""
    objs = dump()
    twin = next(o for o in objs if o["metadata"]["name"] == "finetune-numa-0")
    second = yaml.safe_load(yaml.safe_dump(twin))
    second["metadata"]["name"] = "finetune-numa-1"
    second["metadata"]["uid"] = "uid-research-finetune-numa-1"
    result = audit([*objs, second])
    first, other = result["finetune-numa-0"].fix, result["finetune-numa-1"].fix
    assert first is not None
    assert first.get("move", {}).get("serving/embed-0") in ("gpu-l4-a", "gpu-l4-b")
    assert other is None or (other["verified"] and other != first), other


def test_every_fix_on_the_dump_is_verified() -> None:
    for objs in (dump(), dump(True), full_l4(), full_l4(True)):
        for d in why(load(objs)):
            assert d.fix is None or "verified" in d.fix, d.to_dict()
            if d.category in ("NodeConstraints", "Fragmentation", "TopologyMismatch"):
                assert d.fix is None or d.fix["verified"], d.to_dict()


def test_the_readme_explains_every_category() -> None:
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text.split("## What each `why` category means", 1)[1].split("\n## ", 1)[0]
    rows = {
        line.split("|")[1].strip(" `") for line in section.splitlines() if line.startswith("| `")
    }
    assert rows == set(CATEGORIES)


def unmanaged(objs: Objs) -> Objs:
    """The dump without its nodes' Karpenter labels: a cluster no autoscaler grows, so `why`
    derives no pool from it."""
    for o in objs:
        if o["kind"] == "Node":
            o["metadata"]["labels"].pop("karpenter.sh/nodepool", None)
    return objs


def test_wide_output_names_the_moves(run_cli: Any, tmp_path: Path) -> None:
    """The FIX column says which pod goes where, not only that pods move."""
    out = run_cli("why", "-f", write(tmp_path, unmanaged(dump())), "-o", "wide")
    assert out.code == 0, out.err
    row = next(line for line in out.out.splitlines() if "finetune-numa-0" in line)
    assert "move=serving/embed-0->gpu-l4-" in row, row


def test_without_node_pools_why_and_scale_derive_the_same_pools(
    run_cli: Any, tmp_path: Path
) -> None:
    """A dump with no NodePool whose nodes carry Karpenter's labels: `why` waits for the nodes
    `scale` plans, from the same derived pools, and gives the one-pod move `scale` makes
    instead of a node as the fix, with the node's price as the saving."""
    path = write(tmp_path, dump())
    plan = json.loads(run_cli("scale", "-f", path, "-o", "json").out)
    added = {u["pool"]: u["add"] for u in plan["scaleUp"]}
    out = run_cli("why", "-f", path, "-o", "json")
    assert out.code == 0, out.err
    verdicts = {p["pod"]: p for p in json.loads(out.out)["pods"]}
    waiting = {k: p for k, p in verdicts.items() if p["category"] == "WaitingForScaleUp"}
    assert "research/train-8-0" in waiting, sorted(waiting)
    for pod, verdict in waiting.items():
        assert verdict["fix"]["pool"] in added, (pod, verdict["fix"], added)
    [made] = [m for m in plan["moves"] if m["made"]]
    [(pod, node)] = made["place"].items()
    fix = verdicts[pod]["fix"]
    assert verdicts[pod]["category"] == "Fragmentation" and fix["verified"]
    assert (fix["node"], fix["move"]) == (node, made["move"])
    assert fix["savingPerHour"] == made["savingPerHour"]


def test_no_pool_names_what_a_toleration_would_not_fix() -> None:
    """A pod too big for any node (1000 cpu) and without the GPU toleration: a tainted pool's
    node is too small as well, so the taint is not why no pool can hold it."""
    objs = dump(pools=True)
    pod = next(o for o in objs if o["metadata"]["name"] == "infer-l4-0")
    huge = yaml.safe_load(yaml.safe_dump(pod))
    huge["metadata"].update(name="cpu-huge", uid="uid-cpu-huge")
    huge["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1000"}}
    del huge["spec"]["resourceClaims"]
    d = audit([*objs, huge])["cpu-huge"]
    assert d.category == "NoPoolCanFit", d.to_dict()
    assert "taint" not in d.message, d.message
    assert set(d.evidence["pools"]) == {"a100", "h100", "l4"}
    assert all("Insufficient cpu" in why for why in d.evidence["pools"].values()), d.evidence


def test_a_pod_that_is_not_running_yet_is_never_moved() -> None:
    """early-0 (one H100, ahead in the queue) is placed on gpu-h100-b's NUMA node 1 by the
    scheduler's pass, beside serving/embed-0: it is pending, not running, so the NUMA pod's
    fix must not ask to move it."""
    objs = dump()
    template = next(o for o in objs if o["metadata"]["name"] == "h100-2")
    one = yaml.safe_load(yaml.safe_dump(template))
    one["metadata"].update(name="h100-1", namespace="research")
    one["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 1
    numa = next(o for o in objs if o["metadata"]["name"] == "finetune-numa-0")
    early = yaml.safe_load(yaml.safe_dump(numa))
    early["metadata"].update(
        name="early-0", uid="uid-early-0", creationTimestamp="2026-11-29T10:00:00Z"
    )
    early["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = "h100-1"
    result = audit([*objs, one, early])
    assert result["early-0"].evidence["node"] == "gpu-h100-b"
    fix = result["finetune-numa-0"].fix
    assert fix is not None and fix["verified"], result["finetune-numa-0"].to_dict()
    assert "research/early-0" not in fix.get("move", {}), fix


def test_cordoned_nodes_with_room_are_not_blamed_on_the_pod() -> None:
    """The L4 nodes are cordoned and the pod tolerates their taint: the cordon keeps it off,
    not its selectors or tolerations, and uncordoning is the fix."""
    objs = dump()
    pod = next(o for o in objs if o["metadata"]["name"] == "infer-l4-0")
    pod["spec"]["tolerations"] = [TOLERATION]
    for obj in objs:
        if obj["kind"] == "Node" and obj["metadata"]["name"].startswith("gpu-l4"):
            obj["spec"]["unschedulable"] = True
    d = audit(objs)["infer-l4-0"]
    assert d.category == "NodeConstraints", d.to_dict()
    assert "have room but they are cordoned (e.g. gpu-l4-a" in d.message, d.message
    assert d.fix is not None and d.fix["uncordon"] == ["gpu-l4-a"] and d.fix["verified"]


def test_no_headers_keeps_the_category_in_a_column(run_cli: Any) -> None:
    path = str(REALISTIC / "cluster.yaml")
    plain = run_cli("why", "-f", path, "--no-headers")
    assert plain.code == 0, plain.err
    categories = {
        d["pod"]: d["category"] for d in run_cli("why", "-f", path, "-o", "json").json()["pods"]
    }
    rows = [line.split() for line in plain.out.splitlines()]
    assert {f"{r[1]}/{r[2]}": r[0] for r in rows} == categories
