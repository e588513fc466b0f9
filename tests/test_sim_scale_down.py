"""`simulate`'s scale-down on a dump with node groups and DaemonSets: a node is empty as
Cluster Autoscaler counts it (DaemonSet and mirror pods do not count and go with the node), the
dump's own nodes of an autoscaled pool are removed like the simulation's, never below the
pool's min size, never one annotated scale-down-disabled, never a node outside every pool
(a control-plane node)."""

from __future__ import annotations

from typing import Any

import msgspec

from draplan.api.codec import decode
from draplan.sim.engine import SimConfig, Simulation
from draplan.sim.workloads import Job

CARD = "habana.ai/gaudi"
DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"


def node(name: str, group: str | None, annotations: dict[str, str] | None = None) -> Any:
    labels = {"kubernetes.io/hostname": name}
    if group is not None:
        labels["eks.amazonaws.com/nodegroup"] = group
    else:
        labels["node-role.kubernetes.io/control-plane"] = ""
    allocatable = {"cpu": "96", "memory": "512Gi", "pods": "110", CARD: "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations or {}},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def daemon(on: str) -> Any:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"habana-exporter-{on}",
            "namespace": "kube-system",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": "habana-exporter",
                    "uid": "ds",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": on,
            "containers": [{"name": "e", "resources": {"requests": {"cpu": "100m"}}}],
        },
        "status": {"phase": "Running"},
    }


def pool(name: str, low: int) -> Any:
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"minNodes": low, "maxNodes": 6, "fromNode": f"{name}-a", "pricePerHour": "40"},
    }


def job(name: str, at: float, cards: int, on: str | None = None) -> Job:
    pod = decode(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {
                "containers": [
                    {
                        "name": "m",
                        "resources": {
                            "requests": {"cpu": "8", CARD: str(cards)},
                            "limits": {CARD: str(cards)},
                        },
                    }
                ]
            },
        }
    )
    if on is not None:
        spec = msgspec.structs.replace(pod.spec, node_selector={"kubernetes.io/hostname": on})
        pod = msgspec.structs.replace(pod, spec=spec)
    return Job(name, "training", at, 3600.0, (pod,), (("ml", name),), cards)


def run(objs: list[Any], jobs: list[Job]) -> dict[str, tuple[float, float | None]]:
    sim = Simulation([decode(o) for o in objs], jobs, SimConfig(policy="dra", horizon=4 * 3600))
    result = sim.run()
    return {n["node"]: (n["added"], n["removed"]) for n in result.nodes}


def test_idle_nodes_go_daemonsets_and_all_but_held_ones() -> None:
    """gaudi (min 1): a, b and c idle but for their exporter pods, c annotated disabled;
    spare (min 0): its one node idle; the control-plane node in no pool. One 8-card job runs
    an hour on gaudi-b."""
    objs = [
        node("cp-0", None),
        node("gaudi-a", "gaudi"),
        node("gaudi-b", "gaudi"),
        node("gaudi-c", "gaudi", {DISABLED: "true"}),
        node("spare-a", "spare"),
        *(daemon(n) for n in ("cp-0", "gaudi-a", "gaudi-b", "gaudi-c", "spare-a")),
        pool("gaudi", 1),
        pool("spare", 0),
    ]
    nodes = run(objs, [job("train", 0.0, 8, on="gaudi-b")])
    removed = {n: at for n, (_, at) in nodes.items() if at is not None}
    assert nodes["cp-0"][1] is None and nodes["gaudi-c"][1] is None
    assert "spare-a" in removed and removed["spare-a"] >= 600
    # c counts toward gaudi's min size though it is no candidate: a and b both go, the one
    # that ran the job once it has been idle for the unneeded time.
    assert (removed["gaudi-a"], removed["gaudi-b"]) == (600.0, 3600.0 + 600.0)
    # Nothing was added: the job fit the dump's own nodes.
    assert set(nodes) == {"cp-0", "gaudi-a", "gaudi-b", "gaudi-c", "spare-a"}


def test_a_node_the_simulation_adds_goes_when_only_its_daemonset_pods_remain() -> None:
    """One gaudi node, busy for the hour; a second job makes the simulation add a copy of it,
    DaemonSet pod and all. Once the jobs end, the copy goes (its exporter with it)."""
    objs = [node("gaudi-a", "gaudi"), daemon("gaudi-a"), pool("gaudi", 1)]
    nodes = run(objs, [job("first", 0.0, 8), job("second", 0.0, 8)])
    added = [n for n in nodes if n != "gaudi-a"]
    assert len(added) == 1
    assert nodes[added[0]][1] is not None
    assert nodes["gaudi-a"][1] is None  # the pool's min size
