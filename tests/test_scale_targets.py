"""`scale -o yaml --target ...` (issue 17, point 3): ProvisioningRequests and PodTemplates as
Cluster Autoscaler's ProvisioningRequest controller accepts them (checked against the CRD's
schema in tests/data/provisioning and, for PodTemplates, Kubernetes 1.37's OpenAPI), Karpenter
NodeClaims, and the NotTriggerScaleUp reasons of `-o wide`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from draplan.api.autoscaling import BEST_EFFORT_ATOMIC, CHECK_CAPACITY, ProvisioningRequest
from draplan.api.codec import decode
from draplan.api.core_v1 import Pod
from draplan.api.karpenter import NodeClaim
from draplan.autoscaler import Autoscaler
from draplan.autoscaler.derived import derive_pools
from draplan.autoscaler.manifests import ca_manifests
from draplan.cluster.state import ClusterState, key_of
from draplan.sources.files import load_files
from scale_scenarios import scenario_gang, write

HERE = Path(__file__).parent / "data"
DUMP = HERE / "realistic"
GROUPS = HERE / "node-groups"
PRICES = str(GROUPS / "prices.yaml")
SCHEMA = json.loads((HERE / "provisioning" / "provisioningrequest-v1.schema.json").read_text())
PLANNED = ["research/finetune-numa-0", "research/train-8-0"]


def _docs(run_cli: Any, *args: str) -> list[dict[str, Any]]:
    out = run_cli("scale", *args, "-o", "yaml")
    assert out.code == 0, out.err
    return [d for d in yaml.safe_load_all(out.out) if d is not None]


def _check_ca(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every request passes the CRD's schema and names PodTemplates emitted beside it, in its
    namespace; every PodTemplate is a valid 1.37 v1 PodTemplate. Returns the requests."""
    templates = {
        (d["metadata"]["namespace"], d["metadata"]["name"]): d
        for d in docs
        if d["kind"] == "PodTemplate"
    }
    for doc in templates.values():
        kubernetes_validate.validate(doc, "1.37.0", strict=True)
    requests = [d for d in docs if d["kind"] == "ProvisioningRequest"]
    for pr in requests:
        jsonschema.validate(pr, SCHEMA)
        assert isinstance(decode(pr), ProvisioningRequest)
        ns = pr["metadata"]["namespace"]
        for pod_set in pr["spec"]["podSets"]:
            assert (ns, pod_set["podTemplateRef"]["name"]) in templates
    assert {d["kind"] for d in docs} <= {"PodTemplate", "ProvisioningRequest"}
    return requests


def test_ca_requests_for_the_plan_pass_the_crd_schema(run_cli: Any) -> None:
    # The EKS dump's groups are Cluster API MachinePools: Cluster Autoscaler grows them.
    docs = _docs(run_cli, "-f", str(GROUPS / "eks-cluster.yaml"), "--prices", PRICES)
    requests = {pr["metadata"]["name"]: pr for pr in _check_ca(docs)}
    pr = requests["draplan-gpu-h100"]
    assert pr["spec"]["provisioningClassName"] == BEST_EFFORT_ATOMIC
    # The plan moves embed-0 for finetune-numa-0 (a one-pod move) instead of buying its node.
    assert pr["metadata"]["annotations"]["draplan.io/pods"] == "research/train-8-0"
    assert sum(s["count"] for s in pr["spec"]["podSets"]) == 1
    # Pinned to the pool the plan chose, so CA's expander cannot pick another group.
    names = {s["podTemplateRef"]["name"] for s in pr["spec"]["podSets"]}
    for doc in docs:
        if doc["kind"] == "PodTemplate" and doc["metadata"]["name"] in names:
            selector = doc["template"]["spec"]["nodeSelector"]
            assert selector == {"eks.amazonaws.com/nodegroup": "gpu-h100"}
            assert "nodeName" not in doc["template"]["spec"]


def test_check_capacity_asks_first(run_cli: Any) -> None:
    docs = _docs(run_cli, "-f", str(GROUPS / "eks-cluster.yaml"), "--check-capacity")
    assert {p["spec"]["provisioningClassName"] for p in _check_ca(docs)} == {CHECK_CAPACITY}


def test_a_gang_is_one_atomic_request(run_cli: Any, tmp_path: Path) -> None:
    docs = _docs(run_cli, "-f", write(tmp_path, scenario_gang(per_domain=4)))
    [pr] = _check_ca(docs)
    assert pr["spec"]["provisioningClassName"] == BEST_EFFORT_ATOMIC
    # Four identical members: one template, count 4.
    assert [s["count"] for s in pr["spec"]["podSets"]] == [4]


