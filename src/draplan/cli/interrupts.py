"""Ctrl-C: exit 130 with one line, `interrupted`, at any moment, imports included; a second
Ctrl-C is silent. Output written with `write_whole` is all there or not at all.

Installed by `draplan.cli` itself when a console script runs (before the heavy imports) and by
`main()`. Only os, sys and the C module `_signal` are imported here (`signal` imports enum and
`typing` takes milliseconds: each import before the handler is a window for a traceback).
"""

import _signal  # type: ignore[import-not-found]
import os
import sys

EXIT_INTERRUPTED = 130
SCRIPTS = frozenset({"draplan", "kubectl-draplan", "kubectl_complete-draplan"})

# Temporary files (`draplan.cli.outfile`) removed on an interrupt, which skips `finally`.
pending_files: set[str] = set()
_owner = 0  # the process that prints the line; worker processes leave quietly


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        return


def _say(data: bytes) -> None:
    try:
        os.write(2, data)
    except OSError:
        return


def _on_interrupt(signum: int, frame: object) -> None:
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    for path in list(pending_files):
        _remove(path)
    if os.getpid() == _owner:
        _say(b"interrupted\n")
    # Not SystemExit: unwinding could run into code that prints (or a second Ctrl-C could
    # land in a `finally`); stdout's buffer is dropped, so no half document is flushed.
    os._exit(EXIT_INTERRUPTED)


def install() -> object:
    """Handle SIGINT as above from now on; the previous handler (None if not installed)."""
    global _owner
    _owner = os.getpid()
    if _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN:
        return None  # ignored by whoever started us (nohup, a background job): keep it so
    try:
        return _signal.signal(_signal.SIGINT, _on_interrupt)
    except ValueError:  # not the main thread: nothing to install
        return None


def restore(previous: object) -> None:
    if previous is _on_interrupt:
        # The console script's own handler: the process ends now, its output whole. Python's
        # finalization puts the default action back, so a Ctrl-C in that window would kill a
        # finished command by signal; ignored, the command exits as it finished.
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    elif previous is not None:
        _signal.signal(_signal.SIGINT, previous)


def install_for_scripts() -> None:
    if os.path.basename(sys.argv[0] if sys.argv else "") in SCRIPTS:
        install()


def write_whole(text: str) -> None:
    """Write `text` to stdout and flush it with Ctrl-C held back until it is written."""
    held = _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    finally:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, held)
