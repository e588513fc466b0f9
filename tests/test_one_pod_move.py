"""Issue 26 point 8: a 6-card pod fits a Gaudi3 node with 5 free cards once a 1-card pod moves
to any of three nodes with one free card. Where that pod is one Cluster Autoscaler would move
(controller-owned by a replicated kind, or annotated safe-to-evict "true"; never a DaemonSet
or mirror pod, never safe-to-evict "false", never bare), `why` gives the move as the first fix,
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


MOVABLE = {
    "StatefulSet": (("StatefulSet", "serve"), None),
    "ReplicaSet": (("ReplicaSet", "serve-7d9f"), None),
    "bare, safe-to-evict true": (None, {SAFE_TO_EVICT: "true"}),
}
UNMOVABLE = {
    "DaemonSet": (("DaemonSet", "gaudi-monitor"), None),
    "mirror": (None, {"kubernetes.io/config.mirror": "abc"}),
    "bare": (None, None),
    "safe-to-evict false": (("StatefulSet", "serve"), {SAFE_TO_EVICT: "false"}),
}


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
    objs = cluster(*MOVABLE[kind])
    path = write(tmp_path, [*objs, POOL])
    (six,) = [d for d in cli_json(run_cli, "why", "-f", path)["pods"] if d["pod"] == "ml/six"]
    assert six["category"] == "Fragmentation", six
    fix = six["fix"]
    assert fix["verified"] and fix["node"] == "gaudi-0" and fix["savingPerHour"] == 42.0
    [(moved, target)] = fix["move"].items()
    assert moved == "ml/serve-0" and target in {"gaudi-1", "gaudi-2", "gaudi-3"}
    assert six["message"].endswith(
        f"moving ml/serve-0 to {target} makes room on gaudi-0 instead of a new node (saves $42/h)."
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
    assert six["fix"]["move"]["ml/serve-0"] in {"gaudi-1", "gaudi-2", "gaudi-3"}


@pytest.mark.parametrize("kind", list(UNMOVABLE))
def test_a_pod_cluster_autoscaler_would_not_move_stays(
    tmp_path: Path, run_cli: Any, kind: str
) -> None:
    path = write(tmp_path, [*cluster(*UNMOVABLE[kind]), POOL])
    (six,) = [d for d in cli_json(run_cli, "why", "-f", path)["pods"] if d["pod"] == "ml/six"]
    assert six["category"] == "WaitingForScaleUp" and six["fix"]["pool"] == "gaudi", six
    plan = cli_json(run_cli, "scale", "-f", path)
    assert [(u["pool"], u["add"]) for u in plan["scaleUp"]] == [("gaudi", 1)]
    assert plan["moves"] == []
    # Without pools, no move: a node like gaudi-0 is the fix.
    alone = cli_json(run_cli, "why", "-f", write(tmp_path, cluster(*UNMOVABLE[kind])))["pods"]
    (six,) = [d for d in alone if d["pod"] == "ml/six"]
    assert six["category"] == "Fragmentation" and "move" not in six["fix"], six
