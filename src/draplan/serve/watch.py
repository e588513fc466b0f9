"""Informer-like intake: per kind the live source reads, list (paged) and then watch from the
list's resourceVersion, as client-go's Reflector does.

Bookmarks advance the resourceVersion, so a re-watch after a server-side timeout or a dropped
connection resumes where it was; `410 Gone` (the HTTP status, or an ERROR event with code 410)
means that resourceVersion was compacted away, so the kind is listed again; other failures back
off exponentially with jitter (client-go's 800 ms doubling to 30 s, jitter factor 1), longer
when the server says Retry-After. One server answers every kind: when a request succeeds after
failures, the kinds still backing off try again at once instead of waiting out back-offs that
grew while the server was away (each kind's own back-off keeps growing if it fails again, so a
flapping server is not hammered). A kind whose group is not served (or, for an optional kind,
that RBAC refuses) counts as listed and empty, and discovery is asked again later.

One asyncio loop drives every kind's watch: fifteen mostly idle streams cost one coroutine
each, and `stop` cancels them at once, where a thread blocked reading a stream could not be
interrupted. Decoding is CPU work under the GIL either way, so threads would buy no parallelism.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import httpx2
import msgspec
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core.exceptions import ConfigError

from draplan.api.codec import KINDS, json_decoder
from draplan.api.errors import BadInput
from draplan.api.meta import KubeStruct
from draplan.api.validation import validate
from draplan.sources.kubeclient import server_label
from draplan.sources.kubeconvert import GROUP as RESOURCE_GROUP
from draplan.sources.kuberedact import LAST_APPLIED
from draplan.sources.live import Resource, decode_item, list_path

log = logging.getLogger("draplan.serve.watch")

_ANY = msgspec.json.Decoder()
T = TypeVar("T")


class _Meta(msgspec.Struct):
    resource_version: str = msgspec.field(default="", name="resourceVersion")
    continue_: str = msgspec.field(default="", name="continue")


class _Page(msgspec.Struct):
    items: list[Any] | None = None
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _Event(msgspec.Struct):
    type: str
    object: dict[str, Any]


_PAGE = msgspec.json.Decoder(_Page)
_EVENT = msgspec.json.Decoder(_Event)


class Gone(Exception):
    """410: the resourceVersion (or a list's continue token) is older than the compaction."""


class Unserved(Exception):
    """404: the kind is not (or no longer) served in the version chosen."""


class Failed(Exception):
    """A request that may succeed when tried again; `retry_after` as the server asked."""

    def __init__(self, message: str, retry_after: float = 0.0, forbidden: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.forbidden = forbidden


@dataclass(frozen=True)
class Backoff:
    """Delays between failed attempts: `base * factor**attempt` capped, plus up to `jitter`
    times as much again at random (client-go's wait.Jitter)."""

    base: float = 0.8
    factor: float = 2.0
    cap: float = 30.0
    jitter: float = 1.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        step = min(self.cap, self.base * self.factor ** min(attempt, 32))
        return step + rng.random() * self.jitter * step


@dataclass(frozen=True)
class Item:
    """One object as it came: its key and resourceVersion, the typed object or why not."""

    key: tuple[str, str]
    resource_version: str
    obj: KubeStruct | None
    source: str = ""
    error: str = ""


class _Typed(msgspec.Struct, Generic[T]):
    type: str
    object: T


_FAST: dict[tuple[str, str], msgspec.json.Decoder[Any]] = {}


def _fast_item(res: Resource, version: str, source: str, line: bytes) -> tuple[str, Item] | None:
    """An ADDED, MODIFIED or DELETED event decoded straight from its bytes to the typed
    object, about twice as fast as through a dict; None for anything else (older versions
    to convert, bookmarks, errors, objects that do not decode or validate), which the
    general path then reads and reports."""
    api_version = f"{res.group}/{version}" if res.group else version
    cls = KINDS.get((api_version, res.kind))
    if cls is None or (res.group == RESOURCE_GROUP and version != "v1"):
        return None
    decoder = _FAST.get((api_version, res.kind))
    if decoder is None:
        decoder = _FAST[(api_version, res.kind)] = json_decoder(_Typed[cls])  # type: ignore[valid-type]
    try:
        event = decoder.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    obj = event.object
    if event.type not in ("ADDED", "MODIFIED", "DELETED") or not isinstance(obj, cls):
        return None
    if getattr(obj, "api_version", "") != api_version or getattr(obj, "kind", "") != res.kind:
        return None
    try:
        validate(obj)
    except BadInput:
        return None
    meta = obj.metadata  # type: ignore[attr-defined]
    if LAST_APPLIED in meta.annotations:
        notes = {k: v for k, v in meta.annotations.items() if k != LAST_APPLIED}
        obj = msgspec.structs.replace(
            obj, metadata=msgspec.structs.replace(meta, annotations=notes)
        )
    key = (meta.namespace, meta.name)
    return event.type, Item(key, meta.resource_version, obj, source)


def _item(raw: dict[str, Any], res: Resource, version: str, source: str) -> Item:
    meta = raw.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    rv = str(meta.get("resourceVersion") or "")
    try:
        return Item(key, rv, decode_item(raw, res, version, source), source)
    except BadInput as err:
        return Item(key, rv, None, source, str(err))


class Sink(Protocol):
    """Where a kind's objects go; called from the intake loop only."""

    def replace(self, res: Resource, items: list[Item], rv: str) -> None: ...

    def upsert(self, res: Resource, item: Item) -> None: ...

    def remove(self, res: Resource, item: Item) -> None: ...

    def bookmark(self, res: Resource, rv: str) -> None: ...

    def contact(self, res: Resource, ok: bool, message: str = "") -> None:
        """A request of `res` succeeded (`message`: "list", "watch" or "" for an event) or
        failed (`message`: why)."""


@dataclass(frozen=True)
class WatchOptions:
    namespace: str | None = None
    page_size: int = 500
    timeout: float = 60.0  # one list or discovery request
    # Server-side watch timeout; each watch asks for between this and twice this (client-go).
    watch_timeout: float = 300.0
    rediscover: float = 300.0  # seconds before asking again for a kind not served
    backoff: Backoff = Backoff()
    seed: int | None = None


class Intake:
    """The reflectors of every kind in `resources`, feeding `sink`."""

    def __init__(
        self,
        config: SingleConfig,
        resources: tuple[Resource, ...],
        sink: Sink,
        options: WatchOptions | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.config = config
        self.server = server_label(config.cluster.server)
        self.resources = resources
        self.sink = sink
        self.options = options or WatchOptions()
        self.delays: list[tuple[str, float]] = []  # the back-offs taken, newest last (bounded)
        self._sleep = sleep
        self._groups: dict[str, list[str] | None] = {}
        self._served: dict[str, set[str] | None] = {}
        self._client: httpx2.AsyncClient | None = None
        # Where each kind's watch resumes: its list's resourceVersion, then every event's and
        # bookmark's, kept across failed watches so a reconnect needs no relist.
        self._rv: dict[Resource, str] = {}
        self._failures: dict[Resource, int] = {}  # in a row, since the last success
        # Set when a request succeeds after failures: the back-offs waiting on it end.
        self._answered: asyncio.Event | None = None

    # --- running --------------------------------------------------------------------------

    async def run(self) -> None:
        """Every kind's list-and-watch until cancelled."""
        params = client_adapter.ConnectionParams(
            timeout=httpx2.Timeout(self.options.timeout, connect=10.0)
        )
        try:
            self._client = client_adapter.AsyncClient(self.config, params)
        except (ConfigError, OSError, ValueError) as err:
            raise BadInput(f"cannot connect: {err}", source=self.server) from None
        try:
            async with asyncio.TaskGroup() as group:
                for res in self.resources:
                    group.create_task(self._reflect(res))
        finally:
            await self._client.aclose()

    def _rng(self, res: Resource) -> random.Random:
        seed = self.options.seed
        return (
            random.Random(f"{seed}:{res.group}:{res.plural}")
            if seed is not None
            else random.Random()
        )

    async def _reflect(self, res: Resource) -> None:
        rng = self._rng(res)
        version: str | None = None
        while True:
            try:
                if version is None:
                    version = await self._pick(res)
                    if version is None:
                        self.sink.replace(res, [], "")
                        await self._sleep(self.options.rediscover)
                        self._groups.pop(res.group, None)
                        continue
                if not self._rv.get(res):
                    self._rv[res] = await self._list(res, version)
                await self._watch(res, version, rng)
            except Gone:
                # Compacted away: list again at once, as client-go does; a list that is itself
                # Gone before anything succeeded backs off like any failure.
                self._rv[res] = ""
                if self._failures.get(res):
                    await self._back_off(res, rng, 0.0)
                else:
                    self._failures[res] = 1
            except Unserved:
                version, self._rv[res] = None, ""
                self._groups.pop(res.group, None)
                self._served.clear()
            except (Failed, BadInput, msgspec.MsgspecError) as err:
                if isinstance(err, Failed) and err.forbidden and res.optional:
                    log.warning("%s not read: %s", res.plural, err)
                    self.sink.replace(res, [], "")
                    await self._sleep(self.options.rediscover)
                    continue
                self.sink.contact(res, False, str(err))
                await self._back_off(res, rng, err.retry_after if isinstance(err, Failed) else 0.0)

    async def _back_off(self, res: Resource, rng: random.Random, retry_after: float) -> None:
        """Wait before the next attempt: longer after every failure in a row (`_ok` resets),
        but no longer than until another kind's request succeeds after failures (a server
        that asked for Retry-After is waited for in full)."""
        attempt = self._failures.get(res, 0)
        delay = max(self.options.backoff.delay(attempt, rng), retry_after)
        self._failures[res] = attempt + 1
        self.delays = [*self.delays[-99:], (res.plural, delay)]
        if retry_after:
            await self._sleep(delay)
            return
        if self._answered is None:
            self._answered = asyncio.Event()
        answered = asyncio.ensure_future(self._answered.wait())
        slept = asyncio.ensure_future(self._sleep(delay))
        try:
            await asyncio.wait((answered, slept), return_when=asyncio.FIRST_COMPLETED)
        finally:
            answered.cancel()
            slept.cancel()

    def _ok(self, res: Resource, what: str) -> None:
        """A request of `res` succeeded: `what` it was ("list" or "watch")."""
        if self._failures.get(res) and self._answered is not None:
            # The server answers again: wake the other kinds' back-offs (the next failure
            # makes a new event, so one recovery wakes each waiting kind once).
            self._answered.set()
            self._answered = None
        self._failures[res] = 0
        self.sink.contact(res, True, what)

    # --- requests -------------------------------------------------------------------------

    async def _get(self, path: str, params: dict[str, str] | None = None) -> bytes:
        assert self._client is not None
        try:
            resp = await self._client.get(path, params=params)
        except (ConfigError, KeyError, ValueError) as err:
            raise Failed(f"credentials: {err}") from None
        except httpx2.HTTPError as err:
            raise Failed(f"cannot reach the API server: {str(err) or type(err).__name__}") from None
        _check(resp.status_code, resp.content, resp.headers)
        return resp.content

    async def _versions(self, group: str) -> list[str] | None:
        if group not in self._groups:
            try:
                doc = _ANY.decode(await self._get(f"/apis/{group}"))
            except Unserved:
                doc = None
            versions = doc.get("versions") if isinstance(doc, dict) else None
            self._groups[group] = (
                [str(v.get("version")) for v in versions if isinstance(v, dict)]
                if isinstance(versions, list)
                else None
            )
        return self._groups[group]

    async def _resources(self, group: str, version: str) -> set[str]:
        path = f"/apis/{group}/{version}"
        if path not in self._served:
            try:
                doc = _ANY.decode(await self._get(path))
            except Unserved:
                doc = None
            entries = doc.get("resources") if isinstance(doc, dict) else None
            self._served[path] = {
                str(r.get("name"))
                for r in entries or ()
                if isinstance(r, dict) and "watch" in (r.get("verbs") or ["watch"])
            }
        return self._served[path] or set()

    async def _pick(self, res: Resource) -> str | None:
        """The first version of `res` draplan reads that the server serves (live.py's rule)."""
        if not res.group:
            return res.versions[0]
        served = await self._versions(res.group) or []
        for version in res.versions:
            if version in served and res.plural in await self._resources(res.group, version):
                return version
        return None

    def _path(self, res: Resource, version: str) -> str:
        namespace = None if res.cluster_wide or not res.namespaced else self.options.namespace
        return list_path(res, version, namespace)

    def _selectors(self, res: Resource) -> dict[str, str]:
        params = {}
        if res.field_selector:
            params["fieldSelector"] = res.field_selector
        if res.label_selector:
            params["labelSelector"] = res.label_selector
        return params

    async def _list(self, res: Resource, version: str) -> str:
        """Every object of `res`, paged; the list's resourceVersion. A continue token that
        expired restarts the list in one request (client-go's pager does the same)."""
        path = self._path(res, version)
        source = f"{self.server}{path}"
        query = {**self._selectors(res), "limit": str(self.options.page_size)}
        raws: list[Any] = []
        rv = ""
        while True:
            try:
                body = await self._get(path, query)
            except Gone:
                if "continue" not in query:
                    raise
                raws.clear()
                rv = ""
                query = self._selectors(res)
                continue
            try:
                page = _PAGE.decode(body)
            except (msgspec.DecodeError, msgspec.ValidationError):
                raise Failed(f"GET {path}: the answer is not a list") from None
            raws.extend(page.items or ())
            rv = rv or page.metadata.resource_version
            self._ok(res, "list")
            if not page.metadata.continue_:
                break
            query["continue"] = page.metadata.continue_
        items = [_item(raw, res, version, source) for raw in raws if isinstance(raw, dict)]
        self.sink.replace(res, items, rv)
        return rv

    async def _watch(self, res: Resource, version: str, rng: random.Random) -> None:
        """Follow one watch stream from the kind's resourceVersion until the server ends it."""
        assert self._client is not None
        path = self._path(res, version)
        source = f"{self.server}{path}"
        seconds = int(self.options.watch_timeout * (1 + rng.random()))
        params = {
            **self._selectors(res),
            "watch": "1",
            "resourceVersion": self._rv[res],
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(max(1, seconds)),
        }
        # No bytes for longer than the server-side timeout plus a margin: the link is dead.
        timeout = httpx2.Timeout(self.options.timeout, connect=10.0, read=seconds + 30.0)
        try:
            async with self._client.stream("GET", path, params=params, timeout=timeout) as resp:
                if resp.status_code != 200:
                    _check(resp.status_code, await resp.aread(), resp.headers)
                self._ok(res, "watch")
                buffer = b""
                async for chunk in resp.aiter_bytes():
                    lines = (buffer + chunk).split(b"\n")
                    buffer = lines.pop()
                    for line in lines:
                        if line.strip():
                            self._event(res, version, source, line)
        except (ConfigError, KeyError, ValueError) as err:
            raise Failed(f"credentials: {err}") from None
        except httpx2.HTTPError as err:
            raise Failed(f"watch {path}: {str(err) or type(err).__name__}") from None

    def _event(self, res: Resource, version: str, source: str, line: bytes) -> None:
        fast = _fast_item(res, version, source, line)
        if fast is not None:
            kind, item = fast
            self._rv[res] = item.resource_version or self._rv.get(res, "")
            self.sink.contact(res, True)
            if kind == "DELETED":
                self.sink.remove(res, item)
            else:
                self.sink.upsert(res, item)
            return
        try:
            event = _EVENT.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise Failed(f"watch {res.plural}: an event that is not JSON") from None
        obj = event.object
        if event.type == "ERROR":
            code = obj.get("code")
            if code == 410:
                raise Gone()
            raise Failed(f"watch {res.plural}: {code}: {obj.get('message', '')}")
        meta = obj.get("metadata")
        if isinstance(meta, dict) and meta.get("resourceVersion"):
            self._rv[res] = str(meta["resourceVersion"])
        self.sink.contact(res, True)
        if event.type == "BOOKMARK":
            self.sink.bookmark(res, self._rv[res])
        elif event.type in ("ADDED", "MODIFIED"):
            self.sink.upsert(res, _item(obj, res, version, source))
        elif event.type == "DELETED":
            self.sink.remove(res, _item(obj, res, version, source))


def _check(status: int, body: bytes, headers: Any) -> None:
    """Raise what a non-200 answer means for a reflector."""
    if status == 200:
        return
    if status == 410:
        raise Gone()
    if status == 404:
        raise Unserved()
    message = _message(body)
    retry = 0.0
    if status == 429 or status >= 500:
        try:
            retry = float(headers.get("Retry-After") or 0)
        except ValueError:
            retry = 0.0
    raise Failed(f"HTTP {status}: {message}", retry_after=retry, forbidden=status == 403)


def _message(body: bytes) -> str:
    try:
        doc = _ANY.decode(body)
    except msgspec.DecodeError:
        return "no message"
    message = doc.get("message") if isinstance(doc, dict) else None
    return " ".join(str(message).split())[:300] if message else "no message"
