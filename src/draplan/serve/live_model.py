"""The ClusterModel of a live cluster: an object store per kind fed by the watches of
`serve.watch`, and a ClusterState brought up to date from it by `sync`.

Intake never waits for `sync`: each event updates the store and is queued, several events on
one object coalescing into one change (so the queue is bounded by the store). `sync` applies the
queue through `cluster.incremental`; it builds a new state instead (`ClusterState.from_objects`
of the store) after any list (the initial ones, a relist after 410 Gone) and after a change of
a kind that is better met by a new state: DeviceClasses and DeviceTaintRules (see
`cluster.incremental.needs_rebuild`) and the NodePool ConfigMaps (two ConfigMaps may name the
same NodePool; a fresh load keeps the first). A new state object means every cache keyed on the
old one is void. A bad object is logged once (per resourceVersion), counted and left out, as if
it were not there.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lightkube.config.kubeconfig import SingleConfig

from draplan.api.core_v1 import ConfigMap
from draplan.api.errors import BadInput
from draplan.api.features import DEFAULT as DEFAULT_FEATURES
from draplan.api.features import FeatureGates
from draplan.api.meta import KubeStruct
from draplan.cluster.incremental import IncrementalState, needs_rebuild
from draplan.cluster.state import ClusterState, ObjectKey, check_object, origin_key
from draplan.serve.model import ModelHealth
from draplan.serve.watch import Intake, Item, WatchOptions
from draplan.sources.files import gc_paused
from draplan.sources.kubeclient import resolve_config
from draplan.sources.live import RESOURCES, LiveOptions, Resource
from draplan.sources.nodepools import holds_node_pools, node_pools_of

log = logging.getLogger("draplan.serve")

# What one stored object puts in the state, each with its source (a ConfigMap: its NodePools).
Values = tuple[tuple[KubeStruct, str], ...]


@dataclass
class _Stored:
    resource_version: str
    values: Values


@dataclass
class _Kind:
    res: Resource
    index: int
    objects: dict[ObjectKey, _Stored] = field(default_factory=dict)
    resource_version: str = ""
    lists: int = 0
    error: str = ""
    rebuild: bool = False  # every change builds a new state (the NodePool ConfigMaps)

    @property
    def name(self) -> str:
        return f"{self.res.plural}.{self.res.group}" if self.res.group else self.res.plural


class LiveClusterModel:
    """A ClusterModel kept current from the API server `config` points at."""

    def __init__(
        self,
        config: SingleConfig,
        *,
        features: FeatureGates = DEFAULT_FEATURES,
        options: WatchOptions | None = None,
        resources: tuple[Resource, ...] = RESOURCES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.features = features
        self.options = options or WatchOptions()
        self.resources = resources
        self._clock = clock
        self._lock = threading.Lock()
        self._kinds = {
            res: _Kind(res, i, rebuild=res.kind == "ConfigMap") for i, res in enumerate(resources)
        }
        self._pending: dict[tuple[int, ObjectKey], tuple[Values, Values]] = {}
        self._rebuild = True
        self._unsynced = 0
        self._arrival = 0.0
        self._bad_seen: dict[tuple[str, ObjectKey], str] = {}
        self._bad = 0
        self._relists = 0
        self._applied = 0
        self._applied_arrival = 0.0
        self._last_contact = 0.0
        self._generation = 0
        self._state: IncrementalState | None = None
        self.intake: Intake | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def from_kubeconfig(
        cls,
        kubeconfig: str | None = None,
        context: str | None = None,
        *,
        namespace: str | None = None,
        features: FeatureGates = DEFAULT_FEATURES,
        page_size: int = 500,
        timeout: float = 60.0,
        watch_timeout: float = 300.0,
        seed: int | None = None,
    ) -> LiveClusterModel:
        """The model of the cluster a kubeconfig (kubectl's order, then the in-cluster service
        account) points at; BadInput when there is none."""
        options = WatchOptions(
            namespace=namespace,
            page_size=page_size,
            timeout=timeout,
            watch_timeout=watch_timeout,
            seed=seed,
        )
        return cls(resolve_config(kubeconfig, context), features=features, options=options)

    @classmethod
    def from_live_options(
        cls, live: LiveOptions, features: FeatureGates = DEFAULT_FEATURES
    ) -> LiveClusterModel:
        """The model from the options the CLI's live source reads (`--kubeconfig`, ...)."""
        return cls.from_kubeconfig(
            live.kubeconfig,
            live.context,
            namespace=live.namespace,
            features=features,
            page_size=live.page_size,
            timeout=live.timeout,
        )

    # --- running --------------------------------------------------------------------------

    async def run(self) -> None:
        """The intake on the running event loop, until cancelled."""
        self.intake = Intake(self.config, self.resources, self, self.options)
        await self.intake.run()

    def start(self) -> None:
        """Run the intake in a thread of its own, with its own event loop."""
        ready = threading.Event()

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._task = loop.create_task(self.run())
            ready.set()
            try:
                loop.run_until_complete(self._task)
            except asyncio.CancelledError:
                pass
            except BadInput as err:
                log.error("%s", err)
            finally:
                loop.close()

        self._thread = threading.Thread(target=main, name="draplan-watch", daemon=True)
        self._thread.start()
        ready.wait()

    def stop(self) -> None:
        """Cancel every watch and wait (a few seconds at most) for the intake to end."""
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    # --- what the watches deliver (the intake loop) ----------------------------------------

    def _values(self, kind: _Kind, item: Item) -> Values | None:
        """The state's objects for one item, or None (logged once, counted) when it is bad."""
        problem = item.error
        values: Values = ()
        if item.obj is not None:
            try:
                check_object(item.obj, item.source, self.features)
                if holds_node_pools(item.obj):
                    assert isinstance(item.obj, ConfigMap)
                    values = tuple(node_pools_of(item.obj, item.source))
                else:
                    values = ((item.obj, item.source),)
            except BadInput as err:
                problem = str(err)
        if not problem:
            return values
        seen = (kind.name, item.key)
        if self._bad_seen.get(seen) != item.resource_version:
            self._bad_seen[seen] = item.resource_version
            self._bad += 1
            log.warning("skipped: %s", problem)
        return None

    def replace(self, res: Resource, items: list[Item], rv: str) -> None:
        kind = self._kinds[res]
        objects: dict[ObjectKey, _Stored] = {}
        for item in items:
            values = self._values(kind, item)
            if values is not None:
                objects[item.key] = _Stored(item.resource_version, values)
        with self._lock:
            if kind.lists and rv:
                self._relists += 1
                log.info(
                    "%s: relisted: %d objects at resourceVersion %s", kind.name, len(items), rv
                )
            if objects or kind.objects:
                self._rebuild = True
                self._pending.clear()
            kind.objects = objects
            kind.resource_version = rv
            kind.lists += 1
            kind.error = ""
            self._last_contact = self._clock()

    def upsert(self, res: Resource, item: Item) -> None:
        kind = self._kinds[res]
        values = self._values(kind, item)
        with self._lock:
            old = kind.objects.get(item.key)
            if values is None:
                kind.objects.pop(item.key, None)
            else:
                kind.objects[item.key] = _Stored(item.resource_version, values)
            self._queue(kind, item, old, values or ())

    def remove(self, res: Resource, item: Item) -> None:
        kind = self._kinds[res]
        with self._lock:
            old = kind.objects.pop(item.key, None)
            self._queue(kind, item, old, ())

    def _queue(self, kind: _Kind, item: Item, old: _Stored | None, new: Values) -> None:
        kind.resource_version = item.resource_version or kind.resource_version
        self._unsynced += 1
        self._arrival = self._clock()
        before_values = old.values if old is not None else ()
        if kind.rebuild or any(needs_rebuild(v) for v, _ in (*before_values, *new)):
            self._rebuild = True
        if self._rebuild:
            return  # the next sync builds from the store
        slot = (kind.index, item.key)
        before = self._pending.get(slot)
        first = before[0] if before is not None else before_values
        self._pending[slot] = (first, new)

    def bookmark(self, res: Resource, rv: str) -> None:
        with self._lock:
            self._kinds[res].resource_version = rv

    def contact(self, res: Resource, ok: bool, message: str = "") -> None:
        kind = self._kinds[res]
        with self._lock:
            if ok:
                self._last_contact = self._clock()
                # A list after an error is logged as the relist it is (`replace`).
                if kind.error and message == "watch":
                    log.info(
                        "%s: reconnected: watching from resourceVersion %s",
                        kind.name,
                        kind.resource_version,
                    )
            elif not kind.error:
                log.warning("%s: %s", kind.name, message)
            kind.error = "" if ok else message or "failed"

    # --- ClusterModel ---------------------------------------------------------------------

    def health(self) -> ModelHealth:
        with self._lock:
            kinds = self._kinds.values()
            return ModelHealth(
                ready=all(k.lists for k in kinds),
                connected=self._last_contact > 0 and not any(k.error for k in kinds),
                last_contact=self._last_contact,
                events_applied=self._applied,
                relists=self._relists,
                bad_objects=self._bad,
                newest_event_arrival=self._applied_arrival,
            )

    def resource_versions(self) -> dict[str, str]:
        """The resourceVersion each kind is at (from its list, events and bookmarks)."""
        with self._lock:
            return {k.name: k.resource_version for k in self._kinds.values()}

    def sync(self) -> tuple[ClusterState, int]:
        with self._lock:
            pending, self._pending = self._pending, {}
            rebuild, self._rebuild = self._rebuild or self._state is None, False
            objects = self._objects() if rebuild else []
            if rebuild:
                # The store holds every change, those queued before the rebuild was asked for
                # too: applied again on the new state, they would undo later ones.
                pending = {}
            events, self._unsynced = self._unsynced, 0
            arrival = self._arrival
        if rebuild:
            # The listed objects and their state live until the next relist: frozen, the
            # collector's full passes between audits scan only what changed since.
            with gc_paused():
                self._state = IncrementalState(objects, self.features)
        assert self._state is not None
        for old, new in pending.values():
            kept = {origin_key(v) for v, _ in new}
            for value, _ in old:
                if origin_key(value) not in kept:
                    self._state.delete(value)
            for value, source in new:
                self._state.put(value, source)
        state = self._state.flush()
        with self._lock:
            if rebuild or pending or events:
                self._generation += 1
            self._applied += events
            if events:
                self._applied_arrival = arrival
            return state, self._generation

    def _objects(self) -> list[tuple[KubeStruct, str]]:
        """Everything stored, as `from_objects` takes it; a NodePool named by two ConfigMaps
        is kept once (the first), the other counted bad."""
        out: list[tuple[KubeStruct, str]] = []
        seen: set[tuple[str, ObjectKey]] = set()
        for kind in self._kinds.values():
            for stored in kind.objects.values():
                for value, source in stored.values:
                    okey = origin_key(value)
                    if okey in seen:
                        if self._bad_seen.get(okey) != stored.resource_version:
                            self._bad_seen[okey] = stored.resource_version
                            self._bad += 1
                            log.warning("skipped: %s: duplicate %s %s", source, *okey)
                        continue
                    seen.add(okey)
                    out.append((value, source))
        return out
