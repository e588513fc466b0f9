"""serve.heap.FrozenHeap: what an audit leaves is frozen out of the collector's passes, and
cyclic garbage that builds up among it is collected once the frozen heap has grown enough."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from draplan.serve import heap
from draplan.serve.heap import FrozenHeap
from draplan.sources.files import gc_paused


class _Node:
    def __init__(self) -> None:
        self.other: Any = None


def _audit(frozen: FrozenHeap, cycles: int = 0) -> weakref.ref[_Node] | None:
    """As an audit ends: `cycles` unreachable pairs referring to each other made with the
    collector paused, then `settle`; a weak reference to one of them."""
    probe = None
    pair: tuple[_Node, ...] = ()
    with gc_paused(freeze=False):
        for _ in range(cycles):
            pair = _Node(), _Node()
            pair[0].other, pair[1].other = pair[1], pair[0]
            probe = probe or weakref.ref(pair[0])
        pair = ()
        frozen.settle()
    return probe


@pytest.fixture(autouse=True)
def _unfrozen() -> Any:
    yield
    gc.unfreeze()


def test_what_is_left_is_frozen_and_freed_by_reference_counting() -> None:
    frozen = FrozenHeap()
    kept = [_Node() for _ in range(1000)]
    _audit(frozen)
    assert gc.get_freeze_count() >= 1000
    assert not any(o is kept[0] for o in gc.get_objects())  # out of every generation's pass
    probe = weakref.ref(kept[0])
    kept.clear()  # replaced, as the next audit replaces what the last one kept
    assert probe() is None
    frozen.close()
    assert gc.get_freeze_count() == 0


def test_cycles_among_frozen_objects_are_collected_once_the_heap_grows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frozen = FrozenHeap()
    first = _audit(frozen, 1_000)  # the first audit's cycles: collected at once
    assert first is not None and first() is None and frozen.collections == 1
    base = gc.get_freeze_count()
    monkeypatch.setattr(heap, "GROWTH", 1 + 5_000 / base)
    small = _audit(frozen, 1_000)  # 2,000 objects: not enough growth yet
    assert small is not None and small() is not None and frozen.collections == 1
    large = _audit(frozen, 5_000)  # frozen at its end: 12,000 objects more than at first
    assert large is not None and large() is not None and frozen.collections == 1
    _audit(frozen)  # the next audit finds the frozen heap grown
    assert frozen.collections == 2
    assert small() is None and large() is None
    assert gc.get_freeze_count() > 0  # what is left is frozen again
