"""The objects of the newest generation audited, as a ClusterState of their own, for a reader
that must not wait for the audit in progress: Cluster Autoscaler's gRPC expander (CA waits 5 s
for an answer; an audit step on the model's own state at 5,000 nodes can take longer).

Each audit offers the changes it saw since the one before (`offer`, from the audit thread,
never waiting); a thread of its own applies them under `lock` soon after, coalesced by object,
and a reader takes the state under `reader` (`state`, which applies what is still pending).
The audit thread never waits for a reader's lock, but while a reader holds it the audit waits
between its steps (`wait_for_readers`): in one process the two would share the interpreter,
and CA's 5 s deadline comes first. The state is a `MirrorState`: equal to a fresh load of the
objects of the generation last offered, all of them and nothing from a later one, so an answer
always reflects one consistent cluster, at most one audit older than the answers published.
The objects are the model's own (frozen values, shared), only the indexes are this state's;
offered changes the reader has not taken yet are held once per object."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType

from draplan.api.features import FeatureGates
from draplan.api.meta import KubeStruct
from draplan.cluster.incremental import Changes, MirrorState
from draplan.cluster.state import ClusterState, OriginKey, origin_key


class _Reader:
    """`lock`, marking a reader in (for `wait_for_readers`) while held."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self.idle = threading.Event()
        self.idle.set()

    def __enter__(self) -> None:
        self._lock.acquire()
        self.idle.clear()

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.idle.set()
        self._lock.release()


class AuditedState:
    """The newest audited generation's objects as a state: `offer` from the audit thread,
    `state` under `reader` from the reader's. `prepare`: what the reader keeps of the state
    (the expander's `Judge.prepare`), brought up to date each time changes are applied, so
    that the reader mostly finds it done."""

    def __init__(self, prepare: Callable[[ClusterState], None] | None = None) -> None:
        self._prepare = prepare
        self.lock = threading.Lock()
        """Held while offered changes are applied and by `reader`."""
        self.reader = _Reader(self.lock)
        """Held by a reader while it uses the state."""
        self._offered = threading.Condition()
        self._pending: dict[OriginKey, tuple[KubeStruct, str] | None] = {}
        self._features: FeatureGates | None = None
        self._offered_generation = 0
        self._mirror = MirrorState()
        self._state: ClusterState | None = None
        self.generation = 0
        """The generation of the state `state` last returned (0: none yet)."""
        self._closed = False
        self._thread: threading.Thread | None = None

    def offer(self, generation: int, changes: Changes, features: FeatureGates) -> None:
        """The objects of `generation`, as the changes from the generation offered before."""
        with self._offered:
            pending = self._pending
            for key in changes.gone:
                pending[key] = None
            for obj, source in changes.put:
                pending[origin_key(obj)] = (obj, source)
            self._features = features
            self._offered_generation = generation
            self._offered.notify()
        if self._thread is None:
            self._thread = threading.Thread(target=self._apply, name="draplan-audited", daemon=True)
            self._thread.start()

    def wait_for_readers(self, most: float) -> None:
        """Wait until no reader holds `reader`, `most` seconds at most."""
        self.reader.idle.wait(most)

    def close(self) -> None:
        """End the thread that applies the offered changes."""
        with self._offered:
            self._closed = True
            self._offered.notify()

    def _apply(self) -> None:
        while True:
            with self._offered:
                while not self._pending and not self._closed:
                    self._offered.wait()
                if self._closed:
                    return
            with self.lock:
                self.state()

    def state(self) -> ClusterState | None:
        """The state of the newest generation offered (None before the first); call it, and
        use what it returns, under `reader` (or `lock`)."""
        with self._offered:
            pending, self._pending = self._pending, {}
            features, generation = self._features, self._offered_generation
        if features is None:
            return None
        if pending or self._state is None:
            put = [value for value in pending.values() if value is not None]
            gone = [key for key, value in pending.items() if value is None]
            self._state = self._mirror.apply(Changes(put, gone), features)
            if self._prepare is not None:
                self._prepare(self._state)
        self.generation = generation
        return self._state
