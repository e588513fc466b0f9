"""`draplan scale` on the platform engineer's dump (issue 15, points 5 and 7): a pass never
adds and removes the same pool or shape, scale-down spares what the pass's pending pods need,
a one-pod move that spares a new node is made instead of buying it (issue 26.8; larger moves
are shown beside the scale-up), and the legacy view's unused nodes carry the real mismatch.

Variants are the dump minus some objects (`_objects(drop=...)`) or plus
`realistic/l4-serving.yaml`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from draplan.api.core_v1 import Node
from draplan.api.karpenter import NODEPOOL_LABEL
from draplan.api.meta import KubeStruct
from draplan.autoscaler import Autoscaler, Plan
from draplan.autoscaler.moves import Mover
from draplan.autoscaler.shapes import node_shape
from draplan.cluster.nodepools import pool_name, price_per_hour
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler
from draplan.scheduler.claims import release_claims
from draplan.scheduler.gangs import find_gangs
from draplan.sources.files import load_files

DUMP = Path(__file__).parent / "data" / "realistic"
FILES = [str(DUMP / "cluster.yaml"), str(DUMP / "pools.yaml")]
L4_SERVING = str(DUMP / "l4-serving.yaml")
# gpu-h100-b runs embed-0 only (1 of 8 GPUs); train-8-0 is the one pod wanting an H100 node.
H100_B_LIGHT = ("finetune-b", "finetune-b-gpu", "finetune-numa-0", "kueue-job-0")
FINETUNE = ("research", "finetune-numa-0")
EMBED = ("serving", "embed-0")


L4_NODES = ("gpu-l4-a", "gpu-l4-b")  # alike and empty: kube-scheduler draws either


def _as_ca_group(obj: KubeStruct) -> KubeStruct:
    """The dump's nodes carry Karpenter's label, so Cluster Autoscaler would manage none of
    them; here they are EKS node groups, which CA does, as pools.yaml's NodePools say."""
    if not isinstance(obj, Node) or NODEPOOL_LABEL not in obj.metadata.labels:
        return obj
    labels = dict(obj.metadata.labels)
    labels["eks.amazonaws.com/nodegroup"] = labels.pop(NODEPOOL_LABEL)
    return msgspec.structs.replace(
        obj, metadata=msgspec.structs.replace(obj.metadata, labels=labels)
    )


def _objects(*extra: str, drop: tuple[str, ...] = ()) -> list[tuple[KubeStruct, str]]:
    return [
        (_as_ca_group(obj), source)
        for obj, source in load_files([*FILES, *extra])
        if not (type(obj).__name__ in ("Pod", "ResourceClaim") and obj.metadata.name in drop)
    ]


def _state(*extra: str, drop: tuple[str, ...] = ()) -> ClusterState:
    return ClusterState.from_objects(_objects(*extra, drop=drop))


def _plan(*extra: str, drop: tuple[str, ...] = (), legacy: bool = False) -> tuple[Plan, Any]:
    state = _state(*extra, drop=drop)
    plan = Autoscaler(legacy=legacy).plan(state, moves=True)
    return plan, plan.to_dict()


def _removed_pools(doc: dict[str, Any]) -> set[str]:
    return {r["pool"] for r in doc["scaleDown"]}


def _added_pools(doc: dict[str, Any]) -> set[str]:
    return {u["pool"] for u in doc["scaleUp"]}


# --- point 5: one pass, no contradiction ------------------------------------------------------


def test_dump_removes_no_node_of_an_added_pool_nor_one_a_pending_pod_was_placed_on() -> None:
    """Before: +2 h100 and scale-down of gpu-a100-a (where infer-mig-0 was just placed) and
    of both L4 nodes, in the same pass."""
    before = _state()
    state = _state()
    plan = Autoscaler().plan(state, moves=True)
    doc = plan.to_dict()
    assert _added_pools(doc) == {"h100"}
    removed = {r["node"] for r in doc["scaleDown"]}
    assert "h100" not in _removed_pools(doc)
    mig_node = state.pods[("serving", "infer-mig-0")].spec.node_name
    assert mig_node.startswith("gpu-a100-") and mig_node not in removed
    new = [n.node for o in plan.scale_up for n in o.nodes]
    for name in removed:
        shape = node_shape(before, before.nodes[name])
        assert not any(shape.matches(node_shape(state, n)) for n in new)
    # Cluster Autoscaler removes nothing in a loop that scaled up: these come after the delay.
    assert doc["scaleDown"] and all(r["delayedByScaleUp"] for r in doc["scaleDown"])


