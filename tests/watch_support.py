"""Driving the watch-fed model against tests.apiserver: a served cluster, waits, a fresh load."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from apiserver import ApiServer, serve_draplan_kinds
from draplan.cluster.state import ClusterState
from draplan.serve.live_model import LiveClusterModel
from draplan.serve.watch import Backoff, WatchOptions
from draplan.sources.kubeclient import resolve_config
from draplan.sources.live import LiveOptions, read_cluster

FAST = Backoff(base=0.01, factor=2.0, cap=0.2, jitter=1.0)


def wait_for(check: Callable[[], Any], timeout: float = 20.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.02)


def served(objects: list[dict[str, Any]], **kwargs: Any) -> ApiServer:
    """A started double serving `objects` (NodePools, which no server serves, left out)."""
    server = serve_draplan_kinds(ApiServer(**kwargs))
    server.apply(("put", o) for o in objects if o["kind"] != "NodePool")
    return server.start()


def model_of(server: ApiServer, kubeconfig: str, **options: Any) -> LiveClusterModel:
    opts = WatchOptions(backoff=FAST, seed=7, page_size=options.pop("page_size", 50), **options)
    return LiveClusterModel(resolve_config(server.kubeconfig(kubeconfig)), options=opts)


def caught_up(model: LiveClusterModel, server: ApiServer) -> bool:
    """Every served kind has seen the server's newest resourceVersion (bookmarks bring idle
    kinds there); a kind not served has none."""
    want = str(server.rv)
    return all(rv in (want, "") for rv in model.resource_versions().values())


def fresh_load(server: ApiServer, kubeconfig: str) -> ClusterState:
    """What a one-shot draplan run reads from the server now."""
    read = read_cluster(LiveOptions(kubeconfig=kubeconfig, progress=False), notify=None)
    return ClusterState.from_objects(read.objects)
