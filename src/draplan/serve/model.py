"""The contract between what keeps the cluster model current and what answers from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from draplan.cluster.state import ClusterState


@dataclass(frozen=True)
class ModelHealth:
    """How current the model is; times are `time.monotonic()` seconds."""

    ready: bool
    """Every initial list is in (what `/readyz` reports)."""
    connected: bool
    """The last list, watch or bookmark reached the API server."""
    last_contact: float
    events_applied: int
    relists: int
    bad_objects: int
    """Objects that failed to decode or validate: logged once, counted, skipped."""
    newest_event_arrival: float
    """When the newest event that `sync` has applied arrived (freshness is measured from it)."""


class ClusterModel(Protocol):
    """A cluster model fed from outside; `sync` is called from one thread only."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def health(self) -> ModelHealth: ...

    def sync(self) -> tuple[ClusterState, int]:
        """Apply every change queued since the last call; the state and a generation that
        changes whenever anything did. Intake never waits for this."""
        ...
