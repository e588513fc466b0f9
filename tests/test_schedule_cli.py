"""`draplan schedule -f …`: the JSON shape of the issue, YAML objects that decode and reload,
`--check`, `--profile`, and byte-identical output for the same input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from draplan.allocator.validate import validate_allocation
from draplan.api.codec import decode, encode
from draplan.api.core_v1 import Binding, Pod
from draplan.api.meta import KubeStruct
from draplan.api.resource_v1 import ResourceClaim
from draplan.cluster.state import ClusterState, key_of
from scheduler_builders import (
    NUMA,
    MakeClaim,
    MakeNode,
    MakePod,
    MakeSlice,
    coscheduling_podgroup,
    device_class,
    podgroup_v1beta1,
)

DRAPLAN = Path(sys.executable).with_name("draplan")


def write(path: Path, objects: Iterable[KubeStruct]) -> str:
    path.write_text(yaml.safe_dump_all([encode(o) for o in objects], sort_keys=False))
    return str(path)


def infrastructure() -> list[KubeStruct]:
    """n1: 4 GPUs (2 NUMA groups), n2: 2 GPUs, n3: no GPUs, 1 cpu."""
    return [
        device_class(),
        MakeNode().name("n1").capacity(cpu="8").obj(),
        MakeSlice().node("n1").gpus(4, 2).obj(),
        MakeNode().name("n2").capacity(cpu="8").obj(),
        MakeSlice().node("n2").gpus(2, 2).obj(),
        MakeNode().name("n3").capacity(cpu="1").obj(),
        MakeClaim().name("pair").gpus(2).match_attribute(NUMA).template(),
        MakeClaim().name("eight").gpus(8).template(),
    ]


def workload() -> list[KubeStruct]:
    return [
        MakePod().name("bound").req(cpu="1").node("n3").obj(),
        MakePod().name("a-gpu").created("2025-01-01T00:00:01Z").template_claim("gpu", "pair").obj(),
        MakePod().name("b-cpu").created("2025-01-01T00:00:02Z").req(cpu="2").obj(),
        MakePod().name("c-huge").created("2025-01-01T00:00:03Z").req(cpu="64").obj(),
        MakePod()
        .name("d-eight")
        .created("2025-01-01T00:00:04Z")
        .req(cpu="1")
        .template_claim("gpu", "eight")
        .obj(),
        MakeClaim().name("mine").gpus(1).obj(),
        MakePod().name("e-named").created("2025-01-01T00:00:05Z").claim("gpu", "mine").obj(),
    ]


def apply(objects: list[KubeStruct], docs: list[dict[str, Any]]) -> list[KubeStruct]:
    """The input objects after the scheduler's output is applied to them: a Binding (or a
    bound Pod) sets the pod's node, a ResourceClaim is created or its status replaced."""
    by_key: dict[tuple[str, str, str], KubeStruct] = {}
    for obj in objects:
        meta = obj.metadata  # type: ignore[attr-defined]
        by_key[(obj.kind, meta.namespace, meta.name)] = obj  # type: ignore[attr-defined]
    for doc in docs:
        obj = decode(doc)
        meta = obj.metadata  # type: ignore[attr-defined]
        if isinstance(obj, Binding):
            pod = by_key[("Pod", meta.namespace, meta.name)]
            assert isinstance(pod, Pod)
            spec = msgspec.structs.replace(pod.spec, node_name=obj.target.name)
            by_key[("Pod", meta.namespace, meta.name)] = msgspec.structs.replace(pod, spec=spec)
        elif isinstance(obj, ResourceClaim) and ("ResourceClaim", *key_of(obj)) in by_key:
            old = by_key[("ResourceClaim", *key_of(obj))]
            assert isinstance(old, ResourceClaim)
            by_key[("ResourceClaim", *key_of(obj))] = msgspec.structs.replace(
                old, status=obj.status
            )
        else:
            assert isinstance(obj, Pod | ResourceClaim), obj
            by_key[(obj.kind, meta.namespace, meta.name)] = obj
    return list(by_key.values())


