"""Issue 26 point 1: `why`, `scale` and `serve`'s /v1/why agree on a pod whose node selector
targets a pool with no node yet.

The cluster (written here, unlike the other fixtures): a tainted control-plane node, two
tainted system nodes, a GPU node of pool `main` with room, and the burst pool the pod selects
either as a Cluster API MachineDeployment at 0 replicas described by Cluster Autoscaler's
scale-from-zero annotations (one ResourceSlice of `gpu-<i>` devices with `type: gpu` only) or
as a NodePool whose template publishes the devices with every attribute. Where the pool can
host the pod, the verdict is WaitingForScaleUp naming it, never advice to drop the selector;
where the pod's CEL selector fails at run time on the template's devices (the
MachineDeployment's carry no `productName`), `why` says so, as `scale` does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from draplan.autoscaler.derived import derive_pools
from draplan.cluster.state import ClusterState
from draplan.serve.answers import Auditor
from draplan.sources import load_objects

DRIVER = "gpu.nvidia.com"
PRODUCT = f"device.attributes['{DRIVER}'].productName.startsWith('NVIDIA')"
Objs = list[dict[str, Any]]


def node(name: str, labels: dict[str, str], taints: list[dict[str, str]], cpu: str) -> Objs:
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": cpu, "memory": "256Gi", "pods": "110"}},
        }
    ]


def gpu_slice(node_name: str, n: int) -> dict[str, Any]:
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100"}},
        }
        for i in range(n)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def cluster(selector: str = "") -> Objs:
    control = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    system = [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}]
    request: dict[str, Any] = {"deviceClassName": DRIVER, "count": 2}
    if selector:
        request["selectors"] = [{"cel": {"expression": selector}}]
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
        },
        *node("cp-0", {"node-role.kubernetes.io/control-plane": ""}, control, "8"),
        *node("system-0", {"node-role": "system"}, system, "16"),
        *node("system-1", {"node-role": "system"}, system, "16"),
        *node("main-0", {"node-pool": "main"}, [], "96"),
        gpu_slice("main-0", 8),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "two-gpus", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": request}]}}},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "burst-job", "namespace": "ml"},
            "spec": {
                "nodeSelector": {"node-pool": "burst"},
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "8"}}}],
                "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}],
            },
        },
    ]


def machine_deployment() -> dict[str, Any]:
    capacity = "capacity.cluster-autoscaler.kubernetes.io/"
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineDeployment",
        "metadata": {
            "name": "burst",
            "namespace": "capi",
            "annotations": {
                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "4",
                capacity + "cpu": "96",
                capacity + "memory": "1Ti",
                capacity + "gpu-count": "8",
                capacity + "gpu-type": "nvidia.com/gpu",
                capacity + "dra-driver": DRIVER,
                capacity + "labels": "node-pool=burst",
            },
        },
        "spec": {"clusterName": "c", "replicas": 0},
    }


def node_pool() -> dict[str, Any]:
    """The same pool as a NodePool whose template publishes every attribute."""
    template_slice = gpu_slice("$NODE_NAME", 8)["spec"]
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": "burst"},
        "spec": {
            "maxNodes": 4,
            "pricePerHour": "40",
            "template": {
                "metadata": {"labels": {"node-pool": "burst"}},
                "status": {"allocatable": {"cpu": "96", "memory": "1Ti", "pods": "110"}},
            },
            "resourceSlices": [template_slice],
        },
    }


def write(tmp_path: Path, objs: Objs) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    return str(path)


def served_why(path: str) -> dict[str, Any]:
    """`serve`'s /v1/why body for the file, with the pools it derives as `why` does."""
    state = ClusterState.from_objects(load_objects([path]))
    if not state.node_pools:
        state.node_pools.update(derive_pools(state).pools)
    answers = Auditor().audit(state, 1)
    body: dict[str, Any] = json.loads(answers.bodies["why"])
    return body


@pytest.mark.parametrize("pool", [machine_deployment, node_pool])
def test_a_pool_that_can_host_the_pod_is_what_it_waits_for(
    tmp_path: Path, run_cli: Any, pool: Any
) -> None:
    path = write(tmp_path, [*cluster(), pool()])
    why = run_cli("why", "-f", path, "-o", "json")
    assert why.code == 0, why.err
    (verdict,) = json.loads(why.out)["pods"]
    assert verdict["category"] == "WaitingForScaleUp", verdict
    assert verdict["evidence"]["pool"] == "burst" and verdict["fix"]["pool"] == "burst"
    assert "pool burst" in verdict["message"]
    # main-0 has room but the pod's selector is its owner's choice: never relaxed.
    assert "relax" not in json.dumps(verdict)

    scale = run_cli("scale", "-f", path, "-o", "json")
    assert scale.code == 0, scale.err
    added = {o["pool"]: o for o in json.loads(scale.out)["scaleUp"]}
    assert list(added) == ["burst"] and added["burst"]["pods"] == ["ml/burst-job"]
    assert added["burst"]["add"] == verdict["fix"]["add"] == 1

    assert served_why(path)["pods"] == [verdict]


def test_a_template_its_selector_cannot_be_evaluated_on_is_said_so(
    tmp_path: Path, run_cli: Any
) -> None:
    # main-0's devices carry productName; CA's scale-from-zero devices do not.
    path = write(tmp_path, [*cluster(PRODUCT), machine_deployment()])
    why = run_cli("why", "-f", path, "-o", "json")
    (verdict,) = json.loads(why.out)["pods"]
    assert verdict["category"] == "NoPoolCanFit", verdict
    assert verdict["evidence"]["templateErrors"] == ["burst"]
    assert "pool burst's nodes cannot be evaluated" in verdict["message"]
    assert "CEL runtime error" in verdict["message"] and "productName" in verdict["message"]
    assert "relax" not in json.dumps(verdict)

    scale = json.loads(run_cli("scale", "-f", path, "-o", "json").out)
    assert scale["scaleUp"] == []
    (blocked,) = scale["notTriggerScaleUp"]
    # The same error in scale's NotTriggerScaleUp and in why's evidence.
    assert blocked["nodeGroups"]["burst"] == verdict["evidence"]["pools"]["burst"]
    assert served_why(path)["pods"] == [verdict]


def test_the_same_selector_on_nodes_only_names_no_relaxation(tmp_path: Path, run_cli: Any) -> None:
    """Without the pool, no node the selector admits exists: NodeConstraints, and the advice
    is nodes it admits (unverified), not dropping the selector."""
    path = write(tmp_path, cluster())
    (verdict,) = json.loads(run_cli("why", "-f", path, "-o", "json").out)["pods"]
    assert verdict["category"] == "NodeConstraints", verdict
    assert verdict["fix"] == {
        "action": "add nodes that the pod's node selector and affinity admit",
        "verified": False,
    }
    assert "main-0" in verdict["evidence"]["excludedNodes"]
