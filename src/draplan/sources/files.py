"""Read Kubernetes objects from YAML/JSON files, `kind: List` dumps, directories and stdin."""

from __future__ import annotations

import gc
import os
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from draplan.api.codec import decode, decode_json, is_modelled
from draplan.api.errors import BadInput, escape
from draplan.api.meta import KubeStruct
from draplan.sources.yamltext import load_json, load_yaml

SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Document:
    """One object in JSON form and the file it came from."""

    source: str
    data: Any


class _Pauses:
    """The pauses under way in every thread, and whether the collector ran before the first."""

    lock = threading.Lock()
    count = 0
    was_enabled = False


@contextmanager
def gc_paused(freeze: bool = True) -> Iterator[None]:
    """The cyclic collector off while a bulk load (or what is built from it) runs, then as it
    was once no thread's pause is under way; with `freeze`, what the body made is frozen out of
    later collections."""
    # Bulk loads, measures and simulations allocate millions of small containers kept to the
    # end; the cyclic collector's passes over them free nothing and cost up to a third of the
    # time. What a load made lives as long as the run: frozen, later collections never scan it
    # again (unfrozen, the first ones after a 100 MB load each walk every object it made). What
    # `draplan serve` measures again and again is not frozen: the next measure replaces it.
    # The collector is the process's: `serve`'s audit and the expander's judge pause it from
    # two threads, and the one that ends first must not turn it on under the other.
    with _Pauses.lock:
        if not _Pauses.count:
            _Pauses.was_enabled = gc.isenabled()
        _Pauses.count += 1
        gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        with _Pauses.lock:
            _Pauses.count -= 1
            if not _Pauses.count and _Pauses.was_enabled:
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
    if text.lstrip().startswith(("{", "[")):
        # JSON is YAML too, but the JSON parser is many times faster on big dumps.
        try:
            return [load_json(text, source)]
        except BadInput:
            if source.endswith(".json"):
                raise
    return [data for _, data in load_yaml(text, source)]


def _flatten(data: Any, source: str) -> Iterator[Document]:
    """The objects of one document: itself, or the items of a `kind: List` (or a JSON array).

    Each item must be an object; a List may hold Lists. Iterative, so no nesting exhausts the
    Python stack.
    """
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        data, where = stack.pop()
        if data is None:  # an empty document, or a null item
            continue
        items: Any = None
        kind = ""
        if _is_list(data) and "items" in data:
            items, kind = data.get("items") or [], str(data["kind"])
            where = f"{where}.items" if where else "items"
            if not isinstance(items, list):
                raise BadInput(
                    f"must be a list, got {type(items).__name__}",
                    source=source,
                    kind=kind,
                    path=where,
                )
        elif isinstance(data, list) and not where:
            items = data
        elif not isinstance(data, dict):
            raise BadInput(
                f"expected an object, got {type(data).__name__}", source=source, path=where
            )
        if items is None:
            yield Document(source, data)
            continue
        for i in reversed(range(len(items))):
            item = items[i]
            if item is not None and not isinstance(item, dict):
                raise BadInput(
                    f"expected an object, got {type(item).__name__}",
                    source=source,
                    kind=kind,
                    path=f"{where}[{i}]",
                )
            stack.append((item, f"{where}[{i}]"))


def read_documents(paths: Sequence[str]) -> Iterator[Document]:
    """Every object document in `paths`, `kind: List` flattened, in file order."""
    for source, text in _texts(paths):
        yield from parse_text(text, source)


def _texts(paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(source, text) of every file in `paths`."""
    for source, content in _contents(paths):
        yield source, content if isinstance(content, str) else content.decode("ascii")


def _contents(paths: Sequence[str]) -> Iterator[tuple[str, str | bytes]]:
    """`_texts`, except that a file of plain ASCII without carriage returns comes as its bytes,
    the same text undecoded (a 150 MB dump goes to the JSON decoder as it was read)."""
    for path in _expand(paths):
        source = "<stdin>" if path == "-" else path
        try:
            if path == "-":
                yield source, sys.stdin.read()
                continue
            with open(path, "rb") as fh:
                data = fh.read()
            if data.isascii() and b"\r" not in data:
                yield source, data
                continue
            # Text as a text-mode read gives it: UTF-8, universal newlines.
            text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        except UnicodeDecodeError:
            raise BadInput("not UTF-8 text", source=source) from None
        except OSError as err:
            raise BadInput(err.strerror or "cannot read", source=source) from None
        yield source, text


class _JsonList(msgspec.Struct):
    kind: str
    items: list[msgspec.Raw]


_JSON_LIST = msgspec.json.Decoder(_JsonList)


def _json_list_items(text: str | bytes) -> list[msgspec.Raw] | None:
    """The items of a JSON `kind: List` (kubectl's dump), each left as its JSON text; None for
    any other text."""
    if isinstance(text, str):
        text = text.removeprefix("\ufeff")
        if not text.lstrip().startswith("{"):
            return None
    elif not text.lstrip().startswith(b"{"):
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
                skipped[f"{escape(str(kind))} ({escape(str(api_version))})"] += 1
                return
        out.append((decode(data, source=doc.source), doc.source))

    with gc_paused():
        for source, content in _contents(paths):
            items = _json_list_items(content)
            if items is None:
                text = content if isinstance(content, str) else content.decode("ascii")
                for doc in parse_text(text, source):
                    add(doc)
                continue
            # A JSON dump: each item decoded straight to its type; an item the direct path
            # does not take goes the general way, which gives the same value or error.
            for i, raw in enumerate(items):
                obj = decode_json(raw, source=source)
                if obj is not None:
                    out.append((obj, source))
                    continue
                data = load_json(bytes(raw).decode(), source)
                if data is not None and not isinstance(data, dict):
                    raise BadInput(
                        f"expected an object, got {type(data).__name__}",
                        source=source,
                        kind="List",
                        path=f"items[{i}]",
                    )
                for doc in _flatten(data, source):
                    add(doc)
    if notify is not None:
        for what, count in sorted(skipped.items()):
            notify(f"skipped {count} {what}: not a kind draplan reads")
    return out
