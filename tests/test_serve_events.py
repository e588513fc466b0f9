"""`draplan serve --events`: an Event per why-category change, posted through lightkube's client
to a small recording API endpoint, rate-limited as client-go's spam filter."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA
from draplan.cluster.state import ClusterState
from draplan.serve.answers import Answers, Auditor
from draplan.serve.events import SPAM_BURST, SPAM_QPS, EventRecorder, SpamFilter, api_poster
from draplan.sources import load_objects
from draplan.sources.kubeclient import resolve_config

REALISTIC = DATA / "realistic"


class Recorder(ThreadingHTTPServer):
    posts: list[tuple[str, dict[str, Any]]]


class Handler(BaseHTTPRequestHandler):
    server: Recorder

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.posts.append((self.path, body))
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def api() -> Iterator[Recorder]:
    server = Recorder(("127.0.0.1", 0), Handler)
    server.posts = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def poster(server: Recorder, tmp_path: Path) -> Any:
    """A poster configured as `serve --events --kubeconfig` configures it."""
    url = f"http://127.0.0.1:{server.server_address[1]}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": url}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake"}}],
                "current-context": "fake",
            }
        )
    )
    return api_poster(resolve_config(str(kubeconfig)))


@pytest.fixture(scope="module")
def answers() -> Answers:
    state = ClusterState.from_objects(load_objects([str(REALISTIC)]))
    return Auditor().audit(state, 1)


def wait_posts(server: Recorder, count: int) -> list[tuple[str, dict[str, Any]]]:
    end = time.monotonic() + 10
    while len(server.posts) < count and time.monotonic() < end:
        time.sleep(0.02)
    time.sleep(0.1)  # and no more than that
    return server.posts


def test_an_event_per_pending_pod_then_only_on_a_change(
    api: Recorder, answers: Answers, tmp_path: Path
) -> None:
    recorder = EventRecorder(poster(api, tmp_path), host="draplan-0", clock=lambda: 1_800_000_000.0)
    recorder.start()
    recorder(answers)
    posts = wait_posts(api, len(answers.diagnoses))
    assert len(posts) == len(answers.diagnoses)
    by_pod = {
        (b["involvedObject"]["namespace"], b["involvedObject"]["name"]): (p, b) for p, b in posts
    }
    for d in answers.diagnoses:
        path, body = by_pod[d.pod]
        assert path == f"/api/v1/namespaces/{d.pod[0]}/events"
        assert body["reason"] == d.category and body["message"] == d.message
        assert body["involvedObject"]["kind"] == "Pod"
        assert body["source"] == {"component": "draplan", "host": "draplan-0"}
        assert body["type"] == ("Normal" if d.category == "Schedulable" else "Warning")
        assert body["metadata"]["name"].startswith(d.pod[1] + ".")
    recorder(answers)  # nothing changed: nothing posted
    assert len(wait_posts(api, len(posts) + 1)) == len(answers.diagnoses)
    first = answers.diagnoses[0]
    changed = dataclasses.replace(first, category="CapacityExhausted", message="now full")
    recorder(dataclasses.replace(answers, diagnoses=(changed, *answers.diagnoses[1:])))
    posts = wait_posts(api, len(answers.diagnoses) + 1)
    recorder.stop(2)
    assert len(posts) == len(answers.diagnoses) + 1
    assert posts[-1][1]["reason"] == "CapacityExhausted"
    assert posts[-1][1]["involvedObject"]["name"] == first.pod[1]


def test_spam_filter_is_client_gos() -> None:
    now = [0.0]
    spam = SpamFilter(clock=lambda: now[0])
    key = ("draplan", "h", "Pod", "ns", "p", "uid", "v1")
    assert all(spam.allow(key) for _ in range(SPAM_BURST))
    assert not spam.allow(key)
    assert spam.allow(("draplan", "h", "Pod", "ns", "other", "uid2", "v1"))
    now[0] += 0.9 / SPAM_QPS
    assert not spam.allow(key)
    now[0] += 0.1 / SPAM_QPS
    assert spam.allow(key) and not spam.allow(key)


def test_a_failing_api_server_is_counted_not_raised(answers: Answers) -> None:
    def refuse(namespace: str, event: dict[str, Any]) -> None:
        raise RuntimeError("HTTP 403 creating an Event")

    recorder = EventRecorder(refuse, host="h")
    recorder.start()
    recorder(answers)
    end = time.monotonic() + 10
    while recorder.failed < len(answers.diagnoses) and time.monotonic() < end:
        time.sleep(0.02)
    recorder.stop(2)
    assert (recorder.failed, recorder.posted) == (len(answers.diagnoses), 0)
