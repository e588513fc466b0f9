"""The JSON body of a document made again every audit from parts kept between audits (the
metrics' scopes and the pools' statuses are the same dicts while what they sum stays): each
part's text is kept while the part is the same object, so an audit encodes what changed."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from draplan.api.codec import json_text


class KeptText:
    """`codec.json_text` of a document whose sections' entries (a dict's values, a list's
    items) are kept between calls; the entries themselves are never changed once made."""

    def __init__(self) -> None:
        # The texts of the parts the last call and this one used, by identity (each kept
        # with its part, so no other object takes its id meanwhile).
        self._now: dict[int, tuple[object, str]] = {}
        self._last: dict[int, tuple[object, str]] = {}

    def __call__(self, doc: dict[str, Any]) -> str:
        try:
            sections = ", ".join(f"{json.dumps(k)}: {self._section(v)}" for k, v in doc.items())
            # As json_text: the compact text re-indented, changing whitespace only.
            return msgspec.json.format(f"{{{sections}}}".encode(), indent=2).decode() + "\n"
        except msgspec.DecodeError:  # not strict JSON (NaN): json_text words it its way
            return json_text(doc)
        finally:
            self._last, self._now = self._now, {}

    def _section(self, value: object) -> str:
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            entries = ", ".join(f"{json.dumps(k)}: {self._part(v)}" for k, v in value.items())
            return f"{{{entries}}}"
        if isinstance(value, list):
            return f"[{', '.join(self._part(v) for v in value)}]"
        return json.dumps(value)

    def _part(self, value: object) -> str:
        if not isinstance(value, dict | list):
            return json.dumps(value)
        key = id(value)
        got = self._now.get(key) or self._last.get(key)
        if got is None or got[0] is not value:
            got = (value, json.dumps(value))
        self._now[key] = got
        return got[1]
