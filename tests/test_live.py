"""The live source against a local API server (127.0.0.1 only) serving recorded responses.

tests/data/live/ holds API-server-shaped JSON by URL path: `common/` (core, scheduling,
autoscaling; scheduling.x-k8s.io is absent, so 404), `dra-v1/` (resource.k8s.io serving v1) and
`dra-v1beta1/` (the same cluster served only as v1beta1). The server pages every list by
`limit`/`continue` (two items a page), honours the pods' phase field selector, and answers 401
or 403 by bearer token, as a real API server would.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from conftest import DATA
from draplan.api.codec import encode
from draplan.api.errors import BadInput
from draplan.api.karpenter import KarpenterNodePool
from draplan.cluster.state import ClusterState
from draplan.scheduler.gangs import find_gangs
from draplan.sources import load_objects
from draplan.sources.files import load_files
from draplan.sources.kubeclient import resolve_config, server_label
from draplan.sources.kubeconvert import to_v1
from draplan.sources.kuberedact import Redactor
from draplan.sources.live import LiveOptions, read_cluster

LIVE = DATA / "live"
SECRETS = (
    "good-token-s3cr3t",
    "expired-token-s3cr3t",
    "no-pods-token-s3cr3t",
    "no-configmaps-token-s3cr3t",
    "ENV-SECRET-do-not-print",
    "LAST-APPLIED-SECRET-do-not-print",
)
PHASES_DONE = ("Succeeded", "Failed")


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


@dataclass
class FakeServer:
    """What the fake API server serves and what it was asked."""

    roots: list[Path]
    routes: dict[str, Any] = field(default_factory=dict)  # path -> document, before roots
    page: int = 2
    expire_continue_once: bool = False
    requests: list[tuple[str, str, dict[str, list[str]]]] = field(default_factory=list)
    url: str = ""

    def document(self, path: str) -> Any:
        if path in self.routes:
            return self.routes[path]
        for root in self.roots:
            file = root / (path.strip("/") + ".json")
            if file.is_file():
                return json.loads(file.read_text())
        return None

    def answer(self, method: str, target: str, token: str) -> tuple[int, Any]:
        url = urlsplit(target)
        query = parse_qs(url.query)
        self.requests.append((method, url.path, query))
        if method != "GET":
            return 405, _status(405, "MethodNotAllowed", "read-only fake")
        if not token.startswith(("good-", "no-pods-", "no-configmaps-")):
            return 401, _status(401, "Unauthorized", "Unauthorized")
        if token.startswith("no-pods-") and url.path == "/api/v1/pods":
            return 403, _status(
                403,
                "Forbidden",
                'pods is forbidden: User "system:serviceaccount:ci:reader" cannot list '
                'resource "pods" in API group "" at the cluster scope',
            )
        if token.startswith("no-configmaps-") and url.path == "/api/v1/configmaps":
            return 403, _status(403, "Forbidden", "configmaps is forbidden")
        doc = self.document(url.path)
        if doc is None:
            return 404, _status(404, "NotFound", "the server could not find the requested resource")
        if "items" not in doc:
            return 200, doc
        return self._page(doc, query)

    def _page(self, doc: dict[str, Any], query: dict[str, list[str]]) -> tuple[int, Any]:
        items = doc["items"]
        selector = query.get("fieldSelector", [""])[0]
        if "status.phase!=Succeeded" in selector:
            items = [i for i in items if i.get("status", {}).get("phase") not in PHASES_DONE]
        for term in filter(None, query.get("labelSelector", [""])[0].split(",")):
            key, _, value = term.partition("=")
            items = [i for i in items if i["metadata"].get("labels", {}).get(key) == value]
        token = query.get("continue", [""])[0]
        if token and self.expire_continue_once:
            self.expire_continue_once = False
            return 410, _status(410, "Expired", "The provided continue parameter is too old")
        start = int(token.removeprefix("page-")) if token else 0
        limit = int(query.get("limit", ["0"])[0])
        # An API server may answer with fewer items than the limit; this one always does.
        size = min(limit, self.page) if limit else len(items)
        meta: dict[str, Any] = {"resourceVersion": "5000"}
        if limit and start + size < len(items):
            meta["continue"] = f"page-{start + size}"
            if not selector:  # as upstream: no count under a field selector
                meta["remainingItemCount"] = len(items) - start - size
        return 200, {**doc, "metadata": meta, "items": items[start : start + size]}


def _handler(fake: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            token = self.headers.get("Authorization", "").removeprefix("Bearer ")
            code, doc = fake.answer(self.command, self.path, token)
            body = json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No proxy, no ambient kubeconfig or in-cluster account: traffic stays on 127.0.0.1."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("all_proxy", "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "DRAPLAN_REDACT_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[tuple[ThreadingHTTPServer, threading.Thread]] = []

    def start(*dirs: str, **kwargs: Any) -> FakeServer:
        fake = FakeServer(roots=[LIVE / d for d in dirs], **kwargs)
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
        thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
        thread.daemon = True
        thread.start()
        servers.append((httpd, thread))
        fake.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        return fake

    yield start
    for httpd, thread in servers:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _kubeconfig(tmp_path: Path, url: str, current: str = "good") -> str:
    users = {"good": "good-token-s3cr3t", "expired": "expired-token-s3cr3t"}
    users["no-pods"] = "no-pods-token-s3cr3t"
    users["no-configmaps"] = "no-configmaps-token-s3cr3t"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "local", "cluster": {"server": url}},
            {"name": "closed", "cluster": {"server": f"http://127.0.0.1:{_closed_port()}"}},
        ],
        "users": [{"name": n, "user": {"token": t}} for n, t in users.items()],
        "contexts": [{"name": n, "context": {"cluster": "local", "user": n}} for n in users]
        + [{"name": "down", "context": {"cluster": "closed", "user": "good"}}],
        "current-context": current,
    }
    path = tmp_path / f"kubeconfig-{current}"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _no_secrets(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def _one_line_error(result: Any) -> str:
    assert result.code == 2, (result.out, result.err)
    lines = [line for line in result.err.strip().splitlines() if not line.startswith("notice:")]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.err
    assert "Traceback" not in result.err
    _no_secrets(result.out, result.err)
    return str(lines[0])


# --- reading ---------------------------------------------------------------------------------


def test_lists_everything_paginated_read_only(serve: Any, run_cli: Any, tmp_path: Path) -> None:
    fake = serve("dra-v1", "common")
    result = run_cli("validate", "--kubeconfig", _kubeconfig(tmp_path, fake.url), "-o", "json")
    assert result.code == 0, result.err
    kinds = result.json()["kinds"]
    assert kinds == {
        "DeviceClass (resource.k8s.io/v1)": 2,
        "DeviceTaintRule (resource.k8s.io/v1)": 1,
        "Namespace (v1)": 1,
        "Node (v1)": 3,
        "NodePool (draplan.io/v1alpha1)": 1,  # from the labelled ConfigMap
        "Pod (v1)": 4,  # the Succeeded pod is filtered by the server
        "PodDisruptionBudget (policy/v1)": 1,
        "PodGroup (scheduling.k8s.io/v1alpha2)": 1,
        "PodTemplate (v1)": 1,
        "PriorityClass (scheduling.k8s.io/v1)": 1,
        "ProvisioningRequest (autoscaling.x-k8s.io/v1)": 1,
        "ResourceClaim (resource.k8s.io/v1)": 3,
        "ResourceClaimTemplate (resource.k8s.io/v1)": 1,
        "ResourceSlice (resource.k8s.io/v1)": 2,
        "Service (v1)": 1,
        "Workload (scheduling.k8s.io/v1alpha2)": 1,
    }
    assert result.json()["devicesPerDriver"] == {"gpu.example.com": 8}
    # An absent group is one notice line, not a failure.
    assert result.err.strip().splitlines() == [
        "notice: API group scheduling.x-k8s.io is not served: no PodGroups read",
        "notice: API group kueue.x-k8s.io is not served: no Workloads read",
    ]
    assert {method for method, _, _ in fake.requests} == {"GET"}
    lists = [(p, q) for _, p, q in fake.requests if "limit" in q]
    assert all(q["limit"] == ["500"] for _, q in lists)
    assert any("continue" in q for _, q in lists)  # paged
    pods = [q for p, q in lists if p == "/api/v1/pods"]
    assert len(pods) == 2 and "status.phase!=Succeeded" in pods[0]["fieldSelector"][0]
    _no_secrets(result.out, result.err)


def test_kueue_workloads_are_read_when_served(serve: Any, tmp_path: Path) -> None:
    fake = serve("dra-v1", "common", "kueue")
    notes: list[str] = []
    read = read_cluster(
        LiveOptions(kubeconfig=_kubeconfig(tmp_path, fake.url)), notify=notes.append
    )
    # Only v1beta1 is served: the preferred v1beta2 is not, so v1beta1 is read.
    assert read.counts["Workload (kueue.x-k8s.io/v1beta1)"] == 1
    assert not any("kueue" in n for n in notes)
    (workload,) = [o for o, _ in read.objects if getattr(o, "api_version", "").startswith("kueue")]
    assert workload.metadata.name == "pod-pending-0-1a2b3"
    assert "/apis/kueue.x-k8s.io/v1beta1/workloads" in {p for _, p, _ in fake.requests}


def test_karpenter_node_pools_are_read_when_served(serve: Any, tmp_path: Path) -> None:
    """Read where Karpenter runs, so pools derive from them; elsewhere no notice at all."""
    fake = serve("dra-v1", "common", "karpenter")
    notes: list[str] = []
    read = read_cluster(
        LiveOptions(kubeconfig=_kubeconfig(tmp_path, fake.url)), notify=notes.append
    )
    assert read.counts["NodePool (karpenter.sh/v1)"] == 3
    pools = [o for o, _ in read.objects if isinstance(o, KarpenterNodePool)]
    assert [(p.metadata.name, p.spec.weight) for p in pools] == [
        ("h100", 50),
        ("a100", 20),
        ("l4", 10),
    ]
    assert not any("karpenter" in n or "cluster.x-k8s.io" in n for n in notes)


def test_older_resource_version_is_converted_to_v1(serve: Any, tmp_path: Path) -> None:
    new = read_cluster(LiveOptions(kubeconfig=_kubeconfig(tmp_path, serve("dra-v1", "common").url)))
    old_server = serve("dra-v1beta1", "common")
    notes: list[str] = []
    old = read_cluster(
        LiveOptions(kubeconfig=_kubeconfig(tmp_path, old_server.url)), notify=notes.append
    )
    assert old.versions["resource.k8s.io"] == "v1beta1"
    assert any("served as v1beta1" in n for n in notes)
    assert any(
        "/apis/resource.k8s.io/v1beta1/resourceslices" in p for _, p, _ in old_server.requests
    )
    # DeviceTaintRules are read as v1 only (GA in 1.37): an older server's are left out, said once.
    assert (
        "resource.k8s.io serves no version draplan reads for DeviceTaintRules: none read" in notes
    )
    taint_rules = [o for o, _ in new.objects if o.kind == "DeviceTaintRule"]
    assert len(taint_rules) == 1
    same = [encode(o) for o, _ in new.objects if o.kind != "DeviceTaintRule"]
    assert [encode(o) for o, _ in old.objects] == same


def test_workload_api_negotiates_v1beta1_and_forms_the_same_gangs(
    serve: Any, tmp_path: Path
) -> None:
    """A 1.37 server serves scheduling.k8s.io v1beta1 (v1alpha2 removed): read at that version,
    the PodGroup takes its gang policy from its Workload template as v1alpha2's did."""
    beta = read_cluster(
        LiveOptions(
            kubeconfig=_kubeconfig(tmp_path, serve("sched-v1beta1", "dra-v1", "common").url)
        )
    )
    alpha = read_cluster(
        LiveOptions(kubeconfig=_kubeconfig(tmp_path, serve("dra-v1", "common").url))
    )
    kinds = {(o.api_version, o.kind) for o, _ in beta.objects if o.kind in ("Workload", "PodGroup")}
    assert kinds == {
        ("scheduling.k8s.io/v1beta1", "Workload"),
        ("scheduling.k8s.io/v1beta1", "PodGroup"),
    }

    members = tmp_path / "members.yaml"
    members.write_text(
        "\n---\n".join(
            f"{{apiVersion: v1, kind: Pod, metadata: {{name: w{i}, namespace: ml}}, spec: "
            "{schedulingGroup: {podGroupName: train-workers}, containers: [{name: c}]}}"
            for i in range(2)
        )
    )

    def gangs(objects: list[Any]) -> set[tuple[str, int, tuple[Any, ...]]]:
        found = find_gangs(ClusterState.from_objects([*objects, *load_files([str(members)])]))
        return {(g.label, g.min_count, g.members) for g in found.values()}

    assert gangs(beta.objects) == gangs(alpha.objects) != set()


