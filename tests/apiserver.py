"""An API server double on 127.0.0.1 with the list and watch semantics informers rely on.

One resourceVersion counter orders every change (etcd's revision). Lists page by
`limit`/`continue` over a snapshot taken at the first page, with the snapshot's resourceVersion
in the list metadata; a `continue` token whose snapshot is older than the compaction answers
410 Expired. `watch=1` streams chunked JSON lines (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR)
of the changes after the asked resourceVersion, in order; an object that starts or stops
matching the field or label selector arrives as ADDED or DELETED, as from the watch cache; a
resourceVersion older than the compaction answers 410 Gone, as an ERROR event (the watch cache)
or as the HTTP status (etcd), by `gone_as_event`. Bookmarks carry the current resourceVersion
every `bookmark_interval` seconds when asked for; `timeoutSeconds` ends a stream cleanly.
Scripted faults: `fail` (500, 429 with Retry-After, ... for the next N matching requests),
`drop_watches` (connections cut mid-stream), `stop` / `start` (the server away and back on
the same port), `slow` (a pause before every watch chunk: a slow link). Discovery documents
tell which versions of each group are served.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import json
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Obj = dict[str, Any]
Key = tuple[str, str]


def status(code: int, reason: str, message: str) -> Obj:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def _key(obj: Obj) -> Key:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


def _field_matches(obj: Obj, selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        if "!=" in term:
            path, value = term.split("!=", 1)
            negate = True
        else:
            path, value = term.split("=", 1)
            negate = False
        current: Any = obj
        for part in path.split("."):
            current = current.get(part, {}) if isinstance(current, dict) else {}
        actual = current if isinstance(current, str) else ""
        if (actual == value) == negate:
            return False
    return True


def _label_matches(obj: Obj, selector: str) -> bool:
    labels = obj["metadata"].get("labels") or {}
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


@dataclass
class Change:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    old: Obj | None
    new: Obj | None


@dataclass
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    objects: dict[Key, Obj] = field(default_factory=dict)
    log: list[Change] = field(default_factory=list)
    log_rvs: list[int] = field(default_factory=list)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def base(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"


@dataclass
class _Fault:
    code: int
    remaining: int
    match: str
    watch: bool | None
    retry_after: int | None


@dataclass
class Query:
    namespace: str
    fields: str
    labels: str

    def selects(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        if self.namespace and obj["metadata"].get("namespace", "") != self.namespace:
            return False
        return _field_matches(obj, self.fields) and _label_matches(obj, self.labels)


class _Server(ThreadingHTTPServer):
    # A real API server takes many connections at once; socketserver's default backlog of 5
    # drops the SYNs of a client that reconnects every watch at once (a 1 s retransmit).
    request_queue_size = 128


class ApiServer:
    """Serve `Resource`s; mutate them with `put` / `delete` from any thread."""

    def __init__(
        self,
        *,
        bookmark_interval: float = 0.2,
        gone_as_event: bool = True,
        max_page: int | None = None,
    ) -> None:
        self.rv = 1
        self.compacted = 0
        self.bookmark_interval = bookmark_interval
        self.gone_as_event = gone_as_event
        self.max_page = max_page  # a server may answer fewer items than the limit asked
        self.slow = 0.0
        self.expire_continue = 0  # the next N continue tokens answer 410 Expired, as if compacted
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        self._cond = threading.Condition()
        self._resources: dict[tuple[str, str], Resource] = {}  # (apiVersion, kind)
        self._by_path: dict[tuple[str, str], Resource] = {}  # (base, plural)
        self._faults: list[_Fault] = []
        self._snapshots: dict[str, tuple[int, list[Obj]]] = {}
        self._tokens = itertools.count(1)
        self._drops = 0
        self._port = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False

    # --- what is served -------------------------------------------------------------------

    def serve(self, group: str, version: str, plural: str, kind: str, namespaced: bool) -> None:
        res = Resource(group, version, plural, kind, namespaced)
        self._resources[(res.api_version, kind)] = res
        self._by_path[(res.base, plural)] = res

    def resource(self, api_version: str, kind: str) -> Resource:
        return self._resources[(api_version, kind)]

    def objects(self) -> list[Obj]:
        """Every object held, each with its apiVersion and kind."""
        with self._cond:
            return [
                {**o, "apiVersion": r.api_version, "kind": r.kind}
                for r in self._resources.values()
                for o in r.objects.values()
            ]

    # --- changes --------------------------------------------------------------------------

    def put(self, obj: Obj) -> int:
        """Create or replace `obj` (with apiVersion and kind); its new resourceVersion."""
        return self.apply([("put", obj)])

    def delete(self, obj: Obj) -> int:
        return self.apply([("delete", obj)])

    def apply(self, changes: Iterable[tuple[str, Obj]]) -> int:
        """Several puts and deletes, each its own resourceVersion, watchers woken once."""
        with self._cond:
            for action, obj in changes:
                res = self._resources[(obj["apiVersion"], obj["kind"])]
                key = _key(obj)
                old = res.objects.get(key)
                if action == "delete":
                    if old is None:
                        continue
                    self.rv += 1
                    gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(self.rv)}}
                    del res.objects[key]
                    res.log.append(Change(self.rv, "DELETED", old, gone))
                else:
                    self.rv += 1
                    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
                    body["metadata"] = {**obj["metadata"], "resourceVersion": str(self.rv)}
                    res.objects[key] = body
                    kind = "ADDED" if old is None else "MODIFIED"
                    res.log.append(Change(self.rv, kind, old, body))
                res.log_rvs.append(self.rv)
            self._cond.notify_all()
            return self.rv

    def compact(self) -> None:
        """Forget every change so far: older resourceVersions answer 410 from now on."""
        with self._cond:
            self.compacted = self.rv

    # --- faults ---------------------------------------------------------------------------

    def fail(
        self,
        code: int,
        times: int = 1,
        *,
        match: str = "",
        watch: bool | None = None,
        retry_after: int | None = None,
    ) -> None:
        """Answer the next `times` requests whose path holds `match` (watches only, lists
        only, or both by `watch`) with `code`."""
        with self._cond:
            self._faults.append(_Fault(code, times, match, watch, retry_after))

    def drop_watches(self) -> None:
        """Cut every open watch stream without its closing chunk."""
        with self._cond:
            self._drops += 1
            self._cond.notify_all()

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> ApiServer:
        httpd = _Server(("127.0.0.1", self._port), _handler(self))
        httpd.daemon_threads = True
        self._port = int(httpd.server_address[1])
        self._stopping = False
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Go away: no new connections, open watches cut."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def kubeconfig(self, path: str) -> str:
        """A kubeconfig file at `path` pointing at this server (no credentials)."""
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "double", "cluster": {"server": self.url}}],
            "contexts": [{"name": "double", "context": {"cluster": "double"}}],
            "current-context": "double",
        }
        with open(path, "w", encoding="utf-8") as out:
            json.dump(doc, out)
        return path

    # --- answering ------------------------------------------------------------------------

    def _fault(self, path: str, watching: bool) -> _Fault | None:
        with self._cond:
            for fault in self._faults:
                if fault.match in path and fault.watch in (None, watching):
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def discovery(self, path: str) -> Obj | None:
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"]}
        if path == "/apis":
            groups = sorted({r.group for r in self._resources.values() if r.group})
            return {"kind": "APIGroupList", "groups": [{"name": g} for g in groups]}
        parts = path.strip("/").split("/")
        served = self._resources.values()
        if parts[0] == "apis" and len(parts) == 2:
            versions = sorted({r.version for r in served if r.group == parts[1]})
            if not versions:
                return None
            return {
                "kind": "APIGroup",
                "name": parts[1],
                "versions": [{"groupVersion": f"{parts[1]}/{v}", "version": v} for v in versions],
            }
        if (parts[0] == "apis" and len(parts) == 3) or (parts[0] == "api" and len(parts) == 2):
            group, version = (parts[1], parts[2]) if parts[0] == "apis" else ("", parts[1])
            found = [r for r in served if r.group == group and r.version == version]
            if not found:
                return None
            return {
                "kind": "APIResourceList",
                "groupVersion": f"{group}/{version}" if group else version,
                "resources": [
                    {
                        "name": r.plural,
                        "kind": r.kind,
                        "namespaced": r.namespaced,
                        "verbs": ["get", "list", "watch"],
                    }
                    for r in found
                ],
            }
        return None

    def route(self, path: str) -> tuple[Resource, str] | None:
        """The resource a collection path names, and the namespace it is scoped to."""
        for (base, plural), res in self._by_path.items():
            if not path.startswith(base + "/"):
                continue
            rest = path[len(base) + 1 :].split("/")
            if rest == [plural]:
                return res, ""
            if res.namespaced and len(rest) == 3 and rest[0] == "namespaces" and rest[2] == plural:
                return res, rest[1]
        return None

    def list(self, res: Resource, query: Query, params: dict[str, list[str]]) -> tuple[int, Obj]:
        token = params.get("continue", [""])[0]
        limit = int(params.get("limit", ["0"])[0] or 0)
        with self._cond:
            if token:
                sid, _, offset_text = token.partition(":")
                snapshot = self._snapshots.get(sid)
                expired = self.expire_continue > 0
                self.expire_continue -= expired
                if snapshot is None or snapshot[0] < self.compacted or expired:
                    return 410, status(
                        410,
                        "Expired",
                        "The provided continue parameter is too old to display a consistent "
                        "list result. You can start a new list without the continue parameter.",
                    )
                rv, items = snapshot
                offset = int(offset_text)
            else:
                rv = self.rv
                items = sorted((o for o in res.objects.values() if query.selects(o)), key=_key)
                sid, offset = str(next(self._tokens)), 0
                self._snapshots[sid] = (rv, items)
        size = len(items) - offset
        if limit:
            size = min(size, limit, self.max_page or limit)
        page = items[offset : offset + size]
        meta: Obj = {"resourceVersion": str(rv)}
        if offset + size < len(items):
            meta["continue"] = f"{sid}:{offset + size}"
            meta["remainingItemCount"] = len(items) - offset - size
        return 200, {
            "kind": f"{res.kind}List",
            "apiVersion": res.api_version,
            "metadata": meta,
            "items": page,
        }

    def watch_line(self, res: Resource, query: Query, change: Change) -> bytes | None:
        """The line a change becomes for one watcher, if any."""
        old_in, new_in = query.selects(change.old), query.selects(change.new)
        kind = change.type
        if kind == "MODIFIED":
            if old_in and not new_in:
                kind, obj = (
                    "DELETED",
                    {
                        **(change.old or {}),
                        "metadata": {
                            **(change.old or {})["metadata"],
                            "resourceVersion": str(change.rv),
                        },
                    },
                )
            elif new_in and not old_in:
                kind, obj = "ADDED", change.new or {}
            elif new_in:
                obj = change.new or {}
            else:
                return None
        elif kind == "ADDED":
            if not new_in:
                return None
            obj = change.new or {}
        else:
            if not old_in:
                return None
            obj = change.new or {}
        body = {"apiVersion": res.api_version, "kind": res.kind, **obj}
        return json.dumps({"type": kind, "object": body}).encode() + b"\n"


def _handler(server: ApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def handle(self) -> None:
            # A client that went away mid-answer is the client's business, as for a real server.
            with contextlib.suppress(OSError):
                super().handle()

        def _send(self, code: int, doc: Obj, headers: dict[str, str] | None = None) -> None:
            body = json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if server._stopping:  # a kept-alive connection to a server that is gone
                self._cut()
                return
            url = urlsplit(self.path)
            params = parse_qs(url.query)
            server.requests.append((url.path, params))
            watching = params.get("watch", [""])[0] in ("1", "true")
            fault = server._fault(url.path, watching)
            if fault is not None:
                headers = {}
                if fault.retry_after is not None:
                    headers["Retry-After"] = str(fault.retry_after)
                self._send(fault.code, status(fault.code, "Fault", "scripted fault"), headers)
                return
            doc = server.discovery(url.path)
            if doc is not None:
                self._send(200, doc)
                return
            routed = server.route(url.path)
            if routed is None:
                self._send(404, status(404, "NotFound", "the server could not find it"))
                return
            res, namespace = routed
            query = Query(
                namespace,
                params.get("fieldSelector", [""])[0],
                params.get("labelSelector", [""])[0],
            )
            if watching:
                self._watch(res, query, params)
            else:
                self._send(*server.list(res, query, params))

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        def _cut(self) -> None:
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True

        def _watch(self, res: Resource, query: Query, params: dict[str, list[str]]) -> None:
            since = int(params.get("resourceVersion", ["0"])[0] or 0)
            timeout = float(params.get("timeoutSeconds", ["1800"])[0])
            bookmarks = params.get("allowWatchBookmarks", [""])[0] == "true"
            with server._cond:
                gone = since < server.compacted
                drops = server._drops
                # resourceVersion 0 (or none): the current objects as ADDED, then what follows.
                initial = [o for o in res.objects.values() if query.selects(o)] if not since else []
                pos = bisect.bisect_right(res.log_rvs, since) if since else len(res.log)
            if gone and not server.gone_as_event:
                self._send(410, status(410, "Expired", f"too old resource version: {since}"))
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                if gone:
                    error = status(410, "Expired", f"too old resource version: {since}")
                    self._chunk(json.dumps({"type": "ERROR", "object": error}).encode() + b"\n")
                    self._chunk(b"")
                    return
                if initial:
                    self._chunk(
                        b"".join(
                            json.dumps(
                                {
                                    "type": "ADDED",
                                    "object": {
                                        "apiVersion": res.api_version,
                                        "kind": res.kind,
                                        **o,
                                    },
                                }
                            ).encode()
                            + b"\n"
                            for o in initial
                        )
                    )
                self._stream(res, query, pos, drops, timeout, bookmarks)
            except OSError:
                self.close_connection = True

        def _stream(
            self,
            res: Resource,
            query: Query,
            pos: int,
            drops: int,
            timeout: float,
            bookmarks: bool,
        ) -> None:
            start = time.monotonic()
            deadline = start + timeout
            next_bookmark = start + server.bookmark_interval
            while True:
                with server._cond:
                    while (
                        pos >= len(res.log)
                        and server._drops == drops
                        and not server._stopping
                        and time.monotonic() < min(deadline, next_bookmark)
                    ):
                        server._cond.wait(min(deadline, next_bookmark) - time.monotonic())
                    if server._drops != drops or server._stopping:
                        self._cut()
                        return
                    batch = res.log[pos:]
                    pos = len(res.log)
                    current = server.rv
                lines = [line for c in batch if (line := server.watch_line(res, query, c))]
                now = time.monotonic()
                if bookmarks and now >= next_bookmark:
                    mark = {
                        "apiVersion": res.api_version,
                        "kind": res.kind,
                        "metadata": {"resourceVersion": str(current)},
                    }
                    lines.append(json.dumps({"type": "BOOKMARK", "object": mark}).encode() + b"\n")
                    next_bookmark = now + server.bookmark_interval
                if lines:
                    if server.slow:
                        time.sleep(server.slow)
                    self._chunk(b"".join(lines))
                if now >= deadline:
                    self._chunk(b"")
                    return

    return Handler


def serve_draplan_kinds(server: ApiServer, *, resource_version: str = "v1") -> ApiServer:
    """Serve every kind the live source reads, resource.k8s.io as `resource_version`."""
    for group, version, plural, kind, namespaced in (
        ("resource.k8s.io", resource_version, "deviceclasses", "DeviceClass", False),
        ("resource.k8s.io", resource_version, "resourceslices", "ResourceSlice", False),
        ("resource.k8s.io", resource_version, "resourceclaims", "ResourceClaim", True),
        (
            "resource.k8s.io",
            resource_version,
            "resourceclaimtemplates",
            "ResourceClaimTemplate",
            True,
        ),
        ("", "v1", "nodes", "Node", False),
        ("", "v1", "pods", "Pod", True),
        ("", "v1", "podtemplates", "PodTemplate", True),
        ("", "v1", "configmaps", "ConfigMap", True),
        ("", "v1", "namespaces", "Namespace", False),
        ("", "v1", "services", "Service", True),
        ("", "v1", "replicationcontrollers", "ReplicationController", True),
        ("apps", "v1", "replicasets", "ReplicaSet", True),
        ("apps", "v1", "statefulsets", "StatefulSet", True),
        ("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False),
        ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
        ("scheduling.k8s.io", "v1alpha2", "workloads", "Workload", True),
        ("scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup", True),
        ("autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest", True),
    ):
        server.serve(group, version, plural, kind, namespaced)
    if resource_version == "v1":
        server.serve("resource.k8s.io", "v1", "devicetaintrules", "DeviceTaintRule", False)
    return server
