"""YAML and JSON text as the API server decodes it, the one parser of every input file.

Duplicate map keys are errors (kubectl's strict decoding), alias expansion is bounded as
go-yaml bounds it (a "billion laughs" file is refused before anything walks it), timestamps
stay strings, and every parse problem is a BadInput naming the file, line and column.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.reader import ReaderError

from draplan.api.errors import BadInput, quote

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"
# go-yaml (decode.go, allowedAliasRatio): up to 400,000 decoded nodes 99% may come from
# alias expansion, above 4,000,000 only 10%, scaled linearly between.
_ALIAS_RATIO_LOW = 400_000
_ALIAS_RATIO_HIGH = 4_000_000
# Kubernetes objects nest a few dozen levels; aliases can multiply that without more text.
MAX_DEPTH = 1000


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= _ALIAS_RATIO_LOW:
        return 0.99
    if decoded >= _ALIAS_RATIO_HIGH:
        return 0.10
    span = _ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW
    return 0.99 - 0.89 * (decoded - _ALIAS_RATIO_LOW) / span


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def check_expansion(root: yaml.Node) -> None:
    """Refuse a node graph whose alias expansion is too large, too deep or endless.

    Aliases make the composed graph a DAG (or a cycle); the expansion's size, depth and alias
    count are computed per distinct node, so the check costs O(nodes), not O(expansion). As
    go-yaml counts: every node decoded, an alias once more, and the nodes decoded inside an
    alias's expansion are the aliased ones.
    """
    # id(node) -> (nodes decoded, depth, alias references) of its expansion
    done: dict[int, tuple[int, int, int]] = {}
    first: dict[int, tuple[int, int]] = {}  # id(node) -> the edge (parent, index) it is under
    ancestors: set[int] = set()
    stack: list[tuple[yaml.Node, bool, tuple[int, int]]] = [(root, False, (0, 0))]
    while stack:
        node, finished, edge = stack.pop()
        key = id(node)
        if finished:
            ancestors.discard(key)
            size, depth, aliases = 1, 0, 0
            for i, child in enumerate(_children(node)):
                s, d, a = done[id(child)]
                alias = first[id(child)] != (key, i)
                size += s + alias
                depth = max(depth, d)
                aliases += a + alias
            done[key] = (size, depth + 1, aliases)
            continue
        if key in done:
            continue
        if key in ancestors:
            raise ConstructorError(None, None, "an anchor's value contains itself", node.start_mark)
        ancestors.add(key)
        first[key] = edge
        stack.append((node, True, edge))
        children = _children(node)
        stack.extend((children[i], False, (key, i)) for i in reversed(range(len(children))))
    size, depth, aliases = done[id(root)]
    # Decoded inside expansions: all but the distinct nodes and the alias references.
    expanded = size - len(done) - aliases
    if expanded > 100 and size > 1000 and expanded / size > _allowed_alias_ratio(size):
        raise ConstructorError(None, None, "document contains excessive aliasing", root.start_mark)
    if depth > MAX_DEPTH:
        raise ConstructorError(
            None, None, f"nested deeper than {MAX_DEPTH} levels", root.start_mark
        )


def check_duplicate_keys(node: yaml.MappingNode) -> None:
    seen: set[tuple[str, Any]] = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
            continue
        key = (key_node.tag, key_node.value)
        if key in seen:
            raise ConstructorError(
                None, None, f"key {quote(key_node.value)} already set in map", key_node.start_mark
            )
        seen.add(key)


class _Strict:
    """The checks, mixed into a PyYAML loader (C or pure Python)."""

    check_aliases = True

    def construct_document(self, node: yaml.Node) -> Any:
        if self.check_aliases:
            check_expansion(node)
        return super().construct_document(node)  # type: ignore[misc]

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            check_duplicate_keys(node)
        return super().construct_mapping(node, deep)  # type: ignore[misc]


def _without_timestamps(base: Any) -> dict[Any, Any]:
    return {
        first: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }


_CBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FastLoader(_Strict, _CBase):  # type: ignore[misc]
    """libyaml's parser: every input file's objects."""

    yaml_implicit_resolvers = _without_timestamps(_CBase)


class MarkedLoader(_Strict, yaml.SafeLoader):
    """The pure-Python parser, whose marks count characters: `migrate`, which edits the text
    (for an ASCII text libyaml's marks, which count bytes, are the same, ten times faster)."""

    yaml_implicit_resolvers = _without_timestamps(yaml.SafeLoader)


def yaml_error(
    err: yaml.YAMLError, source: str, text: str = "", line_offset: int = 0, *, marked: bool = True
) -> BadInput:
    """A parse problem as one line: where, then what (`marked`: positions count characters,
    as the pure-Python reader's do; libyaml's count bytes)."""
    if isinstance(err, ReaderError):
        if marked:
            before = text[: err.position]
        else:
            before = text.encode()[: err.position].decode(errors="ignore")
        line = before.count("\n") + 1 + line_offset
        column = len(before) - (before.rfind("\n") + 1) + 1
        char = err.character
        what = f"#x{char:04x}" if isinstance(char, int) else quote(str(char))
        return BadInput(
            f"invalid YAML at line {line} column {column}: unacceptable character {what}",
            source=source,
        )
    mark = getattr(err, "problem_mark", None)
    where = f"line {mark.line + 1 + line_offset} column {mark.column + 1}: " if mark else ""
    problem = getattr(err, "problem", None) or str(err)
    if problem == "exceeded maximum nesting depth":  # libyaml's limit: 1000 levels
        problem = "document nested too deeply"
    return BadInput(f"invalid YAML at {where}{problem}", source=source)


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"key {quote(key)} already set in map")
            seen.add(key)
    return out


def load_json(text: str, source: str) -> Any:
    """One JSON document; duplicate keys are errors, as in YAML."""
    try:
        return json.loads(text, object_pairs_hook=_json_object)
    except json.JSONDecodeError as err:
        raise BadInput(
            f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg}", source=source
        ) from None
    except ValueError as err:
        raise BadInput(f"invalid JSON: {err}", source=source) from None
    except RecursionError:
        raise BadInput("document nested too deeply", source=source) from None


def load_yaml(
    text: str,
    source: str,
    loader: type[Any] = FastLoader,
    line_offset: int = 0,
    *,
    nodes: bool = False,
) -> Iterator[tuple[yaml.Node | None, Any]]:
    """Each document's node tree (with MarkedLoader, or when `nodes` is asked; else None) and
    plain data."""
    marked = loader is MarkedLoader
    try:
        parser = loader(text)
    except yaml.YAMLError as err:
        raise yaml_error(err, source, text, line_offset, marked=marked) from None
    # No `&` in the text: no anchor, so no alias, and nothing to expand.
    parser.check_aliases = "&" in text
    try:
        while parser.check_node():
            node = parser.get_node()
            yield node if marked or nodes else None, parser.construct_document(node)
    except yaml.YAMLError as err:
        raise yaml_error(err, source, text, line_offset, marked=marked) from None
    except RecursionError:
        raise BadInput("document nested too deeply", source=source) from None
    finally:
        parser.dispose()
