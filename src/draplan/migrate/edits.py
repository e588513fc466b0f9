"""Edits of one document, applied twice: to its plain data and to its text.

The data result is what the document must mean; the text result keeps every byte that is not
edited. `rewrite_text` re-parses its own output and falls back to re-emitting the document
(comments lost) if the two ever disagree, so an edge case costs formatting, never meaning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class RemoveKey:
    path: Path  # to the mapping
    key: str


@dataclass(frozen=True)
class AddKey:
    path: Path  # to the mapping; the key goes last
    key: str
    value: Any


@dataclass(frozen=True)
class InsertItems:
    path: Path  # to the sequence
    index: int  # insert before this item; len(sequence) appends
    items: tuple[Any, ...]


Edit = RemoveKey | AddKey | InsertItems


def get(doc: Any, path: Path) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def apply_data(doc: Any, edits: Sequence[Edit]) -> Any:
    """A copy of `doc` with the edits applied."""
    out = unshared(doc)
    for edit in edits:
        target = get(out, edit.path)
        if isinstance(edit, RemoveKey):
            del target[edit.key]
        elif isinstance(edit, AddKey):
            target[edit.key] = unshared(edit.value)
        else:
            target[edit.index : edit.index] = unshared(list(edit.items))
    return out


def unshared(value: Any) -> Any:
    """A deep copy in which YAML aliases become separate values (`copy.deepcopy` keeps them
    shared), so editing one place never edits another."""
    if isinstance(value, dict):
        return {k: unshared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unshared(v) for v in value]
    return value


# --- rendering new values in the document's style ---------------------------------------------


def scalar(value: Any) -> str:
    """One scalar as YAML would write it plainly (quoted only where it must be)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = yaml.safe_dump(value, width=1 << 30, allow_unicode=True)
    return text.removesuffix("\n").removesuffix("\n...")


def flow(value: Any) -> str:
    """A value in flow style on one line."""
    if isinstance(value, dict | list):
        text = yaml.safe_dump(
            value, default_flow_style=True, width=1 << 30, sort_keys=False, allow_unicode=True
        )
        return text.strip()
    return scalar(value)


def block(value: Any, col: int, seq_offset: int) -> list[str]:
    """Lines (no newline) of a mapping or sequence in block style starting at column `col`."""
    pad = " " * col
    lines: list[str] = []
    if isinstance(value, dict):
        for key, child in value.items():
            if isinstance(child, dict | list) and child:
                inner = col + (2 if isinstance(child, dict) else seq_offset)
                lines.append(f"{pad}{scalar(key)}:")
                lines.extend(block(child, inner, seq_offset))
            else:
                lines.append(f"{pad}{scalar(key)}: {flow(child)}")
        return lines
    for item in value:
        if isinstance(item, dict | list) and item:
            sub = block(item, col + 2, seq_offset)
            lines.append(f"{pad}- {sub[0].lstrip()}")
            lines.extend(sub[1:])
        else:
            lines.append(f"{pad}- {flow(item)}")
    return lines


# --- editing the text ----------------------------------------------------------------------


class Unsupported(Exception):
    """The text cannot be edited in place (flow nesting, aliases, odd layout)."""


@dataclass
class _Target:
    node: yaml.Node
    path: Path
    removes: set[str] = field(default_factory=set)
    adds: list[tuple[str, Any]] = field(default_factory=list)
    inserts: list[InsertItems] = field(default_factory=list)


