"""Each file's new text: planned edits applied in place, new templates before their first user."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from draplan.migrate.edits import (
    Edit,
    InsertItems,
    Path,
    TextEditor,
    Unsupported,
    apply_data,
    block,
    get,
)
from draplan.migrate.inputs import Chunk, SourceFile, objects_of
from draplan.sources.yamltext import FastLoader

if TYPE_CHECKING:
    from draplan.migrate.plan import SiteResult
    from draplan.migrate.templates import TemplateResult

_SEPARATOR_ONLY = re.compile(r"^---[ \t]*(#.*)?$")
# A file holding only these is the cluster snapshot: read, never echoed.
SNAPSHOT_KINDS = {"Node", "ResourceSlice", "DeviceClass"}


@dataclass
class FileResult:
    """One input file before and after."""

    source: str
    original: str
    text: str
    cluster_only: bool
    reformatted: list[str] = field(default_factory=list)  # objects re-emitted whole

    @property
    def changed(self) -> bool:
        return self.text != self.original


def render_files(
    files: Sequence[SourceFile], sites: Sequence[SiteResult], templates: Sequence[TemplateResult]
) -> list[FileResult]:
    """The new text of every file; fills each site's `original` and `migrated` pod spec."""
    out = []
    for f, file in enumerate(files):
        texts: list[str] = []
        reformatted: list[str] = []
        for c, chunk in enumerate(file.chunks):
            mine = [s for s in sites if s.location[:2] == (f, c)]
            new = [t for t in templates if t.emitted and t.location[:2] == (f, c)]
            if not mine and not new:
                texts.append(chunk.text)
                continue
            text, in_place = _render_chunk(chunk, file.is_json, mine, new)
            texts.append(text)
            if not in_place:
                reformatted.extend(s.label for s in mine)
        kinds = {o.get("kind") for ch in file.chunks for _, o in objects_of(ch.data)}
        cluster_only = bool(kinds) and kinds <= SNAPSHOT_KINDS
        out.append(FileResult(file.source, file.text, "".join(texts), cluster_only, reformatted))
    return out


def _render_chunk(
    chunk: Chunk, is_json: bool, sites: Sequence[SiteResult], templates: Sequence[TemplateResult]
) -> tuple[str, bool]:
    edits = [e for s in sites for e in s.edits]
    edited = apply_data(chunk.data, edits)
    for site in sites:
        path = (*site.location[2], *site.site.path)
        site.original, site.migrated = get(chunk.data, path), get(edited, path)
    top = [t.obj for t in templates if t.location[2] == ()]
    inserts = _item_inserts(templates)
    final = apply_data(edited, inserts)
    if is_json:
        doc = {"apiVersion": "v1", "kind": "List", "items": [*top, final]} if top else final
        return json.dumps(doc, indent=_json_indent(chunk.text), ensure_ascii=False) + "\n", True
    insert_paths = {e.path for e in inserts}

    def value_at(path: Path) -> Any:
        # Item inserts shift indexes, so paths into items resolve before them.
        return get(final if path in insert_paths else edited, path)

    return _edit_yaml(chunk, [*edits, *inserts], value_at, top, [*top, final])


def _item_inserts(templates: Sequence[TemplateResult]) -> list[Edit]:
    """Templates go into a `kind: List` just before their first user's item."""
    at: dict[int, list[dict[str, Any]]] = {}
    for t in templates:
        path = t.location[2]
        if path:
            index = path[1]
            assert isinstance(index, int)
            at.setdefault(index, []).append(t.obj)
    # Descending, so the data side inserts without shifting the next index.
    return [InsertItems(("items",), i, tuple(objs)) for i, objs in sorted(at.items(), reverse=True)]


def _edit_yaml(
    chunk: Chunk,
    edits: Sequence[Edit],
    value_at: Callable[[Path], Any],
    top: Sequence[dict[str, Any]],
    expected: list[Any],
) -> tuple[str, bool]:
    try:
        if chunk.node is None:
            raise Unsupported("no document")
        editor = TextEditor(chunk.text, chunk.node)
        text = _prepend(editor.apply(edits, value_at), top, editor.seq_offset, editor.newline)
        if [d for d in yaml.load_all(text, FastLoader) if d is not None] == expected:
            return text, True
    except (Unsupported, yaml.YAMLError):
        pass
    # The in-place edit could not be verified: say what it means, without the comments.
    head = "---\n" if chunk.text.startswith("---") else ""
    body = "---\n".join(
        yaml.safe_dump(d, sort_keys=False, allow_unicode=True, width=1 << 30) for d in expected
    )
    text = head + body
    return (text.replace("\n", "\r\n") if "\r\n" in chunk.text else text), False


def _prepend(body: str, docs: Sequence[dict[str, Any]], seq_offset: int, newline: str) -> str:
    if not docs:
        return body
    rendered = "".join(newline.join([*block(d, 0, seq_offset), "---"]) + newline for d in docs)
    first, lf, rest = body.partition("\n")
    if _SEPARATOR_ONLY.match(first.removesuffix("\r")):
        return first + lf + rendered + rest
    if body.startswith("---"):
        raise Unsupported("content on the document start line")
    return rendered + body


def _json_indent(text: str) -> int:
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped:
            return max(1, len(line) - len(stripped))
    return 2