def test_dump_l4_node_unusable_by_the_pending_l4_pod_is_not_needed_and_says_why() -> None:
    """infer-l4-0 wants an L4 but does not tolerate the L4 nodes' taint: an idle L4 node is
    not capacity it needs. The other L4 node stays only because the offered move puts embed-0
    there (the two are alike: kube-scheduler draws one of them)."""
    _, doc = _plan()
    [l4] = [r for r in doc["scaleDown"] if r["pool"] == "l4"]
    targets = {t for m in doc["moves"] for t in m["move"].values()}
    assert {l4["node"], *targets} == {"gpu-l4-a", "gpu-l4-b"}
    assert "serving/infer-l4-0: node(s) had untolerated taint(s)" in l4["reason"]


def test_light_h100_node_is_not_removed_and_a_one_pod_move_spares_the_h100_node() -> None:
    """gpu-h100-b at 1/8 GPUs: before, the pass bought an h100 node for train-8-0 and removed
    gpu-h100-b (embed-0 moved to gpu-h100-a). Then gpu-h100-b stayed and moving embed-0 to an
    L4 node was offered beside the h100 node; now that one-pod move is made and no node is
    bought (issue 26.8)."""
    _, doc = _plan(drop=H100_B_LIGHT)
    assert _added_pools(doc) == set()
    assert "gpu-h100-b" not in {r["node"] for r in doc["scaleDown"]}
    [move] = doc["moves"]
    assert move["made"] and move["place"] == {"research/train-8-0": "gpu-h100-b"}
    assert move["move"]["serving/embed-0"] in L4_NODES
    assert move["pool"] == "h100" and move["savingPerHour"] == 98.32
    assert "research/train-8-0" in doc["fitExisting"]


def test_l4_jobs_add_l4_nodes_and_no_l4_node_is_removed() -> None:
    """With l4-serving.yaml: two 4-GPU L4 jobs pend beside one small pod per L4 node. Before,
    the pass added 2 L4 nodes and removed gpu-l4-a (its pod moved to gpu-l4-b)."""
    _, doc = _plan(L4_SERVING)
    assert "l4" in _added_pools(doc)
    assert "l4" not in _removed_pools(doc)
    [move] = [m for m in doc["moves"] if m["pool"] == "l4"]
    assert move["savingPerHour"] == 4.6
    assert set(move["move"]) <= {"serving/asr-0", "serving/asr-1"}
    assert set(move["move"].values()) | set(move["place"].values()) <= {"gpu-l4-a", "gpu-l4-b"}
    assert set(move["place"]) <= {"serving/batch-l4-0", "serving/batch-l4-1"}


# --- point 5b: moves beside the scale-up ------------------------------------------------------


def test_dump_moves_embed_off_h100_b_for_finetune_numa_instead_of_a_node() -> None:
    _, doc = _plan()
    [move] = doc["moves"]
    assert move["made"] and move["place"] == {"research/finetune-numa-0": "gpu-h100-b"}
    assert move["move"]["serving/embed-0"] in L4_NODES
    assert move["pool"] == "h100" and move["savingPerHour"] == 98.32
    # The node the move spares is not bought: one h100 node, for train-8-0.
    [h100] = doc["scaleUp"]
    assert h100["pool"] == "h100" and h100["pods"] == ["research/train-8-0"]
    assert move["insteadOf"] not in h100["nodes"]
    assert "research/finetune-numa-0" in doc["fitExisting"]


