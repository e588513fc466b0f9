"""`--events`: a core/v1 Event on a pending pod whenever its why-category changes (the only
thing draplan ever writes), rate-limited as client-go's EventCorrelator limits a recorder."""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx2
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import SingleConfig

from draplan.api.core_v1 import Pod
from draplan.audit.why import Diagnosis
from draplan.cluster.state import ObjectKey, key_of
from draplan.serve.answers import Answers

log = logging.getLogger(__name__)

COMPONENT = "draplan"
# client-go tools/record/events_cache.go: a source may send 25 events about an object, then
# one every 5 minutes (defaultSpamBurst, defaultSpamQPS), remembered for 4096 objects
# (maxLruCacheEntries); the broadcaster queues at most 1000 (event.go: maxQueuedEvents).
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
LRU_ENTRIES = 4096
MAX_QUEUED = 1000
# events.k8s.io/v1 caps a note at 1 kB; core/v1 has no cap, but a why line should fit one.
MAX_MESSAGE = 1024
# Categories that are not a problem: the pod fits now (the scheduler will bind it).
NORMAL = frozenset({"Schedulable"})

Post = Callable[[str, dict[str, Any]], None]


class SpamFilter:
    """One token bucket per source + object (client-go's EventSourceObjectSpamFilter)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._buckets: OrderedDict[tuple[str, ...], tuple[float, float]] = OrderedDict()

    def allow(self, key: tuple[str, ...]) -> bool:
        now = self.clock()
        tokens, last = self._buckets.pop(key, (float(SPAM_BURST), now))
        tokens = min(float(SPAM_BURST), tokens + (now - last) * SPAM_QPS)
        allowed = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
        if len(self._buckets) > LRU_ENTRIES:
            self._buckets.popitem(last=False)
        return allowed


def _stamp(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_for(d: Diagnosis, uid: str, host: str, when: float) -> dict[str, Any]:
    """The core/v1 Event saying why the pod is pending, named as client-go names events."""
    ns, name = d.pod
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{int(when * 1e9):x}", "namespace": ns},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name}
        | ({"uid": uid} if uid else {}),
        "reason": d.category,
        "message": d.message[:MAX_MESSAGE],
        "type": "Normal" if d.category in NORMAL else "Warning",
        "source": {"component": COMPONENT} | ({"host": host} if host else {}),
        "firstTimestamp": _stamp(when),
        "lastTimestamp": _stamp(when),
        "count": 1,
        "reportingComponent": COMPONENT,
        "reportingInstance": host,
    }


class EventRecorder:
    """Listens to the audit loop; queues an Event per category change; one thread posts them."""

    def __init__(
        self,
        post: Post,
        host: str = "",
        clock: Callable[[], float] = time.time,
        spam: SpamFilter | None = None,
    ) -> None:
        self.post = post
        self.host = host or socket.gethostname()
        self.clock = clock
        self.spam = spam or SpamFilter()
        self.categories: dict[ObjectKey, str] = {}
        self.posted = 0
        self.dropped = 0  # by the spam filter or a full queue
        self.failed = 0
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(MAX_QUEUED)
        self._thread = threading.Thread(target=self._run, name="draplan-events", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        with contextlib.suppress(queue.Full):  # a full queue's poster stops with the process
            self._queue.put_nowait(None)
        self._thread.join(timeout)

    def __call__(self, answers: Answers) -> None:
        uids = {key_of(o): o.metadata.uid for o in answers.objects if isinstance(o, Pod)}
        now = self.clock()
        current: dict[ObjectKey, str] = {}
        for d in answers.diagnoses:
            current[d.pod] = d.category
            if self.categories.get(d.pod) == d.category:
                continue
            uid = uids.get(d.pod) or ""
            if not self.spam.allow((COMPONENT, self.host, "Pod", *d.pod, uid, "v1")):
                self.dropped += 1
                continue
            try:
                self._queue.put_nowait(event_for(d, uid, self.host, now))
            except queue.Full:
                self.dropped += 1
        self.categories = current

    def _run(self) -> None:
        while (event := self._queue.get()) is not None:
            try:
                self.post(event["metadata"]["namespace"], event)
                self.posted += 1
            except Exception as err:  # an Event is best effort, as client-go's are
                self.failed += 1
                log.warning("posting an Event failed: %s", err)


def api_poster(config: SingleConfig, timeout: float = 10.0) -> Post:
    """POST Events through lightkube's authenticated client for `config`."""
    params = client_adapter.ConnectionParams(timeout=httpx2.Timeout(timeout))
    http = client_adapter.Client(config, params)

    def post(namespace: str, event: dict[str, Any]) -> None:
        resp = http.post(f"/api/v1/namespaces/{namespace}/events", json=event)
        if resp.status_code >= 300:
            raise RuntimeError(f"HTTP {resp.status_code} creating an Event in {namespace}")

    return post
