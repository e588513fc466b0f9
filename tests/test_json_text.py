"""`-o json` is the standard library's compact JSON re-indented by msgspec: every document
prints as `json.dumps(indent=2)` prints it, and what json.dumps refuses is refused."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.codec import json_text

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()
    | st.text()
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(documents)
def test_equals_the_standard_library(doc: Any) -> None:
    assert json_text(doc) == json.dumps(doc, indent=2) + "\n"


def test_values_msgspec_would_write_otherwise() -> None:
    for value in (1e-05, 1.5e16, -2.5e-300, "é", "\x7f", "\ud800", float("nan"), {"1e-05": 0.0001}):
        assert json_text({"v": value}) == json.dumps({"v": value}, indent=2) + "\n"


def test_refused_values_still_refused() -> None:
    # json.dumps refuses a set; the fast writer must not quietly accept it.
    for doc in ({"s": {1, 2}}, {(1, 2): 3}):
        try:
            json.dumps(doc)
        except TypeError:
            pass
        else:
            raise AssertionError("json.dumps accepted it")
        try:
            json_text(doc)
        except TypeError:
            continue
        raise AssertionError(f"json_text accepted {doc!r}")
