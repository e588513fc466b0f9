"""`draplan migrate --check`: the original and the migrated pods on the real scheduler."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from draplan.migrate import migrate
from draplan.migrate.check import CheckRow
from draplan.migrate.scheduled import scheduler_check

NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "gpu-a", "labels": {"kubernetes.io/hostname": "gpu-a"}},
    "status": {
        "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "4"}
    },
}
CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
}
SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "gpu-a-gpus"},
    "spec": {
        "driver": "gpu.nvidia.com",
        "nodeName": "gpu-a",
        "pool": {"name": "gpu-a", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {"name": f"gpu-{i}", "attributes": {"numa": {"int": i // 2}}} for i in range(4)
        ],
    },
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "trainer", "namespace": "default"},
    "spec": {
        "containers": [
            {"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 2}}}
        ]
    },
}


def _check(run_cli: Any, tmp_path: Path, cluster: list[dict[str, Any]]) -> str:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(cluster))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(POD))
    out = run_cli(
        "migrate", "-f", str(tmp_path / "pod.yaml"), "-f", str(tmp_path / "cluster.yaml"), "--check"
    )
    assert out.code == 0, out.err
    return str(out.out)


def test_migrated_pod_still_fits_on_a_dra_cluster(run_cli: Any, tmp_path: Path) -> None:
    text = _check(run_cli, tmp_path, [NODE, CLASS, SLICE])
    check = " ".join(text[text.index("check") :].split())
    assert check.count("fits gpu-a") == 2
    assert "cannot fit" not in check


def test_migrated_pod_that_cannot_fit_any_more_gets_the_auditors_reason(
    run_cli: Any, tmp_path: Path
) -> None:
    # The node still serves GPUs through the device plugin only: no ResourceSlice.
    text = _check(run_cli, tmp_path, [NODE, CLASS])
    flat = " ".join(text.split())
    assert "fits gpu-a" in flat
    assert "cannot fit any more" in flat
    assert "NoMatchingDevice" in flat


def _rows(*paths: Path) -> dict[str, CheckRow]:
    result = migrate([str(p) for p in paths], check=scheduler_check)
    return {row.site: row for row in result.checks}


RUNNING_CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "busy-gpus", "namespace": "default"},
    "spec": {
        "devices": {
            "requests": [
                {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}
            ]
        }
    },
    "status": {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "g", "driver": "gpu.nvidia.com", "pool": "gpu-a", "device": d}
                    for d in ("gpu-0", "gpu-1")
                ]
            }
        },
        "reservedFor": [{"resource": "pods", "name": "busy", "uid": "u-busy"}],
    },
}
RUNNING_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "busy", "namespace": "default", "uid": "u-busy"},
    "spec": {
        "nodeName": "gpu-a",
        "containers": [{"name": "c", "resources": {"claims": [{"name": "g"}]}}],
        "resourceClaims": [{"name": "g", "resourceClaimName": "busy-gpus"}],
    },
    "status": {"phase": "Running"},
}


def test_check_counts_devices_already_allocated(tmp_path: Path) -> None:
    # The trainer asks 2 GPUs; a running pod holds 2 of the node's 4: one replica fits, and
    # a 2-replica trainer fits only once, not twice on the 2 free GPUs plus 2 busy ones.
    pod = {**POD, "metadata": {"name": "trainer", "namespace": "default"}}
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "trainers", "namespace": "default"},
        "spec": {"replicas": 2, "template": {"spec": POD["spec"]}},
    }
    (tmp_path / "cluster.yaml").write_text(
        yaml.safe_dump_all([NODE, CLASS, SLICE, RUNNING_CLAIM, RUNNING_POD])
    )
    (tmp_path / "work.yaml").write_text(yaml.safe_dump_all([pod, deploy]))
    rows = _rows(tmp_path / "work.yaml", tmp_path / "cluster.yaml")
    assert (rows["Pod default/trainer"].before, rows["Pod default/trainer"].after) == (
        "fits gpu-a",
        "fits gpu-a",
    )
    trainers = rows["Deployment default/trainers"]
    # The device plugin's count: the running pod holds no nvidia.com/gpu, so both fit before.
    assert trainers.before == "fits 2 replicas: gpu-a x2"
    assert trainers.after == "fits 1 of 2 replicas: gpu-a (fewer than the 2 before)"
    assert trainers.reason  # the auditor's word on the replica left out


REALISTIC = Path(__file__).parent / "data" / "realistic" / "cluster.yaml"


def _deployment(replicas: int, gpus: int) -> dict[str, Any]:
    spec = {
        "containers": [
            {
                "name": "server",
                "image": "vllm",
                "resources": {
                    "requests": {"cpu": "8", "memory": "32Gi"},
                    "limits": {"nvidia.com/gpu": gpus},
                },
            }
        ]
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "llm", "namespace": "serving"},
        "spec": {"replicas": replicas, "template": {"spec": spec}},
    }


def _realistic(tmp_path: Path, doc: dict[str, Any], cluster: Path) -> CheckRow:
    path = tmp_path / "llm.yaml"
    path.write_text(yaml.safe_dump(doc))
    return _rows(path, cluster)["Deployment serving/llm"]


def test_every_replica_checked_against_the_realistic_dump(tmp_path: Path) -> None:
    row = _realistic(tmp_path, _deployment(3, 2), REALISTIC)
    # The dump's nodes offer GPUs only through DRA: the device-plugin pod fits nowhere.
    assert row.before.startswith("cannot fit (")
    # 2 H100s are free on gpu-h100-a and 3 on gpu-h100-b: two 2-GPU replicas fit, not three;
    # the first goes to gpu-h100-b, whose cpu and memory are less used (LeastAllocated).
    assert row.after == "fits 2 of 3 replicas: gpu-h100-b, gpu-h100-a"
    assert row.reason


def test_four_gpus_do_not_fit_where_two_are_free(tmp_path: Path) -> None:
    row = _realistic(tmp_path, _deployment(1, 4), REALISTIC)
    assert row.after == "cannot fit"
    # With nothing running (the dump without its pods and claims) it does fit.
    items = yaml.safe_load(REALISTIC.read_text())["items"]
    idle = [i for i in items if i["kind"] not in ("Pod", "ResourceClaim")]
    empty = tmp_path / "idle.yaml"
    empty.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": idle}))
    assert _realistic(tmp_path, _deployment(1, 4), empty).after == "fits gpu-h100-a"


def test_check_reads_the_feature_gates(run_cli: Any, tmp_path: Path) -> None:
    # The check runs the scheduler, so it models the release and gates asked for.
    _check(run_cli, tmp_path, [NODE, CLASS, SLICE])
    files = ["-f", str(tmp_path / "pod.yaml"), "-f", str(tmp_path / "cluster.yaml")]
    res = run_cli("migrate", *files, "--check", "--feature-gates", "NoSuchGate=true")
    assert res.code == 2 and "NoSuchGate" in res.err
