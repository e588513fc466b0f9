"""serve.watch and serve.live_model against the API-server double on 127.0.0.1: list then
watch, bookmarks, relist on 410 Gone, back-off, reconnects, readiness, a server that goes away,
bad objects, version negotiation; and the model equal to a fresh load of the server's objects."""

from __future__ import annotations

import copy
import logging
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from apiserver import ApiServer
from draplan.api.codec import decode
from draplan.cluster.state import ClusterState
from draplan.serve.live_model import LiveClusterModel
from draplan.serve.watch import Backoff, Item
from draplan.sources.live import RESOURCES
from generated_clusters import generate
from state_projection import projection, schedule_outcome
from watch_support import Churn, caught_up, fresh_load, gpu_node, model_of, served, wait_for


@pytest.fixture(autouse=True)
def _loopback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("all_proxy", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def cleanup() -> Iterator[list[Any]]:
    things: list[Any] = []
    yield things
    for thing in reversed(things):
        thing.stop()


def _start(
    server: ApiServer, tmp_path: Path, cleanup: list[Any], **options: Any
) -> LiveClusterModel:
    cleanup.append(server)
    model = model_of(server, str(tmp_path / "kubeconfig"), **options)
    model.start()
    cleanup.append(model)
    return model


def _converged(model: LiveClusterModel, server: ApiServer, tmp_path: Path) -> ClusterState:
    """The model after it caught up, checked equal to a fresh load of the server."""
    wait_for(lambda: caught_up(model, server), what="the model to catch up")
    state, _ = model.sync()
    fresh = fresh_load(server, str(tmp_path / "kubeconfig"))
    assert projection(state) == projection(fresh)
    return state


def _events(churn: Churn, count: int) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    while len(out) < count:
        out += churn.step()
    return out


def test_lists_then_watches_from_the_lists_resource_version(
    tmp_path: Path, cleanup: list[Any]
) -> None:
    churn = Churn(random.Random(1), nodes=6, gpus=4)
    server = served(churn.initial, bookmark_interval=0.05)
    listed_at = server.rv
    model = _start(server, tmp_path, cleanup, page_size=5)
    wait_for(lambda: model.health().ready, what="ready")
    changes = _events(churn, 200)
    server.apply(changes)
    wait_for(lambda: caught_up(model, server))
    pods = [q for p, q in server.requests if p == "/api/v1/pods"]
    state = _converged(model, server, tmp_path)
    assert state.pods and state.claims and state.exclusive
    lists = [q for q in pods if "watch" not in q]
    assert len(lists) >= 2 and all(q["limit"] == ["5"] for q in lists)  # paged
    assert any("continue" in q for q in lists)
    (watch, *_) = [q for q in pods if "watch" in q]
    assert watch["resourceVersion"] == [str(listed_at)]
    assert watch["allowWatchBookmarks"] == ["true"]
    assert watch["fieldSelector"] == ["status.phase!=Succeeded,status.phase!=Failed"]
    health = model.health()
    assert health.ready and health.connected and health.relists == 0
    # A finished pod leaves the pods' watch when it turns Succeeded; its deletion is not seen.
    unseen = [o for a, o in changes if a == "delete" and o["spec"].get("nodeName")]
    assert health.events_applied == len(changes) - len(unseen)


def test_scheduler_answers_the_same_on_the_model_and_a_fresh_load(
    tmp_path: Path, cleanup: list[Any]
) -> None:
    objects = [o for o in generate(11) if o["kind"] != "NodePool"]
    server = served(objects, bookmark_interval=0.05)
    model = _start(server, tmp_path, cleanup)
    wait_for(lambda: model.health().ready)
    pods = [o for o in objects if o["kind"] == "Pod"]
    changes: list[tuple[str, dict[str, Any]]] = []
    for pod in pods[:2]:
        changes.append(("delete", pod))
    for pod in pods[2:4]:
        moved = copy.deepcopy(pod)
        moved["metadata"]["labels"] = {"moved": "yes"}
        changes.append(("put", moved))
    server.apply(changes)
    state = _converged(model, server, tmp_path)
    fresh = fresh_load(server, str(tmp_path / "kubeconfig"))
    assert schedule_outcome(state) == schedule_outcome(fresh)


@pytest.mark.parametrize("gone_as_event", [True, False], ids=["error-event", "http-status"])
def test_410_gone_relists_that_kind(
    tmp_path: Path, cleanup: list[Any], gone_as_event: bool
) -> None:
    churn = Churn(random.Random(2), nodes=4, gpus=4)
    # No bookmarks: idle kinds keep their list's resourceVersion, which compaction outdates.
    server = served(churn.initial, bookmark_interval=3600, gone_as_event=gone_as_event)
    model = _start(server, tmp_path, cleanup)
    wait_for(lambda: model.health().ready)
    server.apply(_events(churn, 50))
    server.compact()
    server.drop_watches()
    wait_for(lambda: model.health().relists > 0, what="a relist")
    server.bookmark_interval = 0.05
    server.drop_watches()  # re-watch with bookmarks on, so idle kinds catch up
    _converged(model, server, tmp_path)
    nodes = [q for p, q in server.requests if p == "/api/v1/nodes" and "watch" not in q]
    assert len(nodes) >= 2  # listed again
    assert model.health().connected


def test_bookmarks_keep_a_rewatch_from_needing_a_relist(tmp_path: Path, cleanup: list[Any]) -> None:
    churn = Churn(random.Random(3), nodes=4, gpus=4)
    server = served(churn.initial, bookmark_interval=0.05)
    model = _start(server, tmp_path, cleanup)
    wait_for(lambda: model.health().ready)
    server.apply(_events(churn, 50))
    wait_for(lambda: caught_up(model, server))
    server.compact()
    server.drop_watches()
    server.apply(_events(churn, 20))
    _converged(model, server, tmp_path)
    assert model.health().relists == 0
    watches = [q for p, q in server.requests if p == "/api/v1/nodes" and "watch" in q]
    assert len(watches) >= 2  # re-watched from the bookmark's resourceVersion


def test_errors_back_off_with_jitter_and_honour_retry_after(
    tmp_path: Path, cleanup: list[Any]
) -> None:
    churn = Churn(random.Random(4), nodes=3, gpus=2)
    server = served(churn.initial, bookmark_interval=0.05)
    server.fail(500, times=3, match="/api/v1/nodes", watch=True)
    server.fail(429, times=1, match="/api/v1/podtemplates", retry_after=1)
    model = _start(server, tmp_path, cleanup)
    wait_for(lambda: model.health().ready)
    server.apply(_events(churn, 30))
    _converged(model, server, tmp_path)
    assert model.intake is not None
    delays = model.intake.delays
    nodes = [d for kind, d in delays if kind == "nodes"]
    assert len(nodes) == 3
    # Doubling steps with up to 100% jitter: each within [step, 2 * step].
    for attempt, delay in enumerate(nodes):
        step = min(0.2, 0.01 * 2**attempt)
        assert step <= delay <= 2 * step
    assert [d for kind, d in delays if kind == "podtemplates"] == [1.0]


def test_backoff_is_deterministic_under_a_seed_and_capped() -> None:
    policy = Backoff(base=0.8, factor=2.0, cap=30.0, jitter=1.0)
    first = [policy.delay(a, random.Random(5)) for a in range(10)]
    again = [policy.delay(a, random.Random(5)) for a in range(10)]
    assert first == again
    assert all(min(30.0, 0.8 * 2**a) <= d <= 2 * min(30.0, 0.8 * 2**a) for a, d in enumerate(first))
    assert max(first) <= 60.0


def test_dropped_connections_reconnect_without_losing_events(
    tmp_path: Path, cleanup: list[Any]
) -> None:
    churn = Churn(random.Random(5), nodes=5, gpus=4)
    server = served(churn.initial, bookmark_interval=0.05)
    model = _start(server, tmp_path, cleanup)
    wait_for(lambda: model.health().ready)
    for _ in range(5):
        server.apply(_events(churn, 20))
        server.drop_watches()
    _converged(model, server, tmp_path)
    assert model.health().relists == 0


def test_an_expired_continue_token_lists_again_in_one_request(
    tmp_path: Path, cleanup: list[Any]
) -> None:
    churn = Churn(random.Random(10), nodes=6, gpus=2)
    server = served(churn.initial, bookmark_interval=0.05)
    server.expire_continue = 1
    model = _start(server, tmp_path, cleanup, page_size=2)
    wait_for(lambda: model.health().ready)
    _converged(model, server, tmp_path)
    lists = [(p, q) for p, q in server.requests if "watch" not in q and p.endswith("s")]
    expired = next(i for i, (_, q) in enumerate(lists) if "continue" in q)
    path = lists[expired][0]
    # client-go's pager: the whole list again, without a limit (so without a continue).
    assert any(p == path and "limit" not in q for p, q in lists[expired + 1 :])
    assert model.health().relists == 0


def test_a_slow_link_still_ends_equal(tmp_path: Path, cleanup: list[Any]) -> None:
    churn = Churn(random.Random(11), nodes=4, gpus=4)
    server = served(churn.initial, bookmark_interval=0.05)
    server.slow = 0.02
    model = _start(server, tmp_path, cleanup)
    wait_for(lambda: model.health().ready)
    for _ in range(10):
        server.apply(_events(churn, 10))
        time.sleep(0.01)
    _converged(model, server, tmp_path)


def test_ready_only_after_every_initial_list(tmp_path: Path, cleanup: list[Any]) -> None:
    churn = Churn(random.Random(6), nodes=2, gpus=2)
    server = served(churn.initial, bookmark_interval=0.05)
    server.fail(500, times=10**6, match="/api/v1/pods", watch=False)
    model = _start(server, tmp_path, cleanup)
    wait_for(lambda: any(kind == "pods" for kind, _ in model.intake.delays) if model.intake else 0)
    wait_for(lambda: model.resource_versions()["nodes"] != "")
    assert not model.health().ready
    assert not model.health().connected  # the pods' list keeps failing
    server._faults.clear()
    wait_for(lambda: model.health().ready, what="ready")
    assert model.health().connected


def test_lost_server_disconnects_and_keeps_the_last_state(
    tmp_path: Path, cleanup: list[Any]
) -> None:
    churn = Churn(random.Random(7), nodes=4, gpus=4)
    server = served(churn.initial, bookmark_interval=0.05)
    model = _start(server, tmp_path, cleanup)
    wait_for(lambda: model.health().ready)
    state = _converged(model, server, tmp_path)
    before = projection(state)
    _, generation = model.sync()
    server.stop()
    wait_for(lambda: not model.health().connected, what="disconnected")
    time.sleep(0.2)  # streams cut a moment later than the first are done by now
    contact = model.health().last_contact
    time.sleep(0.3)  # reconnects keep failing meanwhile
    same, same_generation = model.sync()
    assert same_generation == generation and projection(same) == before
    health = model.health()
    assert health.ready and not health.connected and health.last_contact == contact
    server.apply(_events(churn, 30))  # while away
    server.start()
    wait_for(lambda: model.health().connected, what="reconnected")
    _converged(model, server, tmp_path)


def test_once_one_kind_is_answered_again_the_others_retry_at_once(
    tmp_path: Path, cleanup: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="draplan.serve")
    churn = Churn(random.Random(12), nodes=2, gpus=2)
    server = served(churn.initial, bookmark_interval=0.05)
    model = _start(server, tmp_path, cleanup, backoff=Backoff(base=2.0, factor=2.0, jitter=1.0))
    wait_for(lambda: model.health().ready and model.health().connected, what="connected")
    assert model.intake is not None
    served_kinds = sum(1 for rv in model.resource_versions().values() if rv)
    back: dict[str, float] = {}
    contact = model.contact

    def spy(res: Any, ok: bool, message: str = "") -> None:
        if ok and message and res.plural not in back:
            back[res.plural] = time.monotonic()
        contact(res, ok, message)

    model.contact = spy  # type: ignore[method-assign]
    before = len(model.intake.delays)
    server.stop()
    # Every watch is cut and backs off once, 2 to 4 s each (client-go's jitter factor 1).
    wait_for(lambda: model.intake is not None and len(model.intake.delays) - before >= served_kinds)
    delays = [d for _, d in model.intake.delays[before:]]
    back.clear()
    server.start()
    wait_for(lambda: model.health().connected, timeout=30, what="reconnected")
    assert max(delays) - min(delays) > 1.0  # waited out, they would come back apart
    assert max(back.values()) - min(back.values()) < 0.5, back
    _converged(model, server, tmp_path)
    assert "reconnected: watching from resourceVersion" in caplog.text


def test_a_bad_object_is_logged_once_counted_and_skipped(
    tmp_path: Path, cleanup: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    churn = Churn(random.Random(8), nodes=2, gpus=2)
    server = served(churn.initial, bookmark_interval=0.05)
    model = _start(server, tmp_path, cleanup)
    wait_for(lambda: model.health().ready)
    bad = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "broken", "namespace": "work"},
        "spec": {"containers": "not a list"},
    }
    bad_cel = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "bad-cel", "namespace": "work"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "r",
                        "exactly": {
                            "deviceClassName": "gpu.example.com",
                            "selectors": [{"cel": {"expression": "device.driver =="}}],
                        },
                    }
                ]
            }
        },
    }
    with caplog.at_level(logging.WARNING, logger="draplan.serve"):
        server.apply([("put", bad), ("put", bad_cel)])
        wait_for(lambda: caught_up(model, server))
        state, _ = model.sync()
        # Pods and claims fall behind a compaction and relist: the same bad objects again.
        server.bookmark_interval = 3600
        server.drop_watches()
        server.put(gpu_node("node-00000", 2, zone="c")[0])
        server.compact()
        server.drop_watches()
        wait_for(lambda: model.health().relists >= 2)
        server.bookmark_interval = 0.05
        server.drop_watches()
        state = _converged_without_bad(model, server)
    assert ("work", "broken") not in state.pods and ("work", "bad-cel") not in state.claims
    assert model.health().bad_objects == 2
    skipped = sorted(r.getMessage() for r in caplog.records if "skipped" in r.getMessage())
    assert len(skipped) == 2
    assert 'Pod "broken": spec.containers: expected array' in skipped[0]
    assert 'ResourceClaim "bad-cel"' in skipped[1] and "CEL compile error" in skipped[1]


