"""`schedule` shows the claim kube-scheduler makes for extended resources backed by DRA
(KEP-5004: `<pod>-extended-resources-<suffix>`, its allocation, the pod's
status.extendedResourceClaimStatus) and counts its devices, and those of `allocationMode: All`
claims, as allocated: on TPU hosts, one served by a device plugin and two by the DRA driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

TPU = "google.com/tpu"
TAINT = {"key": TPU, "value": "present", "effect": "NoSchedule"}
TOLERATE = [{"key": TPU, "operator": "Exists", "effect": "NoSchedule"}]


def _host(name: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    alloc = {"cpu": "224", "memory": "384Gi", "pods": "110", **(extra or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"taints": [TAINT]},
        "status": {"capacity": alloc, "allocatable": alloc},
    }


def _chips(node: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-tpu.google.com-x8k2p"},
        "spec": {
            "driver": "tpu.google.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"tpu-{c}",
                    "attributes": {
                        "tpuType": {"string": "v5litepod"},
                        "resource.kubernetes.io/numaNode": {"int": c // 4},
                    },
                }
                for c in range(8)
            ],
        },
    }


def _pod(name: str, requests: dict[str, str], claims: list[dict[str, str]] | None = None) -> Any:
    container: dict[str, Any] = {"name": "jax", "resources": {"requests": requests}}
    spec: dict[str, Any] = {"containers": [container], "tolerations": TOLERATE}
    if claims:
        container["resources"]["claims"] = [{"name": c["name"]} for c in claims]
        spec["resourceClaims"] = claims
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "tpu"},
        "spec": spec,
    }


def _cluster(tmp_path: Path) -> str:
    objects = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "tpu.google.com"},
            "spec": {
                "selectors": [{"cel": {"expression": "device.driver == 'tpu.google.com'"}}],
                "extendedResourceName": TPU,
            },
        },
        # A device-plugin host whose 4 chips a running pod holds: the probe cannot go there.
        _host("v6e-host", {TPU: "4"}),
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "busy", "namespace": "tpu"},
            "spec": {
                "nodeName": "v6e-host",
                "containers": [{"name": "jax", "resources": {"requests": {TPU: "4"}}}],
            },
            "status": {"phase": "Running"},
        },
        _host("v5e-a"),
        _chips("v5e-a"),
        _host("v5e-b"),
        _chips("v5e-b"),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "whole-host", "namespace": "tpu"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "chips",
                                "exactly": {
                                    "deviceClassName": "tpu.google.com",
                                    "allocationMode": "All",
                                },
                            }
                        ]
                    }
                }
            },
        },
        _pod("whole", {"cpu": "8"}, [{"name": "tpu", "resourceClaimTemplateName": "whole-host"}]),
        _pod("probe", {"cpu": "8", "memory": "32Gi", TPU: "4"}),
    ]
    path = tmp_path / "tpu.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def test_the_special_claim_is_shown_and_counted(run_cli: Any, tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    doc = run_cli("schedule", "-f", cluster, "-o", "json").json()
    pods = {p["name"]: p for p in doc["pods"]}
    probe, whole = pods["probe"], pods["whole"]
    assert probe["node"] in ("v5e-a", "v5e-b") and whole["node"] in ("v5e-a", "v5e-b")
    assert probe["node"] != whole["node"]  # the All claim takes every chip of its host
    (special,) = probe["claims"]
    meta = special["metadata"]
    assert meta["name"].startswith("probe-extended-resources-")
    assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert meta["ownerReferences"][0]["name"] == "probe"
    (request,) = special["spec"]["devices"]["requests"]
    results = special["status"]["allocation"]["devices"]["results"]
    assert [r["request"] for r in results] == [request["name"]] * 4
    assert {r["pool"] for r in results} == {probe["node"]}
    (claim,) = whole["claims"]
    assert len(claim["status"]["allocation"]["devices"]["results"]) == 8

    table = run_cli("schedule", "-f", cluster).out.splitlines()
    devices = {line.split()[1]: line.split()[4] for line in table[2:]}
    assert devices == {"probe": "4", "whole": "8"}

    listed = list(yaml.safe_load_all(run_cli("schedule", "-f", cluster, "-o", "yaml").out))
    pod = next(o for o in listed if o["kind"] == "Pod" and o["metadata"]["name"] == "probe")
    status = pod["status"]["extendedResourceClaimStatus"]
    assert status == {
        "requestMappings": [
            {"containerName": "jax", "resourceName": TPU, "requestName": request["name"]}
        ],
        "resourceClaimName": meta["name"],
    }
    assert any(
        o["kind"] == "ResourceClaim" and o["metadata"]["name"] == meta["name"] for o in listed
    )


def test_scheduled_output_reloads_with_the_chips_held(run_cli: Any, tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    placed = list(yaml.safe_load_all(run_cli("schedule", "-f", cluster, "-o", "yaml").out))
    # The scheduled pods and their claims in place of the pending ones: the probe's 4 chips
    # and the whole host's 8 are in use, as on the cluster once kube-scheduler bound them.
    kept = [o for o in yaml.safe_load_all(Path(cluster).read_text()) if o["kind"] != "Pod"]
    merged = tmp_path / "merged.yaml"
    busy = next(o for o in yaml.safe_load_all(Path(cluster).read_text()) if o["kind"] == "Pod")
    merged.write_text(yaml.safe_dump_all([*kept, busy, *placed]))
    again = run_cli("schedule", "-f", str(merged), "-o", "json").json()
    assert again["summary"]["scheduled"] == again["summary"]["unschedulable"] == 0
    metrics = run_cli("metrics", "-f", str(merged), "-o", "json").json()
    in_use = sorted(p["gpusInUse"] for name, p in metrics["resourcePools"].items() if "v5e" in name)
    assert in_use == [4, 8]


def test_why_counts_the_devices_such_pods_ask_for(run_cli: Any, tmp_path: Path) -> None:
    # `google.com/tpu: 4` served by the DRA driver is 4 devices; `allocationMode: All` is as
    # many as a host has that its class selects (8), not 1.
    out = run_cli("why", "-f", _cluster(tmp_path), "-o", "wide").out.splitlines()
    devices = {line.split()[1]: line.split()[2] for line in out if line.startswith("tpu ")}
    assert devices == {"probe": "4", "whole": "8"}
