"""The cyclic collector in `draplan serve`'s long-running processes (the audit loop's and the
planner's): what an audit or a plan leaves behind is frozen, out of the collector's passes.

Between audits the collector walked what the last audit kept (memos, evaluations, the answers):
at 5,000 nodes its young passes took a sixth of an audit's CPU, and a full pass over the
unfrozen heap 0.2-0.7 s, in the audit thread's way. That heap holds few cycles to find (audits
under churn left none after the first, measured with `gc.collect()` after each): what an audit
replaces is freed by reference counting, frozen or not. The cycles some input or path may make
are collected by a full pass every `EVERY` audits (about five minutes under churn at 5,000
nodes), so garbage never builds up for longer.
"""

from __future__ import annotations

import gc

EVERY = 1_000  # audits (or plans) between two full passes over the unfrozen heap


class FrozenHeap:
    """Call `settle` at the end of each audit (or plan), the collector still paused (else its
    first pass walks all the audit made): it freezes what is left, after a full pass every
    `EVERY` calls."""

    def __init__(self) -> None:
        self._settled = 0
        self.collections = 0

    def settle(self) -> None:
        self._settled += 1
        if self._settled % EVERY == 0:
            gc.unfreeze()
            gc.collect()
            self.collections += 1
        gc.freeze()

    def close(self) -> None:
        """Everything back under the collector (the process goes on without audits)."""
        gc.unfreeze()
