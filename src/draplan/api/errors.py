"""Errors for bad input: one line naming the file, the object and the field path."""

from __future__ import annotations


class BadInput(Exception):
    """Input that cannot be used; the CLI prints `str(err)` and exits with code 2."""

    def __init__(
        self,
        message: str,
        *,
        source: str = "",
        kind: str = "",
        name: str = "",
        path: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.kind = kind
        self.name = name
        self.path = path

    def located(
        self, *, source: str = "", kind: str = "", name: str = "", path_prefix: str = ""
    ) -> BadInput:
        """A copy with the location filled in where it was still unknown."""
        path = self.path
        if path_prefix:
            path = f"{path_prefix}.{path}" if path else path_prefix
        return BadInput(
            self.message,
            source=self.source or source,
            kind=self.kind or kind,
            name=self.name or name,
            path=path,
        )

    def __str__(self) -> str:
        parts = []
        if self.source:
            parts.append(self.source)
        if self.kind or self.name:
            kind = self.kind or "object"
            parts.append(f'{kind} "{self.name}"' if self.name else kind)
        if self.path:
            parts.append(self.path)
        parts.append(" ".join(self.message.split()))
        return ": ".join(parts)
