"""Render command results as kubectl does: a table by default, or JSON / YAML documents, or
`-o name`, `-o jsonpath=TEMPLATE`, `-o custom-columns=SPEC` (k8s.io/cli-runtime printers).

A command sees `-o name|jsonpath=…|custom-columns=…` as `yaml`, so it builds the documents it
would print as YAML (its manifests, or its result document); `emit_yaml` then prints them in the
format asked for. A command's manifests are one `kind: List`, even one, as `kubectl get` gives
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
from click.shell_completion import CompletionItem

from draplan.api.codec import json_text, yaml_text
from draplan.api.errors import BadInput
from draplan.cli import jsonpath
from draplan.cli.interrupts import write_whole

FORMATS = ("table", "wide", "json", "yaml", "name")
TEMPLATE_FORMATS = ("jsonpath", "custom-columns")
# In `table`, a cell longer than this is cut with "…" so no row wraps; `wide` prints it whole.
MAX_CELL = 60
_FORMAT_KEY = "draplan.output"
_NO_HEADERS_KEY = "draplan.no_headers"


class OutputFormat(click.ParamType):  # type: ignore[type-arg]
    """`-o`: table|wide|json|yaml|name, jsonpath=TEMPLATE or custom-columns=SPEC."""

    name = "format"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(FORMATS) + "|jsonpath=TEMPLATE|custom-columns=SPEC]"

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        names = [*FORMATS, *(f"{kind}=" for kind in TEMPLATE_FORMATS)]
        return [CompletionItem(n) for n in names if n.startswith(incomplete)]

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        kind, sep, arg = text.partition("=")
        if (text in FORMATS) or (kind in TEMPLATE_FORMATS and sep and arg):
            if kind == "jsonpath":
                jsonpath.parse(arg)
            elif kind == "custom-columns":
                _columns(arg)
            return text
        if kind in TEMPLATE_FORMATS:
            self.fail(f"{kind} needs a template: -o {kind}=…", param, ctx)
        self.fail(f"{text!r} is not one of {', '.join(FORMATS)}, jsonpath=…, custom-columns=…")


def remember_format(ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """Keep the format asked for; give the command `yaml` for the template formats."""
    ctx.find_root().meta[_FORMAT_KEY] = value
    return value if value in FORMATS and value != "name" else "yaml"


def remember_no_headers(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    ctx.find_root().meta[_NO_HEADERS_KEY] = value


def no_headers() -> bool:
    """Whether `--no-headers` was given: tables print neither title nor header row."""
    return bool(_setting(_NO_HEADERS_KEY))


def _setting(key: str) -> Any:
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.find_root().meta.get(key)


def emit_json(doc: Any) -> None:
    write_whole(json_text(doc))


def emit_yaml(docs: Sequence[Any], *, listed: bool = True) -> None:
    """YAML documents, or, when `-o name|jsonpath|custom-columns` was asked, those. A template
    sees `docs` as one `kind: List` (as `kubectl get pods` gives even one pod, so `{.items…}`
    holds whatever the count), or, when not `listed`, a lone document as itself."""
    fmt = _setting(_FORMAT_KEY) or "yaml"
    if fmt in ("yaml", "table", "wide", "json"):
        write_whole(yaml_text(docs))
        return
    lone = not listed and len(docs) == 1
    data = docs[0] if lone else {"apiVersion": "v1", "kind": "List", "items": list(docs)}
    kind, _, arg = str(fmt).partition("=")
    if kind == "name":
        for item in _items(data):
            click.echo(_name(item))
    elif kind == "jsonpath":
        write_whole(jsonpath.execute(arg, data))
    else:
        columns = _columns(arg)
        rows = [[_cell(expr, item) for _, expr in columns] for item in _items(data)]
        _print_rows([h for h, _ in columns], rows, title=None)


def emit_document(doc: Any, output: str) -> bool:
    """Print `doc` as JSON or YAML when `output` asks for one; False leaves it to a table."""
    if output == "json":
        emit_json(doc)
    elif output == "yaml":
        emit_yaml([doc], listed=False)
    else:
        return False
    return True


def _items(data: Any) -> list[Any]:
    """The objects of a document: a List's items; a result document's entries (the first list
    of mappings it holds, e.g. `why`'s pods); else the document itself."""
    if isinstance(data, dict):
        if isinstance(data.get("items"), list):
            return list(data["items"])
        if "kind" not in data:
            for value in data.values():
                if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                    return value
    return [data]


def _name(item: Any) -> str:
    """`kind.group/name` as kubectl's name printer writes it (no group for the core API)."""
    if isinstance(item, dict):
        meta = item.get("metadata")
        if isinstance(meta, dict) and item.get("kind") and meta.get("name"):
            group = str(item.get("apiVersion", "")).rpartition("/")[0]
            return f"{str(item['kind']).lower()}{'.' + group if group else ''}/{meta['name']}"
        if isinstance(item.get("pod"), str):  # draplan's per-pod results name the pod "ns/name"
            return f"pod/{item['pod'].rpartition('/')[2]}"
    raise BadInput("this command's output has no named objects", path="-o name")


def _columns(spec: str) -> list[tuple[str, str]]:
    columns = []
    for part in spec.split(","):
        header, sep, expr = part.partition(":")
        if not sep or not header or not expr:
            raise BadInput(
                f"custom-columns format: expected HEADER:JSONPATH, got {part!r}",
                path="-o custom-columns",
            )
        expr = expr if expr.startswith("{") else "{" + expr + "}"
        jsonpath.parse(expr)
        columns.append((header, expr))
    return columns


def _cell(expr: str, item: Any) -> str:
    # kubectl's custom-columns printer allows missing keys: `<none>`.
    try:
        found = [v for vs in jsonpath.results(expr, item) for v in vs]
    except jsonpath.JSONPathError:
        found = []
    return ",".join(jsonpath.go_text(v) for v in found) if found else "<none>"


def emit_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A kubectl table: columns three spaces apart, one line per row. In `table` a long cell
    is cut with "…"; `wide` prints every cell whole. `--no-headers` drops the title and the
    header line and keeps every column."""
    wide = _setting(_FORMAT_KEY) == "wide"
    cells = [[_fit(str(c), wide) for c in row] for row in rows]
    _print_rows(list(headers), cells, title)


def _fit(text: str, wide: bool) -> str:
    text = " ".join(text.split())  # a newline in a reason must not break the row
    return text if wide or len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _print_rows(headers: list[str], rows: list[list[str]], title: str | None) -> None:
    headerless = no_headers()
    shown = rows if headerless else [headers, *rows]
    widths = [max((len(r[i]) for r in shown if i < len(r)), default=0) for i in range(len(headers))]
    lines = [] if headerless or not title else [title]
    for row in shown:
        padded = [c.ljust(w) for c, w in zip(row, widths, strict=False)]
        lines.append("   ".join(padded).rstrip())
    if lines:
        click.echo("\n".join(lines))
