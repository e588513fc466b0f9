"""`draplan serve`: the HTTP documents equal the CLI's, /metrics exposes the cluster and the
model's health, readiness follows the model, a failing audit keeps the last answers, SIGTERM
drains."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import types
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import msgspec
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from ca_requests import best_options_request
from conftest import DATA
from draplan.api.codec import decode
from draplan.cli.cmd_serve import start_expander
from draplan.cluster.incremental import IncrementalState
from draplan.cluster.state import ClusterState
from draplan.grpcplugin.protos import expander_pb2_grpc
from draplan.scheduler import build_profile
from draplan.serve.answers import Answers, Auditor
from draplan.serve.api import Api, Response
from draplan.serve.exposition import Exposition
from draplan.serve.http import Server
from draplan.serve.loop import AuditLoop
from draplan.serve.model import ClusterModel, ModelHealth
from draplan.serve.static import StaticClusterModel
from draplan.sources import load_objects
from planner_faults import FailsInThePlanner
from watch_support import Churn

REALISTIC = DATA / "realistic"


def realistic_state() -> ClusterState:
    return ClusterState.from_objects(load_objects([str(REALISTIC)]))


@dataclasses.dataclass
class Served:
    url: str
    loop: AuditLoop
    server: Server

    def get(self, path: str, method: str = "GET") -> tuple[int, str, bytes]:
        req = urllib.request.Request(self.url + path, method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, resp.headers["Content-Type"], resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.headers["Content-Type"], err.read()

    def wait_generation(self, generation: int, timeout: float = 60) -> Answers:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            answers = self.loop.answers
            if answers is not None and answers.generation == generation:
                return answers
            time.sleep(0.02)
        raise AssertionError(f"generation {generation} never published")


@contextmanager
def serving(
    model: ClusterModel, auditor: Auditor | None = None, interval: float = 0.0, **api: Any
) -> Iterator[Served]:
    registry = CollectorRegistry()
    loop = AuditLoop(model, auditor or Auditor(), interval, registry)
    server = Server(("127.0.0.1", 0), Api(loop, model, Exposition(loop, model, registry), **api))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    model.start()
    loop.start()
    try:
        yield Served(f"http://127.0.0.1:{server.server_address[1]}", loop, server)
    finally:
        server.drain(2)
        loop.stop(5)
        model.stop()


@pytest.fixture(scope="module")
def realistic() -> Iterator[Served]:
    with serving(StaticClusterModel(realistic_state())) as served:
        served.wait_generation(1)
        yield served


def scrape(served: Served) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    status, ctype, body = served.get("/metrics")
    assert status == 200 and ctype == "text/plain; version=0.0.4; charset=utf-8"
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


@pytest.mark.parametrize(
    ("path", "command"),
    [("/v1/why", "why"), ("/v1/metrics", "metrics"), ("/v1/plan", "scale")],
)
def test_documents_are_the_clis_bytes(
    realistic: Served, run_cli: Any, path: str, command: str
) -> None:
    cli = run_cli(command, "-f", str(REALISTIC), "-o", "json")
    assert cli.code == 0
    status, ctype, body = realistic.get(path)
    assert (status, ctype) == (200, "application/json")
    assert body.decode() == cli.out


def test_documents_name_the_generation_they_were_made_on() -> None:
    answers = Auditor().audit(realistic_state(), 5)
    late = dataclasses.replace(
        answers, plan=dataclasses.replace(answers.plan, generation=3)
    )  # the plan of an older generation
    loop = types.SimpleNamespace(answers=late)
    api = Api(loop, StaticClusterModel(realistic_state()), None)  # type: ignore[arg-type]
    for path, generation in (
        ("/v1/why", "5"),
        ("/v1/why?namespace=research", "5"),
        ("/v1/metrics", "5"),
        ("/v1/snapshot", "5"),
        ("/v1/plan", "3"),
    ):
        response = api.handle("GET", *path.partition("?")[::2])
        assert response.status == 200
        assert dict(response.headers)["Draplan-Generation"] == generation, path


def test_why_of_one_namespace_and_one_pod(realistic: Served, run_cli: Any) -> None:
    cli = run_cli("why", "-f", str(REALISTIC), "-n", "research", "-o", "json")
    status, _, body = realistic.get("/v1/why?namespace=research")
    assert status == 200 and body.decode() == cli.out
    status, _, body = realistic.get("/v1/why?namespace=research&pod=train-pcie-0")
    doc = json.loads(body)
    assert status == 200
    assert [p["pod"] for p in doc["pods"]] == ["research/train-pcie-0"]
    assert doc["summary"] == {doc["pods"][0]["category"]: 1}
    status, _, body = realistic.get("/v1/why?namespace=research&pod=no-such-pod")
    assert status == 404 and json.loads(body)["code"] == 404


def test_unknown_paths_and_methods_are_json_errors(realistic: Served) -> None:
    status, ctype, body = realistic.get("/v2/why")
    assert (status, ctype, json.loads(body)["code"]) == (404, "application/json", 404)
    assert json.loads(body)["reason"] == "NotFound"
    status, ctype, body = realistic.get("/v1/plan", method="POST")
    assert (status, ctype, json.loads(body)["code"]) == (405, "application/json", 405)
    status, _, body = realistic.get("/v1/plan", method="HEAD")
    assert (status, body) == (200, b"")


def test_snapshot_is_redacted_unless_allowed(realistic: Served) -> None:
    status, _, body = realistic.get("/v1/snapshot")
    assert status == 200
    doc = json.loads(body)
    names = {i["metadata"]["name"] for i in doc["items"] if i["kind"] in ("Node", "Pod")}
    assert names and not names & {"gpu-h100-a", "infer-l4-0", "train-8-0"}
    # What was served loads back and says the same about the pending pods.
    items = [i for i in doc["items"] if i["kind"] == "Pod" and not i["spec"].get("nodeName")]
    assert len(items) == len(realistic.wait_generation(1).diagnoses)
    status, _, body = realistic.get("/v1/snapshot?redact=false")
    assert status == 403 and "allow-unredacted" in json.loads(body)["message"]


def test_unredacted_snapshot_when_allowed() -> None:
    with serving(StaticClusterModel(realistic_state()), allow_unredacted=True) as served:
        served.wait_generation(1)
        status, _, body = served.get("/v1/snapshot?redact=false")
    names = {i["metadata"]["name"] for i in json.loads(body)["items"]}
    assert status == 200 and {"gpu-h100-a", "infer-l4-0"} <= names


def test_metrics_expose_the_cluster(realistic: Served) -> None:
    samples = scrape(realistic)
    answers = realistic.wait_generation(1)
    doc = json.loads(answers.bodies["metrics"])
    plan = json.loads(answers.bodies["plan"])
    stranded = sum(samples["draplan_gpus_stranded"].values())
    assert stranded == pytest.approx(doc["cluster"]["strandedGpus"], abs=1e-3)
    assert sum(samples["draplan_gpus"].values()) == doc["cluster"]["gpus"]
    assert sum(samples["draplan_devices"].values()) == doc["cluster"]["devices"]
    assert sum(samples["draplan_devices_allocated"].values()) == doc["cluster"]["allocated"]
    cost = samples["draplan_stranded_cost_per_hour"]
    for pool, tally in doc["nodePools"].items():
        if tally["strandedCostPerHour"] is not None:
            assert cost[(("node_pool", pool),)] == pytest.approx(tally["strandedCostPerHour"])
    pending = samples["draplan_pending_pods"]
    assert sum(pending.values()) == len(answers.diagnoses)
    assert pending[(("category", "SchedulingGated"), ("namespace", "team-a"))] == 1
    planned = samples["draplan_scaleup_nodes_planned"]
    for up in plan["scaleUp"]:
        assert planned[(("pool", up["pool"]),)] >= up["add"] > 0
    assert samples["draplan_model_ready"][()] == 1
    assert samples["draplan_audit_cycle_seconds_count"][()] >= 1
    assert samples["draplan_events_applied_total"][()] == 0
    # Bounded: no series is labelled by a pod.
    pods = {d.pod[1] for d in answers.diagnoses}
    for series in samples.values():
        for labels in series:
            assert not {v for _, v in labels} & pods


@pytest.mark.parametrize(
    ("source", "node_name", "ties"),
    [
        (REALISTIC, "gpu-l4-a", "name"),
        (REALISTIC, "gpu-l4-a", "random"),
        (DATA / "multivendor" / "cluster.yaml", "", "random"),
        (DATA / "hybrid" / "cluster.yaml", "", "random"),
    ],
)
def test_a_later_audit_equals_a_fresh_one(source: Path, node_name: str, ties: str) -> None:
    """The auditor keeps its schedulers' evaluations between audits of one state: what it
    answers after changes is what a fresh auditor answers on the changed state, random
    tie-breaks (kube-scheduler's default) included."""
    state = ClusterState.from_objects(load_objects([str(source)]))
    profile = dataclasses.replace(build_profile(), ties=ties)
    kept = Auditor(profile)
    kept.audit(state, 1)
    running = sorted(k for k, p in state.pods.items() if p.spec.node_name)
    pending = sorted(k for k, p in state.pods.items() if not p.spec.node_name)
    tainted = [n for _, n in sorted(state.nodes.items()) if n.spec.taints]
    node = state.nodes[node_name] if node_name else tainted[0]
    untainted = msgspec.structs.replace(node, spec=msgspec.structs.replace(node.spec, taints=()))
    for generation, change in enumerate(
        [
            lambda: state.remove_pod(running[0]),
            lambda: state.remove_pod(pending[0]),
            lambda: state.remove_pod(running[-1]),
            lambda: state.add_node(untainted),  # a node of another kind now
        ],
        start=2,
    ):
        change()
        later, fresh = kept.audit(state, generation), Auditor(profile).audit(state, generation)
        assert later.bodies == fresh.bodies
        # Gangs' waits are measured to the wall clock of each audit.
        assert _timeless(later.series) == _timeless(fresh.series)
        assert later.plan.generation == generation


def _timeless(series: tuple[Any, ...]) -> list[Any]:
    return [f for f in series if not f.name.startswith("draplan_gang_wait_seconds")]


def _changes(state: ClusterState) -> Iterator[None]:
    """Changes to `state` that change its plan: running pods go and come back in turn."""
    running = sorted(k for k, p in state.pods.items() if p.spec.node_name)
    for key in running:
        removed = state.pods[key]
        state.remove_pod(key)
        yield
        state.put_pod(removed)
        yield


def test_the_planner_process_plans_each_generation_as_a_fresh_auditor() -> None:
    """Every answers' why, metrics and series are those of their own state; the plan they carry
    is the plan a fresh auditor makes of the generation it names, and once the changes stop the
    planner's plan of the last generation comes."""
    state = realistic_state()
    auditor = Auditor(plan_process=True)
    fresh_plans: dict[int, bytes] = {}
    named: list[int] = []
    try:
        for generation, _ in enumerate(_changes(state), start=1):
            answers = auditor.audit(state, generation)
            fresh = Auditor().audit(state, generation)
            fresh_plans[generation] = fresh.bodies["plan"]
            assert answers.bodies["why"] == fresh.bodies["why"]
            assert answers.bodies["metrics"] == fresh.bodies["metrics"]
            assert answers.series == fresh.series
            assert answers.bodies["plan"] == fresh_plans[answers.plan.generation]
            named.append(answers.plan.generation)
        assert auditor.plan_behind(generation) or named[-1] == generation
        end = time.monotonic() + 60
        while answers.plan.generation != generation and time.monotonic() < end:
            answers = auditor.take_plan(answers, 0.1)
        assert answers.plan.generation == generation
        assert answers.bodies["plan"] == fresh_plans[generation]
        assert not auditor.plan_behind(generation) and auditor.plan_errors == 0
    finally:
        auditor.close()
    assert named == sorted(named) and named[0] == 1  # the first audit waits for its plan
    assert len(set(fresh_plans.values())) > 1  # the changes change the plan


def _planned(auditor: Auditor, answers: Answers, generation: int) -> Answers:
    """`answers` once they carry the planner's plan of `generation`."""
    end = time.monotonic() + 60
    while answers.plan.generation != generation and time.monotonic() < end:
        answers = auditor.take_plan(answers, 0.1)
    return answers


def test_a_planner_process_that_died_is_counted_and_started_again() -> None:
    state = realistic_state()
    auditor = Auditor(plan_process=True)
    try:
        auditor.audit(state, 1)
        assert auditor._planner is not None
        auditor._planner._process.kill()
        auditor._planner._process.join()
        state.remove_pod(("research", "train-8-0"))
        # No planner runs: the audit makes the plan, until the next planner is due (1 s).
        answers = auditor.audit(state, 2)
        assert answers.plan.generation == 2 and not auditor.plan_behind(2)
        assert answers.bodies["plan"] == Auditor().audit(state, 2).bodies["plan"]
        assert auditor.plan_errors == 1
        time.sleep(1.5)
        state.remove_pod(("research", "batch-l4-0"))
        answers = _planned(auditor, auditor.audit(state, 3), 3)  # a new planner, whole state
        assert answers.bodies["plan"] == Auditor().audit(state, 3).bodies["plan"]
        assert auditor.plan_errors == 1
    finally:
        auditor.close()


def test_a_planner_that_cannot_run_leaves_the_plans_to_the_audits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The spawned process runs os._exit with the planner's arguments: it exits at once.
    monkeypatch.setattr("draplan.serve.planning._planner", os._exit)
    monkeypatch.setattr("draplan.serve.planning.RESTART_SECONDS", 600.0)
    state = realistic_state()
    auditor = Auditor(plan_process=True)
    try:
        for generation, _ in enumerate(_changes(state), start=1):
            answers = auditor.audit(state, generation)
            assert answers.plan.generation == generation
            assert answers.bodies == Auditor().audit(state, generation).bodies
            if generation == 4:
                break
        assert auditor.plan_errors == 1  # not started again before its back-off ends
    finally:
        auditor.close()


def test_health_endpoints(realistic: Served) -> None:
    assert realistic.get("/healthz")[0] == 200
    assert realistic.get("/readyz")[0] == 200


class ScriptedModel:
    """A model the test drives: states by generation, readiness and connection."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.generation = 1
        self.ready = True
        self.connected = True
        self.contact = time.monotonic()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def health(self) -> ModelHealth:
        if self.connected:
            self.contact = time.monotonic()
        return ModelHealth(self.ready, self.connected, self.contact, 7, 1, 2, self.contact)

    def sync(self) -> tuple[ClusterState, int]:
        return self.state, self.generation


def test_readiness_follows_the_model_and_metrics_keep_their_values() -> None:
    model = ScriptedModel(realistic_state())
    model.ready = False
    with serving(model) as served:
        assert served.get("/readyz")[0] == 503
        model.ready = True
        served.wait_generation(1)
        assert served.get("/readyz")[0] == 200
        before = scrape(served)
        model.connected = False
        time.sleep(0.3)
        status, _, body = served.get("/readyz")
        assert status == 503 and "disconnected" in json.loads(body)["message"]
        after = scrape(served)
        assert served.get("/healthz")[0] == 200
    assert after["draplan_model_connected"][()] == 0
    assert (
        after["draplan_model_stale_seconds"][()] >= 0.3 > before["draplan_model_stale_seconds"][()]
    )
    assert after["draplan_gpus_stranded"] == before["draplan_gpus_stranded"]
    assert after["draplan_bad_objects_total"][()] == 2 and after["draplan_relists_total"][()] == 1


def test_the_first_answers_wait_for_the_lists_then_come_at_once() -> None:
    # Half-listed (nodes in, pods not yet): nothing is audited, /readyz and the documents wait.
    model = ScriptedModel(ClusterState.from_objects(load_objects([str(REALISTIC / "pools.yaml")])))
    model.ready = False
    with serving(model, interval=3600.0) as served:
        time.sleep(0.3)
        assert served.loop.answers is None and not served.loop.first_answers.is_set()
        assert served.get("/readyz")[0] == 503 and served.get("/v1/why")[0] == 503
        model.state, model.generation, model.ready = realistic_state(), 2, True
        # Published as soon as the lists are in, not an audit interval (an hour) later.
        assert served.loop.first_answers.wait(60)
        answers = served.wait_generation(2, timeout=1)
        assert served.get("/readyz")[0] == 200
    pending = {p["pod"] for p in json.loads(answers.bodies["why"])["pods"]}
    assert "research/train-8-0" in pending


class FailingAuditor(Auditor):
    """Fails on generation 2, as a bug on some input would."""

    def audit(
        self, state: ClusterState, generation: int, lock: threading.Lock | None = None
    ) -> Answers:
        if generation == 2:
            raise RuntimeError("a bug")
        return super().audit(state, generation, lock)


def test_a_first_plan_that_fails_in_the_planner_is_made_by_the_audit() -> None:
    profile = build_profile()
    profile = dataclasses.replace(profile, scores=(*profile.scores, (FailsInThePlanner(), 1)))
    auditor = Auditor(profile, plan_process=True)
    state = realistic_state()
    try:
        answers = auditor.audit(state, 1)
        assert answers.plan.generation == 1 and auditor.plan_errors == 1
        assert answers.bodies == Auditor(profile).audit(state, 1).bodies
    finally:
        auditor.close()


def test_the_loop_publishes_the_plan_once_made() -> None:
    state = realistic_state()
    model = ScriptedModel(state)
    with serving(model, Auditor(plan_process=True)) as served:
        published: list[Answers] = []
        served.loop.listeners.append(published.append)
        served.wait_generation(1)
        with served.loop.state_lock:
            state.remove_pod(("research", "train-8-0"))
            model.generation = 2
        end = time.monotonic() + 60
        while (not published or published[-1].plan.generation != 2) and time.monotonic() < end:
            time.sleep(0.02)
        latest = published[-1]
        assert served.get("/v1/plan")[2] == latest.bodies["plan"]
        health = scrape(served)
        assert health["draplan_plan_generations_behind"][()] == 0
        assert health["draplan_plan_errors_total"][()] == 0
    with served.loop.state_lock:
        fresh = Auditor().audit(state, 2)
    assert (latest.generation, latest.plan.generation) == (2, 2)
    assert latest.bodies == fresh.bodies
    second = [a for a in published if a.generation == 2]
    assert second[-1].diagnoses is second[0].diagnoses  # the audit's answers, with the plan


def test_a_failing_audit_keeps_the_last_answers() -> None:
    model = ScriptedModel(realistic_state())
    with serving(model, FailingAuditor()) as served:
        first = served.wait_generation(1)
        model.generation = 2
        end = time.monotonic() + 10
        while served.loop.errors == 0 and time.monotonic() < end:
            time.sleep(0.02)
        assert served.loop.errors == 1
        time.sleep(0.2)  # not retried on the same generation: no crash loop
        assert served.loop.errors == 1 and served.loop.answers is first
        assert served.get("/healthz")[0] == 200
        assert scrape(served)["draplan_audit_errors_total"][()] == 1
        model.generation = 3
        assert served.wait_generation(3).generation == 3


def test_sigterm_drains_and_exits_zero(tmp_path: Any) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from draplan.cli.main import main; main()",
            "serve",
            "-f",
            str(REALISTIC),
            "--listen",
            "127.0.0.1:0",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert proc.stderr is not None
    url = ""
    while not url:
        line = proc.stderr.readline()
        assert line, "serve exited before listening"
        if m := re.search(r"serving on (http://\S+)", line):
            url = m.group(1)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=5) as resp:
                if resp.status == 200:
                    break
        except urllib.error.HTTPError:
            time.sleep(0.1)
    with urllib.request.urlopen(url + "/v1/plan", timeout=5) as resp:
        assert resp.status == 200
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=5) == 0
    assert time.monotonic() - start < 5


def test_openmetrics_when_asked(realistic: Served) -> None:
    req = urllib.request.Request(
        realistic.url + "/metrics", headers={"Accept": "application/openmetrics-text"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        body = resp.read().decode()
        assert resp.headers["Content-Type"].startswith("application/openmetrics-text")
    assert "# TYPE draplan_events_applied counter" in body and body.endswith("# EOF\n")


def test_serve_sits_between_report_and_cli() -> None:
    """Nothing below `serve` imports it, and it imports nothing from `cli`."""
    src = Path(__file__).resolve().parents[1] / "src" / "draplan"
    for path in src.rglob("*.py"):
        package = path.relative_to(src).parts[0]
        imports = set(re.findall(r"^\s*(?:from|import) (draplan\.\w+)", path.read_text(), re.M))
        if package == "serve":
            assert "draplan.cli" not in imports, path
        elif package != "cli":
            assert "draplan.serve" not in imports, path


def test_bad_flags_are_one_line_errors(run_cli: Any, tmp_path: Path) -> None:
    listen = run_cli("serve", "-f", str(REALISTIC), "--listen", "8080")
    assert listen.code == 2 and "--listen" in listen.err and "Traceback" not in listen.err
    missing = run_cli("serve", "-f", str(tmp_path / "nothing.yaml"))
    assert missing.code == 2 and len(missing.err.strip().splitlines()) == 1


def test_an_occupied_port_is_a_one_line_error(run_cli: Any) -> None:
    with serving(StaticClusterModel(realistic_state())) as served:
        port = served.server.server_address[1]
        taken = run_cli("serve", "-f", str(REALISTIC), "--listen", f"127.0.0.1:{port}")
    assert taken.code == 2 and "cannot listen" in taken.err


class SlowApi(Api):
    def handle(self, method: str, path: str, query: str, accept: str = "") -> Response:
        time.sleep(0.5)
        return super().handle(method, path, query, accept)


def test_drain_finishes_requests_in_flight() -> None:
    model = StaticClusterModel(realistic_state())
    registry = CollectorRegistry()
    loop = AuditLoop(model, Auditor(), 0.0, registry)
    server = Server(("127.0.0.1", 0), SlowApi(loop, model, Exposition(loop, model, registry)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/readyz"
    got: list[int] = []

    def request() -> None:
        try:
            urllib.request.urlopen(url, timeout=10)
        except urllib.error.HTTPError as err:
            got.append(err.code)  # no answers yet: 503, but answered

    client = threading.Thread(target=request)
    client.start()
    time.sleep(0.2)
    assert server.in_flight == 1
    assert server.drain(4)
    client.join(5)
    assert got == [503]


def test_the_expander_is_unavailable_until_the_first_answers_then_judges() -> None:
    """Cluster Autoscaler's gRPC expander on the audit loop (`serve --expander-listen`):
    UNAVAILABLE while the lists are not in (CA goes on with its own options), as /readyz is
    503; then it judges on the listed objects."""
    model = ScriptedModel(ClusterState.from_objects(load_objects([str(REALISTIC / "pools.yaml")])))
    model.ready = False
    state = realistic_state()
    pod = state.pods["research", "train-8-0"]
    req = best_options_request({"h100": state.nodes["gpu-h100-a"]}, [("h100", 1, [pod])])
    with serving(model, interval=3600.0) as served:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        addr = f"127.0.0.1:{port}"
        expander = start_expander(addr, None, None, True, served.loop, build_profile())
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = expander_pb2_grpc.ExpanderStub(channel)
                with pytest.raises(grpc.RpcError) as err:
                    stub.BestOptions(req, timeout=30)
                assert err.value.code() == grpc.StatusCode.UNAVAILABLE
                assert served.get("/readyz")[0] == 503
                model.state, model.generation, model.ready = state, 2, True
                assert served.loop.first_answers.wait(60)
                answer = stub.BestOptions(req, timeout=30)
            assert [o.nodeGroupId for o in answer.options] == ["h100"]
        finally:
            expander.stop(None)


@pytest.mark.parametrize("seed", range(3))
def test_a_kept_auditor_breaks_ties_as_a_fresh_one_under_churn(seed: int) -> None:
    """kube-scheduler's profile breaks ties between equal nodes at random: a kept auditor's
    schedulers draw per pod, so after every change of a churning cluster of identical GPU
    nodes (jobs starting, ending, pending, relabelled; nodes relabelled, slices republished)
    its answers are a fresh auditor's."""
    churn = Churn(random.Random(seed), nodes=12, gpus=4, fill=0.5)
    inc = IncrementalState([(decode(o), "") for o in churn.initial])
    kept = Auditor()
    for generation in range(1, 16):
        for op, doc in churn.step() + churn.step():
            (inc.put if op == "put" else inc.delete)(decode(doc))
        state = inc.flush()
        later, fresh = kept.audit(state, generation), Auditor().audit(state, generation)
        assert later.bodies == fresh.bodies, f"seed {seed}, generation {generation}"
        assert later.series == fresh.series
