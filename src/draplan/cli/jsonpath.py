"""kubectl's JSONPath templates (k8s.io/client-go/util/jsonpath), for `-o jsonpath=` and
`-o custom-columns=`.

The subset kubectl documents (kubernetes.io/docs/reference/kubectl/jsonpath): text outside braces
printed as is; `{"\\n"}` string literals; `$` / `@`, `.field` (`\\.` a dot in its name),
`['field']`, `..field` (recursive descent), `.*` / `[*]`, `[n]` (negative from the end), `[a:b]`
/ `[a:b:step]`, unions `[a,b]`, filters `[?(@.x == "v")]` (`==`, `!=`, `<`, `<=`, `>`, `>=`,
or existence), and `{range …}…{end}`. Results print as client-go prints them: several results
of one expression joined by a space, maps and lists as compact JSON with sorted keys, integers
as integers (kubectl's unstructured objects hold them as int64) and other numbers as Go's `%v`
of a float64 (`1e+06`), a missing field an error, as kubectl's `allowMissingKeys` is false.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from draplan.api.errors import BadInput


class JSONPathError(BadInput):
    """A template that does not parse, or a field an object does not have."""


@dataclass(frozen=True)
class _Text:
    text: str


@dataclass(frozen=True)
class _Expr:
    steps: tuple[Any, ...]


@dataclass(frozen=True)
class _Range:
    steps: tuple[Any, ...]
    body: tuple[Any, ...]


_MISSING = object()


def parse(template: str) -> tuple[Any, ...]:
    """The template as text, expression and range nodes."""
    nodes, rest = _parse_nodes(template, top=True)
    assert not rest
    return nodes


def _parse_nodes(text: str, top: bool) -> tuple[tuple[Any, ...], str]:
    nodes: list[Any] = []
    while text:
        start = text.find("{")
        if start < 0:
            nodes.append(_Text(text))
            text = ""
            break
        if start:
            nodes.append(_Text(text[:start]))
        end = _closing_brace(text, start)
        inner, text = text[start + 1 : end].strip(), text[end + 1 :]
        if inner == "end":
            if top:
                raise JSONPathError("{end} without {range}", path="jsonpath")
            return tuple(nodes), "\0" + text
        if inner.startswith("range ") or inner.startswith("range."):
            body, text = _parse_nodes(text, top=False)
            if not text.startswith("\0"):
                raise JSONPathError("{range} without {end}", path="jsonpath")
            text = text[1:]
            nodes.append(_Range(_parse_path(inner[len("range") :].strip()), body))
        elif inner[:1] in "\"'":
            nodes.append(_Text(_string_literal(inner)))
        else:
            nodes.append(_Expr(_parse_path(inner)))
    if not top:
        raise JSONPathError("{range} without {end}", path="jsonpath")
    return tuple(nodes), ""


def _closing_brace(text: str, start: int) -> int:
    quote = ""
    for i in range(start + 1, len(text)):
        c = text[i]
        if quote:
            if c == "\\":
                continue
            if c == quote and text[i - 1] != "\\":
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "}":
            return i
    raise JSONPathError(f"unclosed action in {text[start:]!r}", path="jsonpath")


def _string_literal(text: str) -> str:
    if len(text) < 2 or text[-1] != text[0]:
        raise JSONPathError(f"unterminated string {text!r}", path="jsonpath")
    try:
        value = json.loads('"' + re.sub(r'(?<!\\)"', '\\"', text[1:-1]) + '"', strict=False)
    except json.JSONDecodeError:
        raise JSONPathError(f"bad string {text!r}", path="jsonpath") from None
    assert isinstance(value, str)
    return value


# A `\.` is a dot inside a field name (`labels.kubernetes\.io/os`), as client-go's parser reads it.
_FIELD = re.compile(r"(?:[A-Za-z0-9_\-/$]|\\\.)+|\*")


def _field(match: re.Match[str]) -> str:
    return match.group(0).replace("\\.", ".")


def _parse_path(text: str) -> tuple[Any, ...]:
    """Steps: ("field", name), ("recurse", name|None), ("index", spec), ("filter", ...)."""
    steps: list[Any] = []
    i = 0
    if text[:1] in "$@":
        i = 1
    while i < len(text):
        if text.startswith("..", i):
            m = _FIELD.match(text, i + 2)
            name = _field(m) if m else ""
            steps.append(("recurse", None if name in ("", "*") else name))
            i = m.end() if m else i + 2
        elif text[i] == ".":
            m = _FIELD.match(text, i + 1)
            if m is None:
                if i + 1 == len(text):  # "{.}": the object itself
                    break
                raise JSONPathError(f"bad field at {text[i:]!r}", path="jsonpath")
            name = _field(m)
            steps.append(("all",) if name == "*" else ("field", name))
            i = m.end()
        elif text[i] == "[":
            end = _closing_bracket(text, i)
            steps.append(_parse_bracket(text[i + 1 : end].strip()))
            i = end + 1
        else:
            m = _FIELD.match(text, i)
            if m is None or steps:
                raise JSONPathError(f"unexpected {text[i:]!r}", path="jsonpath")
            steps.append(("field", _field(m)))  # kubectl accepts "{metadata.name}" too
            i = m.end()
    return tuple(steps)


def _closing_bracket(text: str, start: int) -> int:
    depth, quote = 0, ""
    for i in range(start, len(text)):
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i
    raise JSONPathError(f"unclosed [ in {text[start:]!r}", path="jsonpath")


_FILTER = re.compile(r"^\?\((.*)\)$", re.S)
_COMPARE = re.compile(r"^(@[^=!<>\s]*)\s*(==|!=|<=|>=|<|>)\s*(.+)$", re.S)


def _parse_bracket(inner: str) -> Any:
    if inner == "*":
        return ("all",)
    m = _FILTER.match(inner)
    if m:
        cond = m.group(1).strip()
        cm = _COMPARE.match(cond)
        if cm is None:
            return ("filter", _parse_path(cond), None, None)
        return ("filter", _parse_path(cm.group(1)), cm.group(2), _literal(cm.group(3).strip()))
    parts = [p.strip() for p in inner.split(",")]
    if all(p[:1] in "\"'" for p in parts):
        return ("union", tuple(_string_literal(p.replace("\\.", ".")) for p in parts))
    if len(parts) > 1:
        return ("indexes", tuple(_int(p) for p in parts))
    if ":" in inner:
        bounds = [_int(p) if p.strip() else None for p in inner.split(":")]
        if len(bounds) > 3:
            raise JSONPathError(f"bad slice [{inner}]", path="jsonpath")
        return ("slice", *bounds, *([None] * (3 - len(bounds))))
    return ("indexes", (_int(inner),))


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise JSONPathError(f"bad array index {text!r}", path="jsonpath") from None


def _literal(text: str) -> Any:
    if text[:1] in "\"'":
        return _string_literal(text)
    try:
        return float(text)
    except ValueError:
        raise JSONPathError(f"bad filter value {text!r}", path="jsonpath") from None


def _walk(values: list[Any], steps: tuple[Any, ...]) -> list[Any]:
    for step in steps:
        out: list[Any] = []
        for value in values:
            out.extend(_step(value, step))
        values = out
    return values


def _step(value: Any, step: Any) -> Iterator[Any]:
    kind = step[0]
    if kind == "field":
        if isinstance(value, dict) and step[1] in value:
            yield value[step[1]]
        elif not isinstance(value, list):
            raise JSONPathError(f"{step[1]} is not found", path="jsonpath")
    elif kind == "all":
        yield from value.values() if isinstance(value, dict) else value
    elif kind == "recurse":
        yield from _descend(value, step[1])
    elif kind == "union":
        for key in step[1]:
            if not isinstance(value, dict) or key not in value:
                raise JSONPathError(f"{key} is not found", path="jsonpath")
            yield value[key]
    elif kind == "indexes":
        if not isinstance(value, list):
            raise JSONPathError("not an array", path="jsonpath")
        for i in step[1]:
            if not -len(value) <= i < len(value):
                raise JSONPathError(f"array index out of bounds: index {i}", path="jsonpath")
            yield value[i]
    elif kind == "slice":
        if not isinstance(value, list):
            raise JSONPathError("not an array", path="jsonpath")
        yield from value[slice(step[1], step[2], step[3])]
    elif kind == "filter":
        items = value if isinstance(value, list) else [value]
        for item in items:
            if _passes(item, step[1], step[2], step[3]):
                yield item


def _descend(value: Any, name: str | None) -> Iterator[Any]:
    if isinstance(value, dict):
        if name is None:
            yield from value.values()
        elif name in value:
            yield value[name]
        for child in value.values():
            yield from _descend(child, name)
    elif isinstance(value, list):
        if name is None:
            yield from value
        for child in value:
            yield from _descend(child, name)


def _passes(item: Any, path: tuple[Any, ...], op: str | None, want: Any) -> bool:
    try:
        found = _walk([item], path)
    except JSONPathError:
        return False
    if op is None:
        return bool(found)
    for got in found:
        if isinstance(want, float) and isinstance(got, int | float) and not isinstance(got, bool):
            ok = {
                "==": got == want,
                "!=": got != want,
                "<": got < want,
                "<=": got <= want,
                ">": got > want,
                ">=": got >= want,
            }[op]
        elif op in ("==", "!="):
            ok = (got == want) == (op == "==")
        else:
            ok = False
        if ok:
            return True
    return False


def go_text(value: Any) -> str:
    """A value as client-go's jsonpath prints it."""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)  # kubectl's unstructured objects hold JSON integers as int64
    if isinstance(value, float):
        return _go_float(value)
    return str(value)


