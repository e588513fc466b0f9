"""Errors for bad input: one line naming the file, the object and the field path."""

from __future__ import annotations

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def _escaped(ch: str) -> str:
    code = ord(ch)
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape(text: str) -> str:
    """`text` with control and other unprintable characters escaped as Go escapes them, so
    no input can break an error line in two (or forge a second one)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _ESCAPES.get(ch) or _escaped(ch) for ch in text)


def quote(text: str) -> str:
    """Go's `%q`: double quotes, with quotes, backslashes and unprintable characters escaped."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return (
        '"'
        + "".join(_ESCAPES.get(ch) or (ch if ch.isprintable() else _escaped(ch)) for ch in text)
        + '"'
    )


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
        return type(self)(
            self.message,
            source=self.source or source,
            kind=self.kind or kind,
            name=self.name or name,
            path=path,
        )

    def __str__(self) -> str:
        parts = []
        if self.source:
            parts.append(escape(self.source))
        if self.kind or self.name:
            kind = escape(self.kind) or "object"
            parts.append(f"{kind} {quote(self.name)}" if self.name else kind)
        if self.path:
            parts.append(escape(self.path))
        parts.append(escape(" ".join(self.message.split())))
        return ": ".join(parts)