def test_offered_move_works_on_the_untouched_dump_and_is_needed() -> None:
    """Replayed by hand with the scheduler: without the move finetune-numa-0 does not fit
    gpu-h100-b (the control), with it both pods land where the plan says."""
    state = _state()
    scheduler = Scheduler()
    with state.forked():
        assert scheduler.schedule_pod(state, state.pods[FINETUNE], ["gpu-h100-b"]).node is None
    assert not release_claims(state, {EMBED})
    state.unbind_pod(state.pods[EMBED])
    assert scheduler.schedule_pod(state, state.pods[FINETUNE], ["gpu-h100-b"]).node
    assert scheduler.schedule_pod(state, state.pods[EMBED], ["gpu-l4-a"]).node


def test_moved_pod_goes_to_the_cheapest_node_that_takes_it() -> None:
    """The scheduler alone (kube-scheduler's LeastAllocated) would put embed-0 on the emptiest
    node that takes it, gpu-a100-b; ranked by the price of the node it fills, it goes to an L4
    node ($4.60/h)."""
    state = _state(drop=("kueue-job-0",))
    scheduler = Scheduler()
    pod = state.pods[FINETUNE]
    plain = Mover(state, scheduler, find_gangs(state), by_price=False).defragment(
        pod, "gpu-h100-b", 1
    )
    cheap = Mover(state, scheduler, find_gangs(state), by_price=True).defragment(
        pod, "gpu-h100-b", 1
    )
    assert plain == {"serving/embed-0": "gpu-a100-b"}
    assert cheap is not None
    target = state.nodes[cheap["serving/embed-0"]]
    assert pool_name(state, target) == "l4" and price_per_hour(state, target) == 4.6


def test_pods_placed_by_the_pass_are_never_moved() -> None:
    """Fixed pods stay put: with embed-0 fixed there is no move that frees gpu-h100-b."""
    state = _state(drop=("kueue-job-0",))
    pod = state.pods[FINETUNE]
    mover = Mover(state, Scheduler(), find_gangs(state), by_price=True, fixed=frozenset({EMBED}))
    assert mover.defragment(pod, "gpu-h100-b", 1) is None


def _scale(run_cli: Any, *args: str) -> Any:
    flags = [x for f in FILES for x in ("-f", f)]
    result = run_cli("scale", *flags, *args)
    assert result.code == 0, result.err
    return result


def test_moves_in_table_and_wide_output(run_cli: Any) -> None:
    table = _scale(run_cli).out
    assert table.startswith("DRA-aware plan: +1 nodes, $98.32/h")
    assert "moves made instead of adding 1 node(s) (saves $98.32/h" in table
    [row] = [line for line in table.splitlines() if "serving/embed-0 to gpu-l4-" in line]
    assert row.split()[:2] == ["h100", "98.32"] and "research/finetune-numa-0 on gpu-h100-b" in row
    wide = _scale(run_cli, "-o", "wide").out
    header = next(line for line in wide.splitlines() if "SAVES/H" in line)
    assert header.split()[:3] == ["INSTEAD", "OF", "POOL"]


def test_moves_in_json_and_yaml_output(run_cli: Any) -> None:
    doc = _scale(run_cli, "-o", "json").json()
    [move] = doc["moves"]
    assert move["made"] and list(move["move"]) == ["serving/embed-0"]
    assert move["move"]["serving/embed-0"] in L4_NODES
    docs = list(yaml.safe_load_all(_scale(run_cli, "--target", "draplan", "-o", "yaml").out))
    [pool] = [d for d in docs if d["kind"] == "NodePool"]
    notes = pool["metadata"]["annotations"]
    # The node the move spares is not in the target size; a move made is not an option.
    assert notes["draplan.io/target-size-increase"] == "1"
    assert "draplan.io/moves-instead" not in notes


@pytest.mark.parametrize("output", ["table", "wide", "json", "yaml"])
def test_no_moves_turns_them_off(run_cli: Any, output: str) -> None:
    out = _scale(run_cli, "--no-moves", "-o", output).out
    assert "embed-0" not in out and "moves-instead" not in out
    if output == "json":
        assert yaml.safe_load(out)["moves"] == []


# --- point 7: the legacy view's unused nodes --------------------------------------------------