def test_eks_dump_asks_each_group_for_its_nodes(run_cli: Any) -> None:
    docs = _docs(run_cli, "-f", str(GROUPS / "eks-cluster.yaml"), "--prices", PRICES)
    requests = _check_ca(docs)
    pins = {
        pr["metadata"]["name"]: {
            json.dumps(
                next(
                    d
                    for d in docs
                    if d["kind"] == "PodTemplate"
                    and d["metadata"]["name"] == s["podTemplateRef"]["name"]
                )["template"]["spec"].get("nodeSelector", {}),
                sort_keys=True,
            )
            for s in pr["spec"]["podSets"]
        }
        for pr in requests
    }
    assert pins == {
        "draplan-gpu-h100": {'{"eks.amazonaws.com/nodegroup": "gpu-h100"}'},
        # The empty group's template carries the label its annotations give.
        "draplan-gpu-l40s": {
            '{"eks.amazonaws.com/nodegroup": "gpu-l40s", '
            '"node.kubernetes.io/instance-type": "g6e.12xlarge"}'
        },
    }


def test_emitted_requests_are_provisioned_by_draplans_own_ca_model() -> None:
    """Replayed as CA would see them: the planned pods replaced by the request, its capacity
    is provisioned (atomically, from the pool the templates pin)."""
    objects = load_files([str(DUMP / "cluster.yaml")])
    state = ClusterState.from_objects(objects)
    state.node_pools.update(derive_pools(state).pools)
    plan = Autoscaler().plan(state, moves=False)
    emitted = [decode(d) for d in ca_manifests(plan, state)]
    kept = [o for o, _ in objects if not (isinstance(o, Pod) and "/".join(key_of(o)) in PLANNED)]
    again = ClusterState.from_objects([*kept, *emitted])
    again.node_pools.update(derive_pools(again).pools)
    replay = Autoscaler().plan(again, moves=False)
    [(pr, conditions)] = replay.provisioning
    assert pr.metadata.name == "draplan-h100"
    assert {c.type: (c.status, c.reason) for c in conditions}["Provisioned"] == (
        "True",
        "CapacityIsProvisioned",
    )
    assert [(o.pool.metadata.name, len(o.nodes)) for o in replay.scale_up] == [("h100", 2)]


@pytest.mark.parametrize(
    "broken",
    [
        {"podSets": [{"podTemplateRef": {"name": "t"}, "count": 0}]},
        {"podSets": []},
        {"podSets": [{"podTemplateRef": {"name": "T_1"}, "count": 1}]},
        {"provisioningClassName": "atomic-scale-up.kubernetes.io"},
        {"parameters": {"ValidUntilSeconds": 600}},
    ],
    ids=["count-0", "no-pod-sets", "bad-template-name", "unknown-class", "non-string-parameter"],
)
def test_the_schema_rejects_what_the_crd_rejects(broken: dict[str, Any]) -> None:
    """The check above can fail: the schema turns down requests the API server would."""
    pr: dict[str, Any] = {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": {"name": "r", "namespace": "ns"},
        "spec": {
            "podSets": [{"podTemplateRef": {"name": "t"}, "count": 1}],
            "provisioningClassName": BEST_EFFORT_ATOMIC,
        },
    }
    jsonschema.validate(pr, SCHEMA)
    pr["spec"] = {**pr["spec"], **broken}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(pr, SCHEMA)


# --- Karpenter ---------------------------------------------------------------------------------


def test_karpenter_target_writes_a_node_claim_per_new_node(run_cli: Any) -> None:
    docs = _docs(
        run_cli,
        "-f",
        str(DUMP / "cluster.yaml"),
        "-f",
        str(GROUPS / "karpenter-nodepools.yaml"),
        "--target",
        "karpenter",
    )
    [claim] = [decode(d) for d in docs]
    assert isinstance(claim, NodeClaim)
    assert claim.metadata.labels["karpenter.sh/nodepool"] == "h100"
    assert (claim.spec.node_class_ref.kind, claim.spec.node_class_ref.name) == (
        "EC2NodeClass",
        "gpu",
    )
    reqs = {r.key: r.values for r in claim.spec.requirements}
    assert reqs["node.kubernetes.io/instance-type"] == ("p5.48xlarge",)
    assert reqs["karpenter.sh/capacity-type"] == ("on-demand",)
    assert str(claim.spec.resources.requests["pods"]) == "1"


@pytest.mark.parametrize("target", ["auto", "karpenter", "ca"])
def test_a_karpenter_pool_without_its_node_pool_is_refused_alone(run_cli: Any, target: str) -> None:
    # The realistic dump's nodes are Karpenter's (karpenter.sh/nodepool): no ProvisioningRequest
    # can grow them, and a NodeClaim needs their NodePool's nodeClassRef.
    out = run_cli("scale", "-f", str(DUMP / "cluster.yaml"), "--target", target, "-o", "yaml")
    assert out.code == 0, out.err
    [line] = [x for x in out.err.splitlines() if x.startswith("warning:")]
    assert line.startswith("warning: pool h100 (label karpenter.sh/nodepool)")
    if target == "ca":
        assert "grown by Karpenter, not Cluster Autoscaler" in line
    else:
        assert "the karpenter.sh/v1 NodePool h100" in line and "not in the input" in line
    assert not [d for d in yaml.safe_load_all(out.out) if d]


