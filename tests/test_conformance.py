"""Every allocator conformance case in shared/conformance, through `draplan allocate`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import SHARED
from draplan.allocator.validate import validate_allocation
from draplan.api.features import VERSIONS
from draplan.api.quantity import Quantity
from draplan.cluster.state import ClusterState
from draplan.sources import load_objects

CASES = sorted((SHARED / "conformance").glob("*.yaml"))


def _entry_matches(want: dict[str, Any], got: dict[str, Any]) -> bool:
    for key in ("request", "driver", "pool", "device"):
        if want[key] != got[key]:
            return False
    if "adminAccess" in want and bool(got.get("adminAccess")) != bool(want["adminAccess"]):
        return False
    if "shareID" in want and ("shareID" in got) != bool(want["shareID"]):
        return False
    if "consumedCapacity" in want:
        cc_want, cc_got = want["consumedCapacity"], got.get("consumedCapacity")
        if cc_want is None:
            return not cc_got
        if not cc_got or set(cc_want) != set(cc_got):
            return False
        if any(Quantity.parse(str(cc_want[k])) != Quantity.parse(cc_got[k]) for k in cc_want):
            return False
    return True


def _alternative_matches(alternative: list[dict[str, Any]], results: list[dict[str, Any]]) -> bool:
    """Multiset match of results against one acceptable answer."""
    if len(alternative) != len(results):
        return False
    remaining = list(results)
    for want in alternative:
        for i, got in enumerate(remaining):
            if _entry_matches(want, got):
                del remaining[i]
                break
        else:
            return False
    return True


def _selector_set(sel: dict[str, Any] | None) -> Any:
    if sel is None:
        return None
    terms = []
    for term in sel.get("nodeSelectorTerms", []):
        reqs = []
        for field in ("matchExpressions", "matchFields"):
            for r in term.get(field, []):
                reqs.append((field, r["key"], r["operator"], frozenset(r.get("values", []))))
        terms.append(frozenset(reqs))
    return Counter(terms)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_conformance_case(path: Path, version: str, tmp_path: Path, run_cli: Any) -> None:
    case = yaml.safe_load(path.read_text())
    objects = tmp_path / "objects.yaml"
    objects.write_text(yaml.safe_dump_all(case["objects"]))
    args = ["allocate", "-f", str(objects), "--node", case["allocate"]["node"], "-o", "json"]
    args += ["--kubernetes-version", version]
    for claim in case["allocate"]["claims"]:
        args += ["--claim", claim]
    result = run_cli(*args)
    expect = case["expect"]
    if expect.get("error") == "bad-input":
        assert result.code == 2, result.out
        assert result.err.strip() and len(result.err.strip().splitlines()) == 1
        assert "Traceback" not in result.err
        return
    assert result.code == 0, result.err
    doc = result.json()
    assert doc["satisfiable"] is expect["satisfiable"], doc.get("reason")
    if not expect["satisfiable"]:
        assert doc["reason"]["code"]
        return
    claims = {f"{c['metadata']['namespace']}/{c['metadata']['name']}": c for c in doc["claims"]}
    for name, alternatives in (expect.get("allocations") or {}).items():
        results = claims[name]["status"]["allocation"]["devices"]["results"]
        assert any(_alternative_matches(alt, results) for alt in alternatives), results
    for name, selector in (expect.get("nodeSelectors") or {}).items():
        got = claims[name]["status"]["allocation"].get("nodeSelector")
        assert _selector_set(got) == _selector_set(selector)
    state = ClusterState.from_objects(load_objects([str(objects)]))
    node = state.nodes[case["allocate"]["node"]]
    allocated = [c for c in state_claims(state, doc)]
    assert validate_allocation(state, node, allocated) == []


def state_claims(state: ClusterState, doc: dict[str, Any]) -> list[Any]:
    from draplan.api.codec import decode

    return [decode(c) for c in doc["claims"]]
