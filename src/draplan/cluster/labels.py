"""metav1 label selectors as apimachinery reads them (labels.Selector): requirements that all
hold; a nil selector selects nothing (LabelSelectorAsSelector), an empty one everything.

A Selector is a frozen, hashable value, so per-selector caches can key on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from draplan.api.meta import LabelSelector

Requirement = tuple[str, str, frozenset[str]]  # key, operator, values


def _holds(req: Requirement, labels: Mapping[str, str]) -> bool:
    key, op, values = req
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        value = labels.get(key)
        return value is None or value not in values
    if op == "Exists":
        return key in labels
    return key not in labels  # DoesNotExist


@dataclass(frozen=True)
class Selector:
    """All `requirements` hold; `nothing` selects no labels at all (labels.Nothing())."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(_holds(r, labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """labels.Selector.Empty(): no requirement (selects everything); Nothing is not empty."""
        return not self.nothing and not self.requirements

    def add(self, requirements: Iterable[Requirement]) -> Selector:
        if self.nothing:
            return self
        return Selector(_canonical((*self.requirements, *requirements)))

    def required(self) -> dict[str, frozenset[str]]:
        """The values each `In` requirement allows: a label a matching set must have."""
        return {key: values for key, op, values in self.requirements if op == "In"}

    def describe(self) -> str:
        """kubectl's selector syntax (`app=web,tier in (a,b)`), for messages."""
        if self.nothing:
            return "<none>"
        parts = []
        for key, op, values in self.requirements:
            if op == "In" and len(values) == 1:
                parts.append(f"{key}={next(iter(values))}")
            elif op in ("In", "NotIn"):
                parts.append(f"{key} {op.lower()} ({','.join(sorted(values))})")
            elif op == "Exists":
                parts.append(key)
            else:
                parts.append(f"!{key}")
        return ",".join(parts) or "<all>"


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def _canonical(requirements: Iterable[Requirement]) -> tuple[Requirement, ...]:
    """Sorted and without repeats: selectors that say the same compare equal."""
    return tuple(sorted(set(requirements), key=lambda r: (r[0], r[1], sorted(r[2]))))


def from_set(labels: Mapping[str, str]) -> Selector:
    """labels.Set(...).AsSelector(): every pair must be present."""
    return Selector(_canonical((k, "In", frozenset((v,))) for k, v in labels.items()))


def selector_of(sel: LabelSelector | None) -> Selector:
    """metav1.LabelSelectorAsSelector: nil selects nothing; matchLabels and matchExpressions
    are all required (validation has checked operators and values)."""
    if sel is None:
        return NOTHING
    reqs: list[Requirement] = [(k, "In", frozenset((v,))) for k, v in sel.match_labels.items()]
    reqs.extend((r.key, r.operator, frozenset(r.values)) for r in sel.match_expressions)
    return Selector(_canonical(reqs))