def test_v1beta1_shapes() -> None:
    device = {"name": "gpu-0", "basic": {"attributes": {"a": {"int": 1}}, "taints": []}}
    rs = to_v1(
        {"kind": "ResourceSlice", "apiVersion": "x", "spec": {"devices": [device]}}, "v1beta1"
    )
    assert rs["apiVersion"] == "resource.k8s.io/v1"
    assert rs["spec"]["devices"] == [
        {"name": "gpu-0", "attributes": {"a": {"int": 1}}, "taints": []}
    ]
    sub = {"name": "s", "deviceClassName": "c", "count": 1}
    claim = to_v1(
        {
            "kind": "ResourceClaim",
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "a", "deviceClassName": "c", "adminAccess": True},
                        {"name": "b", "firstAvailable": [sub]},
                    ]
                }
            },
        },
        "v1beta1",
    )
    assert claim["spec"]["devices"]["requests"] == [
        {"name": "a", "exactly": {"deviceClassName": "c", "adminAccess": True}},
        {"name": "b", "firstAvailable": [sub]},
    ]
    same = {"kind": "ResourceClaim", "spec": {"devices": {"requests": [{"name": "a"}]}}}
    assert to_v1(same, "v1beta2")["spec"] == same["spec"]


def test_namespace_option_keeps_claims_cluster_wide(
    serve: Any, run_cli: Any, tmp_path: Path
) -> None:
    fake = serve("dra-v1", "common")
    kubeconfig = _kubeconfig(tmp_path, fake.url, current="no-pods")
    # Listing pods in every namespace is forbidden for this user; one namespace is allowed.
    result = run_cli("validate", "--kubeconfig", kubeconfig, "-n", "ml", "-o", "json")
    assert result.code == 0, result.err
    kinds = result.json()["kinds"]
    assert kinds["Pod (v1)"] == 2
    assert kinds["ResourceClaim (resource.k8s.io/v1)"] == 3
    paths = {p for _, p, _ in fake.requests}
    assert "/api/v1/namespaces/ml/pods" in paths
    assert "/apis/resource.k8s.io/v1/resourceclaims" in paths
    # -A overrides -n, as in kubectl: back to the forbidden cluster-wide list.
    line = _one_line_error(run_cli("validate", "--kubeconfig", kubeconfig, "-n", "ml", "-A"))
    assert "forbidden (403)" in line


