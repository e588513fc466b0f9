"""`draplan migrate --check`: the original and the migrated pods on the real scheduler."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

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
