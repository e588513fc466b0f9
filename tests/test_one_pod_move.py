"""Issue 26 point 8: a 6-card pod fits a Gaudi3 node with 5 free cards once a 1-card pod moves
to any of three nodes with one free card. Where that pod is one Cluster Autoscaler would move
with its default flags (controller-owned by a replicated kind, or annotated safe-to-evict
"true"; never a DaemonSet or mirror pod, never safe-to-evict "false", never bare; in
kube-system only under a PodDisruptionBudget; no hostPath or disk-backed emptyDir unless named
in safe-to-evict-local-volumes; never past a budget's disruptionsAllowed), `why` gives the move
as the first fix,
verified, with the node it spares as the saving, and `scale` makes the move instead of buying
that node. Otherwise both buy (or wait for) a node. The move is replayed here on the input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gaudi_scenarios as g
from draplan.api.codec import decode
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler
from draplan.scheduler.claims import release_claims
from scale_scenarios import cli_json, write

Objs = list[dict[str, Any]]
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
HOST_PATH = {"hostPath": {"path": "/var/cache/gaudi"}}
POOL = {
    "apiVersion": "draplan.io/v1alpha1",
    "kind": "NodePool",
    "metadata": {"name": "gaudi"},
    "spec": {"maxNodes": 8, "pricePerHour": "42", "fromNode": "gaudi-1"},
}


def cluster(owner: tuple[str, str] | None, annotations: dict[str, str] | None) -> Objs:
    """gaudi-0: the 1-card pod `serve-0` (owned by `owner`) and a 2-card Job pod that must stay;
    gaudi-1..3: 7 of 8 cards held by pods that must stay. `six` asks 6 cards."""
    stay = {SAFE_TO_EVICT: "false"}
    objs = [g.device_class(), *g.system_nodes()]
    for n in range(4):
        objs += g.gaudi_node(f"gaudi-{n}")
    objs += g.running("serve-0", "gaudi-0", [0], owned_by=owner, annotations=annotations)
    objs += g.running("train-a", "gaudi-0", [1, 2], ("Job", "train-a"), stay)
    for n in (1, 2, 3):
        objs += g.running(f"hold-{n}", f"gaudi-{n}", list(range(7)), ("Job", f"h{n}"), stay)
    return [*objs, *g.pending("six", 6)]


def tweaked(
    objs: Objs,
    namespace: str = "ml",
    volume: dict[str, Any] | None = None,
    budget: int | None = None,
) -> Objs:
    """`serve-0` (and its claim) moved to `namespace`, given `volume`, and under a
    PodDisruptionBudget that allows `budget` disruptions."""
    for obj in objs:
        if obj["metadata"]["name"] in ("serve-0", "serve-0-cards"):
            obj["metadata"]["namespace"] = namespace
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == "serve-0":
            obj["metadata"]["labels"] = {"app": "serve"}
            if volume is not None:
                obj["spec"]["volumes"] = [{"name": "cache", **volume}]
    if budget is None:
        return objs
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "serve", "namespace": namespace},
        "spec": {"maxUnavailable": budget, "selector": {"matchLabels": {"app": "serve"}}},
        "status": {"disruptionsAllowed": budget, "currentHealthy": 1, "desiredHealthy": 1,
                   "expectedPods": 1},
    }  # fmt: skip
    return [*objs, pdb]


SERVE = ("StatefulSet", "serve")
LOCAL = {SAFE_LOCAL_VOLUMES: "cache"}
MOVABLE = {
    "StatefulSet": (SERVE, None, {}),
    "ReplicaSet": (("ReplicaSet", "serve-7d9f"), None, {}),
    "bare, safe-to-evict true": (None, {SAFE_TO_EVICT: "true"}, {}),
    "kube-system under a budget": (SERVE, None, {"namespace": "kube-system", "budget": 1}),
    "a budget allowing one": (SERVE, None, {"budget": 1}),
    "emptyDir in memory": (SERVE, None, {"volume": {"emptyDir": {"medium": "Memory"}}}),
    "emptyDir named safe": (SERVE, LOCAL, {"volume": {"emptyDir": {}}}),
    "hostPath, safe-to-evict true": (SERVE, {SAFE_TO_EVICT: "true"}, {"volume": HOST_PATH}),
}
UNMOVABLE = {
    "DaemonSet": (("DaemonSet", "gaudi-monitor"), None, {}),
    "mirror": (None, {"kubernetes.io/config.mirror": "abc"}, {}),
    "bare": (None, None, {}),
    "safe-to-evict false": (SERVE, {SAFE_TO_EVICT: "false"}, {}),
    "kube-system": (SERVE, None, {"namespace": "kube-system"}),
    "a budget allowing none": (SERVE, None, {"budget": 0}),
    "emptyDir on disk": (SERVE, None, {"volume": {"emptyDir": {}}}),
    "hostPath": (SERVE, None, {"volume": HOST_PATH}),
}


def variant(kind: str) -> Objs:
    owner, notes, tweaks = {**MOVABLE, **UNMOVABLE}[kind]
    return tweaked(cluster(owner, notes), **tweaks)


def replay(objs: Objs, move: dict[str, str], node: str) -> None:
    """The move on the untouched input, by the scheduler: `six` does not fit `node` before,
    does after, and the moved pod fits its target."""
    state = ClusterState.from_objects(decode(o) for o in objs)
    scheduler = Scheduler()
    six = state.pods[("ml", "six")]
    with state.forked():
        assert scheduler.schedule_pod(state, six, [node]).node is None
    [(moved, target)] = move.items()
    namespace, name = moved.split("/")
    key = (namespace, name)
    assert not release_claims(state, {key})
    state.unbind_pod(state.pods[key])
    assert scheduler.schedule_pod(state, six, [node]).node == node
    assert scheduler.schedule_pod(state, state.pods[key], [target]).node == target


@pytest.mark.parametrize("kind", list(MOVABLE))
def test_a_one_pod_move_is_the_fix_and_spares_the_node(
    tmp_path: Path, run_cli: Any, kind: str
) -> None:
    objs = variant(kind)
    serve = f"{MOVABLE[kind][2].get('namespace', 'ml')}/serve-0"
    path = write(tmp_path, [*objs, POOL])
    (six,) = [d for d in cli_json(run_cli, "why", "-f", path)["pods"] if d["pod"] == "ml/six"]
    assert six["category"] == "Fragmentation", six
    fix = six["fix"]
    assert fix["verified"] and fix["node"] == "gaudi-0" and fix["savingPerHour"] == 42.0
    [(moved, target)] = fix["move"].items()
    assert moved == serve and target in {"gaudi-1", "gaudi-2", "gaudi-3"}
    assert six["message"].endswith(
        f"moving {serve} to {target} makes room on gaudi-0 instead of a new node (saves $42/h)."
    )
    plan = cli_json(run_cli, "scale", "-f", path)
    assert plan["scaleUp"] == [] and plan["summary"]["nodesAdded"] == 0
    [made] = plan["moves"]
    assert made["made"] and made["move"] == fix["move"] and made["savingPerHour"] == 42.0
    assert made["place"] == {"ml/six": "gaudi-0"}
    replay(objs, fix["move"], "gaudi-0")
    # Without pools the move is still the fix (the node's own price unknown: no saving).
    alone = cli_json(run_cli, "why", "-f", write(tmp_path, objs))["pods"]
    (six,) = [d for d in alone if d["pod"] == "ml/six"]
    # The same pod moves; without prices the scheduler picks its target, drawn at random
    # among the three alike nodes as kube-scheduler does.
    assert six["fix"]["move"].keys() == fix["move"].keys() and "savingPerHour" not in six["fix"]
    assert six["fix"]["move"][serve] in {"gaudi-1", "gaudi-2", "gaudi-3"}


@pytest.mark.parametrize("kind", list(UNMOVABLE))
def test_a_pod_cluster_autoscaler_would_not_move_stays(
    tmp_path: Path, run_cli: Any, kind: str
) -> None:
    path = write(tmp_path, [*variant(kind), POOL])
    (six,) = [d for d in cli_json(run_cli, "why", "-f", path)["pods"] if d["pod"] == "ml/six"]
    assert six["category"] == "WaitingForScaleUp" and six["fix"]["pool"] == "gaudi", six
    plan = cli_json(run_cli, "scale", "-f", path)
    assert [(u["pool"], u["add"]) for u in plan["scaleUp"]] == [("gaudi", 1)]
    assert plan["moves"] == []
    # Without pools, no move: a node like gaudi-0 is the fix.
    alone = cli_json(run_cli, "why", "-f", write(tmp_path, variant(kind)))["pods"]
    (six,) = [d for d in alone if d["pod"] == "ml/six"]
    assert six["category"] == "Fragmentation" and "move" not in six["fix"], six


@pytest.mark.parametrize("allowed", [1, 2])
def test_pods_under_one_budget_move_together_only_as_far_as_it_allows(
    tmp_path: Path, run_cli: Any, allowed: int
) -> None:
    """Two 1-card pods of one app under one budget must both leave gaudi-0 for `six`: a move
    of both is offered only when the budget allows two disruptions (CA's RemainingPdbTracker
    counts a drain's pods together)."""
    objs = tweaked(cluster(SERVE, None), budget=allowed)
    objs += g.running("serve-1", "gaudi-0", [3], SERVE)
    for obj in objs:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == "serve-1":
            obj["metadata"]["labels"] = {"app": "serve"}
    (six,) = [d for d in cli_json(run_cli, "why", "-f", write(tmp_path, objs))["pods"]
              if d["pod"] == "ml/six"]  # fmt: skip
    assert six["category"] == "Fragmentation", six
    if allowed == 1:
        assert "move" not in six["fix"], six
    else:
        assert sorted(six["fix"]["move"]) == ["ml/serve-0", "ml/serve-1"], six
