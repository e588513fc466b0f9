"""A JSON `kind: List` dump is decoded item by item straight into typed objects; every item
must come out exactly as the general path (JSON → dicts → typed) makes it, errors included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA
from draplan.api.errors import BadInput
from draplan.sources import load_objects
from draplan.sources.files import _json_list_items

REALISTIC = DATA / "realistic"


def _items() -> list[Any]:
    docs = list(yaml.safe_load_all((REALISTIC / "cluster.yaml").read_text()))
    items = [i for d in docs for i in (d["items"] if d.get("kind") == "List" else [d])]
    other = yaml.safe_load_all((REALISTIC / "other-kinds.yaml").read_text())
    return items + [i for d in other for i in (d["items"] if d.get("kind") == "List" else [d])]


def _write(path: Path, items: list[Any], indent: int | None = None) -> str:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=indent))
    return str(path)


def test_direct_path_takes_a_dump(tmp_path: Path) -> None:
    items = _json_list_items(Path(_write(tmp_path / "d.json", _items())).read_text())
    assert items is not None and len(items) == len(_items())


def test_json_dump_loads_as_the_yaml_stream(tmp_path: Path) -> None:
    items = _items()
    notices: list[str] = []
    direct = load_objects([_write(tmp_path / "d.json", items, indent=2)], notices.append)
    stream = tmp_path / "d.yaml"
    stream.write_text(yaml.safe_dump_all(items))
    general_notices: list[str] = []
    general = load_objects([str(stream)], general_notices.append)
    assert [o for o, _ in direct] == [o for o, _ in general]
    assert notices == general_notices and notices  # the Deployment, Service, ... skipped
    assert len(direct) > 20


def test_odd_items_go_the_general_way(tmp_path: Path) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n-1"}}
    nested = {"apiVersion": "v1", "kind": "List", "items": [{**node, "metadata": {"name": "n-2"}}]}
    path = _write(tmp_path / "d.json", [None, node, nested])
    loaded = [o.metadata.name for o, _ in load_objects([path])]  # type: ignore[attr-defined]
    assert loaded == ["n-1", "n-2"]
    # An item that is not an object is refused at once, never flattened (issue 19).
    path = _write(tmp_path / "e.json", [None, node, [nested], nested])
    with pytest.raises(BadInput, match=r": List: items\[2\]: expected an object, got list$"):
        load_objects([path])


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"spec": {"pool": {"generation": "one"}}}, "spec.pool.generation"),
        ({"spec": {"devices": [{"name": "Bad_Name"}]}}, "spec.devices[0].name"),
        ({"apiVersion": "resource.k8s.io/v9"}, "apiVersion"),
    ],
)
def test_errors_match_the_general_path(
    tmp_path: Path, change: dict[str, Any], fragment: str
) -> None:
    good = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s-1"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "n-1",
            "pool": {"name": "n-1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}],
        },
    }
    bad = {**good, **change}
    if "spec" in change:
        bad["spec"] = {**good["spec"], **change["spec"]}
        if "pool" in change["spec"]:
            bad["spec"]["pool"] = {**good["spec"]["pool"], **change["spec"]["pool"]}
    errors = []
    for name, text in (
        ("d.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": [good, bad]})),
        ("d.yaml", yaml.safe_dump_all([good, bad])),
    ):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(BadInput) as err:
            load_objects([str(path)])
        errors.append(str(err.value).replace(str(path), "FILE"))
    assert errors[0] == errors[1]
    assert fragment in errors[0]
