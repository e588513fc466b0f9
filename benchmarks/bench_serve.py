"""`draplan serve`: a `/metrics` scrape on 10,000 nodes (target: <= 100 ms), a full audit after a
small change on 5,000 nodes with 1,000 pending pods (target: <= 2 s), and the serving stacks
compared (the standard library's threading server, aiohttp, starlette on uvicorn): scrape
latency and requests per second from a client in another process.

The clusters are `bench_audit`'s (GPU nodes in five fill patterns, pending pods of six kinds).
Freshness (an event to /metrics) needs the watch-fed model and is measured with it.

Usage: python benchmarks/bench_serve.py [scrape|audit ...]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from bench_audit import cluster
from draplan.api.codec import decode
from draplan.cluster.state import ClusterState
from draplan.serve.answers import Auditor
from draplan.serve.api import Api
from draplan.serve.exposition import Exposition
from draplan.serve.http import Server
from draplan.serve.loop import AuditLoop
from draplan.serve.static import StaticClusterModel

SCRAPES = 30
LOAD_SECONDS = 3.0
CLIENT_THREADS = 4
# The load generator: keep-alive connections from threads, requests counted for a while.
CLIENT = """
import http.client, sys, threading, time
host, path = sys.argv[1], sys.argv[3]
port, seconds, threads = int(sys.argv[2]), float(sys.argv[4]), int(sys.argv[5])
counts = [0] * threads
def run(i):
    conn = http.client.HTTPConnection(host, port)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        conn.request("GET", path)
        resp = conn.getresponse(); resp.read()
        assert resp.status == 200, resp.status
        counts[i] += 1
ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
[t.start() for t in ts]; [t.join() for t in ts]
print(sum(counts) / seconds)
"""


def state_of(nodes: int, pods: int) -> ClusterState:
    return ClusterState.from_objects(decode(o) for o in cluster(nodes, pods))


def published(nodes: int, pods: int) -> tuple[Api, float]:
    """An Api over an audited static model; and the audit's seconds."""
    model = StaticClusterModel(state_of(nodes, pods))
    registry = CollectorRegistry()
    loop = AuditLoop(model, Auditor(), 0.0, registry)
    start = time.perf_counter()
    loop.answers = Auditor().audit(model.state, 1)
    return Api(loop, model, Exposition(loop, model, registry)), time.perf_counter() - start


