"""`draplan serve --kubeconfig`: the whole process against the API-server double — the watch-fed
model, the HTTP answers (equal to the CLI's on the same cluster), a change seen without a
restart, Cluster Autoscaler's gRPC expander from the same model, and SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from draplan.cluster.state import ClusterState
from draplan.grpcplugin.encode import node_message, pod_message
from draplan.grpcplugin.protos import expander_pb2, expander_pb2_grpc
from draplan.sources import load_objects
from watch_support import served, wait_for

REALISTIC = Path(__file__).parent / "data" / "realistic" / "cluster.yaml"


def _objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(REALISTIC.read_text()):
        if doc:
            out.extend(doc.get("items", [doc]))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/readyz", timeout=5) as resp:
            return bool(resp.status == 200)
    except (urllib.error.HTTPError, urllib.error.URLError):
        return False


class Serving:
    def __init__(self, url: str, expander: int, kubeconfig: str, server: Any) -> None:
        self.url, self.expander, self.kubeconfig, self.server = url, expander, kubeconfig, server


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serving]:
    server = served(_objects(), bookmark_interval=0.2)
    kubeconfig = server.kubeconfig(str(tmp_path_factory.mktemp("live") / "kubeconfig"))
    expander = _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from draplan.cli.main import main; main()",
            "serve",
            "--kubeconfig",
            kubeconfig,
            "--listen",
            "127.0.0.1:0",
            "--audit-interval",
            "0.1",
            "--expander-listen",
            f"127.0.0.1:{expander}",
            "--expander-insecure",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    try:
        assert proc.stderr is not None
        url = ""
        while not url:
            line = proc.stderr.readline()
            assert line, "serve exited before listening"
            if m := re.search(r"serving on (http://\S+)", line):
                url = m.group(1)
        wait_for(lambda: _ready(url), timeout=60, what="/readyz")
        yield Serving(url, expander, kubeconfig, server)
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
        assert time.monotonic() - start < 5
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        server.stop()


def test_answers_equal_the_cli_on_the_same_live_cluster(serving: Serving, run_cli: Any) -> None:
    for path, args in (("/v1/why", ("why",)), ("/v1/metrics", ("metrics",))):
        out = run_cli(*args, "--kubeconfig", serving.kubeconfig, "-o", "json")
        assert out.code == 0, out.err
        assert _get(serving.url + path) == json.loads(out.out), path


def test_a_new_pending_pod_is_answered_without_a_restart(serving: Serving) -> None:
    pod = next(o for o in _objects() if o["metadata"]["name"] == "train-8-0")
    copy = json.loads(json.dumps(pod))
    copy["metadata"].update(name="train-8-late", uid="uid-train-8-late")
    copy.pop("status", None)  # its claim statuses name train-8-0's generated claim
    serving.server.put(copy)

    def seen() -> bool:
        try:
            pods = _get(serving.url + "/v1/why?namespace=research&pod=train-8-late")["pods"]
        except urllib.error.HTTPError as err:
            assert err.code == 404  # not in the answers yet
            return False
        return bool(pods)

    wait_for(seen, timeout=30, what="the new pod in /v1/why")


def test_the_expander_answers_from_the_live_model(serving: Serving) -> None:
    state = ClusterState.from_objects(load_objects([str(REALISTIC)]))
    pod = state.pods[("research", "train-8-0")]
    req = expander_pb2.BestOptionsRequest()
    for group, donor in (("h100", "gpu-h100-a"), ("l4", "gpu-l4-a")):
        req.options.add(
            nodeGroupId=group, nodeCount=1, podBytes=[pod_message(pod).SerializeToString()]
        )
        template = node_message(state.nodes[donor])
        template.metadata.name = f"template-{group}"
        req.nodeBytesMap[group] = template.SerializeToString()
    with grpc.insecure_channel(f"127.0.0.1:{serving.expander}") as channel:
        stub = expander_pb2_grpc.ExpanderStub(channel)
        answer = stub.BestOptions(req, timeout=30)
    # Eight H100s on one node: only a copy of an H100 node holds the pod; an L4 node never does.
    assert [o.nodeGroupId for o in answer.options] == ["h100"]
