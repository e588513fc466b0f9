"""Missing attribute and capacity domains as empty maps, the way Kubernetes reads them.

Upstream, a lookup of a domain the device does not have (`device.attributes["x.example.com"]`,
`device.attributes.x`, `[?D]`, `.?x`) finds an empty map, while `in`, size() and iteration over
`device.attributes` still see only the real domains. A plain map cannot be both, so each lookup
the text shows is compiled as an optional one: `device.attributes[D]` and `.x` as
`device.attributes[?D].orValue(dyn({}))` (dyn, so that the checker keeps typing the domain's
values as dyn), and `[?D]` / `.?x` as `optional.of(...)` of that, since upstream's map (a
mapper with a default value) always finds the domain. Left to the selector's retry: lookups
through an alias (cel.bind) and expressions that bind a variable named `device`; has() on a
domain keeps the plain map's answer.
"""

from __future__ import annotations

import re

_INDEX = re.compile(r"device\s*\.\s*(?:attributes|capacity)\s*\[\s*(\?)?")
_FIELD = re.compile(r"device\s*\.\s*(attributes|capacity)\s*\.\s*(\?)?\s*([A-Za-z_]\w*)\b(?!\s*\()")
_HAS = re.compile(r"has\s*\(\s*$")
_SELECTED = re.compile(r"\.\s*\??\s*$")  # what precedes a field: `x.`, `x .`, `x.?`
# `device` as the variable of cel.bind or of a comprehension (or any argument after the first).
_SHADOWED = re.compile(r"[(,]\s*device\s*,")
_QUOTES = ('"""', "'''", '"', "'")
_OPEN = "([{"
_CLOSE = ")]}"
_EMPTY = ".orValue(dyn({}))"


def optional_domains(expression: str) -> str:
    """`expression` with each domain lookup it shows made optional; unchanged if it cannot be
    scanned (the compiler then reports the original's error) or rebinds `device`."""
    if _SHADOWED.search(expression):
        return expression
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
        if text.startswith("device", i) and not _continues_name(text, i):
            index = _INDEX.match(text, i)
            if index is not None:
                bracket = text.index("[", i, index.end())
                close = _bracket_end(text, bracket, end)
                if close is None:
                    return None
                inner = _rewrite(text, index.end(), close)
                if inner is None:
                    return None
                lookup = f"{text[i:bracket]}[?{inner}]{_EMPTY}"
                out.append(f"optional.of({lookup})" if index.group(1) else lookup)
                i = close + 1
                continue
            field = _FIELD.match(text, i)
            if field is not None and field.end() <= end and not _tested(text, i, field.end()):
                lookup = f'device.{field.group(1)}[?"{field.group(3)}"]{_EMPTY}'
                out.append(f"optional.of({lookup})" if field.group(2) else lookup)
                i = field.end()
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _tested(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is the whole argument of has() (which needs a field there)."""
    return bool(_HAS.search(text, 0, start)) and text[end:].lstrip().startswith(")")


def _continues_name(text: str, i: int) -> bool:
    """Whether `device` at i is the tail of a longer name or a field of something else (`x.`,
    `x .`, `x.?`)."""
    if i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
        return True
    return _SELECTED.search(text, 0, i) is not None


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
