"""Event intake of the watch-fed model (`draplan serve`): 10,000 nodes x 8 GPUs served by the
API-server double (tests/apiserver.py) in a process of its own, so the figures are the model's:
the initial lists and first state, then pod and claim churn offered at a steady rate with `sync`
called every half second as the server's audit loop would, then everything at once (the rate the
model sustains when it can). `--soak` runs the soak size instead (5,000 nodes, 20,000 pods,
200,000 events as fast as they come) and checks the model against a fresh load at the end.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import resource
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from draplan.serve.live_model import LiveClusterModel
from state_projection import projection
from watch_support import Churn, fresh_load, model_of, served, wait_for


def _serve(
    conn: Connection,
    nodes: int,
    gpus: int,
    fill: float,
    seed: int,
    extra: tuple[dict[str, Any], ...],
) -> None:
    """The API server's process: serve the cluster (and `extra` objects), then churn as the
    parent asks."""
    churn = Churn(random.Random(seed), nodes=nodes, gpus=gpus, fill=fill)
    server = served([*churn.initial, *extra], bookmark_interval=0.2)
    conn.send((server.url, len(churn.initial)))
    while True:
        command = conn.recv()
        if command[0] == "stop":
            server.stop()
            return
        _, rate, count = command
        changes: list[tuple[str, dict[str, Any]]] = []
        while len(changes) < count:
            changes += churn.step()
        conn.send("ready")
        conn.recv()
        start = time.monotonic()
        sent = 0
        tick = 0.05
        while sent < len(changes):
            # `rate` changes a second in ticks of 50 ms; rate 0: everything at once.
            step = len(changes) if not rate else max(1, int(rate * tick))
            server.apply(changes[sent : sent + step])
            sent += step
            if rate:
                time.sleep(max(0.0, start + sent / rate - time.monotonic()))
        conn.send((server.rv, sent, time.monotonic() - start))


class _Remote:
    def __init__(
        self,
        nodes: int,
        gpus: int,
        fill: float,
        seed: int,
        extra: tuple[dict[str, Any], ...] = (),
    ) -> None:
        ctx = multiprocessing.get_context("fork")
        self.conn, child = ctx.Pipe()
        args = (child, nodes, gpus, fill, seed, extra)
        self.proc = ctx.Process(target=_serve, args=args, daemon=True)
        self.proc.start()
        self.url, self.objects = self.recv()
        self.rv = 0

    def recv(self) -> Any:
        while not self.conn.poll(1.0):
            if not self.proc.is_alive():
                raise RuntimeError("the API server's process died")
        return self.conn.recv()

    def kubeconfig(self, path: str) -> str:
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "double", "cluster": {"server": self.url}}],
            "contexts": [{"name": "double", "context": {"cluster": "double"}}],
            "current-context": "double",
        }
        Path(path).write_text(json.dumps(doc))
        return path

    def stop(self) -> None:
        self.conn.send(("stop",))
        self.proc.join(timeout=10)


def _caught_up(model: LiveClusterModel, rv: int) -> bool:
    return all(v in (str(rv), "") for v in model.resource_versions().values())


def _churn(model: LiveClusterModel, remote: _Remote, rate: int, count: int) -> dict[str, float]:
    """Offer `count` changes at `rate` a second (0: at once), syncing every 0.5 s; until the
    model has them all."""
    remote.conn.send(("churn", rate, count))
    remote.recv()  # the changes are made up: time from here
    applied = model.health().events_applied
    start = time.monotonic()
    cpu = time.process_time()
    remote.conn.send(("go",))
    sync_seconds: list[float] = []
    done: tuple[int, int, float] | None = None
    while True:
        if done is None and remote.conn.poll():
            done = remote.recv()
        if not remote.proc.is_alive():
            raise RuntimeError("the API server's process died")
        t0 = time.perf_counter()
        model.sync()
        sync_seconds.append(time.perf_counter() - t0)
        if done is not None and _caught_up(model, done[0]):
            break
        time.sleep(0.5)
    t0 = time.perf_counter()
    model.sync()
    sync_seconds.append(time.perf_counter() - t0)
    elapsed = time.monotonic() - start
    cpu = time.process_time() - cpu
    events = model.health().events_applied - applied
    assert done is not None
    return {
        "offeredPerSecond": rate or round(done[1] / max(done[2], 1e-9)),
        "changes": done[1],
        "eventsApplied": events,
        "seconds": round(elapsed, 2),
        "eventsPerSecond": round(events / elapsed),
        # The model's own CPU time (intake thread and syncs): the rate it sustains on a core of
        # its own, whatever else the machine runs.
        "cpuSeconds": round(cpu, 2),
        "eventsPerCpuSecond": round(events / max(cpu, 1e-9)),
        "loadAverage": round(os.getloadavg()[0], 1),
        "caughtUpAfterLastChangeSeconds": round(elapsed - done[2], 2),
        "maxSyncSeconds": round(max(sync_seconds), 3),
        "relists": model.health().relists,
    }


def run(nodes: int = 10_000, gpus: int = 8, soak: bool = False) -> dict[str, Any]:
    fill = min(0.5, 20_000 / (nodes * gpus))  # 20,000 running pods (each with its claim)
    remote = _Remote(nodes, gpus, fill, seed=16)
    out: dict[str, Any] = {"nodes": nodes, "gpus": nodes * gpus, "objects": remote.objects}
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = remote.kubeconfig(str(Path(tmp) / "kubeconfig"))
        model = model_of(remote, kubeconfig, page_size=500)  # type: ignore[arg-type]
        try:
            start = time.monotonic()
            model.start()
            wait_for(lambda: model.health().ready, timeout=600)
            listed = time.monotonic()
            state, _ = model.sync()
            out["initialListSeconds"] = round(listed - start, 2)
            out["firstStateSeconds"] = round(time.monotonic() - listed, 2)
            if soak:
                out["soak"] = _churn(model, remote, 0, 200_000)
                state, _ = model.sync()
                fresh = fresh_load(remote, kubeconfig)  # type: ignore[arg-type]
                out["soak"]["equalToFreshLoad"] = projection(state) == projection(fresh)
            else:
                out["steady"] = _churn(model, remote, 3_000, 60_000)
                out["burst"] = _churn(model, remote, 0, 100_000)
        finally:
            model.stop()
            remote.stop()
    out["peakRSSMiB"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=0)
    parser.add_argument("--soak", action="store_true")
    args = parser.parse_args()
    nodes = args.nodes or (5_000 if args.soak else 10_000)
    print(json.dumps(run(nodes, soak=args.soak)))
