"""Which objects changed, in order: what `cluster.incremental` applies to a state it keeps, for
readers that keep per-object results between passes over that state (the metrics' pod shapes,
the pods' indexes, `serve`'s list of every object) and visit only what changed since their last
pass. An entry names the state's table the object is in (its attribute) and the object's key."""

from __future__ import annotations

ObjectKey = tuple[str, str]  # (namespace, name), as cluster.state names it

POD = "pods"
CLAIM = "claims"
TEMPLATE = "claim_templates"
NODE = "nodes"
SLICE = "slices"
LIMIT = 1 << 16  # entries kept; past it the older half goes


class ObjectLog:
    """(kind, key) of every object put or deleted, in order. A reader keeps `end` as its
    cursor and asks `since(cursor)`; a cursor older than what is kept gets None (read
    everything again), so the log stays bounded however rarely it is read."""

    def __init__(self) -> None:
        self._start = 0
        self._entries: list[tuple[str, ObjectKey]] = []
        self.pods_version = 0
        """The version of the pods table (`layered.VersionedDict`) after the last write the
        log names: while the table is at it, every write to the table is in the log."""

    def add(self, kind: str, key: ObjectKey) -> None:
        self._entries.append((kind, key))
        if len(self._entries) > LIMIT:
            half = len(self._entries) // 2
            del self._entries[:half]
            self._start += half

    def restart(self) -> None:
        """Something wrote to the table unlogged: every cursor now reads everything again
        (one at the end too: the write came after it)."""
        self._start = self.end + 1
        self._entries = []

    @property
    def end(self) -> int:
        return self._start + len(self._entries)

    def since(self, cursor: int) -> list[tuple[str, ObjectKey]] | None:
        """What changed from `cursor` on (None: not kept any more)."""
        if cursor < self._start:
            return None
        return self._entries[cursor - self._start :]
