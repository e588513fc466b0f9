"""Go durations (time.ParseDuration, metav1.Duration's text form), in seconds."""

from __future__ import annotations

import re

from draplan.api.errors import BadInput, quote

# time.ParseDuration's units, in seconds.
UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str, path: str = "") -> float:
    """Go's time.ParseDuration: a sign, then numbers each with a unit ("1h30m", "1.5s");
    "0" alone needs no unit."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    if not body:
        raise BadInput(f"time: invalid duration {quote(text)}", path=path)
    pos, total = 0, 0.0
    while pos < len(body):
        part = _PART.match(body, pos)
        if part is None:
            raise BadInput(f"time: invalid duration {quote(text)}", path=path)
        total += float(part.group(1)) * UNITS[part.group(2)]
        pos = part.end()
    return -total if text.startswith("-") else total
