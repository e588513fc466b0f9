"""Reading objects: YAML streams, JSON, `kind: List` dumps, directories and stdin."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from draplan.api import core_v1, resource_v1
from draplan.api.errors import BadInput
from draplan.sources import load_objects
from draplan.sources.files import read_documents


def node(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, **meta}}


def class_doc(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{name}'"}}]},
    }


def names(objects: list[tuple[Any, str]]) -> list[str]:
    return [obj.metadata.name for obj, _ in objects]


def test_multi_document_yaml(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n"
        "---\n"
        "# an empty document between objects is skipped\n"
        "---\n"
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.example.com}\n"
        "...\n"
        "---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-2}\n"
    )
    objects = load_objects([str(path)])
    assert names(objects) == ["node-1", "gpu.example.com", "node-2"]
    assert [type(o) for o, _ in objects] == [
        core_v1.Node,
        resource_v1.DeviceClass,
        core_v1.Node,
    ]
    assert {source for _, source in objects} == {str(path)}


def test_json_object_and_json_in_a_yaml_file(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    a.write_text(json.dumps(node("node-1", labels={"rack": "a"}), indent=2))
    b = tmp_path / "b.yaml"  # JSON is YAML too; the fast path does not depend on the suffix
    b.write_text(json.dumps(class_doc("gpu.example.com")))
    objects = load_objects([str(a), str(b)])
    assert names(objects) == ["node-1", "gpu.example.com"]
    first = objects[0][0]
    assert isinstance(first, core_v1.Node) and first.metadata.labels == {"rack": "a"}
    assert [source for _, source in objects] == [str(a), str(b)]


def test_flow_yaml_that_looks_like_json(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text("{apiVersion: v1, kind: Node, metadata: {name: node-1}}\n")
    assert names(load_objects([str(path)])) == ["node-1"]


def test_json_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(node("node-1")).encode())
    assert names(load_objects([str(path)])) == ["node-1"]


def test_crlf_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "windows.yaml"
    path.write_bytes(b"apiVersion: v1\r\nkind: Node\r\nmetadata:\r\n  name: node-1\r\n")
    assert names(load_objects([str(path)])) == ["node-1"]


@pytest.mark.parametrize(
    "form",
    ["ascii", "crlf", "utf-8", "bom", "yaml-crlf", "bad-item-crlf"],
)
def test_a_dump_reads_the_same_as_bytes_or_as_text(tmp_path: Path, form: str) -> None:
    """A plain ASCII dump goes to the JSON decoder as read; any other (UTF-8, a byte order mark,
    carriage returns) as text: the objects, or the error, are the same either way."""
    gaudi = node("gaudi-0", annotations={"example.com/owner": "équipe ml"})
    docs: list[Any] = [node("tpu-0"), gaudi if form == "utf-8" else node("gaudi-0"), class_doc("x")]
    if form == "bad-item-crlf":
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "Bad_Name"}})
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}, indent=1)
    if form == "yaml-crlf":
        text = "\n".join(f"- {json.dumps(d)}" for d in docs)
        text = f"apiVersion: v1\nkind: List\nitems:\n{text}\n"
    data = text.encode()
    if form in ("crlf", "yaml-crlf", "bad-item-crlf"):
        data = data.replace(b"\n", b"\r\n")
    if form == "bom":
        data = b"\xef\xbb\xbf" + data
    path = tmp_path / "dump.json"
    path.write_bytes(data)
    plain = tmp_path / "plain.json"
    plain.write_text(text.replace("\r\n", "\n"), encoding="utf-8")
    if form == "bad-item-crlf":
        with pytest.raises(BadInput) as crlf:
            load_objects([str(path)])
        with pytest.raises(BadInput) as lf:
            load_objects([str(plain)])
        assert str(crlf.value).replace(str(path), "") == str(lf.value).replace(str(plain), "")
        return
    assert names(load_objects([str(path)])) == names(load_objects([str(plain)]))
    assert names(load_objects([str(path)])) == ["tpu-0", "gaudi-0", "x"]


def test_kind_list_yaml(tmp_path: Path) -> None:
    path = tmp_path / "dump.yaml"
    path.write_text(
        "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: ''}\nitems:\n"
        "- apiVersion: v1\n  kind: Node\n  metadata: {name: node-1}\n"
        "- apiVersion: resource.k8s.io/v1\n  kind: DeviceClass\n"
        "  metadata: {name: gpu.example.com}\n"
        "---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-2}\n"
    )
    assert names(load_objects([str(path)])) == ["node-1", "gpu.example.com", "node-2"]


def test_typed_lists_in_json(tmp_path: Path) -> None:
    path = tmp_path / "nodes.json"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "NodeList",
                "metadata": {"resourceVersion": "123"},
                "items": [node("node-1"), node("node-2"), node("node-3")],
            }
        )
    )
    objects = load_objects([str(path)])
    assert names(objects) == ["node-1", "node-2", "node-3"]
    assert all(isinstance(o, core_v1.Node) for o, _ in objects)


def test_nested_lists_keep_order(tmp_path: Path) -> None:
    inner = {"apiVersion": "v1", "kind": "List", "items": [node("b"), node("c")]}
    outer = {"apiVersion": "v1", "kind": "List", "items": [node("a"), inner, None, node("d")]}
    path = tmp_path / "nested.json"
    path.write_text(json.dumps(outer))
    assert names(load_objects([str(path)])) == ["a", "b", "c", "d"]


def test_top_level_yaml_sequence_is_flattened(tmp_path: Path) -> None:
    path = tmp_path / "seq.yaml"
    path.write_text(
        "- apiVersion: v1\n  kind: Node\n  metadata: {name: node-1}\n"
        "- apiVersion: v1\n  kind: Node\n  metadata: {name: node-2}\n"
    )
    assert names(load_objects([str(path)])) == ["node-1", "node-2"]


def test_empty_list_is_not_an_error(tmp_path: Path) -> None:
    # What `kubectl get resourceclaims -A -o yaml` prints when there are none.
    empty = tmp_path / "claims.yaml"
    empty.write_text("apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: ''\n")
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(node("node-1")))
    assert names(load_objects([str(empty), str(nodes)])) == ["node-1"]


def test_directory_recursively_only_manifests(tmp_path: Path) -> None:
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "b.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: b}\n")
    (tmp_path / "sub" / "a.yml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n")
    (tmp_path / "sub" / "deeper" / "c.json").write_text(json.dumps(node("c")))
    # Not manifests: must not be read (they would not even parse).
    (tmp_path / "README.md").write_text("# notes: [unclosed\n")
    (tmp_path / "sub" / "dump.yaml.bak").write_text("{{{")
    (tmp_path / "sub" / "notes.txt").write_text("kind: [")
    (tmp_path / "sub" / "deeper" / "x.yaml").mkdir()  # a directory named like a manifest
    objects = load_objects([str(tmp_path)])
    by_name = dict(zip(names(objects), (source for _, source in objects), strict=True))
    assert by_name == {
        "b": str(tmp_path / "b.yaml"),
        "a": str(tmp_path / "sub" / "a.yml"),
        "c": str(tmp_path / "sub" / "deeper" / "c.json"),
    }
    # Sorted by path, so the order is the same on every run.
    assert [s for _, s in objects] == sorted(s for _, s in objects)


def test_directory_and_files_together(tmp_path: Path) -> None:
    d = tmp_path / "dir"
    d.mkdir()
    (d / "one.yaml").write_text(json.dumps(node("one")))
    extra = tmp_path / "extra.yaml"
    extra.write_text(json.dumps(node("two")))
    assert names(load_objects([str(extra), str(d)])) == ["two", "one"]


def test_directory_without_manifests(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(BadInput) as info:
        load_objects([str(tmp_path)])
    assert info.value.source == str(tmp_path)
    assert "no .yaml, .yml or .json files" in info.value.message


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        sys, "stdin", io.StringIO("apiVersion: v1\nkind: Node\nmetadata: {name: piped}\n")
    )
    objects = load_objects(["-"])
    assert names(objects) == ["piped"]
    assert objects[0][1] == "<stdin>"


def test_stdin_with_files_through_the_cli(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, run_cli: Any
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(class_doc("gpu.example.com"))))
    path = tmp_path / "nodes.yaml"
    path.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n")
    result = run_cli("validate", "-f", str(path), "-f", "-", "-o", "json")
    assert result.code == 0, result.err
    assert result.json()["kinds"] == {"DeviceClass (resource.k8s.io/v1)": 1, "Node (v1)": 1}


def test_stdin_errors_name_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("kind: [\n"))
    with pytest.raises(BadInput) as info:
        load_objects(["-"])
    assert info.value.source == "<stdin>"
    assert str(info.value).startswith("<stdin>: invalid YAML at line")


def test_timestamps_stay_strings(tmp_path: Path) -> None:
    path = tmp_path / "node.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n"
        "  creationTimestamp: 2025-06-01T10:00:00Z\n"
        "spec:\n  taints:\n"
        "  - {key: k, effect: NoSchedule, timeAdded: 2025-06-01 10:00:00.5+02:00}\n"
    )
    (doc,) = read_documents([str(path)])
    assert doc.data["metadata"]["creationTimestamp"] == "2025-06-01T10:00:00Z"
    assert doc.data["spec"]["taints"][0]["timeAdded"] == "2025-06-01 10:00:00.5+02:00"
    ((obj, _),) = load_objects([str(path)])
    assert isinstance(obj, core_v1.Node)
    assert obj.metadata.creation_timestamp == "2025-06-01T10:00:00Z"
    assert obj.spec.taints[0].time_added == "2025-06-01 10:00:00.5+02:00"


def test_unquoted_yaml_date_does_not_crash(tmp_path: Path, run_cli: Any) -> None:
    # YAML 1.1 would make these datetime.date; labels and annotations must be strings.
    path = tmp_path / "dated.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n"
        "  labels: {purchased: 2024-05-01}\n"
        "  annotations: {draplan.io/checked: 2024-05-01t10:00:00z}\n"
        "  someFutureField: 2024-05-01\n"
    )
    ((obj, _),) = load_objects([str(path)])
    assert isinstance(obj, core_v1.Node)
    assert obj.metadata.labels == {"purchased": "2024-05-01"}
    assert obj.metadata.annotations == {"draplan.io/checked": "2024-05-01t10:00:00z"}
    result = run_cli("validate", "-f", str(path), "-o", "json")
    assert result.code == 0, result.err
    assert result.json()["objects"] == 1


def test_other_yaml_scalars_keep_yaml_1_1_types(tmp_path: Path) -> None:
    # Only timestamps are changed: booleans and numbers resolve as kubectl's YAML does.
    path = tmp_path / "slice.yaml"
    path.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
        "spec:\n  driver: gpu.example.com\n  allNodes: true\n"
        "  pool: {name: p, generation: 2, resourceSliceCount: 1}\n"
        "  devices:\n  - name: gpu-0\n    attributes:\n"
        "      index: {int: 7}\n      mig: {bool: false}\n      model: {string: '2024-05-01'}\n"
        "    capacity:\n      memory: {value: 0.5}\n"
    )
    ((obj, _),) = load_objects([str(path)])
    assert isinstance(obj, resource_v1.ResourceSlice)
    dev = obj.spec.devices[0]
    assert dev.attributes["index"].int_ == 7
    assert dev.attributes["mig"].bool_ is False
    assert dev.attributes["model"].string == "2024-05-01"
    assert str(dev.capacity["memory"].value) == "500m"
    assert obj.spec.all_nodes is True


def test_missing_path() -> None:
    with pytest.raises(BadInput) as info:
        load_objects(["/nonexistent/dump.yaml"])
    assert str(info.value) == "/nonexistent/dump.yaml: no such file or directory"


def test_read_documents_keeps_raw_json_form(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n[{b: 1}, {c: 2}]\n")
    docs = list(read_documents([str(path)]))
    # A top-level list is flattened; fields are the codec's job, not the reader's.
    assert [d.data for d in docs] == [node("a"), {"b": 1}, {"c": 2}]
    assert all(d.source == str(path) for d in docs)


def test_read_documents_refuses_an_item_that_is_not_an_object(tmp_path: Path) -> None:
    # Refused before anything walks it: a list item could hide a billion-laughs expansion.
    path = tmp_path / "two.yaml"
    path.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n[{b: 1}, [2]]\n")
    with pytest.raises(BadInput, match=r": \[1\]: expected an object, got list$"):
        list(read_documents([str(path)]))


def test_node_pools_in_a_labelled_configmap(tmp_path: Path) -> None:
    pool = (
        "apiVersion: draplan.io/v1alpha1\nkind: NodePool\nmetadata: {name: %s}\n"
        "spec: {maxNodes: 2, template: {status: {allocatable: {cpu: '8'}}}}\n"
    )
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "pools",
            "namespace": "kube-system",
            "labels": {"draplan.io/node-pools": "true"},
        },
        # Keys are read in sorted order; one key may hold several documents.
        "data": {"b.yaml": pool % "b" + "---\n" + pool % "c", "a.yaml": pool % "a"},
    }
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
    path = tmp_path / "cms.yaml"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [config_map, other]}))
    objects = load_objects([str(path)])
    assert [(type(o).__name__, o.metadata.name) for o, _ in objects] == [
        ("NodePool", "a"),
        ("NodePool", "b"),
        ("NodePool", "c"),
        ("ConfigMap", "settings"),  # unlabelled: kept as it is, unread
    ]
    assert objects[1][1] == f'{path}: ConfigMap "kube-system/pools": data.b.yaml'


def test_kinds_draplan_does_not_read_are_skipped_with_one_notice_per_kind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    realistic = Path(__file__).parent / "data" / "realistic"
    notes: list[str] = []
    objects = load_objects([str(realistic / "other-kinds.yaml")], notify=notes.append)
    # The ConfigMap is a kind draplan reads (a labelled one carries NodePools), and so are
    # ReplicaSets and Services (their selectors give PodTopologySpread's default constraints).
    assert [(o.kind, o.metadata.name) for o, _ in objects] == [
        ("ReplicaSet", "embed-7d9f"),
        ("Service", "embed"),
        ("Service", "kubernetes"),
        ("ConfigMap", "kube-root-ca.crt"),
    ]
    assert notes == [
        "skipped 1 Deployment (apps/v1): not a kind draplan reads",
        "skipped 1 Job (batch/v1): not a kind draplan reads",
    ]
    # By default the notices go to stderr, one line each.
    load_objects([str(realistic)])
    err = capsys.readouterr().err.splitlines()
    assert err == [f"notice: {n}" for n in notes]


@pytest.mark.parametrize(
    ("api_version", "kind", "skipped"),
    [
        ("apps/v1", "DaemonSet", True),
        ("kueue.x-k8s.io/v1beta1", "ClusterQueue", True),  # Kueue's other kinds
        ("scheduling.volcano.sh/v1beta1", "PodGroup", True),  # a PodGroup of another group
        ("v1", "Secret", True),
        ("resource.k8s.io/v9", "ResourceClaim", False),  # a kind draplan reads, unknown version
        ("resource.k8s.io/v1", "ResourceSlab", False),  # resource.k8s.io is read in full
        ("draplan.io/v1alpha1", "NodePol", False),  # draplan's own group
        ("scheduling.k8s.io/v1", "Workload", False),
    ],
)
def test_which_kinds_are_skipped(
    tmp_path: Path, api_version: str, kind: str, skipped: bool
) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(
        json.dumps({"apiVersion": api_version, "kind": kind, "metadata": {"name": "a"}})
    )
    notes: list[str] = []
    if skipped:
        assert load_objects([str(path)], notify=notes.append) == []
        assert notes == [f"skipped 1 {kind} ({api_version}): not a kind draplan reads"]
    else:
        with pytest.raises(BadInput, match="unsupported"):
            load_objects([str(path)], notify=notes.append)


def test_anchors_aliases_and_merge_keys_still_load(tmp_path: Path) -> None:
    # Legitimate YAML reuse: a merge key may override what it merges (not a duplicate key).
    path = tmp_path / "nodes.yaml"
    path.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: node-1\n"
        "    labels: &labels {zone: a, tier: gpu}\n"
        "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: node-2\n"
        "    labels:\n      <<: *labels\n      zone: b\n"
    )
    nodes = load_objects([str(path)])
    assert [o.metadata.labels for o, _ in nodes] == [  # type: ignore[attr-defined]
        {"zone": "a", "tier": "gpu"},
        {"zone": "b", "tier": "gpu"},
    ]


def test_alias_expansion_is_bounded_by_size_not_by_use(tmp_path: Path) -> None:
    # 200 aliases of a 10-item list expand 2,000 nodes: below go-yaml's ratio, accepted;
    # 7 levels of ten aliases each expand 10^7: refused before anything walks them.
    ok = "x: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\ny: [" + ", ".join(["*a"] * 200) + "]\n"
    assert len(load_yaml_docs(ok)[0]["y"]) == 200
    levels = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 8)
    )
    with pytest.raises(BadInput, match="document contains excessive aliasing"):
        load_yaml_docs(levels)


def load_yaml_docs(text: str) -> list[Any]:
    from draplan.sources.yamltext import load_yaml

    return [data for _, data in load_yaml(text, "t.yaml")]


def test_quote_is_go_percent_q() -> None:
    from draplan.api.errors import escape, quote

    assert quote("node-1") == '"node-1"'
    assert quote('a"b\\c') == '"a\\"b\\\\c"'
    assert quote("a\nb\tc\x00\x1b\u2028é") == '"a\\nb\\tc\\x00\\x1b\\u2028é"'
    assert escape("line\nbreak") == "line\\nbreak"
    assert "\n" not in str(BadInput("m\ne", source="f\n", kind="K\n", name="n\n", path="p\n"))
