"""`migrate` on a dump as kubectl writes it (issue 26): running Pods and objects a controller
owns are not rewritten (a Pod's spec cannot change; the controller's template is what to
migrate) but listed as made again; tables never wrap; `--check` speaks in quantities."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def _template(hugepages: str = "", cpu: str = "8") -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": "32Gi", "nvidia.com/gpu": "1"}
    limits = {"nvidia.com/gpu": "1"}
    if hugepages:
        requests["hugepages-2Mi"] = limits["hugepages-2Mi"] = hugepages
        limits["memory"] = requests["memory"]
    return {
        "metadata": {"labels": {"app": "asr"}},
        "spec": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "containers": [
                {
                    "name": "triton",
                    "image": "nvcr.io/nvidia/tritonserver:25.09-py3",
                    "resources": {"requests": requests, "limits": limits},
                }
            ],
        },
    }


def _dump(hugepages: str = "", replicas: int = 1, cpu: str = "8") -> dict[str, Any]:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ip-10-0-1-7.ec2.internal", "uid": "n-1"},
        "spec": {"taints": [GPU_TAINT]},
        "status": {
            "allocatable": {
                "cpu": "64",
                "memory": "512Gi",
                "pods": "110",
                "hugepages-2Mi": "9800Mi",
            }
        },
    }
    slice_ = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "ip-10-0-1-7.ec2.internal-gpu.nvidia.com-x2k4p"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "ip-10-0-1-7.ec2.internal",
            "pool": {"name": "ip-10-0-1-7.ec2.internal", "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}}} for i in range(4)
            ],
        },
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "asr", "namespace": "inference", "uid": "d-1", "generation": 2},
        "spec": {"replicas": replicas, "template": _template(hugepages, cpu)},
        "status": {"replicas": 1},
    }
    rs_owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "asr", "uid": "d-1"}
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "asr-7d9c8b6f5",
            "namespace": "inference",
            "uid": "rs-1",
            "ownerReferences": [{**rs_owner, "controller": True}],
        },
        "spec": {"replicas": 1, "template": _template(hugepages)},
    }
    pod_owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "asr-7d9c8b6f5"}
    owned = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "asr-7d9c8b6f5-xk2lp",
            "namespace": "inference",
            "uid": "p-1",
            "resourceVersion": "812",
            "ownerReferences": [{**pod_owner, "uid": "rs-1", "controller": True}],
        },
        "spec": {**_template(hugepages)["spec"], "nodeName": "ip-10-0-1-7.ec2.internal"},
        "status": {"phase": "Running"},
    }
    bare = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "cuda-smoke", "namespace": "batch", "uid": "p-2"},
        "spec": _template()["spec"],
        "status": {"phase": "Pending"},
    }
    # A node without the device plugin: nvidia.com/gpu is served through DRA (KEP-5004).
    gpu_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {
            "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
            "extendedResourceName": "nvidia.com/gpu",
        },
    }
    items = [node, slice_, gpu_class, deployment, replica_set, owned, bare]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _write(tmp_path: Path, doc: dict[str, Any]) -> str:
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=True))
    return str(path)


def test_only_workload_templates_are_rewritten(run_cli: Any, tmp_path: Path) -> None:
    path = _write(tmp_path, _dump())
    diff = run_cli("migrate", "-f", path, "-o", "diff")
    assert diff.code == 0, diff.err
    after = yaml.safe_load(run_cli("migrate", "-f", path, "-o", "yaml").out)
    by_kind = {(i["kind"], i["metadata"]["name"]): i for i in after["items"]}
    deployment = by_kind[("Deployment", "asr")]["spec"]["template"]["spec"]
    resources = deployment["containers"][0]["resources"]
    assert deployment["resourceClaims"] and "nvidia.com/gpu" not in str(resources)
    before = _dump()["items"]
    for kind, name in (
        ("ReplicaSet", "asr-7d9c8b6f5"),
        ("Pod", "asr-7d9c8b6f5-xk2lp"),
        ("Pod", "cuda-smoke"),
    ):
        original = next(i for i in before if (i["kind"], i["metadata"]["name"]) == (kind, name))
        assert by_kind[(kind, name)] == original, name
    table = run_cli("migrate", "-f", path, "-o", "wide").out
    made_again = {
        line.split()[2]: line
        for line in table.splitlines()
        if line.startswith(f"{path}: ") and "recreate" in line
    }
    assert set(made_again) == {
        "inference/asr-7d9c8b6f5",
        "inference/asr-7d9c8b6f5-xk2lp",
        "batch/cuda-smoke",
    }
    assert "from its controller Deployment inference/asr" in made_again["inference/asr-7d9c8b6f5"]
    assert (
        "from its controller ReplicaSet inference/asr-7d9c8b6f5"
        in made_again["inference/asr-7d9c8b6f5-xk2lp"]
    )
    assert "from its migrated manifest" in made_again["batch/cuda-smoke"]


def test_tables_never_wrap(run_cli: Any, tmp_path: Path) -> None:
    path = _write(tmp_path, _dump())
    for output in ("table", "wide"):
        out = run_cli("migrate", "-f", path, "-o", output).out.splitlines()
        # Titles and headers, then one line per row: the three made-again objects, the one
        # migrated template and its ResourceClaimTemplate.
        rows = [line for line in out if "nvidia.com/gpu" in line or "gpu.nvidia.com" in line]
        assert len(rows) == 5, out
        assert len(out) == 5 + 3 * 2  # and three tables' titles and headers
        assert ("…" in "".join(out)) is (output == "table")


def test_check_speaks_in_quantities(run_cli: Any, tmp_path: Path) -> None:
    # Three replicas of 4000Mi of 2 MiB huge pages on a node with 9800Mi, 4000Mi of them held
    # by the running replica: one more fits.
    path = _write(tmp_path, _dump(hugepages="4000Mi", replicas=3))
    out = run_cli("migrate", "-f", path, "--check", "-o", "wide")
    assert out.code == 0, out.err
    (row,) = [line for line in out.out.splitlines() if line.startswith("Deployment inference/asr")]
    assert "fits 1 of 3 replicas" in row
    assert "hugepages-2Mi" in row and "Gi hugepages-2Mi" in row
    assert "e+" not in row


def test_an_extended_resource_served_by_dra_is_no_node_resource(
    run_cli: Any, tmp_path: Path
) -> None:
    # 100 cpu fit on no node; the node's 4 GPUs serve nvidia.com/gpu through DRA, so the
    # reason names the cpu alone, never "0 nvidia.com/gpu free".
    path = _write(tmp_path, _dump(cpu="100"))
    out = run_cli("migrate", "-f", path, "--check", "-o", "wide")
    assert out.code == 0, out.err
    (row,) = [line for line in out.out.splitlines() if line.startswith("Deployment inference/asr")]
    assert "cannot fit (CapacityExhausted" in row and "cpu free of 100 cpu needed" in row
    assert "nvidia.com/gpu free" not in row