def _get(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as resp:
        resp.read()
    return time.perf_counter() - start


def _rate(port: int, path: str) -> float:
    args = ["127.0.0.1", str(port), path, str(LOAD_SECONDS), str(CLIENT_THREADS)]
    out = subprocess.run(
        [sys.executable, "-c", CLIENT, *args], capture_output=True, text=True, check=True
    )
    return round(float(out.stdout))


def _measure(port: int) -> dict[str, Any]:
    base = f"http://127.0.0.1:{port}"
    _get(base + "/metrics")
    times = sorted(_get(base + "/metrics") for _ in range(SCRAPES))
    return {
        "scrapeP50Ms": round(1000 * statistics.median(times), 1),
        "scrapeMaxMs": round(1000 * times[-1], 1),
        "readyzPerSecond": _rate(port, "/readyz"),
        "whyOneNamespacePerSecond": _rate(port, "/v1/why?namespace=default&pod=pending-00000"),
    }


def _stdlib(api: Api) -> tuple[int, Callable[[], None]]:
    server = Server(("127.0.0.1", 0), api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1], lambda: server.drain(1)


def _in_thread(run: Callable[[asyncio.AbstractEventLoop], Any]) -> None:
    loop = asyncio.new_event_loop()
    threading.Thread(target=lambda: run(loop), daemon=True).start()


def _aiohttp(api: Api) -> tuple[int, Callable[[], None]]:
    from aiohttp import web

    async def handle(request: web.Request) -> web.Response:
        # The Api reads only published answers: it may run on the event loop.
        r = api.handle(request.method, request.path, request.query_string)
        return web.Response(status=r.status, body=r.body, headers={"Content-Type": r.content_type})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    ready = threading.Event()
    port: list[int] = []

    def run(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        port.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        ready.set()
        loop.run_forever()

    _in_thread(run)
    ready.wait()
    return port[0], lambda: None


def _starlette(api: Api) -> tuple[int, Callable[[], None]]:
    import uvicorn
    from starlette.requests import Request
    from starlette.responses import Response

    async def app(scope: Any, receive: Any, send: Any) -> None:
        request = Request(scope, receive)
        r = api.handle(request.method, request.url.path, request.url.query)
        await Response(r.body, r.status, media_type=r.content_type)(scope, receive, send)

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", access_log=False)
    server = uvicorn.Server(config)
    _in_thread(lambda loop: loop.run_until_complete(server.serve()))
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    return port, lambda: setattr(server, "should_exit", True)


def scrape(nodes: int = 10_000, pods: int = 1000) -> dict[str, Any]:
    """The scrape on the stdlib server, then the three stacks on the same answers."""
    api, audit = published(nodes, pods)
    answers = api.loop.answers
    assert answers is not None
    start = time.perf_counter()
    api.exposition.prerender(answers)  # what the audit thread does once per audit
    formatted = time.perf_counter() - start
    out: dict[str, Any] = {
        "nodes": nodes,
        "pendingPods": pods,
        "coldAuditSeconds": round(audit, 2),
        "series": sum(len(f.samples) for f in answers.series),
        "formatOncePerAuditSeconds": round(formatted, 2),
        "targetScrapeMs": 100,
    }
    for name, start_stack in (
        ("stdlib", _stdlib),
        ("aiohttp", _aiohttp),
        ("starlette", _starlette),
    ):
        port, stop = start_stack(api)
        out[name] = _measure(port)
        stop()
    return out


def audit(nodes: int = 5000, pods: int = 1000) -> dict[str, Any]:
    state = state_of(nodes, pods)
    auditor = Auditor()
    start, cpu = time.perf_counter(), time.process_time()
    auditor.audit(state, 1)
    cold, cold_cpu = time.perf_counter() - start, time.process_time() - cpu
    # A small change: one running pod (and its claim) ends, freeing GPUs on one node.
    key = ("default", "run-00003")
    state.remove_pod(key)
    state.remove_claim(key)
    start, cpu = time.perf_counter(), time.process_time()
    answers = auditor.audit(state, 2)
    out = {
        "nodes": nodes,
        "pendingPods": len(answers.diagnoses),
        "coldSeconds": round(cold, 2),
        "coldCpuSeconds": round(cold_cpu, 2),
        "afterSmallChangeSeconds": round(time.perf_counter() - start, 2),
        "afterSmallChangeCpuSeconds": round(time.process_time() - cpu, 2),
        "targetSeconds": 2,
    }
    out["withPlannerProcess"] = _with_planner(nodes, pods, key)
    return out


def _with_planner(nodes: int, pods: int, key: tuple[str, str]) -> dict[str, Any]:
    """As `serve` audits: the answers in the audit, the plan from the planner process."""
    state = state_of(nodes, pods)
    auditor = Auditor(plan_process=True)
    try:
        start = time.perf_counter()
        auditor.audit(state, 1)  # waits for the first plan
        cold = time.perf_counter() - start
        state.remove_pod(key)
        state.remove_claim(key)
        start = time.perf_counter()
        answers = auditor.audit(state, 2)
        answered = time.perf_counter() - start
        while answers.plan.generation != 2:
            answers = auditor.take_plan(answers, 0.05)
        planned = time.perf_counter() - start
        planner = auditor._planner._process.pid  # type: ignore[union-attr]
        with open(f"/proc/{planner}/status") as status:
            peak = next(line for line in status if line.startswith("VmHWM:"))
    finally:
        auditor.close()
    return {
        "coldSeconds": round(cold, 2),
        "answersAfterSmallChangeSeconds": round(answered, 2),
        "planAfterSmallChangeSeconds": round(planned, 2),
        "plannerPeakRssMiB": round(int(peak.split()[1]) / 1024),
    }


if __name__ == "__main__":
    parts = {"scrape": scrape, "audit": audit}
    chosen = sys.argv[1:] or list(parts)
    print(json.dumps({f"serve_{name}": parts[name]() for name in chosen}))