@pytest.fixture
def cluster(tmp_path: Path) -> str:
    return write(tmp_path / "cluster.yaml", [*infrastructure(), *workload()])


def test_json_shape(run_cli: Any, cluster: str) -> None:
    res = run_cli("schedule", "-f", cluster, "-o", "json")
    assert res.code == 0, res.err
    doc = res.json()
    assert list(doc) == ["pods", "summary"]
    assert doc["summary"] == {
        "scheduled": 3,
        "unschedulable": 2,
        "gated": 0,
        "nominated": 0,
        "preempted": 0,
    }
    pods = {p["name"]: p for p in doc["pods"]}
    assert sorted(pods) == ["a-gpu", "b-cpu", "c-huge", "d-eight", "e-named"]  # not "bound"
    for p in doc["pods"]:
        keys = ["namespace", "name", "node", "claims", "reason"]
        # "draplan": where draplan's own profile would put the pod, when that differs.
        assert list(p) in (keys, [*keys, "draplan"])
        assert p["namespace"] == "default"
        assert p["node"] is None or isinstance(p["node"], str)
        assert isinstance(p["claims"], list)
        assert (p["node"] is None) == (p["reason"] is not None)
        if p["reason"] is not None:
            assert isinstance(p["reason"]["message"], str)
            assert all(isinstance(v, int) for v in p["reason"]["nodes"].values())

    gpu = pods["a-gpu"]
    assert gpu["node"] == "n1"  # the only node with two GPUs on one NUMA node
    [claim] = gpu["claims"]
    assert claim["apiVersion"] == "resource.k8s.io/v1"
    assert claim["kind"] == "ResourceClaim"
    assert claim["metadata"]["name"].startswith("a-gpu-gpu-")
    results = claim["status"]["allocation"]["devices"]["results"]
    assert len(results) == 2
    assert {r["pool"] for r in results} == {"n1"}
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "a-gpu", "uid": "uid-default-a-gpu"}
    ]
    typed = decode(claim)
    assert isinstance(typed, ResourceClaim) and typed.status.allocation is not None

    named = pods["e-named"]
    [mine] = named["claims"]
    assert mine["metadata"]["name"] == "mine"
    assert mine["spec"]["devices"]["requests"][0]["name"] == "gpu"  # the whole claim
    assert len(mine["status"]["allocation"]["devices"]["results"]) == 1

    assert pods["b-cpu"]["claims"] == [] and pods["b-cpu"]["reason"] is None

    huge = pods["c-huge"]
    assert huge["claims"] == []
    # More cpu than any node has: preemption cannot help anywhere (fit.go's Unresolvable).
    post = (
        "no new claims to deallocate, preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )
    assert huge["reason"] == {
        "message": f"0/3 nodes are available: 3 Insufficient cpu. {post}",
        "nodes": {"Insufficient cpu": 3},
        "postFilter": post,
    }

    eight = pods["d-eight"]["reason"]
    assert list(eight) == ["message", "nodes", "evidence", "postFilter"]
    assert eight["message"] == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 cannot allocate all claims. "
        + eight["postFilter"]
    )
    # No pod of lower priority runs anywhere: nothing to preempt.
    assert eight["postFilter"] == (
        "still not schedulable, preemption: 0/3 nodes are available: "
        "3 No preemption victims found for incoming pod."
    )
    assert eight["nodes"] == {"Insufficient cpu": 1, "InsufficientDevices": 2}
    assert sorted(eight["evidence"]["allocator"]) == ["n1", "n2"]
    assert {e["code"] for e in eight["evidence"]["allocator"].values()} == {"InsufficientDevices"}


def test_json_lists_pods_in_queue_order(run_cli: Any, cluster: str) -> None:
    doc = run_cli("schedule", "-f", cluster, "-o", "json").json()
    assert [p["name"] for p in doc["pods"]] == ["a-gpu", "b-cpu", "c-huge", "d-eight", "e-named"]


def yaml_docs(run_cli: Any, cluster: str) -> list[dict[str, Any]]:
    res = run_cli("schedule", "-f", cluster, "-o", "yaml")
    assert res.code == 0, res.err
    return list(yaml.safe_load_all(res.out))


