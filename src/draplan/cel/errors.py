"""Errors raised by the DRA CEL environment."""

from __future__ import annotations


class CelError(Exception):
    """A selector that cannot be compiled or evaluated; `str()` is one line."""

    def __init__(self, expression: str, message: str) -> None:
        self.expression = expression
        self.message = " ".join(message.split())
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self._kind}: {self.message} (expression: {_shorten(self.expression)})"

    _kind = "CEL error"


class CelCompileError(CelError):
    """The expression does not compile, or its static type is not bool."""

    _kind = "CEL compile error"


class CelRuntimeError(CelError):
    """Evaluating the expression on a device failed or did not give a bool."""

    _kind = "CEL runtime error"


def _shorten(expression: str, limit: int = 120) -> str:
    """One line, at most `limit` characters, so log lines stay readable."""
    flat = " ".join(expression.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
