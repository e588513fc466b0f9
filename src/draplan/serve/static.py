"""A snapshot served as a cluster model (`draplan serve -f FILE`): ready at once, never changes."""

from __future__ import annotations

import time

from draplan.cluster.state import ClusterState
from draplan.serve.model import ModelHealth


class StaticClusterModel:
    """The state given, as generation 1; always connected (there is nothing to lose)."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.loaded = time.monotonic()

    def start(self) -> None:
        """Nothing to start: the objects are all in."""

    def stop(self) -> None:
        """Nothing to stop."""

    def health(self) -> ModelHealth:
        return ModelHealth(
            ready=True,
            connected=True,
            last_contact=time.monotonic(),
            events_applied=0,
            relists=0,
            bad_objects=0,
            newest_event_arrival=self.loaded,
        )

    def sync(self) -> tuple[ClusterState, int]:
        return self.state, 1