def test_yaml_objects_decode_and_describe_every_placement(run_cli: Any, cluster: str) -> None:
    docs = yaml_docs(run_cli, cluster)
    objs = [decode(d) for d in docs]  # every document is a valid Kubernetes object
    placed: dict[str, str] = {}
    for obj in objs:
        if isinstance(obj, Pod):
            placed[obj.metadata.name] = obj.spec.node_name
        elif isinstance(obj, Binding):
            assert obj.target.kind == "Node"
            placed[obj.metadata.name] = obj.target.name
    expected = {
        p["name"]: p["node"]
        for p in run_cli("schedule", "-f", cluster, "-o", "json").json()["pods"]
        if p["node"]
    }
    assert placed == expected
    claims = {c.metadata.name: c for c in objs if isinstance(c, ResourceClaim)}
    assert sorted(claims)[1] == "mine" and sorted(claims)[0].startswith("a-gpu-gpu-")
    assert len(claims) == 2
    for claim in claims.values():
        assert claim.status.allocation is not None
        assert len(claim.status.reserved_for) == 1


def test_yaml_applied_to_the_input_is_a_consistent_cluster(run_cli: Any, cluster: str) -> None:
    docs = yaml_docs(run_cli, cluster)
    state = ClusterState.from_objects(apply([*infrastructure(), *workload()], docs))
    bound = {k[1]: p.spec.node_name for k, p in state.pods.items() if p.spec.node_name}
    assert sorted(bound) == ["a-gpu", "b-cpu", "bound", "e-named"]
    for name in ("a-gpu", "e-named"):
        node = state.nodes[bound[name]]
        mine = [
            c for c in state.claims.values() if any(r.name == name for r in c.status.reserved_for)
        ]
        assert len(mine) == 1
        assert validate_allocation(state, node, mine) == []
    assert sorted(state.exclusive.keys()) == sorted(
        (r.driver, r.pool, r.device)
        for c in state.claims.values()
        for r in (c.status.allocation.devices.results if c.status.allocation else ())
    )
    assert len(state.exclusive) == 3


def test_yaml_gives_bound_pods(run_cli: Any, cluster: str) -> None:
    objs = [decode(d) for d in yaml_docs(run_cli, cluster)]
    pods = [o for o in objs if isinstance(o, Pod)]
    assert sorted(p.metadata.name for p in pods) == ["a-gpu", "b-cpu", "e-named"]
    assert all(p.spec.node_name for p in pods)


def test_check_reports_valid(run_cli: Any, cluster: str) -> None:
    res = run_cli("schedule", "-f", cluster, "-o", "json", "--check")
    assert res.code == 0, res.err
    doc = res.json()
    assert list(doc) == ["pods", "summary", "check"]
    assert doc["check"] == {"valid": True, "problems": []}


def test_table_output(run_cli: Any, cluster: str) -> None:
    res = run_cli("schedule", "-f", cluster)
    assert res.code == 0, res.err
    assert "3 scheduled, 2 unschedulable" in res.out
    lines = res.out.splitlines()
    # kubectl's column names; a NAMESPACE column, not namespace/name.
    assert lines[1].split() == ["NAMESPACE", "NAME", "STATUS", "NODE", "DEVICES", "REASON"]
    rows = {line.split()[1]: line.split() for line in lines[2:]}
    assert set(rows) == {"a-gpu", "b-cpu", "c-huge", "d-eight", "e-named"}
    assert all(row[0] == "default" for row in rows.values())
    assert rows["c-huge"][2:4] == ["Unschedulable", "<none>"]
    assert rows["a-gpu"][2] == "Scheduled"
    assert "Insufficient cpu" in res.out


def test_wide_table_names_the_devices(run_cli: Any, cluster: str) -> None:
    res = run_cli("schedule", "-f", cluster, "-o", "wide", "--no-headers")
    assert res.code == 0, res.err
    rows = {line.split()[1]: line.split() for line in res.out.splitlines()}
    assert "NAME" not in rows and "NAMESPACE" not in res.out
    gpu = rows["a-gpu"]
    # ALLOCATED, then DRAPLAN: draplan's profile's answer ("=" when it agrees).
    assert int(gpu[4]) == len(gpu[-2].split(",")) >= 1 and "/" in gpu[-2]
    assert rows["b-cpu"][-2] == "<none>"


