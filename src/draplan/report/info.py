"""What a report states about itself: its inputs, draplan's version and a date.

The date is reproducible: `--date YYYY-MM-DD` if given, else `SOURCE_DATE_EPOCH` (seconds, the
reproducible-builds.org convention), else today's date in UTC; nothing else in a report depends
on when it was written."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

from draplan import __version__
from draplan.api.errors import BadInput


def report_date(given: str | None = None) -> str:
    if given:
        try:
            return date.fromisoformat(given).isoformat()
        except ValueError:
            raise BadInput(f"not a date YYYY-MM-DD: {given!r}", path="--date") from None
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch:
        try:
            return datetime.fromtimestamp(int(epoch), UTC).date().isoformat()
        except (ValueError, OverflowError):
            raise BadInput(
                f"SOURCE_DATE_EPOCH must be seconds since 1970, got {epoch!r}",
                path="SOURCE_DATE_EPOCH",
            ) from None
    return datetime.now(UTC).date().isoformat()


@dataclass(frozen=True)
class ReportInfo:
    inputs: tuple[str, ...]
    date: str
    version: str = __version__

    @classmethod
    def make(cls, inputs: Sequence[str], given_date: str | None = None) -> ReportInfo:
        return cls(tuple(inputs), report_date(given_date))
