"""Read Kubernetes objects from YAML/JSON files, `kind: List` dumps, directories and stdin."""

from __future__ import annotations

import gc
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import yaml

from draplan.api.codec import decode, decode_json, is_modelled
from draplan.api.errors import BadInput
from draplan.api.meta import KubeStruct

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _KubeLoader(_BaseLoader):  # type: ignore[misc]
    """YAML 1.1 as kubectl writes it, except timestamps stay strings (as the API returns them)."""


_KubeLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}

SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Document:
    """One object in JSON form and the file it came from."""

    source: str
    data: Any


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off while a bulk load (or what is built from it) runs."""
    # Bulk loads allocate millions of small containers; the cyclic collector only slows them.
    # What was loaded lives as long as the run: frozen, later collections never scan it again
    # (unfrozen, the first ones after a 100 MB load each walk every object it made).
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _expand(paths: Sequence[str]) -> Iterator[str]:
    for path in paths:
        if path == "-":
            yield path
        elif os.path.isdir(path):
            found = sorted(
                str(p) for p in Path(path).rglob("*") if p.suffix in SUFFIXES and p.is_file()
            )
            if not found:
                raise BadInput("directory holds no .yaml, .yml or .json files", source=path)
            yield from found
        elif os.path.exists(path):
            yield path
        else:
            raise BadInput("no such file or directory", source=path)


def _parse(text: str, source: str) -> list[Any]:
    try:
        if text.lstrip().startswith(("{", "[")):
            # JSON is YAML too, but the JSON parser is many times faster on big dumps.
            try:
                return [json.loads(text)]
            except json.JSONDecodeError as err:
                if source.endswith(".json"):
                    raise BadInput(
                        f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg}",
                        source=source,
                    ) from None
        return list(yaml.load_all(text, Loader=_KubeLoader))
    except RecursionError:
        raise BadInput("document nested too deeply", source=source) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise BadInput(f"invalid YAML at {where}{problem}", source=source) from None


def _flatten(data: Any, source: str) -> Iterator[Document]:
    # Iterative, so a deeply nested list cannot exhaust the Python stack.
    stack = [data]
    while stack:
        data = stack.pop()
        if data is None:
            continue
        if _is_list(data) and "items" in data:
            items = data.get("items") or []
            if not isinstance(items, list):
                raise BadInput(
                    f"must be a list, got {type(items).__name__}",
                    source=source,
                    kind=str(data["kind"]),
                    path="items",
                )
            stack.extend(reversed(items))
        elif isinstance(data, list):
            stack.extend(reversed(data))
        else:
            yield Document(source, data)


def read_documents(paths: Sequence[str]) -> Iterator[Document]:
    """Every object document in `paths`, `kind: List` flattened, in file order."""
    for source, text in _texts(paths):
        yield from parse_text(text, source)


def _texts(paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(source, text) of every file in `paths`."""
    for path in _expand(paths):
        source = "<stdin>" if path == "-" else path
        try:
            if path == "-":
                text = sys.stdin.read()
            else:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
        except UnicodeDecodeError:
            raise BadInput("not UTF-8 text", source=source) from None
        except OSError as err:
            raise BadInput(err.strerror or "cannot read", source=source) from None
        yield source, text


class _JsonList(msgspec.Struct):
    kind: str
    items: list[msgspec.Raw]


_JSON_LIST = msgspec.json.Decoder(_JsonList)


def _json_list_items(text: str) -> list[msgspec.Raw] | None:
    """The items of a JSON `kind: List` (kubectl's dump), each left as its JSON text; None for
    any other text."""
    text = text.removeprefix("\ufeff")
    if not text.lstrip().startswith("{"):
        return None
    try:
        listed = _JSON_LIST.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None
    return listed.items if listed.kind.endswith("List") else None


def parse_text(text: str, source: str) -> list[Document]:
    """The object documents of one YAML or JSON text, `kind: List` flattened."""
    # A byte order mark (editors on Windows) would hide JSON from the fast path.
    datas = _parse(text.removeprefix("\ufeff"), source)
    docs = [doc for data in datas for doc in _flatten(data, source)]
    # An empty `kind: List` is what kubectl prints when there is nothing of a kind.
    if not docs and not any(_is_list(data) for data in datas):
        raise BadInput("no Kubernetes objects found", source=source)
    return docs


def _is_list(data: Any) -> bool:
    return isinstance(data, dict) and str(data.get("kind", "")).endswith("List")


def stderr_notice(message: str) -> None:
    sys.stderr.write(f"notice: {message}\n")


Notify = Callable[[str], None]


def load_files(
    paths: Sequence[str], notify: Notify | None = stderr_notice
) -> list[tuple[KubeStruct, str]]:
    """Typed, validated objects with the file each came from, exactly as written.

    Kinds draplan does not read (a Deployment or Service in a `kubectl get all` dump) are
    skipped, one notice per kind with a count; objects of the kinds it reads must be valid.
    """
    out: list[tuple[KubeStruct, str]] = []
    skipped: Counter[str] = Counter()

    def add(doc: Document) -> None:
        data = doc.data
        if isinstance(data, dict):
            api_version, kind = data.get("apiVersion"), data.get("kind")
            if not is_modelled(api_version, kind):
                skipped[f"{kind} ({api_version})"] += 1
                return
        out.append((decode(data, source=doc.source), doc.source))

    with gc_paused():
        for source, text in _texts(paths):
            items = _json_list_items(text)
            if items is None:
                for doc in parse_text(text, source):
                    add(doc)
                continue
            # A JSON dump: each item decoded straight to its type; an item the direct path
            # does not take goes the general way, which gives the same value or error.
            for raw in items:
                obj = decode_json(raw, source=source)
                if obj is not None:
                    out.append((obj, source))
                    continue
                for data in _parse(bytes(raw).decode(), source):
                    for doc in _flatten(data, source):
                        add(doc)
    if notify is not None:
        for what, count in sorted(skipped.items()):
            notify(f"skipped {count} {what}: not a kind draplan reads")
    return out
