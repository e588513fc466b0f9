"""The cyclic collector in `draplan serve`'s long-running processes (the audit loop's and the
planner's): what an audit or a plan leaves behind is frozen, out of the collector's passes.

Between audits the collector walked what the last audit kept (memos, evaluations, the answers):
at 5,000 nodes its young passes took a sixth of an audit's CPU, and a full pass over the
unfrozen heap 0.2-0.35 s, in the audit thread's way. That heap holds no cycles to find (audits
under churn left none after the first, measured with `gc.collect()` after each): what an audit
replaces is freed by reference counting, frozen or not. Should cycles build up after all (an
input or a path that makes them), the frozen heap grows; once it has doubled it is unfrozen and
collected once, then frozen again: full passes as rare as the heap's doublings, and cyclic
garbage never more than what is live.
"""

from __future__ import annotations

import gc

GROWTH = 2.0  # the frozen heap's growth since the last full pass that calls for another


class FrozenHeap:
    """Call `settle` at the end of each audit (or plan), the collector still paused (else its
    first pass walks all the audit made): the first time it collects everything once (the
    first audit, every node evaluated, leaves cycles behind), then it freezes what is left,
    collecting first when the frozen heap has doubled since the last full pass."""

    def __init__(self) -> None:
        self._base: int | None = None  # the frozen heap's size after the last full pass
        self.collections = 0

    def settle(self) -> None:
        if self._base is None or gc.get_freeze_count() > GROWTH * self._base:
            gc.unfreeze()
            gc.collect()
            self.collections += 1
            gc.freeze()
            self._base = gc.get_freeze_count()
        else:
            gc.freeze()

    def close(self) -> None:
        """Everything back under the collector (the process goes on without audits)."""
        gc.unfreeze()
        self._base = None
