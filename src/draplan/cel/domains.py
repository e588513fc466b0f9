"""Missing attribute and capacity domains as empty maps, the way Kubernetes reads them.

Upstream, `device.attributes["x.example.com"]` of a domain the device does not have is an empty
map, while `in`, size() and iteration over `device.attributes` still see only the real domains.
A plain map cannot be both, so each direct lookup `device.attributes[D]` (or `capacity`) is
compiled as the optional lookup `device.attributes[?D].orValue(dyn({}))`, which gives exactly
that (dyn, so that the checker keeps typing the domain's values as dyn).
Lookups the text does not show (through an alias bound by cel.bind, say) are left to the
selector's retry.
"""

from __future__ import annotations

import re

_LOOKUP = re.compile(r"device\s*\.\s*(?:attributes|capacity)\s*\[(?!\s*\?)")
_QUOTES = ('"""', "'''", '"', "'")
_OPEN = "([{"
_CLOSE = ")]}"


def optional_domains(expression: str) -> str:
    """`expression` with each direct domain lookup made optional; unchanged if it cannot be
    scanned (the compiler then reports the original's error)."""
    out = _rewrite(expression, 0, len(expression))
    return expression if out is None else out


def _rewrite(text: str, start: int, end: int) -> str | None:
    out: list[str] = []
    i = start
    while i < end:
        skip = _literal_end(text, i)
        if skip is not None:
            if skip < 0 or skip > end:
                return None
            out.append(text[i:skip])
            i = skip
            continue
        found = _LOOKUP.match(text, i)
        if found is not None and not _continues_name(text, i):
            close = _bracket_end(text, found.end() - 1, end)
            if close is None:
                return None
            inner = _rewrite(text, found.end(), close)
            if inner is None:
                return None
            out.append(f"{text[i : found.end()]}?{inner}].orValue(dyn({{}}))")
            i = close + 1
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _continues_name(text: str, i: int) -> bool:
    """Whether `device` at i is the tail of a longer name or of a field selection."""
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_.")


def _literal_end(text: str, i: int) -> int | None:
    """Past the string literal or `//` comment starting at i; None if none starts there, -1
    if it does not end."""
    if text.startswith("//", i):
        newline = text.find("\n", i)
        return len(text) if newline < 0 else newline
    quote = _quote_at(text, i)
    if not quote:
        return None
    close = _string_end(text, i, quote)
    return -1 if close is None else close


def _quote_at(text: str, i: int) -> str:
    for quote in _QUOTES:
        if text.startswith(quote, i):
            return quote
    return ""


def _string_end(text: str, i: int, quote: str) -> int | None:
    """The index just past the string literal opening at i (a raw string has no escapes)."""
    prefix = text[max(0, i - 2) : i]
    raw = prefix[-1:] in ("r", "R") or (prefix[-1:] in ("b", "B") and prefix[:1] in ("r", "R"))
    j = i + len(quote)
    while j < len(text):
        if not raw and text[j] == "\\":
            j += 2
            continue
        if text.startswith(quote, j):
            return j + len(quote)
        if len(quote) == 1 and text[j] == "\n":
            return None
        j += 1
    return None


def _bracket_end(text: str, i: int, end: int) -> int | None:
    """The index of the bracket closing the one at i, skipping strings and nested brackets."""
    depth = 0
    j = i
    while j < end:
        skip = _literal_end(text, j)
        if skip is not None:
            if skip < 0:
                return None
            j = skip
            continue
        c = text[j]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                return j if c == "]" else None
        j += 1
    return None
