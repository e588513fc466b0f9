"""`serve.bodies.KeptText`: the body of a document whose parts are kept between audits is, call
after call, byte for byte `codec.json_text` of the document, however the parts change, repeat
or are shared."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.codec import json_text
from draplan.serve.bodies import KeptText

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
parts = st.lists(st.one_of(st.dictionaries(st.text(max_size=4), values, max_size=3), values))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(parts, st.lists(st.tuples(st.integers(0, 30), st.booleans()), max_size=8)),
        min_size=1,
        max_size=4,
    ),
    st.dictionaries(st.text(max_size=3), scalars, max_size=2),
)
def test_kept_text_is_json_text_of_every_document(
    steps: list[tuple[list[Any], list[tuple[int, bool]]]], plain: dict[str, Any]
) -> None:
    """Each step's document takes new parts and some of the last step's parts again (the
    same objects), in a dict section and a list section, beside plain sections."""
    text = KeptText()
    kept: list[Any] = []
    for new, reused in steps:
        pool = [*new, *kept]
        picked = [pool[i % len(pool)] for i, _ in reused if pool]
        listed = [p for (_, as_list), p in zip(reused, picked, strict=False) if as_list]
        doc = {
            **plain,
            "named": {f"n{i}": p for i, p in enumerate([*new, *picked])},
            "listed": [*listed, *new],
        }
        assert text(doc) == json_text(doc)
        kept = pool
