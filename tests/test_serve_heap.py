"""serve.heap.FrozenHeap: what an audit leaves is frozen out of the collector's passes, and
cyclic garbage frozen among it is collected by the full pass every so many audits."""

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


def test_cycles_among_frozen_objects_are_collected_by_the_next_full_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heap, "EVERY", 3)
    frozen = FrozenHeap()
    first = _audit(frozen, 1_000)
    second = _audit(frozen, 1_000)
    assert first is not None and second is not None
    assert first() is not None and second() is not None and frozen.collections == 0
    _audit(frozen)  # the third: a full pass first
    assert frozen.collections == 1
    assert first() is None and second() is None
    assert gc.get_freeze_count() > 0  # what is left is frozen again
