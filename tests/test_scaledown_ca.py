"""Scale-down by Cluster Autoscaler 1.36's rules (issue 28, point 10), on a cluster of its own:
a kubeadm control-plane node, system nodes of a MachineDeployment CA does not manage, a worker
MachineDeployment whose nodes each carry one kind of pod CA treats specially, an unready node,
a Karpenter node, and a GKE multi-host TPU slice. Every node is either removed or kept with
the rule that kept it; CA's flags change the answers as they change CA's."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import click
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draplan.api.codec import decode
from draplan.autoscaler.derived import derive_pools
from draplan.autoscaler.drain import DrainOptions
from draplan.autoscaler.scaledown import ScaleDown, ScaleDownOptions, plan_scale_down
from draplan.cli.ca_flags import Duration
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler, build_profile
from scale_scenarios import node, pdb

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SAFE = "cluster-autoscaler.kubernetes.io/safe-to-evict"
GKE = "cloud.google.com/gke-"
MIN, MAX = (
    "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size",
    "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size",
)


def _md(name: str, low: int | None, high: int | None) -> dict[str, Any]:
    notes = {}
    if low is not None and high is not None:
        notes = {MIN: str(low), MAX: str(high)}
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineDeployment",
        "metadata": {"name": name, "namespace": "capi", "annotations": notes},
        "spec": {"clusterName": "prod"},
    }


def _capi_node(md: str, suffix: str, **extra: Any) -> dict[str, Any]:
    doc = node(f"{md}-{suffix}", cpu="16", memory="64Gi")
    doc["metadata"]["annotations"] = {"cluster.x-k8s.io/owner-name": f"{md}-6f7d8"}
    for key, value in extra.items():
        doc.setdefault(key, {}).update(value)
    return doc


def _pod(
    name: str,
    node_name: str,
    owner: str | None = "ReplicaSet",
    ns: str = "apps",
    cpu: str = "1",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    volumes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner, "name": f"{name}-owner", "uid": "u",
             "controller": True}
        ]  # fmt: skip
    meta["annotations"] = annotations or {}
    meta["labels"] = labels or {}
    spec: dict[str, Any] = {
        "nodeName": node_name,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if volumes:
        spec["volumes"] = volumes
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running"},
    }


CP_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def objects() -> list[dict[str, Any]]:
    cp = node("cp-0", cpu="8", memory="32Gi", labels={"node-role.kubernetes.io/control-plane": ""})
    cp["spec"] = {"taints": [CP_TAINT]}
    unready = _capi_node("workers", "unready")
    unready["status"]["conditions"] = [
        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-05-01T11:00:00Z"}
    ]
    objs: list[dict[str, Any]] = [
        cp,
        _pod("etcd-cp-0", "cp-0", owner="Node", ns="kube-system",
             annotations={"kubernetes.io/config.mirror": "abc"}),
        _md("infra", None, None),  # no autoscaler annotations: CA does not manage it
        _capi_node("infra", "a"),
        _pod("coredns-a", "infra-a", ns="kube-system"),
        _md("workers", 1, 12),
        _capi_node("workers", "bare"),
        _pod("debug-shell", "workers-bare", owner=None),
        _capi_node("workers", "cache"),
        _pod("cache-0", "workers-cache", volumes=[{"name": "scratch", "emptyDir": {}}]),
        _capi_node("workers", "ds"),
        _pod("node-exporter-ds", "workers-ds", owner="DaemonSet", ns="monitoring"),
        _pod("web-0", "workers-ds"),
        _pod("static-ds", "workers-ds", owner="Node", ns="kube-system",
             annotations={"kubernetes.io/config.mirror": "x"}),
        _capi_node("workers", "held",
                   metadata={"annotations": {
                       "cluster.x-k8s.io/owner-name": "workers-6f7d8",
                       "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}}),
        _capi_node("workers", "metrics"),
        _pod("metrics-server", "workers-metrics", ns="kube-system", labels={"app": "metrics"}),
        _capi_node("workers", "pinned"),
        _pod("batch-0", "workers-pinned",
             annotations={SAFE: "false"}),
        _capi_node("workers", "quorum"),
        _pod("zk-0", "workers-quorum", owner="StatefulSet", labels={"app": "zk"}),
        pdb("zk", "apps", "zk", 0),
        _capi_node("workers", "ray"),
        _pod("ray-worker", "workers-ray", owner="RayCluster"),
        _capi_node("workers", "busy"),
        _pod("big", "workers-busy", cpu="8"),  # exactly the 0.5 threshold
        _capi_node("workers", "zsink"),  # where moved pods go
        unready,
    ]  # fmt: skip
    return objs


def run(
    objs: list[dict[str, Any]] | None = None, options: ScaleDownOptions | None = None
) -> tuple[ScaleDown, dict[str, tuple[str, str]]]:
    state = ClusterState.from_objects(decode(o) for o in (objs or objects()))
    state.node_pools.update(derive_pools(state).pools)
    down = plan_scale_down(state, Scheduler(build_profile()), NOW, options=options)
    kept = {k.node: (k.reason, k.message) for k in down.kept}
    return down, kept


def test_every_node_is_removed_or_kept_by_a_named_rule() -> None:
    down, kept = run()
    removed = {r.node: r for r in down.removals}
    nodes = {o["metadata"]["name"] for o in objects() if o["kind"] == "Node"}
    assert set(removed) | set(kept) == nodes
    assert not set(removed) & set(kept)
    assert kept["cp-0"][0] == "NotAutoscaled"
    assert kept["infra-a"][0] == "NotAutoscaled"
    assert kept["workers-bare"] == (
        "BlockedByPod", "NotReplicated: apps/debug-shell is not replicated"
    )  # fmt: skip
    assert kept["workers-cache"] == (
        "BlockedByPod",
        "LocalStorageRequested: pod with local storage present: cache-0",
    )
    assert kept["workers-held"][0] == "ScaleDownDisabledAnnotation"
    assert kept["workers-metrics"][1].startswith("UnmovableKubeSystemPod: non-daemonset")
    assert kept["workers-pinned"][1].startswith("NotSafeToEvictAnnotation")
    assert kept["workers-quorum"][1] == (
        "NotEnoughPdb: not enough pod disruption budget to move apps/zk-0"
    )
    assert kept["workers-ray"][1] == "NotReplicated: apps/ray-worker is not replicated"
    assert kept["workers-busy"] == (
        "NotUnderutilized", "utilization 0.50 >= --scale-down-utilization-threshold 0.5"
    )  # fmt: skip
    # The DaemonSet pod goes with its node, the mirror pod is ignored, web-0 moves.
    assert "1 pod(s) move elsewhere, 1 DaemonSet pod(s) go with it" in removed["workers-ds"].reason
    assert removed["workers-ds"].after == "10m" and removed["workers-unready"].after == "20m"


def test_cas_flags_change_the_answers() -> None:
    relaxed = DrainOptions(
        skip_nodes_with_system_pods=False,
        skip_nodes_with_local_storage=False,
        skip_nodes_with_custom_controller_pods=False,
    )
    down, kept = run(options=ScaleDownOptions(drain=relaxed, unready_enabled=False))
    removed = {r.node for r in down.removals}
    assert {"workers-cache", "workers-metrics", "workers-ray"} <= removed
    assert kept["workers-unready"][0] == "ScaleDownUnreadyDisabled"
    down, kept = run(options=ScaleDownOptions(utilization_threshold=0.6))
    assert "workers-busy" in {r.node for r in down.removals}


def test_a_pdb_lets_a_kube_system_pod_move_and_min_size_holds() -> None:
    objs = [o for o in objects() if o["metadata"]["name"] != "zk"]
    objs.append(pdb("metrics", "kube-system", "metrics", 1))
    for o in objs:
        if o["kind"] == "MachineDeployment" and o["metadata"]["name"] == "workers":
            o["metadata"]["annotations"][MIN] = "9"
    down, kept = run(objs)
    # 11 workers, min 9: two go (name order), the rest stop at the minimum.
    removed = [r.node for r in down.removals]
    assert len(removed) == 2
    assert sum(1 for r, _ in kept.values() if r == "NodeGroupMinSizeReached") >= 1


# --- a multi-host slice shrinks whole ----------------------------------------------------------


def _tpu_hosts(busy: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(4):
        labels = {f"{GKE}nodepool": "v6e-a", f"{GKE}tpu-topology": "4x4",
                  f"{GKE}accelerator-count": "4"}  # fmt: skip
        out.append(node(f"gke-v6e-a-{i}", cpu="180", labels=labels))
    if busy:
        out.append(_pod("trainer", "gke-v6e-a-2", cpu="170", owner="Job"))
    out.append(node("spare", cpu="200"))
    return out


@pytest.mark.parametrize("busy", [False, True])
def test_a_multi_host_slice_is_removed_or_kept_whole(busy: bool) -> None:
    down, kept = run(_tpu_hosts(busy))
    hosts = {f"gke-v6e-a-{i}" for i in range(4)}
    if not busy:
        assert hosts <= {r.node for r in down.removals}
        return
    assert not hosts & {r.node for r in down.removals}
    assert {kept[h][0] for h in hosts} == {"AtomicScaleDownFailed"}
    assert "host gke-v6e-a-2: utilization 0.94" in kept["gke-v6e-a-0"][1]


# --- the rule itself, on generated clusters ----------------------------------------------------

KINDS = ["ReplicaSet", "StatefulSet", "Job", "DaemonSet", "RayCluster", None]


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    rng = random.Random(draw(st.integers(0, 2**16)))
    low = draw(st.integers(0, 3))
    objs: list[dict[str, Any]] = [_md("pool", low, 20)]
    for n in range(draw(st.integers(1, 7))):
        objs.append(_capi_node("pool", f"n{n}"))
        for p in range(rng.randint(0, 3)):
            notes = {}
            if rng.random() < 0.15:
                notes[SAFE] = rng.choice(["true", "false"])
            vols = None
            if rng.random() < 0.2:
                vols = [{"name": "v", "emptyDir": {"medium": rng.choice(["", "Memory"])}}]
            objs.append(
                _pod(f"p{n}-{p}", f"pool-n{n}", owner=rng.choice(KINDS),
                     ns=rng.choice(["apps", "kube-system"]), cpu=str(rng.randint(1, 6)),
                     annotations=notes, volumes=vols)
            )  # fmt: skip
    return objs


def _blocks(pod: dict[str, Any]) -> bool:
    """CA's blocking rules, read from the pod's manifest (written apart from `drain`)."""
    meta, spec = pod["metadata"], pod["spec"]
    notes = meta.get("annotations", {})
    owners = [o["kind"] for o in meta.get("ownerReferences", []) if o.get("controller")]
    if owners == ["DaemonSet"] or notes.get(SAFE) == "true":
        return False
    if not owners or owners[0] not in ("ReplicationController", "Job", "ReplicaSet", "StatefulSet"):
        return True
    if meta["namespace"] == "kube-system":
        return True  # no PDB in these clusters
    if notes.get(SAFE) == "false":
        return True
    return any(v.get("emptyDir", {}).get("medium") != "Memory" for v in spec.get("volumes", []))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_no_removal_breaks_a_rule(objs: list[dict[str, Any]]) -> None:
    down, kept = run(objs)
    nodes = {o["metadata"]["name"] for o in objs if o["kind"] == "Node"}
    removed = [r.node for r in down.removals]
    assert set(removed) | set(kept) == nodes and len(removed) + len(kept) == len(nodes)
    low = int(objs[0]["metadata"]["annotations"][MIN])
    assert len(nodes) - len(removed) >= min(low, len(nodes))
    pods = [o for o in objs if o["kind"] == "Pod"]
    for name in removed:
        assert not any(_blocks(p) for p in pods if p["spec"]["nodeName"] == name), name
    for name, (reason, _) in kept.items():
        if reason == "BlockedByPod":
            assert any(_blocks(p) for p in pods if p["spec"]["nodeName"] == name), name


def test_scale_dash_l_still_keeps_room_for_the_pods_it_does_not_select(
    tmp_path: Any, run_cli: Any
) -> None:
    """`scale -l` plans for the pods it selects; CA packs every pending pod before it looks
    for unneeded nodes, so the nodes an unselected pending pod fits stay."""
    objs = [_md("workers", 0, 5), _capi_node("workers", "a"), _capi_node("workers", "b")]
    waiting = _pod("etl-0", "", labels={"app": "etl"}, cpu="12")
    del waiting["status"]
    objs.append(waiting)
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    plain = run_cli("scale", "-f", str(path), "-o", "json").json()
    # Planned for, etl-0 goes to workers-a; workers-b is free to go.
    assert plain["fitExisting"] == ["apps/etl-0"]
    assert [r["node"] for r in plain["scaleDown"]] == ["workers-b"]
    # Not selected, etl-0 is not placed; both nodes it fits stay for it.
    other = run_cli("scale", "-f", str(path), "-l", "app=web", "-o", "json").json()
    assert other["scaleDown"] == [] and other["pending"] == []
    assert {k["node"]: k["reason"] for k in other["scaleDownKept"]} == {
        "workers-a": "UsedByPendingPods",
        "workers-b": "UsedByPendingPods",
    }


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10m", 600), ("20m0s", 1200), ("1h30m", 5400), ("1.5h", 5400), ("300ms", 0.3), ("0", 0)],
)
def test_ca_duration_flags_read_go_durations(text: str, seconds: float) -> None:
    assert Duration().convert(text, None, None) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("text", "words"),
    [("xx", 'invalid duration "xx"'), ("", "invalid duration"), ("10", "invalid duration"),
     ("-5m", "is negative"), ("100000h", "longer than ten years")],
)  # fmt: skip
def test_ca_duration_flags_refuse_what_go_refuses(text: str, words: str) -> None:
    with pytest.raises(click.BadParameter, match=words):
        Duration().convert(text, None, None)
