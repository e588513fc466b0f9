"""Soak (loopback only, bounded in time): 500 GPU nodes and 20,000 events of pod and claim churn
with dropped connections and a compaction on the way, `sync` called as a server would between
batches; at the end the model equals a fresh load of the server's objects. The benchmark size
(5,000 nodes, 200,000 events) runs in benchmarks/bench_serve_intake.py."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from state_projection import projection
from watch_support import Churn, caught_up, fresh_load, model_of, served, wait_for

EVENTS = 20_000
BATCH = 500


@pytest.fixture(autouse=True)
def _loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def test_soak_ends_equal_to_a_fresh_load(tmp_path: Path) -> None:
    churn = Churn(random.Random(16), nodes=500, gpus=8, fill=0.5)
    server = served(churn.initial, bookmark_interval=0.1)
    kubeconfig = str(tmp_path / "kubeconfig")
    model = model_of(server, kubeconfig, page_size=500)
    start = time.monotonic()
    try:
        model.start()
        wait_for(lambda: model.health().ready, timeout=60, what="ready")
        sent = 0
        generations = set()
        while sent < EVENTS:
            changes = []
            while len(changes) < BATCH:
                changes += churn.step()
            server.apply(changes)
            sent += len(changes)
            if sent % (BATCH * 10) < len(changes):
                server.drop_watches()
            if sent % (BATCH * 17) < len(changes):
                server.compact()
            generations.add(model.sync()[1])
        wait_for(lambda: caught_up(model, server), timeout=60, what="the model to catch up")
        state, _ = model.sync()
        assert projection(state) == projection(fresh_load(server, kubeconfig))
        health = model.health()
        assert health.connected and health.ready and health.bad_objects == 0
        # Events a compaction outran come in through relists instead; both kept the model equal.
        assert health.events_applied > 0
        # Synced while events kept coming (how often depends on the machine's load).
        assert len(generations) > 2
        assert len(state.nodes) == 500
    finally:
        model.stop()
        server.stop()
    assert time.monotonic() - start < 120
