"""Input files as text: the documents of each file with their YAML node trees and positions.

The rewrite edits the original text, so every document keeps its exact bytes and the node
marks (line, column, index) say where to edit. The pure-Python loader
(`MarkedLoader`, with every check of the common one) is used because its marks count
characters, and manifests are small.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from draplan.api.codec import header
from draplan.api.errors import BadInput
from draplan.api.validation import check_dns_label
from draplan.sources.yamltext import FastLoader, MarkedLoader, load_json, load_yaml

SUFFIXES = (".yaml", ".yml", ".json")
_SEPARATOR = re.compile(r"^---(?:[ \t\r\n]|$)")


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


def parse_chunk(text: str, source: str = "", line_offset: int = 0) -> tuple[yaml.Node | None, Any]:
    """The node tree and the plain data of a single-document text."""
    # Edits are placed by the marks' character offsets: libyaml's count bytes, the same on
    # ASCII text, where its parser is used (it is about ten times faster).
    loader = FastLoader if text.isascii() else MarkedLoader
    docs = list(load_yaml(text, source, loader, line_offset, nodes=True))
    if len(docs) > 1:
        raise BadInput(
            f"invalid YAML after line {line_offset + 1}: more than one document", source=source
        )
    return docs[0] if docs else (None, None)


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
            data = load_json(text, source)
            _check_objects(data, source)
            out.append(SourceFile(source, text, True, [Chunk(0, text, None, data)]))
            continue
        chunks = []
        for first, part in split_chunks(text):
            node, data = parse_chunk(part, source, first)
            _check_objects(data, source)
            chunks.append(Chunk(first, part, node, data))
        out.append(SourceFile(source, text, False, chunks))
    return out


def _check_objects(data: Any, source: str) -> None:
    """Every object of a document has a string apiVersion and kind; a List holds only objects."""
    if data is None:
        return
    if isinstance(data, dict) and str(data.get("kind", "")).endswith("List"):
        items = data.get("items") or []
        if not isinstance(items, list):
            raise BadInput(
                f"must be a list, got {type(items).__name__}",
                source=source,
                kind=str(data["kind"]),
                path="items",
            )
        for i, item in enumerate(items):
            try:
                _check_object(item)
            except BadInput as err:
                raise err.located(
                    source=source, kind=str(data["kind"]), path_prefix=f"items[{i}]"
                ) from None
        return
    try:
        _check_object(data)
    except BadInput as err:
        raise err.located(source=source) from None


def _check_object(obj: Any) -> None:
    """apiVersion and kind strings, and the metadata every rewrite names objects by."""
    _, kind, name = header(obj)
    meta = obj.get("metadata")
    if meta is None:
        return
    if not isinstance(meta, dict):
        raise BadInput(f"expected an object, got {type(meta).__name__}", kind=kind, path="metadata")
    for field in ("name", "namespace"):
        value = meta.get(field)
        if value is not None and not isinstance(value, str):
            raise BadInput(
                f"expected str, got {type(value).__name__}",
                kind=kind,
                name=name,
                path=f"metadata.{field}",
            )
    # Every kind's namespace is a DNS label (names differ by kind: RBAC allows `system:…`);
    # the claim templates made for an object go into its namespace.
    if meta.get("namespace"):
        try:
            check_dns_label(meta["namespace"], "metadata.namespace")
        except BadInput as err:
            raise err.located(kind=kind, name=name) from None


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
