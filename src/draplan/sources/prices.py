"""`--prices FILE`: dollars per node-hour by pool name or instance type, for pools derived
from a cluster's node groups (hand-written NodePools carry their own `pricePerHour`).

YAML (or JSON): one mapping, `name: price`. CSV (a `.csv` file): `name,price` lines; a first
line starting `name,` (e.g. `name,pricePerHour`) is a header. Blank lines and `#` comments are
skipped. A name is a pool's name (`h100`, a Karpenter NodePool, an EKS node group) or an
instance type (`p5.48xlarge`); a pool's own name wins over its nodes' instance type.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from draplan.api.errors import BadInput
from draplan.sources.yamltext import load_yaml


def _price(text: object, source: str, name: str) -> str:
    value = str(text).strip()
    try:
        number = float(value)
    except ValueError:
        raise BadInput(f"{value!r} is not a price", source=source, path=name) from None
    if not math.isfinite(number) or number < 0:
        raise BadInput(f"{value!r} is not a finite non-negative price", source=source, path=name)
    return value


def load_prices(path: str) -> dict[str, str]:
    """The price table in `path` (YAML mapping or CSV), prices as decimal strings."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BadInput("not UTF-8 text", source=path) from None
    except OSError as err:
        raise BadInput(err.strerror or str(err), source=path) from None
    if path.endswith(".csv"):
        rows = [
            r
            for r in csv.reader(io.StringIO(text))
            if r and r[0].strip() and not r[0].lstrip().startswith("#")
        ]
        if rows and rows[0][0].strip().lower() == "name":
            rows = rows[1:]  # the header
        out: dict[str, str] = {}
        for i, row in enumerate(rows):
            if len(row) < 2:
                raise BadInput("expected name,price", source=path, path=f"line {i + 1}")
            out[row[0].strip()] = _price(row[1], path, row[0].strip())
        return out
    docs = [data for _, data in load_yaml(text, path)]
    if len(docs) > 1:
        raise BadInput("expected one YAML document", source=path)
    doc = docs[0] if docs else None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise BadInput("expected a mapping of name to price", source=path)
    return {str(k): _price(v, path, str(k)) for k, v in doc.items()}
