"""Ctrl-C: exit 130 with one line, `interrupted`, at any moment, imports included; a second
Ctrl-C is silent. Output written with `write_whole` is all there or not at all.

Installed by `draplan.cli` itself when a console script runs (before the heavy imports) and by
`main()`. Only the os, signal and sys modules are imported here, so installing costs nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Any

EXIT_INTERRUPTED = 130
SCRIPTS = frozenset({"draplan", "kubectl-draplan", "kubectl_complete-draplan"})

# Temporary files (`draplan.cli.outfile`) removed on an interrupt, which skips `finally`.
pending_files: set[str] = set()
_owner = 0  # the process that prints the line; worker processes leave quietly


def _on_interrupt(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for path in list(pending_files):
        with contextlib.suppress(OSError):
            os.unlink(path)
    if os.getpid() == _owner:
        with contextlib.suppress(OSError):
            os.write(2, b"interrupted\n")
    # Not SystemExit: unwinding could run into code that prints (or a second Ctrl-C could
    # land in a `finally`); stdout's buffer is dropped, so no half document is flushed.
    os._exit(EXIT_INTERRUPTED)


def install() -> Any:
    """Handle SIGINT as above from now on; the previous handler (None off the main thread)."""
    global _owner
    _owner = os.getpid()
    try:
        return signal.signal(signal.SIGINT, _on_interrupt)
    except ValueError:  # not the main thread: nothing to install
        return None


def install_for_scripts() -> None:
    if os.path.basename(sys.argv[0] if sys.argv else "") in SCRIPTS:
        install()


def write_whole(text: str) -> None:
    """Write `text` to stdout and flush it with Ctrl-C held back until it is written."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