@pytest.mark.parametrize("fmt", ["json", "yaml", "table"])
def test_same_input_same_bytes_in_process(run_cli: Any, cluster: str, fmt: str) -> None:
    first = run_cli("schedule", "-f", cluster, "-o", fmt)
    second = run_cli("schedule", "-f", cluster, "-o", fmt)
    assert first.code == 0 and second.code == 0
    assert first.out == second.out


def test_same_input_same_bytes_across_processes(cluster: str) -> None:
    outs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [str(DRAPLAN), "schedule", "-f", cluster, "-o", "json", "--check"],
            capture_output=True,
            env=env,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout)
    assert outs[0] == outs[1]
    assert json.loads(outs[0])["check"]["valid"] is True


def test_gang_through_the_cli(run_cli: Any, tmp_path: Path) -> None:
    node = MakeNode().name("n1").capacity(cpu="2").obj()
    objs: list[KubeStruct] = [
        node,
        podgroup_v1beta1("pg", 3),
        *[MakePod().name(f"m{i}").req(cpu="1").scheduling_group("pg").obj() for i in range(3)],
    ]
    # A coscheduling PodGroup's pods go one by one under kube-scheduler: two fit.
    loose = [node, coscheduling_podgroup("pg", 3)]
    loose += [MakePod().name(f"m{i}").req(cpu="1").pod_group("pg").obj() for i in range(3)]
    doc = run_cli("schedule", "-f", write(tmp_path / "loose.yaml", loose), "-o", "json").json()
    assert (doc["summary"]["scheduled"], doc["summary"]["unschedulable"]) == (2, 1)
    path = write(tmp_path / "gang.yaml", objs)
    doc = run_cli("schedule", "-f", path, "-o", "json").json()
    assert doc["summary"] == {
        "scheduled": 0,
        "unschedulable": 3,
        "gated": 0,
        "nominated": 0,
        "preempted": 0,
    }
    assert all(p["node"] is None and p["claims"] == [] for p in doc["pods"])
    gang_reasons = [p["reason"] for p in doc["pods"] if "fit together" in p["reason"]["message"]]
    assert len(gang_reasons) == 2
    assert all(r["nodes"] == {"GangUnplaceable": 1} for r in gang_reasons)


# --- profiles ----------------------------------------------------------------------------


def spread_cluster(tmp_path: Path) -> str:
    return write(
        tmp_path / "spread.yaml",
        [
            MakeNode().name("n1").capacity(cpu="4", memory="8Gi").obj(),
            MakeNode().name("n2").capacity(cpu="4", memory="8Gi").obj(),
            MakePod().name("busy").req(cpu="2", memory="4Gi").node("n1").obj(),
            MakePod().name("p").req(cpu="1", memory="1Gi").obj(),
        ],
    )


def profile_file(tmp_path: Path, spec: dict[str, Any], kind: str = "SchedulerProfile") -> str:
    path = tmp_path / "profile.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "draplan.io/v1alpha1",
                "kind": kind,
                "metadata": {"name": "test"},
                "spec": spec,
            }
        )
    )
    return str(path)


def test_profile_changes_the_winner(run_cli: Any, tmp_path: Path) -> None:
    cluster = spread_cluster(tmp_path)
    default = run_cli("schedule", "-f", cluster, "-o", "json").json()
    # kube-scheduler's default profile spreads (LeastAllocated); draplan's packs, and the
    # document says so beside the answer.
    [pod] = default["pods"]
    assert pod["node"] == "n2"
    assert pod["draplan"] == {"node": "n1", "devices": []}
    wide = run_cli("schedule", "-f", cluster, "-o", "wide", "--no-headers").out.split()
    assert wide[3] == "n2" and wide[-1] == "n1"
    packed = run_cli("schedule", "-f", cluster, "-o", "json", "--profile", "draplan").json()
    assert packed["pods"][0]["node"] == "n1" and "draplan" not in packed["pods"][0]
    spread = profile_file(tmp_path, {"scorePlugins": [{"name": "LeastAllocated", "weight": 1}]})
    res = run_cli("schedule", "-f", cluster, "-o", "json", "--profile", spread)
    assert res.code == 0, res.err
    assert res.json()["pods"][0]["node"] == "n2"


