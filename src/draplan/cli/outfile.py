"""Files a command writes besides stdout (`--report`, `--markdown`): checked before the work,
written whole (a temporary file in the same directory, then renamed over the target)."""

from __future__ import annotations

import os
import tempfile

from draplan.api.errors import BadInput
from draplan.cli.interrupts import pending_files


def check_target(path: str | None, option: str) -> None:
    """Refuse, before any work, a target that cannot be written (None: not asked for)."""
    if path is None:
        return
    if not path:
        raise BadInput("must name a file, got an empty string", path=option)
    directory = os.path.dirname(path) or "."
    problem = ""
    if os.path.isdir(path):
        problem = "is a directory"
    elif not os.path.isdir(directory):
        problem = "no such directory"
    elif not os.access(directory, os.W_OK | os.X_OK):
        problem = "the directory is not writable"
    elif os.path.exists(path) and not os.access(path, os.W_OK):
        problem = "not writable"
    if problem:
        raise BadInput(problem, source=path, path=option)


def _mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_file(path: str, text: str, option: str) -> None:
    """Replace `path` with `text`, or leave it as it was: a full disk or an interrupt never
    leaves a truncated file."""
    directory = os.path.dirname(path) or "."
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.")
    except OSError as err:
        raise BadInput(f"cannot write: {err.strerror or err}", source=path, path=option) from None
    pending_files.add(tmp)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode(path))
        os.replace(tmp, path)
    except OSError as err:
        raise BadInput(f"cannot write: {err.strerror or err}", source=path, path=option) from None
    finally:
        pending_files.discard(tmp)
        if os.path.exists(tmp):
            os.unlink(tmp)
