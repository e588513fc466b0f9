"""The audit loop: one thread that takes the model's changes and, when there were any (at most
once per interval), recomputes the answers and publishes them by swapping one reference.

Nothing is audited before every initial list is in: answers on a half-listed cluster (no pods
yet, say) would be wrong, not early. The first audit starts as soon as the lists are in, and
its publication sets `first_answers`, which /readyz and the gRPC expander wait for."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Histogram

from draplan.cluster.state import ClusterState
from draplan.serve.answers import Answers, Auditor
from draplan.serve.model import ClusterModel

log = logging.getLogger(__name__)

POLL_SECONDS = 0.05  # how often an idle loop asks the model for changes
# Audit cycles span milliseconds (a small cluster) to tens of seconds (a cold 10,000-node one).
AUDIT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)

Listener = Callable[[Answers], None]


class AuditLoop:
    """Publishes `answers` (None until the first audit); requests read it without locking."""

    def __init__(
        self,
        model: ClusterModel,
        auditor: Auditor,
        interval: float,
        registry: CollectorRegistry,
        listeners: tuple[Listener, ...] = (),
    ) -> None:
        self.model = model
        self.auditor = auditor
        self.interval = interval
        self.listeners = list(listeners)
        """Called in the audit thread with every answers published."""
        self.answers: Answers | None = None
        self.first_answers = threading.Event()
        """Set once the first answers on the listed objects (every initial list in) are
        published; never cleared."""
        self.lag = 0.0
        """Seconds from the arrival of the newest event the answers include to their publication."""
        self.errors = 0
        self.state: ClusterState | None = None
        """The state the answers were made on; read or fork it only under `state_lock`."""
        self.state_lock = threading.Lock()
        """Held while the audit thread syncs and during each step of an audit, so another
        reader or writer of the state (a test's) never meets it mid-change and waits one step
        at most; the gRPC expander reads `serve.audited`'s state instead, never waiting."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="draplan-audit", daemon=True)
        self._cycle = Histogram(
            "draplan_audit_cycle_seconds",
            "Time one audit takes (why, metrics and the scale-up; the plan is made apart).",
            buckets=AUDIT_BUCKETS,
            registry=registry,
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        self._thread.join(timeout)
        self.auditor.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        generation: int | None = None
        failed: int | None = None
        while not self._stop.is_set():
            # Asked before the sync: when every list is in then, the state synced holds them.
            listed = self.model.health().ready
            with self.state_lock:
                state, current = self.model.sync()
                self.state = state
            if not listed or current in (generation, failed):
                self._idle(POLL_SECONDS)
                continue
            arrival = self.model.health().newest_event_arrival
            try:
                answers = self.auditor.audit(state, current, self.state_lock)
            except Exception:
                # A bug on some input: logged once per generation, the last answers stay up.
                log.exception("audit of generation %d failed; keeping the last answers", current)
                self.errors += 1
                failed = current
                continue
            generation = current
            self.lag = max(0.0, answers.published - arrival) if arrival else 0.0
            self._cycle.observe(answers.seconds)
            self._publish(answers)
            self._idle(answers.published - answers.seconds + self.interval - time.monotonic())

    def _idle(self, seconds: float) -> None:
        """Wait `seconds` (or until stopped), publishing the plans the planner makes meanwhile
        with the answers they are late for."""
        end = time.monotonic() + seconds
        while not self._stop.is_set() and (remaining := end - time.monotonic()) > 0:
            last = self.answers
            if last is None or not self.auditor.plan_behind(last.generation):
                self._stop.wait(remaining)
                return
            answers = self.auditor.take_plan(last, min(remaining, POLL_SECONDS))
            if answers is not last:
                self._publish(answers)

    def _publish(self, answers: Answers) -> None:
        self.answers = answers
        self.first_answers.set()
        for listener in self.listeners:
            try:
                listener(answers)
            except Exception:
                log.exception("a listener of the answers failed")