def test_profile_disables_a_filter(run_cli: Any, tmp_path: Path) -> None:
    cluster = write(
        tmp_path / "tainted.yaml",
        [MakeNode().name("n1").taint("k", "v").obj(), MakePod().name("p").obj()],
    )
    assert run_cli("schedule", "-f", cluster, "-o", "json").json()["pods"][0]["node"] is None
    profile = profile_file(tmp_path, {"disabledPlugins": ["TaintToleration"]})
    doc = run_cli("schedule", "-f", cluster, "-o", "json", "--profile", profile).json()
    assert doc["pods"][0]["node"] == "n1"


@pytest.mark.parametrize(
    ("spec", "kind", "message"),
    [
        ({"disabledPlugins": ["NoSuchPlugin"]}, "SchedulerProfile", "unknown plugin"),
        ({"scorePlugins": [{"name": "NoSuchScore"}]}, "SchedulerProfile", "unknown score plugin"),
        ({"scorePlugins": [{"name": "LeastAllocated", "weight": -1}]}, "SchedulerProfile", ""),
        ({"deviceOrder": "random"}, "SchedulerProfile", "deviceOrder"),
        ({"fromNode": "n1"}, "NodePool", "expected kind SchedulerProfile"),
    ],
    ids=["unknown-plugin", "unknown-score", "negative-weight", "device-order", "wrong-kind"],
)
def test_bad_profile_exits_2(
    run_cli: Any, tmp_path: Path, spec: dict[str, Any], kind: str, message: str
) -> None:
    cluster = spread_cluster(tmp_path)
    res = run_cli("schedule", "-f", cluster, "--profile", profile_file(tmp_path, spec, kind))
    assert res.code == 2, (res.out, res.err)
    assert res.out == ""
    assert res.err.startswith("error: ")
    assert message in res.err
    assert "Traceback" not in res.err


def test_unknown_plugin_exits_2_through_the_entry_point(tmp_path: Path) -> None:
    cluster = spread_cluster(tmp_path)
    profile = profile_file(tmp_path, {"disabledPlugins": ["NoSuchPlugin"]})
    proc = subprocess.run(
        [str(DRAPLAN), "schedule", "-f", cluster, "--profile", profile],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "unknown plugin 'NoSuchPlugin'" in proc.stderr


def test_manifests_for_a_live_cluster(run_cli: Any, cluster: str) -> None:
    def docs(kind: str) -> list[dict[str, Any]]:
        res = run_cli("schedule", "-f", cluster, "-o", "yaml", "--manifests", kind)
        assert res.code == 0, res.err
        return list(yaml.safe_load_all(res.out))

    objects = [decode(d) for d in docs("objects")]
    # Bindings: what the scheduler posts, one per scheduled pod, to the node it chose.
    bindings = [decode(d) for d in docs("bindings")]
    assert all(isinstance(b, Binding) for b in bindings)
    assert {b.metadata.name: b.target.name for b in bindings if isinstance(b, Binding)} == {
        o.metadata.name: o.spec.node_name for o in objects if isinstance(o, Pod)
    }
    # Claim status: only what the status subresource takes, equal to the scheduled claims'.
    status = docs("claim-status")
    assert all(set(d) == {"apiVersion", "kind", "metadata", "status"} for d in status)
    assert all(set(d["metadata"]) == {"name", "namespace"} for d in status)
    full = {o.metadata.name: encode(o)["status"] for o in objects if isinstance(o, ResourceClaim)}
    assert {d["metadata"]["name"]: d["status"] for d in status} == full
    assert all(s["allocation"] and s["reservedFor"] for s in full.values())
