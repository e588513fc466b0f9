"""A dict with fork / commit / revert layers (copy-on-write, like Cluster Autoscaler's
DeltaSnapshotStore): fork and revert are O(1), commit is O(size of the top layer), a lookup is
O(depth)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_DELETED: object = object()


class LayeredDict(Generic[K, V]):
    """Mapping whose writes go to the top layer; lower layers are never modified until commit."""

    __slots__ = ("_layers", "_lens")

    def __init__(self, base: dict[K, V] | None = None) -> None:
        self._layers: list[dict[K, object]] = [dict(base) if base else {}]
        # Per layer, the length of the content it shows, None until counted since its last
        # write: a fork's length is counted once, not on every `len()` or truth test.
        self._lens: list[int | None] = [None]

    def get(self, key: K, default: V | None = None) -> V | None:
        if len(self._layers) == 1:  # the common case: no fork open, no tombstones
            return self._layers[0].get(key, default)  # type: ignore[return-value]
        for layer in reversed(self._layers):
            if key in layer:
                value = layer[key]
                return default if value is _DELETED else value  # type: ignore[return-value]
        return default

    def __contains__(self, key: object) -> bool:
        if len(self._layers) == 1:
            return key in self._layers[0]
        for layer in reversed(self._layers):
            if key in layer:
                return layer[key] is not _DELETED
        return False

    def __getitem__(self, key: K) -> V:
        for layer in reversed(self._layers):
            if key in layer:
                value = layer[key]
                if value is _DELETED:
                    break
                return value  # type: ignore[return-value]
        raise KeyError(key)

    def __setitem__(self, key: K, value: V) -> None:
        self._layers[-1][key] = value
        self._lens[-1] = None

    def __delitem__(self, key: K) -> None:
        if key not in self:
            raise KeyError(key)
        self._lens[-1] = None
        if len(self._layers) == 1:
            del self._layers[0][key]
        else:
            self._layers[-1][key] = _DELETED

    def pop(self, key: K, default: V | None = None) -> V | None:
        value = self.get(key, default)
        if key in self:
            del self[key]
        return value

    def items(self) -> Iterator[tuple[K, V]]:
        if len(self._layers) == 1:
            yield from self._layers[0].items()  # type: ignore[misc]
            return
        merged: dict[K, object] = {}
        for layer in self._layers:
            merged.update(layer)
        for key, value in merged.items():
            if value is not _DELETED:
                yield key, value  # type: ignore[misc]

    def __iter__(self) -> Iterator[K]:
        return self.keys()

    def keys(self) -> Iterator[K]:
        return (k for k, _ in self.items())

    def values(self) -> Iterator[V]:
        return (v for _, v in self.items())

    def __len__(self) -> int:
        if len(self._layers) == 1:
            return len(self._layers[0])
        size = self._lens[-1]
        if size is None:
            size = self._lens[-1] = sum(1 for _ in self.items())
        return size

    def __bool__(self) -> bool:
        return len(self) > 0

    def top_keys(self) -> list[K]:
        """Keys written (or deleted) in the top layer since the last fork."""
        return list(self._layers[-1]) if len(self._layers) > 1 else []

    def forked_keys(self) -> set[K]:
        """Keys written (or deleted) in any fork open: where the content differs from the
        bottom layer's."""
        return {key for layer in self._layers[1:] for key in layer}

    def base_items(self) -> Iterator[tuple[K, V]]:
        """The bottom layer's content: what shows once every fork is reverted."""
        return iter(self._layers[0].items())  # type: ignore[arg-type]

    def base_get(self, key: K) -> V | None:
        return self._layers[0].get(key)  # type: ignore[return-value]

    @property
    def depth(self) -> int:
        return len(self._layers)

    def fork(self) -> None:
        self._layers.append({})
        self._lens.append(self._lens[-1])

    def revert(self) -> None:
        if len(self._layers) == 1:
            raise RuntimeError("revert without fork")
        self._layers.pop()
        self._lens.pop()

    def lift(self) -> tuple[object, ...]:
        """Take the top layer off, to `lower` it back later: meanwhile the content below shows
        (and must be as it was when it is lowered back)."""
        if len(self._layers) == 1:
            raise RuntimeError("lift without fork")
        return self._layers.pop(), self._lens.pop()

    def lower(self, lifted: tuple[object, ...]) -> None:
        layer, size = lifted
        self._layers.append(layer)  # type: ignore[arg-type]
        self._lens.append(size)  # type: ignore[arg-type]

    def commit(self) -> None:
        if len(self._layers) == 1:
            raise RuntimeError("commit without fork")
        top = self._layers.pop()
        size = self._lens.pop()
        self._lens[-1] = size
        below = self._layers[-1]
        bottom = len(self._layers) == 1
        for key, value in top.items():
            if value is _DELETED and bottom:
                below.pop(key, None)
            else:
                below[key] = value


_WRITES = itertools.count(1)


class VersionedDict(LayeredDict[K, V]):
    """A LayeredDict that names its content: `version` changes with every write, comes back
    with the content a revert brings back, and stays through a commit (the content does). A
    version is unique over the process, so a cache keyed by it is never wrong."""

    __slots__ = ("_versions",)

    def __init__(self, base: dict[K, V] | None = None) -> None:
        super().__init__(base)
        self._versions = [next(_WRITES)]

    @property
    def version(self) -> int:
        return self._versions[-1]

    @property
    def base_version(self) -> int:
        """The version of the bottom layer's content."""
        return self._versions[0]

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        self._versions[-1] = next(_WRITES)

    def __delitem__(self, key: K) -> None:
        super().__delitem__(key)
        self._versions[-1] = next(_WRITES)

    def fork(self) -> None:
        super().fork()
        self._versions.append(self._versions[-1])

    def revert(self) -> None:
        super().revert()
        self._versions.pop()

    def commit(self) -> None:
        super().commit()
        top = self._versions.pop()
        self._versions[-1] = top

    def lift(self) -> tuple[object, ...]:
        return (*super().lift(), self._versions.pop())

    def lower(self, lifted: tuple[object, ...]) -> None:
        super().lower(lifted[:2])
        self._versions.append(lifted[2])  # type: ignore[arg-type]

    def __setstate__(self, state: tuple[None, dict[str, object]]) -> None:
        # Versions name contents in the process that issued them: unpickled elsewhere, the
        # layers take new ones.
        layers = state[1]["_layers"]
        self._layers = layers  # type: ignore[assignment]
        self._lens = [None for _ in self._layers]
        self._versions = [next(_WRITES) for _ in self._layers]