def _go_float(f: float) -> str:
    """Go's `%v` of a float64 (strconv 'g', shortest): an exponent from 1e+06 or below 1e-04."""
    if math.isinf(f) or math.isnan(f):
        return "NaN" if math.isnan(f) else ("+Inf" if f > 0 else "-Inf")
    if f == 0:
        return "0"
    d = Decimal(repr(abs(f))).normalize()
    digits = "".join(map(str, d.as_tuple().digits))
    exp = d.adjusted()
    sign = "-" if f < 0 else ""
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return sign + format(d, "f")


def results(template: str, data: Any) -> list[list[Any]]:
    """Each expression's results (for custom-columns: one list per template node)."""
    return [_walk([data], node.steps) for node in parse(template) if isinstance(node, _Expr)]


def execute(template: str, data: Any) -> str:
    """The template applied to `data`, as `kubectl -o jsonpath=` prints it."""
    return "".join(_render(parse(template), data))


def _render(nodes: tuple[Any, ...], data: Any) -> Iterator[str]:
    for node in nodes:
        if isinstance(node, _Text):
            yield node.text
        elif isinstance(node, _Expr):
            yield " ".join(go_text(v) for v in _walk([data], node.steps))
        else:
            for item in _walk([data], node.steps):
                yield from _render(node.body, item)
