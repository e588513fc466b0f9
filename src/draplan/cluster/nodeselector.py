"""Node selector semantics (core/v1 NodeSelector), shared by DRA pools and node affinity."""

from __future__ import annotations

import re

from draplan.api.core_v1 import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm

_INT = re.compile(r"^[+-]?[0-9]+$")


def requirement_matches(req: NodeSelectorRequirement, value: str | None) -> bool:
    """One requirement against a label (or field) value; None means the key is absent."""
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None:
            return False
        if not req.values or not _INT.match(value) or not _INT.match(req.values[0]):
            return False  # Go's strconv.ParseInt: no underscores, no spaces
        have, want = int(value), int(req.values[0])
        return have > want if op == "Gt" else have < want
    return False


def term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    """All requirements of a term hold; an empty term matches nothing (core/v1 semantics)."""
    if not term.match_expressions and not term.match_fields:
        return False
    labels = node.metadata.labels
    for req in term.match_expressions:
        if not requirement_matches(req, labels.get(req.key)):
            return False
    for req in term.match_fields:
        # Only metadata.name is a supported field selector for nodes.
        value = node.metadata.name if req.key == "metadata.name" else None
        if not requirement_matches(req, value):
            return False
    return True


def selector_matches(selector: NodeSelector, node: Node) -> bool:
    """Terms are ORed."""
    return any(term_matches(term, node) for term in selector.node_selector_terms)