def test_legacy_nodes_the_plan_uses_are_not_wasted_and_the_stranded_pod_gets_its_reason() -> None:
    """The count view packs train-pcie-0 (4 H100 on one PCIe root) beside finetune-numa-0 on
    one new node. Before: both new nodes "wasted" ("placed on h100-1 instead") though both
    host pods. Now: none wasted, and train-pcie-0 says what it meets on its planned node
    emptied of the others: no PCIe root holds 4 GPUs, not a shortage."""
    _, doc = _plan(legacy=True)
    assert doc["wasted"] == [] and doc["moves"] == []  # moves are for DRA-aware plans
    [pcie] = [p for p in doc["pending"] if p["pod"] == "research/train-pcie-0"]
    why = pcie["reason"]["autoscaler"]
    assert "the count view planned it on h100-" in why and "ConstraintUnsatisfiable" in why
    assert "Insufficient" not in why


def test_legacy_unused_node_reports_the_topology_mismatch() -> None:
    """Without finetune-numa-0 the count view gives train-pcie-0 a node of its own; it stays
    empty, and the reason is the allocator's on that node."""
    _, doc = _plan(drop=("finetune-numa-0",), legacy=True)
    [wasted] = doc["wasted"]
    assert wasted["pool"] == "h100"
    assert wasted["reason"].startswith("research/train-pcie-0: ")
    assert "ConstraintUnsatisfiable" in wasted["reason"]
    assert "instead" not in wasted["reason"] and "Insufficient" not in wasted["reason"]


def test_legacy_table_shows_the_count_views_mistake(run_cli: Any) -> None:
    out = _scale(run_cli, "--legacy", "-o", "wide").out
    assert "AUTOSCALER" in out and "0 wasted" in out.splitlines()[0]
    assert "the count view planned it on" in out and "(ConstraintUnsatisfiable:" in out
    # The table cuts the long reason; wide prints it whole.
    assert "…" in _scale(run_cli, "--legacy").out


# --- shapes -----------------------------------------------------------------------------------


def test_node_shape_is_the_instance_type_else_the_inventory() -> None:
    state = _state()
    shape = {name: node_shape(state, node) for name, node in state.nodes.items()}
    assert shape["gpu-h100-a"].matches(shape["gpu-h100-b"])
    assert not shape["gpu-h100-a"].matches(shape["gpu-l4-a"])
    untyped = {k: type(v)("", v.inventory) for k, v in shape.items()}
    assert untyped["gpu-a100-a"].matches(untyped["gpu-a100-b"])
    assert not untyped["gpu-a100-a"].matches(untyped["gpu-l4-a"])
    assert dict(shape["gpu-a100-a"].inventory)["mig.nvidia.com"] == 2  # parents, not slices


# --- limits -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flag",
    [
        "--max-cost-per-hour=nan",
        "--max-cost-per-hour=inf",
        "--max-cost-per-hour=-5",
        "--max-nodes-total=-1",
        "--max-devices-total=-1",
    ],
)
def test_a_limit_that_is_not_a_number_of_nodes_or_dollars_is_a_usage_error(
    run_cli: Any, flag: str
) -> None:
    flags = [x for f in FILES for x in ("-f", f)]
    result = run_cli("scale", *flags, flag)
    assert result.code == 2, result.err
    assert flag.split("=")[0] in result.err and "internal error" not in result.err


def test_a_finite_cost_cap_still_limits_the_plan(run_cli: Any) -> None:
    flags = [x for f in FILES for x in ("-f", f)]
    result = run_cli("scale", *flags, "--max-cost-per-hour=100", "-o", "json")
    assert result.code == 0, result.err
    assert result.json()["summary"]["nodesAdded"] == 1


def test_pods_the_pass_places_on_existing_nodes_are_in_the_plan(run_cli: Any) -> None:
    # infer-mig-0 fits an A100 partition now: no node is added for it, and the plan says so.
    doc = _scale(run_cli, "-o", "json").json()
    assert "serving/infer-mig-0" in doc["fitExisting"]
    assert doc["summary"]["podsFitExisting"] == len(doc["fitExisting"])
    added = {p for u in doc["scaleUp"] for p in u["pods"]}
    assert not added & set(doc["fitExisting"])
    assert f"{len(doc['fitExisting'])} fit existing nodes" in _scale(run_cli).out.splitlines()[0]
