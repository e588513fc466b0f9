"""kubectl's `-l` label selectors (k8s.io/apimachinery/pkg/labels.Parse): `k=v`, `k==v`,
`k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists), `!k` (does not exist), joined by commas,
all of which must hold."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from draplan.api.errors import BadInput

Requirement = Callable[[Mapping[str, str]], bool]

_SET = re.compile(r"^\s*(\S+?)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_CMP = re.compile(r"^\s*([^=!\s]+)\s*(==|=|!=)\s*([^=!\s]*)\s*$")
_KEY = re.compile(r"^\s*(!?)\s*([^=!\s(),]+)\s*$")


def _split(text: str) -> list[str]:
    """Commas outside parentheses separate requirements."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _requirement(text: str) -> Requirement:
    if m := _SET.match(text):
        key, op = m.group(1), m.group(2)
        values = {v.strip() for v in m.group(3).split(",")}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _CMP.match(text):
        key, op, value = m.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: key in labels and labels[key] == value
    if m := _KEY.match(text):
        negate, key = m.group(1) == "!", m.group(2)
        return lambda labels: (key in labels) != negate
    raise BadInput(f"unable to parse requirement {text.strip()!r}", path="--selector")


def parse_selector(text: str) -> Requirement:
    """A predicate over a label map; "" selects everything."""
    if not text.strip():
        return lambda labels: True
    requirements = [_requirement(part) for part in _split(text)]
    return lambda labels: all(r(labels) for r in requirements)
