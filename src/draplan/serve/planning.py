"""The scale plan of `draplan serve`, made in a process of its own.

A plan's scale-down simulates removing every under-used node in turn: under churn most of an
audit's time, and nothing in `/metrics` reads it. Made in the audit thread it would hold up
every answer behind it; so a planner process keeps a mirror of the model's state (each audit
sends it what changed) and plans the newest generation it holds, back to back, at a lower CPU
priority (nice) than the audits. A plan it makes is exactly the plan of the generation it
names: the mirror equals a fresh load of that generation's objects."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from draplan.api.codec import json_text
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.features import FeatureGates
from draplan.api.meta import KubeStruct
from draplan.audit.documents import plan_document
from draplan.autoscaler import Autoscaler, Limits
from draplan.autoscaler.derived import derive_again
from draplan.cluster.incremental import Changes, MirrorState, changes_between
from draplan.cluster.state import ClusterState, origin_key
from draplan.scheduler import Profile
from draplan.serve.heap import FrozenHeap
from draplan.sources.files import gc_paused

log = logging.getLogger(__name__)

NICENESS = 10  # the planner's CPU weight is about a tenth of the audits' when both run
# After a planner process died, the next starts no sooner than this, doubled at each death in
# a row up to the most (a planner that cannot run is not started again on every audit).
RESTART_SECONDS = 1.0
MOST_RESTART_SECONDS = 300.0


@dataclass(frozen=True)
class MadePlan:
    generation: int
    """The model's generation the plan is of."""
    published: float
    """`time.monotonic()` when it was made (received, from the planner process)."""
    seconds: float
    """How long making it took."""
    body: bytes
    """The document, as `draplan scale -o json` prints it."""


@dataclass(frozen=True)
class _Settings:
    profile: Profile
    limits: Limits
    expanders: tuple[str, ...]
    prices: Mapping[str, str] | None


class PlanWorker:
    """The audit loop's side of the planner process: `send` each audit's state, `take` the
    plans made. The process starts with the first `send`, and again after it died (backing
    off while it keeps dying)."""

    def __init__(
        self,
        profile: Profile,
        limits: Limits,
        expanders: tuple[str, ...],
        prices: Mapping[str, str] | None,
    ) -> None:
        self._settings = _Settings(profile, limits, expanders, dict(prices or {}) or None)
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._to: Connection | None = None
        self._from: Connection | None = None
        self._fresh = True  # the process holds nothing yet
        self._failed = 0  # the newest generation whose plan failed
        self._restart_at = 0.0
        self._backoff = RESTART_SECONDS
        self.errors = 0
        """Plans that failed and planner processes that died."""

    def send(
        self,
        state: ClusterState,
        generation: int,
        objects: Iterable[KubeStruct],
        derived: Mapping[str, NodePool],
        changes: Changes,
    ) -> bool:
        """Hand the planner `state` at `generation`: `objects` are those `state_objects`
        lists and `changes` how they changed since the last send, of which
        the pools `derived` for `state` are left out (the planner derives its own). False when
        no planner runs to take it (one died, and the next is not due yet)."""
        if self._process is not None and not self._process.is_alive():
            self._lost()
        if self._process is None:
            if time.monotonic() < self._restart_at:
                return False
            self._start()
        own = {id(pool) for pool in derived.values()}
        if self._fresh:
            taken = (o for o in objects if id(o) not in own)
            sent = changes_between({}, taken, state.source_of)[1]
            self._fresh = False
        else:
            # A derived pool's key gone too: the pool of that name it may hold is no more.
            ours = [(o, source) for o, source in changes.put if id(o) not in own]
            derived_keys = [origin_key(o) for o, _ in changes.put if id(o) in own]
            sent = Changes(ours, [*changes.gone, *derived_keys])
        assert self._to is not None
        try:
            self._to.send((generation, sent, state.features))
        except OSError:  # it died since
            self._lost()
            return False
        return True

    @property
    def running(self) -> bool:
        """Whether a planner process runs (as far as the last send or take knows)."""
        return self._from is not None

    def take(self, wait: float = 0.0) -> MadePlan | None:
        """The newest plan the planner made since the last `take` (waiting up to `wait`
        seconds for one), or None. A planner process that died is logged and counted; the next
        `send` starts another."""
        if self._from is None:
            return None
        newest = None
        try:
            while self._from.poll(wait if newest is None else 0):
                kind, generation, payload, seconds = self._from.recv()
                if kind == "plan":
                    newest = MadePlan(generation, time.monotonic(), seconds, payload)
                else:
                    self.errors += 1
                    self._failed = generation
                    log.error("the plan of generation %d failed:\n%s", generation, payload)
        except (EOFError, OSError):
            self._lost()
        if newest is not None:
            self._backoff = RESTART_SECONDS
        return newest

    def wait_for(self, generation: int) -> MadePlan | None:
        """The next plan of `generation` (or a later one) once made; None when it failed or
        the planner died."""
        while self._from is not None and self._failed < generation:
            made = self.take(0.1)
            if made is not None and made.generation >= generation:
                return made
        return None

    def stop(self, timeout: float = 0.5) -> None:
        """End the planner process: it ends once its pipe closes between two plans, or is
        killed after `timeout` seconds (a plan in hand is of no use any more)."""
        process, self._process = self._process, None
        self._close()
        if process is not None:
            process.join(timeout)
            if process.is_alive():
                process.kill()
                process.join()

    def _start(self) -> None:
        down, self._to = self._context.Pipe(duplex=False)
        self._from, up = self._context.Pipe(duplex=False)
        self._process = self._context.Process(
            target=_planner, args=(down, up, self._settings), name="draplan-planner", daemon=True
        )
        self._process.start()
        down.close()
        up.close()
        self._fresh = True

    def _lost(self) -> None:
        """The planner process died: counted and logged once; the next `send` starts another."""
        process, self._process = self._process, None
        self._close()
        if process is None:  # stopped meanwhile
            return
        self.errors += 1
        process.join(1.0)
        self._restart_at = time.monotonic() + self._backoff
        log.error(
            "the planner process exited (code %s); the next in %.0f s, plans made in the "
            "audits meanwhile",
            process.exitcode,
            self._backoff,
        )
        self._backoff = min(2 * self._backoff, MOST_RESTART_SECONDS)

    def _close(self) -> None:
        for conn in (self._to, self._from):
            if conn is not None:
                conn.close()
        self._to = self._from = None