# --- NotTriggerScaleUp --------------------------------------------------------------------------


def test_wide_output_gives_each_groups_reason_as_ca_does(run_cli: Any) -> None:
    out = run_cli("scale", "-f", str(DUMP / "cluster.yaml"), "-o", "wide").out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "NotTriggerScaleUp" in line)
    rows = {
        tuple(line.split(None, 3)) for line in lines[start + 2 :] if line.startswith("serving ")
    }
    assert rows == {
        (
            "serving",
            "infer-l4-0",
            "a100",
            "node(s) had untolerated taint(s)",
        ),
        ("serving", "infer-l4-0", "h100", "cannot allocate all claims"),
        ("serving", "infer-l4-0", "l4", "node(s) had untolerated taint(s)"),
    }
    doc = run_cli("scale", "-f", str(DUMP / "cluster.yaml"), "-o", "json").json()
    messages = {b["pod"]: b["message"] for b in doc["notTriggerScaleUp"]}
    assert messages["serving/infer-l4-0"] == (
        "pod didn't trigger scale-up: 1 cannot allocate all claims, "
        "2 node(s) had untolerated taint(s)"
    )


# --- Mixed autoscalers (issue 26) ----------------------------------------------------------------

MIXED = HERE / "multivendor"


def _mixed(run_cli: Any, target: str) -> tuple[list[dict[str, Any]], list[str]]:
    out = run_cli(
        "scale",
        "-f",
        str(MIXED / "cluster.yaml"),
        "--prices",
        str(MIXED / "prices.yaml"),
        "--target",
        target,
        "-o",
        "yaml",
    )
    assert out.code == 0, out.err
    warnings = [line for line in out.err.splitlines() if line.startswith("warning:")]
    return [d for d in yaml.safe_load_all(out.out) if d], warnings


def _selectors(docs: list[dict[str, Any]]) -> dict[str, list[dict[str, str]]]:
    """Each request's pool (from its name) and its templates' node selectors."""
    templates = {d["metadata"]["name"]: d for d in docs if d["kind"] == "PodTemplate"}
    return {
        pr["metadata"]["name"].removeprefix("draplan-"): [
            templates[s["podTemplateRef"]["name"]]["template"]["spec"]["nodeSelector"]
            for s in pr["spec"]["podSets"]
        ]
        for pr in docs
        if pr["kind"] == "ProvisioningRequest"
    }


def test_mixed_autoscalers_get_each_pool_in_its_own_form(run_cli: Any) -> None:
    """Cluster API groups, GKE node pools and a Karpenter NodePool in one cluster: auto writes
    ProvisioningRequests for the first two, each template pinned by a label that selects
    its own pool's nodes alone, and NodeClaims for the third."""
    docs, warnings = _mixed(run_cli, "auto")
    assert warnings == []
    _check_ca([d for d in docs if d["kind"] != "NodeClaim"])
    pins = _selectors(docs)
    own = {
        # The labels Cluster API propagates from each MachineDeployment's template.
        "atlas-cpu": {"node.cluster.x-k8s.io/pool": "cpu"},
        "atlas-gaudi3": {"node.cluster.x-k8s.io/pool": "gaudi3"},
        "atlas-gaudi3-burst": {"node.cluster.x-k8s.io/pool": "gaudi3-burst"},
        "tpu-v5e-dra": {"cloud.google.com/gke-nodepool": "tpu-v5e-dra"},
    }
    assert set(pins) == set(own)
    for pool, selectors in pins.items():
        # The pod's own selector stays; the pool's label is added to it.
        assert all(sel.items() >= own[pool].items() for sel in selectors), pool
    claims = [decode(d) for d in docs if d["kind"] == "NodeClaim"]
    assert claims and all(isinstance(c, NodeClaim) for c in claims)
    assert {c.metadata.labels["karpenter.sh/nodepool"] for c in claims} == {"gb200"}
    assert {c.spec.node_class_ref.name for c in claims} == {"gb200"}


def test_a_pool_of_another_autoscaler_is_one_line_not_a_failed_plan(run_cli: Any) -> None:
    docs, warnings = _mixed(run_cli, "karpenter")
    assert {d["kind"] for d in docs} == {"NodeClaim"}
    assert len(warnings) == 4
    assert any(
        "pool atlas-gaudi3-burst (MachineDeployment atlas-capi/atlas-gaudi3-burst)" in w
        for w in warnings
    )
    assert all("grown by Cluster Autoscaler, not Karpenter" in w for w in warnings)
    docs, warnings = _mixed(run_cli, "ca")
    assert "NodeClaim" not in {d["kind"] for d in docs} and set(_selectors(docs)) == {
        "atlas-cpu",
        "atlas-gaudi3",
        "atlas-gaudi3-burst",
        "tpu-v5e-dra",
    }
    [line] = warnings
    assert line.startswith("warning: pool gb200 (Karpenter NodePool gb200) is grown by Karpenter")
