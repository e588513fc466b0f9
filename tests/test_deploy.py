"""deploy/: every manifest valid for Kubernetes 1.37, kustomizations complete, RBAC exactly the
kinds draplan reads, and every metric the dashboard and the alerts use is one /metrics has."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from draplan.serve.static import StaticClusterModel
from draplan.sources.live import RESOURCES
from test_serve import realistic_state, scrape, serving

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
KUSTOMIZATIONS = [DEPLOY / "base", DEPLOY / "overlays" / "events"]
K8S_VERSION = "1.37.0"
CRD_KINDS = {"ServiceMonitor", "PrometheusRule"}


def manifests(directory: Path) -> list[tuple[Path, dict[str, Any]]]:
    kust = yaml.safe_load((directory / "kustomization.yaml").read_text())
    out = []
    for name in kust.get("resources", []):
        path = directory / name
        if path.is_file():
            out += [(path, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return out


def every_manifest() -> list[tuple[Path, dict[str, Any]]]:
    return [m for d in KUSTOMIZATIONS for m in manifests(d)]


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda d: d.name)
def test_kustomization_lists_every_file(directory: Path) -> None:
    kust = yaml.safe_load((directory / "kustomization.yaml").read_text())
    listed = {r for r in kust.get("resources", []) if not r.startswith("..")}
    listed |= {p["path"] for p in kust.get("patches", [])}
    present = {p.name for p in directory.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl kustomize not installed")
@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda d: d.name)
def test_kustomize_builds_valid_objects(directory: Path) -> None:
    built = subprocess.run(
        ["kubectl", "kustomize", str(directory)], capture_output=True, text=True, check=True
    ).stdout
    docs = [d for d in yaml.safe_load_all(built) if d]
    assert {d["kind"] for d in docs} >= {"Deployment", "ClusterRole", "ServiceMonitor"}
    for doc in docs:
        check(doc)
    container = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert ("--events" in container["args"]) == (directory.name == "events")
    assert container["image"] == "draplan:0.1.0"


def check(doc: dict[str, Any]) -> None:
    if doc["kind"] in CRD_KINDS:
        check_monitoring(doc)
    else:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


@pytest.mark.parametrize("path_doc", every_manifest(), ids=lambda m: m[0].name)
def test_manifest_is_valid(path_doc: tuple[Path, dict[str, Any]]) -> None:
    check(path_doc[1])


def check_monitoring(doc: dict[str, Any]) -> None:
    """The fields prometheus-operator's CRDs (monitoring.coreos.com/v1) require, and types."""
    assert doc["apiVersion"] == "monitoring.coreos.com/v1"
    assert doc["metadata"]["name"] and isinstance(doc["spec"], dict)
    if doc["kind"] == "ServiceMonitor":
        assert set(doc["spec"]) <= {"selector", "endpoints", "namespaceSelector", "jobLabel"}
        assert isinstance(doc["spec"]["selector"]["matchLabels"], dict)
        for endpoint in doc["spec"]["endpoints"]:
            assert set(endpoint) <= {"port", "path", "interval", "scrapeTimeout", "scheme"}
            assert isinstance(endpoint["port"], str) and endpoint["path"].startswith("/")
            for key in ("interval", "scrapeTimeout"):
                assert re.fullmatch(r"\d+[smh]", endpoint.get(key, "1s"))
        return
    assert set(doc["spec"]) == {"groups"}
    for group in doc["spec"]["groups"]:
        assert isinstance(group["name"], str) and group["rules"]
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "record", "expr", "for", "labels", "annotations"}
            assert ("alert" in rule) != ("record" in rule) and isinstance(rule["expr"], str)
            assert re.fullmatch(r"\d+[smh]", rule.get("for", "0s"))


def test_cluster_role_lists_and_watches_exactly_what_draplan_reads() -> None:
    roles = {
        doc["metadata"]["name"]: doc["rules"]
        for _, doc in every_manifest()
        if doc["kind"] == "ClusterRole"
    }
    granted = {
        (group, resource): tuple(rule["verbs"])
        for rule in roles["draplan-reader"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert granted == {(r.group, r.plural): ("list", "watch") for r in RESOURCES}
    assert roles["draplan-events"] == [
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}
    ]


def test_deployment_is_locked_down() -> None:
    (deployment,) = [d for _, d in manifests(DEPLOY / "base") if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]


def used_metrics() -> dict[str, set[str]]:
    """The draplan_* names in the alerts' and the dashboard's expressions, by where."""
    names = re.compile(r"\bdraplan_[a-z_]+\b")
    rules = next(d for _, d in manifests(DEPLOY / "base") if d["kind"] == "PrometheusRule")
    alerts = {
        n for g in rules["spec"]["groups"] for r in g["rules"] for n in names.findall(r["expr"])
    }
    dashboard = json.loads((DEPLOY / "grafana" / "draplan.json").read_text())
    panels = {
        n for p in dashboard["panels"] for t in p["targets"] for n in names.findall(t["expr"])
    }
    return {"alerts": alerts, "dashboard": panels}


def test_dashboard_and_alerts_use_only_exposed_metrics() -> None:
    with serving(StaticClusterModel(realistic_state())) as served:
        served.wait_generation(1)
        exposed = set(scrape(served))
    used = used_metrics()
    assert len(used["alerts"]) >= 4 and len(used["dashboard"]) >= 12
    for where, names in used.items():
        assert names <= exposed, f"{where}: {sorted(names - exposed)} not in /metrics"