def test_file_objects_join_the_cluster(serve: Any, run_cli: Any, tmp_path: Path) -> None:
    fake = serve("dra-v1", "common")
    extra = tmp_path / "extra.yaml"
    extra.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "research"}})
    )
    kubeconfig = _kubeconfig(tmp_path, fake.url)
    result = run_cli("validate", "--kubeconfig", kubeconfig, "-f", str(extra), "-o", "json")
    assert result.code == 0, result.err
    assert result.json()["kinds"]["Namespace (v1)"] == 2  # the cluster's "ml" and the file's
    dup = tmp_path / "dup.yaml"
    dup.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1"}})
    )
    line = _one_line_error(run_cli("validate", "--kubeconfig", kubeconfig, "-f", str(dup)))
    assert "duplicate object" in line


def test_expired_continue_token_falls_back_to_one_list(serve: Any, tmp_path: Path) -> None:
    fake = serve("dra-v1", "common", expire_continue_once=True)
    read = read_cluster(LiveOptions(kubeconfig=_kubeconfig(tmp_path, fake.url)), notify=None)
    assert read.counts["ResourceClaim (resource.k8s.io/v1)"] == 3
    assert any("limit" not in q and p.endswith("/resourceclaims") for _, p, q in fake.requests)


def test_progress_bar_when_asked(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = serve("dra-v1", "common")
    options = LiveOptions(kubeconfig=_kubeconfig(tmp_path, fake.url), progress=True, page_size=2)
    read = read_cluster(options, notify=None)
    assert read.counts["Node"] == 3
    assert capsys.readouterr().out == ""  # the bar is on stderr, never in the output


# --- configuration ---------------------------------------------------------------------------


def test_context_choice(serve: Any, run_cli: Any, tmp_path: Path) -> None:
    fake = serve("dra-v1", "common")
    kubeconfig = _kubeconfig(tmp_path, fake.url, current="expired")
    line = _one_line_error(run_cli("validate", "--kubeconfig", kubeconfig))
    assert "unauthorized (401)" in line and "expired" in line and "'expired'" in line
    result = run_cli("validate", "--kubeconfig", kubeconfig, "--context", "good", "-o", "json")
    assert result.code == 0, result.err
    line = _one_line_error(run_cli("validate", "--kubeconfig", kubeconfig, "--context", "nope"))
    assert "Context 'nope' not found" in line


def test_kubeconfig_from_environment(
    serve: Any, run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = serve("dra-v1", "common")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    monkeypatch.setenv(
        "KUBECONFIG", f"{empty}:{tmp_path / 'missing'}:{_kubeconfig(tmp_path, fake.url)}"
    )
    # No -f and no --kubeconfig: the default cluster, as kubectl would read it.
    result = run_cli("validate", "-o", "json")
    assert result.code == 0, result.err
    assert result.json()["kinds"]["Node (v1)"] == 3


def test_no_input_at_all(run_cli: Any) -> None:
    line = _one_line_error(run_cli("validate"))
    assert "no cluster configured" in line and "-f FILE" in line


def test_missing_kubeconfig_file(run_cli: Any, tmp_path: Path) -> None:
    line = _one_line_error(run_cli("validate", "--kubeconfig", str(tmp_path / "nope")))
    assert "kubeconfig file not found" in line


def test_in_cluster_service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    account = tmp_path / "sa"
    account.mkdir()
    (account / "token").write_text("in-cluster-token")
    (account / "namespace").write_text("ml")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    config = resolve_config(service_account=str(account))
    assert config.cluster.server == "https://127.0.0.1:6443"
    assert config.namespace == "ml"
    # A context is a kubeconfig notion: asking for one never falls back to the account.
    with pytest.raises(BadInput, match="no cluster configured"):
        resolve_config(context="good", service_account=str(account))


# --- failures ---------------------------------------------------------------------------------


def test_forbidden_names_the_permission(serve: Any, run_cli: Any, tmp_path: Path) -> None:
    fake = serve("dra-v1", "common")
    kubeconfig = _kubeconfig(tmp_path, fake.url, current="no-pods")
    line = _one_line_error(run_cli("snapshot", "--kubeconfig", kubeconfig))
    assert "forbidden (403)" in line
    assert 'list resource "pods" in API group "" at the cluster scope' in line
    assert "verbs [list] on resources [pods]" in line and "-n" in line


def test_unreachable_server(serve: Any, run_cli: Any, tmp_path: Path) -> None:
    fake = serve("dra-v1", "common")
    kubeconfig = _kubeconfig(tmp_path, fake.url, current="down")
    line = _one_line_error(run_cli("validate", "--kubeconfig", kubeconfig))
    assert "cannot reach the API server" in line and "127.0.0.1" in line


def test_cluster_without_dra(serve: Any, run_cli: Any, tmp_path: Path) -> None:
    fake = serve("common")
    result = run_cli("validate", "--kubeconfig", _kubeconfig(tmp_path, fake.url), "-o", "json")
    assert result.code == 0, result.err
    assert "notice: API group resource.k8s.io is not served" in result.err
    assert result.json()["devicesPerDriver"] == {}


# --- snapshot ---------------------------------------------------------------------------------


def _allocate(run_cli: Any, *source: str, node: str = "gpu-node-2") -> Any:
    result = run_cli(
        "allocate", *source, "--node", node, "--claim", "ml/pending-train", "--check", "-o", "json"
    )
    assert result.code == 0, result.err
    return result.json()


def test_snapshot_round_trips(serve: Any, run_cli: Any, tmp_path: Path) -> None:
    fake = serve("dra-v1beta1", "common")
    kubeconfig = _kubeconfig(tmp_path, fake.url)
    snap = run_cli("snapshot", "--kubeconfig", kubeconfig)
    assert snap.code == 0, snap.err
    _no_secrets(snap.out, snap.err)
    assert "managedFields" not in snap.out and "last-applied" not in snap.out
    path = tmp_path / "cluster.yaml"
    path.write_text(snap.out)
    doc = yaml.safe_load(snap.out)
    assert doc["kind"] == "List" and len(doc["items"]) == 24  # with the namespace and the Service
    # The pools of the labelled ConfigMap, as plain NodePools; no other ConfigMap is read.
    assert [i["metadata"]["name"] for i in doc["items"] if i["kind"] == "NodePool"] == [
        "g6-12xlarge"
    ]
    assert "ConfigMap" not in {i["kind"] for i in doc["items"]}
    live = run_cli("validate", "--kubeconfig", kubeconfig, "-o", "json")
    offline = run_cli("validate", "-f", str(path), "-o", "json")
    assert live.code == offline.code == 0
    assert live.out == offline.out
    # The same objects, field for field.
    read = read_cluster(LiveOptions(kubeconfig=kubeconfig), notify=None)
    assert [encode(o) for o, _ in load_objects([str(path)])] == [encode(o) for o, _ in read.objects]
    answer = _allocate(run_cli, "--kubeconfig", kubeconfig)
    assert answer == _allocate(run_cli, "-f", str(path))
    assert answer["satisfiable"] and answer["check"]["valid"]
    # JSON snapshots load the same.
    as_json = run_cli("snapshot", "--kubeconfig", kubeconfig, "-o", "json")
    (tmp_path / "cluster.json").write_text(as_json.out)
    again = run_cli("validate", "-f", str(tmp_path / "cluster.json"), "-o", "json")
    assert again.out == live.out


def test_snapshot_redacted(serve: Any, run_cli: Any, tmp_path: Path) -> None:
    fake = serve("dra-v1", "common")
    kubeconfig = _kubeconfig(tmp_path, fake.url)
    snap = run_cli("snapshot", "--kubeconfig", kubeconfig, "--redact")
    assert snap.code == 0, snap.err
    for name in ("gpu-node-1", "gpu-node-2", "cpu-node-1", "train-0", "pending-0", "pinned-0"):
        assert name not in snap.out
    _no_secrets(snap.out)
    assert snap.out == run_cli("snapshot", "--kubeconfig", kubeconfig, "--redact").out  # stable
    keyed = run_cli("snapshot", "--kubeconfig", kubeconfig, "--redact", "--redact-key", "k")
    assert keyed.out != snap.out
    path = tmp_path / "redacted.yaml"
    path.write_text(snap.out)
    items = yaml.safe_load(snap.out)["items"]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_kind.setdefault(item["kind"], []).append(item)
    redactor = Redactor([], [])
    node2 = redactor.node("gpu-node-2")
    node1 = redactor.node("gpu-node-1")
    nodes = {n["metadata"]["name"] for n in by_kind["Node"]}
    assert node2 in nodes and node1 in nodes
    assert all(n["metadata"]["labels"]["kubernetes.io/hostname"] in nodes for n in by_kind["Node"])
    slices = {s["spec"]["nodeName"]: s for s in by_kind["ResourceSlice"]}
    assert slices[node1]["spec"]["pool"]["name"] == node1
    assert slices[node1]["metadata"]["name"].startswith(f"{node1}-gpu.example.com-")
    assert slices[node1]["metadata"]["ownerReferences"][0]["name"] == node1
    claims = {c["metadata"]["name"]: c for c in by_kind["ResourceClaim"]}
    pods = {p["metadata"]["name"]: p for p in by_kind["Pod"]}
    train = pods[redactor.pod("train-0")]
    assert train["spec"]["nodeName"] == node1
    generated = train["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    allocated = claims[generated]
    assert allocated["metadata"]["ownerReferences"][0]["name"] == redactor.pod("train-0")
    assert allocated["status"]["reservedFor"][0]["name"] == redactor.pod("train-0")
    assert {r["pool"] for r in allocated["status"]["allocation"]["devices"]["results"]} == {node1}
    term = allocated["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]
    assert term["matchFields"][0]["values"] == [node1]
    pinned = pods[redactor.pod("pinned-0")]["spec"]
    assert pinned["nodeSelector"]["kubernetes.io/hostname"] == redactor.node("cpu-node-1")
    # The redacted snapshot gives the same answer, under the pseudonyms.
    answer = _allocate(run_cli, "-f", str(path), node=node2)
    plain = _allocate(run_cli, "--kubeconfig", kubeconfig)
    devices = [
        r["device"] for r in answer["claims"][0]["status"]["allocation"]["devices"]["results"]
    ]
    plain_devices = [
        r["device"] for r in plain["claims"][0]["status"]["allocation"]["devices"]["results"]
    ]
    assert answer["satisfiable"] and devices == plain_devices


# --- scale ------------------------------------------------------------------------------------


def _big_cluster(nodes: int, pods_per_node: int) -> dict[str, Any]:
    """A recorded-shape 1,000-node cluster: 8 GPUs a node, pods bound to every node."""
    slices = json.loads((LIVE / "dra-v1/apis/resource.k8s.io/v1/resourceslices.json").read_text())
    node_list = json.loads((LIVE / "common/api/v1/nodes.json").read_text())
    pod_list = json.loads((LIVE / "common/api/v1/pods.json").read_text())
    slice0, node0, pod0 = slices["items"][0], node_list["items"][0], pod_list["items"][-1]
    devices = [{**slice0["spec"]["devices"][i % 4], "name": f"gpu-{i}"} for i in range(8)]
    out_nodes, out_slices, out_pods = [], [], []
    for n in range(nodes):
        name = f"gpu-{n:05d}"
        meta = {**node0["metadata"], "name": name, "labels": {"kubernetes.io/hostname": name}}
        out_nodes.append({**node0, "metadata": meta})
        spec = {
            **slice0["spec"],
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        }
        out_slices.append({"metadata": {"name": f"{name}-gpu"}, "spec": spec})
        for p in range(pods_per_node):
            pmeta = {**pod0["metadata"], "name": f"{name}-pod-{p}", "uid": f"{n}-{p}"}
            out_pods.append({**pod0, "metadata": pmeta, "spec": {**pod0["spec"], "nodeName": name}})
    return {
        "/api/v1/nodes": {**node_list, "items": out_nodes},
        "/api/v1/pods": {**pod_list, "items": out_pods},
        "/apis/resource.k8s.io/v1/resourceslices": {**slices, "items": out_slices},
    }


def test_thousand_node_cluster(serve: Any, tmp_path: Path) -> None:
    fake = serve("dra-v1", "common", routes=_big_cluster(1000, 5), page=500)
    start = time.perf_counter()
    read = read_cluster(LiveOptions(kubeconfig=_kubeconfig(tmp_path, fake.url)), notify=None)
    seconds = time.perf_counter() - start
    assert read.counts["Node"] == 1000 and read.counts["Pod"] == 5000
    assert read.counts["ResourceSlice (resource.k8s.io/v1)"] == 1000
    assert seconds < 60, seconds
    print(f"1,000 nodes, 8,000 devices, 5,000 pods: {seconds:.2f} s, {read.requests} requests")


def test_credential_plugin_failure_stays_quiet(serve: Any, run_cli: Any, tmp_path: Path) -> None:
    fake = serve("dra-v1", "common")
    plugin = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "sh",
        "args": ["-c", "echo PLUGIN-STDERR-token >&2; exit 3"],
    }
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": fake.url}}],
        "users": [{"name": "u", "user": {"exec": plugin}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "exec.yaml"
    path.write_text(yaml.safe_dump(doc))
    line = _one_line_error(run_cli("validate", "--kubeconfig", str(path)))
    assert "credential plugin failed: Exec sh returned 3" in line
    assert "PLUGIN-STDERR" not in line


def test_server_label_hides_userinfo() -> None:
    assert server_label("https://admin:pw@[::1]:6443/") == "https://[::1]:6443"
    assert server_label("https://admin:pw@k8s.example.com") == "https://k8s.example.com"


# --- NodePools in a ConfigMap ------------------------------------------------------------------


def test_node_pools_configmap_feeds_the_autoscaler(
    serve: Any, run_cli: Any, tmp_path: Path
) -> None:
    fake = serve("dra-v1", "common")
    # A pod no existing node can hold (47.5 CPUs each): only the ConfigMap's pool (48) can.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "big", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "47800m"}}}]},
    }
    extra = tmp_path / "pod.yaml"
    extra.write_text(yaml.safe_dump(pod))
    kubeconfig = _kubeconfig(tmp_path, fake.url)
    result = run_cli("scale", "--kubeconfig", kubeconfig, "-f", str(extra), "-o", "json")
    assert result.code == 0, result.err
    [step] = result.json()["scaleUp"]
    assert (step["pool"], step["add"], step["pods"]) == ("g6-12xlarge", 1, ["ml/big"])
    cms = [q for _, p, q in fake.requests if p == "/api/v1/configmaps"]
    assert cms and all(q["labelSelector"] == ["draplan.io/node-pools=true"] for q in cms)
    _no_secrets(result.out, result.err)


def test_forbidden_configmaps_are_a_notice(serve: Any, run_cli: Any, tmp_path: Path) -> None:
    fake = serve("dra-v1", "common")
    kubeconfig = _kubeconfig(tmp_path, fake.url, current="no-configmaps")
    result = run_cli("validate", "--kubeconfig", kubeconfig, "-o", "json")
    assert result.code == 0, result.err
    assert "NodePool (draplan.io/v1alpha1)" not in result.json()["kinds"]
    assert "notice: configmaps not read: forbidden (403)" in result.err
    assert "verbs [list] on resources [configmaps]" in result.err


def test_pool_status_requests_are_read_where_served(serve: Any, tmp_path: Path) -> None:
    group = json.loads((LIVE / "dra-v1/apis/resource.k8s.io.json").read_text())
    group["versions"].append({"groupVersion": "resource.k8s.io/v1alpha3", "version": "v1alpha3"})
    request = {
        "metadata": {"name": "check-gpus", "uid": "u-1", "resourceVersion": "7"},
        "spec": {"driver": "gpu.example.com"},
        "status": {"poolCount": 0, "conditions": [{"type": "Complete", "status": "True"}]},
    }
    served = serve(
        "dra-v1",
        "common",
        routes={
            "/apis/resource.k8s.io": group,
            "/apis/resource.k8s.io/v1alpha3": {
                "kind": "APIResourceList",
                "groupVersion": "resource.k8s.io/v1alpha3",
                "resources": [
                    {"name": "resourcepoolstatusrequests", "verbs": ["get", "list"]},
                ],
            },
            "/apis/resource.k8s.io/v1alpha3/resourcepoolstatusrequests": {
                "kind": "ResourcePoolStatusRequestList",
                "items": [request],
            },
        },
    )
    read = read_cluster(LiveOptions(kubeconfig=_kubeconfig(tmp_path, served.url)))
    (got,) = [o for o, _ in read.objects if o.kind == "ResourcePoolStatusRequest"]
    assert got.api_version == "resource.k8s.io/v1alpha3" and got.status is not None
    assert read.counts["ResourcePoolStatusRequest (resource.k8s.io/v1alpha3)"] == 1
    # Not served (most clusters): nothing is read and nothing is said.
    notes: list[str] = []
    plain = read_cluster(
        LiveOptions(kubeconfig=_kubeconfig(tmp_path, serve("dra-v1", "common").url)),
        notify=notes.append,
    )
    assert not any(o.kind == "ResourcePoolStatusRequest" for o, _ in plain.objects)
    assert not any("resourcepoolstatusrequests" in n.lower() for n in notes)


def test_scheduler_config_from_a_live_configmap(serve: Any, run_cli: Any, tmp_path: Path) -> None:
    """`--scheduler-config configmap/NS/NAME` GETs that ConfigMap: its only profile is named
    "batch", so the fixture's pods (default-scheduler) are left to a scheduler not modelled."""
    fake = serve("dra-v1", "common")
    conf = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "batch"}],
    }
    path = "/api/v1/namespaces/kube-system/configmaps/scheduler-config"
    fake.routes[path] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "scheduler-config", "namespace": "kube-system"},
        "data": {"config.yaml": yaml.safe_dump(conf)},
    }
    kubeconfig = _kubeconfig(tmp_path, fake.url)
    where = "configmap/kube-system/scheduler-config"
    base = run_cli("schedule", "--kubeconfig", kubeconfig, "-o", "json")
    result = run_cli("schedule", "--kubeconfig", kubeconfig, "--scheduler-config", where)
    assert base.code == 0 and result.code == 0, result.err
    assert any(p.get("node") for p in base.json()["pods"])
    assert ("GET", path, {}) in fake.requests
    result = run_cli(
        "schedule", "--kubeconfig", kubeconfig, "--scheduler-config", where, "-o", "json"
    )
    assert not any(p.get("node") for p in result.json()["pods"])
    missing = run_cli("schedule", "--kubeconfig", kubeconfig, "--scheduler-config", where + "-x")
    assert "scheduler-config-x" in _one_line_error(missing)