def _converged_without_bad(model: LiveClusterModel, server: ApiServer) -> ClusterState:
    wait_for(lambda: caught_up(model, server))
    state, _ = model.sync()
    return state


def _v1beta1(doc: dict[str, Any]) -> dict[str, Any]:
    """A v1 object as a v1beta1 server holds it (devices under `basic`, requests flat)."""
    out = copy.deepcopy(doc)
    out["apiVersion"] = "resource.k8s.io/v1beta1"
    if doc["kind"] == "ResourceSlice":
        out["spec"]["devices"] = [
            {"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}}
            for d in doc["spec"]["devices"]
        ]
    if doc["kind"] == "ResourceClaim":
        out["spec"]["devices"]["requests"] = [
            {"name": r["name"], **r["exactly"]} for r in doc["spec"]["devices"]["requests"]
        ]
    return out


def test_older_resource_versions_are_negotiated_and_converted(
    tmp_path: Path, cleanup: list[Any]
) -> None:
    churn = Churn(random.Random(9), nodes=3, gpus=4)
    from apiserver import serve_draplan_kinds

    server = serve_draplan_kinds(ApiServer(bookmark_interval=0.05), resource_version="v1beta1")
    old = [_v1beta1(o) if o["apiVersion"] == "resource.k8s.io/v1" else o for o in churn.initial]
    server.apply(("put", o) for o in old)
    server.start()
    model = _start(server, tmp_path, cleanup)
    wait_for(lambda: model.health().ready)
    changes = [
        (a, _v1beta1(o) if o["apiVersion"] == "resource.k8s.io/v1" else o)
        for a, o in _events(churn, 40)
    ]
    server.apply(changes)
    state = _converged(model, server, tmp_path)
    assert any("/apis/resource.k8s.io/v1beta1/resourceslices" in p for p, _ in server.requests)
    assert sum(len(state.slice_devices(n)) for n in state.slices) == 12
    assert state.exclusive


# --- the model's queue, without a server ---------------------------------------------------

_RES = {(r.kind, r.group): r for r in RESOURCES}
_SLOTS = {
    "Node": _RES[("Node", "")],
    "Pod": _RES[("Pod", "")],
    "ResourceClaim": _RES[("ResourceClaim", "resource.k8s.io")],
    "ResourceSlice": _RES[("ResourceSlice", "resource.k8s.io")],
    "DeviceClass": _RES[("DeviceClass", "resource.k8s.io")],
    "ResourceClaimTemplate": _RES[("ResourceClaimTemplate", "resource.k8s.io")],
}
_DOCS = [d for d in generate(10) + generate(0) if d["kind"] in _SLOTS]


def _item(doc: dict[str, Any], rv: int) -> Item:
    obj = decode(doc)
    meta = doc["metadata"]
    return Item((meta.get("namespace", ""), meta["name"]), str(rv), obj, "src")


def _variant(doc: dict[str, Any], v: int) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    if v == 1 and doc["kind"] == "Pod":
        out["spec"].pop("nodeName", None)
    elif v == 1 and doc["kind"] == "ResourceClaim":
        out.pop("status", None)
    elif v == 1 and doc["kind"] == "ResourceSlice":
        out["spec"]["pool"]["generation"] = 2
    elif v == 1 and doc["kind"] == "Node":
        out["metadata"]["labels"]["extra"] = "x"
    return out


event = st.tuples(
    st.sampled_from(("upsert", "upsert", "remove", "bookmark", "relist", "sync")),
    st.integers(0, len(_DOCS) - 1),
    st.integers(0, 1),
)


@settings(max_examples=40, deadline=None)
@given(events=st.lists(event, max_size=50))
# A template queued, then a DeviceClass change (a rebuild from the store), then the template
# again: the first queued change must not be applied over the rebuilt state.
@example(events=[("sync", 0, 0), ("upsert", 35, 0), ("upsert", 0, 0), ("upsert", 12, 0)])
def test_sync_after_any_events_bookmarks_and_relists_equals_a_fresh_load(
    events: list[tuple[str, int, int]],
) -> None:
    model = LiveClusterModel(config=None, resources=tuple(_SLOTS.values()))  # type: ignore[arg-type]
    store: dict[tuple[str, str, str], dict[str, Any]] = {}
    for res in _SLOTS.values():
        model.replace(res, [], "1")
    for rv, (action, i, v) in enumerate(events, start=2):
        doc = _variant(_DOCS[i], v)
        res = _SLOTS[doc["kind"]]
        key = (doc["kind"], doc["metadata"].get("namespace", ""), doc["metadata"]["name"])
        if action == "upsert":
            store[key] = doc
            model.upsert(res, _item(doc, rv))
        elif action == "remove":
            store.pop(key, None)
            model.remove(res, _item(doc, rv))
        elif action == "bookmark":
            model.bookmark(res, str(rv))
        elif action == "relist":
            docs = [d for k, d in store.items() if k[0] == doc["kind"]]
            model.replace(res, [_item(d, rv) for d in docs], str(rv))
        else:
            model.sync()
    state, _ = model.sync()
    # The model keeps kinds in RESOURCES order; so does the fresh load.
    order = list(_SLOTS)
    docs = sorted(store.items(), key=lambda kv: order.index(kv[0][0]))
    fresh = ClusterState.from_objects([(decode(d), "src") for _, d in docs])
    assert projection(state) == projection(fresh)


def test_intake_never_waits_for_sync_and_coalesces() -> None:
    res = _SLOTS["Pod"]
    model = LiveClusterModel(config=None, resources=(res,))  # type: ignore[arg-type]
    model.replace(res, [], "1")
    model.sync()
    pod = next(d for d in _DOCS if d["kind"] == "Pod" and d["spec"].get("nodeName"))
    start = time.perf_counter()
    for rv in range(2, 2002):
        model.upsert(res, _item(_variant(pod, rv % 2), rv))
    assert time.perf_counter() - start < 5
    assert len(model._pending) == 1  # one object: one queued change
    state, _ = model.sync()
    assert model.health().events_applied == 2000
    assert state.pods[("work", pod["metadata"]["name"])].spec.node_name == ""  # the last: unbound
    assert not any(state.requested(pod["spec"]["nodeName"]).values())
