"""docs/reference.md is what `draplan docs reference` generates from the API types."""

from __future__ import annotations

from pathlib import Path

import msgspec

from draplan.api import draplan_v1alpha1 as v1alpha1
from draplan.report.reference import KINDS, reference_markdown

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "reference.md"


def test_reference_is_current() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == reference_markdown(), (
        "docs/reference.md is stale: run `draplan docs reference > docs/reference.md`"
    )


def test_every_field_of_every_kind_is_documented() -> None:
    text = reference_markdown()
    for kind in KINDS:
        assert f"## {kind.__name__}" in text
    for struct in (v1alpha1.SyntheticWorkload, v1alpha1.OpenbReplay, v1alpha1.NodePoolSpec):
        for f in msgspec.structs.fields(struct):
            assert f"{f.encode_name}` |" in text, f.encode_name
    assert "`draplan.io/node-pool`" in text and "`draplan.io/price-per-hour`" in text


def test_reference_command(run_cli: object) -> None:
    res = run_cli("docs", "reference")  # type: ignore[operator]
    assert res.code == 0 and res.out == reference_markdown()
