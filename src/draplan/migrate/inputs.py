"""Input files as text: the documents of each file with their YAML node trees and positions.

The rewrite edits the original text, so every document keeps its exact bytes and the node
marks (line, column, index) say where to edit. The pure-Python loader is used because its
marks count characters, and manifests are small.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from draplan.api.errors import BadInput

SUFFIXES = (".yaml", ".yml", ".json")
_SEPARATOR = re.compile(r"^---(?:[ \t\r\n]|$)")


class Loader(yaml.SafeLoader):
    """YAML 1.1 as kubectl writes it, timestamps kept as strings (as draplan.sources does)."""


Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass
class Chunk:
    """One `---`-separated part of a YAML file: its text, node tree and plain data."""

    first_line: int  # 0-based line of the file where the chunk starts
    text: str
    node: yaml.Node | None
    data: Any


@dataclass
class SourceFile:
    """One input file: YAML chunks, or one JSON document."""

    source: str
    text: str
    is_json: bool
    chunks: list[Chunk]


def _expand(paths: Sequence[str]) -> Iterator[str]:
    for path in paths:
        if path == "-" or not os.path.isdir(path):
            if path != "-" and not os.path.exists(path):
                raise BadInput("no such file or directory", source=path)
            yield path
            continue
        found = sorted(str(p) for p in Path(path).rglob("*") if p.suffix in SUFFIXES)
        if not found:
            raise BadInput("directory holds no .yaml, .yml or .json files", source=path)
        yield from found


def _read(path: str) -> tuple[str, str]:
    source = "<stdin>" if path == "-" else path
    # Bytes as they are: universal newlines would turn a CRLF file into an LF one.
    try:
        if path == "-":
            return source, sys.stdin.buffer.read().decode("utf-8")
        with open(path, encoding="utf-8", newline="") as fh:
            return source, fh.read()
    except UnicodeDecodeError:
        raise BadInput("not UTF-8 text", source=source) from None
    except OSError as err:
        raise BadInput(err.strerror or "cannot read", source=source) from None


def split_chunks(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each part; a part starts at a `---` line (kept in the part)."""
    lines = text.splitlines(keepends=True)
    starts = [0] + [i for i, line in enumerate(lines) if i and _SEPARATOR.match(line)]
    ends = [*starts[1:], len(lines)]
    return [(a, "".join(lines[a:b])) for a, b in zip(starts, ends, strict=True)]


def yaml_error(err: yaml.YAMLError, source: str, line_offset: int = 0) -> BadInput:
    mark = getattr(err, "problem_mark", None)
    where = ""
    if mark is not None:
        where = f"line {mark.line + 1 + line_offset} column {mark.column + 1}: "
    problem = getattr(err, "problem", None) or str(err)
    return BadInput(f"invalid YAML at {where}{problem}", source=source)


def parse_chunk(text: str, source: str = "", line_offset: int = 0) -> tuple[yaml.Node | None, Any]:
    """The node tree and the plain data of a single-document text."""
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as err:
        raise yaml_error(err, source, line_offset) from None
    except RecursionError:
        raise BadInput("document nested too deeply", source=source) from None
    finally:
        loader.dispose()
    return node, data


def load_yaml_text(text: str, source: str) -> Any:
    """Plain data of a one-document YAML (or JSON) text."""
    return parse_chunk(text, source)[1]


def read_files(paths: Sequence[str]) -> list[SourceFile]:
    """Every input file with its documents, in the order given."""
    out = []
    for path in _expand(paths):
        source, text = _read(path)
        text = text.removeprefix("\ufeff")
        if text.lstrip().startswith(("{", "[")):
            try:
                data = json.loads(text)
            except json.JSONDecodeError as err:
                msg = f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg}"
                raise BadInput(msg, source=source) from None
            out.append(SourceFile(source, text, True, [Chunk(0, text, None, data)]))
            continue
        chunks = []
        for first, part in split_chunks(text):
            node, data = parse_chunk(part, source, first)
            chunks.append(Chunk(first, part, node, data))
        out.append(SourceFile(source, text, False, chunks))
    return out


def objects_of(data: Any) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """(path in the document, object) of a document; a `kind: List` yields its items."""
    if isinstance(data, dict) and str(data.get("kind", "")).endswith("List"):
        items = data.get("items") or []
        if isinstance(items, list):
            for i, item in enumerate(items):
                if isinstance(item, dict):
                    yield ("items", i), item
        return
    if isinstance(data, dict):
        yield (), data