class TextEditor:
    """Span edits on one document's text, located by its node tree."""

    def __init__(self, text: str, root: yaml.Node) -> None:
        self.newline = "\r\n" if "\r\n" in text else "\n"
        # A last line without its newline gets one while editing, so lines can follow it.
        self.unterminated = bool(text) and not text.endswith(("\n", "\r"))
        self.text = text + self.newline if self.unterminated else text
        self.root = root
        self.lines = self.text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.seq_offset = _seq_offset(root)

    def apply(self, edits: Sequence[Edit], value_at: Callable[[Path], Any]) -> str:
        """The edited text; `value_at` gives a path's new value (for flow collections)."""
        targets: dict[int, _Target] = {}
        for edit in edits:
            node = self._find(edit.path)
            target = targets.setdefault(id(node), _Target(node, edit.path))
            if isinstance(edit, RemoveKey):
                target.removes.add(edit.key)
            elif isinstance(edit, AddKey):
                target.adds.append((edit.key, edit.value))
            else:
                target.inserts.append(edit)
        spans: list[tuple[int, int, str]] = []
        flows = [t for t in targets.values() if _is_flow(t.node)]
        for target in targets.values():
            if any(f is not target and _inside(target.node, f.node) for f in flows):
                continue  # re-rendered with the flow collection around it
            if _is_flow(target.node):
                node = target.node
                new = flow(value_at(target.path))
                spans.append((node.start_mark.index, node.end_mark.index, new))
            elif isinstance(target.node, yaml.MappingNode):
                spans.extend(self._mapping(target))
            else:
                spans.extend(self._sequence(target))
        return self._splice(spans)

    def _find(self, path: Path) -> yaml.Node:
        node = self.root
        for step in path:
            if isinstance(node, yaml.MappingNode) and isinstance(step, str):
                found = [v for k, v in node.value if _key(k) == step]
                if len(found) != 1:
                    raise Unsupported(f"no single key {step!r}")
                node = found[0]
            elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
                node = node.value[step]
            else:
                raise Unsupported(f"cannot step {step!r}")
        return node

    def _mapping(self, target: _Target) -> list[tuple[int, int, str]]:
        pairs = target.node.value
        spans = []
        kept = []
        for key, value in pairs:
            if _key(key) in target.removes:
                self._own_line(key)
                first, last = key.start_mark.line, _last_line(value)
                spans.append((self.starts[first], self.starts[last + 1], ""))
            else:
                kept.append((key, value))
        if target.adds:
            col = pairs[0][0].start_mark.column
            lines: list[str] = []
            for name, value in target.adds:
                lines.extend(block({name: value}, col, self.seq_offset))
            if kept:
                at = self.starts[_last_line(kept[-1][1]) + 1]
            else:
                self._own_line(pairs[0][0])
                at = self.starts[pairs[0][0].start_mark.line]
            spans.append((at, at, self._lines(lines, at)))
        return spans

    def _sequence(self, target: _Target) -> list[tuple[int, int, str]]:
        items = target.node.value
        if not items:
            raise Unsupported("empty block sequence")
        dash = target.node.start_mark.column
        spans = []
        for edit in target.inserts:
            lines = block(list(edit.items), dash, self.seq_offset)
            if edit.index < len(items):
                item = items[edit.index]
                line = self.lines[item.start_mark.line]
                if line[dash : dash + 1] != "-" or line[:dash].strip():
                    raise Unsupported("item does not start its line")
                at = self.starts[item.start_mark.line]
            else:
                at = self.starts[_last_line(items[-1]) + 1]
            spans.append((at, at, self._lines(lines, at)))
        return spans

    def _own_line(self, key: yaml.Node) -> None:
        mark = key.start_mark
        if self.lines[mark.line][: mark.column].strip():
            raise Unsupported("key shares its line")

    def _lines(self, lines: list[str], at: int) -> str:
        return "".join(line + self.newline for line in lines)

    def _splice(self, spans: list[tuple[int, int, str]]) -> str:
        text = self.text
        previous = len(text) + 1
        # From the end, so earlier offsets stay valid. At one offset a delete goes first, and
        # inserts go last-planned first, so they read in planned order (inner before outer).
        order = sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1], i))
        for i in reversed(order):
            start, end, new = spans[i]
            if end > previous:
                raise Unsupported("overlapping edits")
            text = text[:start] + new + text[end:]
            previous = start
        return text.removesuffix(self.newline) if self.unterminated else text


def _key(node: yaml.Node) -> object:
    return node.value if isinstance(node, yaml.ScalarNode) else None


def _is_flow(node: yaml.Node) -> bool:
    return isinstance(node, yaml.CollectionNode) and node.flow_style is True


def _inside(inner: yaml.Node, outer: yaml.Node) -> bool:
    return (
        outer.start_mark.index <= inner.start_mark.index
        and inner.end_mark.index <= outer.end_mark.index
    )


def _last_line(node: yaml.Node) -> int:
    """The last line holding any of the node's text."""
    if isinstance(node, yaml.CollectionNode) and not node.flow_style and node.value:
        last = node.value[-1]
        return _last_line(last[1] if isinstance(last, tuple) else last)
    end = node.end_mark
    # Block scalars end at the start of the next line.
    return end.line - 1 if end.column == 0 and end.line > node.start_mark.line else end.line


def _seq_offset(root: yaml.Node) -> int:
    """Columns from a key to the dashes of its block sequence (kubectl writes 0)."""
    queue = [root]  # breadth first: the outermost sequence sets the style
    while queue:
        node = queue.pop(0)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(value, yaml.SequenceNode) and not value.flow_style and value.value:
                    return max(0, int(value.start_mark.column) - int(key.start_mark.column))
                queue.append(value)
        elif isinstance(node, yaml.SequenceNode):
            queue.extend(node.value)
    return 0