def _planner(inbox: Connection, outbox: Connection, settings: _Settings) -> None:
    """The planner process: apply each state sent, and plan the newest whenever it is ahead
    of the last plan made."""
    os.nice(NICENESS)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C is the parent's to handle
    received: deque[tuple[int, Changes, FeatureGates] | None] = deque()
    arrived = threading.Condition()

    def receive() -> None:
        # A thread of its own reads the pipe while a plan is made, so the audit loop's
        # sends never wait for a plan to end.
        while True:
            try:
                message = inbox.recv()
            except (EOFError, OSError):
                message = None
            with arrived:
                received.append(message)
                arrived.notify()
            if message is None:
                return

    threading.Thread(target=receive, name="draplan-planner-inbox", daemon=True).start()
    mirror = MirrorState()
    heap = FrozenHeap()
    derived: dict[str, NodePool] = {}
    kept: tuple[ClusterState, Autoscaler] | None = None
    planned = 0
    state: ClusterState | None = None
    generation = 0
    while True:
        with arrived:
            while not received:
                arrived.wait()
            messages = list(received)
            received.clear()
        for message in messages:
            if message is None:
                return
            generation, changes, features = message
            state = mirror.apply(changes, features)
        if state is None or generation == planned:
            continue
        derived = derive_again(state, derived, settings.prices, settings.profile.kube)
        # Kept while the mirror keeps its state: evaluations are cached per node version.
        if kept is None or kept[0] is not state:
            kept = state, Autoscaler(settings.profile, settings.limits, settings.expanders)
        start = time.monotonic()
        try:
            # As an audit: what a plan allocates is freed when it ends, with nothing for the
            # collector's passes during it to find (they were half a plan's time).
            with gc_paused(freeze=False):
                _, doc = plan_document(state, kept[1])
                heap.settle()  # before the collector is back: it never walks what is kept
            outbox.send(("plan", generation, json_text(doc).encode(), time.monotonic() - start))
        except (BrokenPipeError, OSError):
            return
        except Exception:
            kept = None
            outbox.send(("error", generation, traceback.format_exc(), 0.0))
        planned = generation
