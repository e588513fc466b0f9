"""kubectl's output habits: -o name / jsonpath / custom-columns, tables that never wrap,
--no-headers, YAML without anchors, -l, completion, help without arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from draplan.cli.cmd_completion import kubectl_complete
from draplan.cli.demo import example_path
from draplan.cli.jsonpath import JSONPathError, execute
from draplan.cli.output import MAX_CELL

EXAMPLE = example_path()
DOC = {
    "kind": "List",
    "items": [
        {
            "kind": "Pod",
            "metadata": {"name": "a", "labels": {"app": "x"}, "annotations": {"k8s.io/os": "l"}},
            "n": 1000000,
            "big": 1000000.0,
        },
        {"kind": "Pod", "metadata": {"name": "b"}, "n": 2.5, "ok": True},
    ],
}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{.items[*].metadata.name}", "a b"),
        ("{.items[0].n}", "1000000"),  # an integer, as kubectl prints an int64
        ("{.items[0].big}", "1e+06"),  # Go's %v of a float64
        ("{.items[1].ok}", "true"),
        ("{.items[-1].metadata.name}", "b"),
        ("{.items[0:1].metadata.name}", "a"),
        ('{.items[?(@.metadata.name=="b")].n}', "2.5"),
        ("{.items[?(@.n > 3)].metadata.name}", "a"),
        ("{.items[0].metadata.labels}", '{"app":"x"}'),
        ("{..name}", "a b"),
        ("{.items[0].metadata['name']}", "a"),
        ('{range .items[*]}{.metadata.name}{"\\t"}{.kind}{"\\n"}{end}', "a\tPod\nb\tPod\n"),
        ("names: {.items[*].metadata.name}!", "names: a b!"),
        # kubectl's escaped dot: a key holding dots is one field
        ("{.items[0].metadata.annotations.k8s\\.io/os}", "l"),
        ("{.items[0].metadata.annotations['k8s\\.io/os']}", "l"),
    ],
)
def test_jsonpath_as_kubectl(template: str, expected: str) -> None:
    assert execute(template, DOC) == expected


@pytest.mark.parametrize("template", ["{.items[*].nope}", "{range .items[*]}", "{.items[9]}"])
def test_jsonpath_errors(template: str) -> None:
    with pytest.raises(JSONPathError):
        execute(template, DOC)


def test_o_name_and_jsonpath_on_schedule(run_cli: Any) -> None:
    res = run_cli("schedule", "-f", EXAMPLE, "-o", "name")
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert {"pod/train-0", "pod/finetune-0", "pod/infer-0"} <= set(lines)
    assert all(line.startswith(("pod/", "resourceclaim.resource.k8s.io/")) for line in lines), lines
    res = run_cli(
        "schedule", "-f", EXAMPLE, "-o", 'jsonpath={.items[?(@.kind=="Pod")].metadata.name}'
    )
    assert res.code == 0, res.err
    assert sorted(res.out.split()) == ["finetune-0", "infer-0", "train-0"]


def test_custom_columns_and_no_headers(run_cli: Any) -> None:
    spec = "NAME:.metadata.name,NODE:.spec.nodeName,MISSING:.status.nope"
    res = run_cli("schedule", "-f", EXAMPLE, "-o", f"custom-columns={spec}")
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines[0].split() == ["NAME", "NODE", "MISSING"]
    pods = [line.split() for line in lines[1:] if line.split()[1] != "<none>"]
    assert len(pods) == 3 and all(p[2] == "<none>" for p in pods)
    bare = run_cli("schedule", "-f", EXAMPLE, "-o", f"custom-columns={spec}", "--no-headers")
    assert bare.out.splitlines() == lines[1:]


def test_no_headers_keeps_every_column(run_cli: Any) -> None:
    full = run_cli("schedule", "-f", EXAMPLE).out.splitlines()
    bare = run_cli("schedule", "-f", EXAMPLE, "--no-headers").out.splitlines()
    assert [line.split() for line in bare] == [line.split() for line in full[2:]]
    assert all(len(line.split()) >= 5 for line in bare)


def test_bad_format_is_bad_input(run_cli: Any) -> None:
    assert run_cli("schedule", "-f", EXAMPLE, "-o", "jsonpath=").code == 2
    assert run_cli("schedule", "-f", EXAMPLE, "-o", "custom-columns=NAME").code == 2
    res = run_cli("validate", "-f", EXAMPLE, "-o", "name")
    assert res.code == 2 and "no named objects" in res.err


def _unschedulable(tmp_path: Path) -> Path:
    """The example plus a pod whose reason is long (it asks for 64 GPUs)."""
    extra = tmp_path / "big.yaml"
    extra.write_text(
        """apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: huge, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {deviceClassName: gpu.nvidia.com, count: 64}
---
apiVersion: v1
kind: Pod
metadata: {name: huge-0, namespace: ml, labels: {app: huge}}
spec:
  containers:
  - name: main
    resources: {claims: [{name: dev}]}
  resourceClaims:
  - {name: dev, resourceClaimTemplateName: huge}
"""
    )
    return extra


def test_tables_never_wrap_and_wide_is_whole(run_cli: Any, tmp_path: Path) -> None:
    extra = _unschedulable(tmp_path)
    table = run_cli("schedule", "-f", EXAMPLE, "-f", str(extra))
    row = next(line for line in table.out.splitlines() if "huge-0" in line)
    reason = row[row.index("0/10 nodes") :]
    assert reason.endswith("…") and len(reason) == MAX_CELL
    assert len(table.out.splitlines()) == 2 + 4  # title, header, one line per pod
    wide = run_cli("schedule", "-f", EXAMPLE, "-f", str(extra), "-o", "wide")
    whole = next(line for line in wide.out.splitlines() if "huge-0" in line)
    assert "…" not in whole and len(whole) > len(row)


def test_selector_narrows_pending_pods(run_cli: Any, tmp_path: Path) -> None:
    extra = _unschedulable(tmp_path)
    res = run_cli("why", "-f", EXAMPLE, "-f", str(extra), "-l", "app=huge", "-o", "name")
    assert res.out.split() == ["pod/huge-0"]
    res = run_cli("schedule", "-f", EXAMPLE, "-f", str(extra), "--selector", "app notin (huge)")
    assert "huge-0" not in res.out and "train-0" in res.out
    assert run_cli("schedule", "-f", EXAMPLE, "-l", "a in (b").code == 2


def test_yaml_has_no_anchors(run_cli: Any) -> None:
    res = run_cli("schedule", "-f", EXAMPLE, "-o", "yaml")
    assert res.code == 0 and "&id" not in res.out and "*id" not in res.out


def test_no_arguments_prints_help(run_cli: Any) -> None:
    res = run_cli()
    assert res.code == 0 and "Commands:" in res.out and "schedule" in res.out


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(run_cli: Any, shell: str) -> None:
    res = run_cli("completion", shell)
    assert res.code == 0 and "_DRAPLAN_COMPLETE" in res.out


def test_kubectl_plugin_completion(capsys: pytest.CaptureFixture[str]) -> None:
    kubectl_complete(["sch"])
    assert capsys.readouterr().out.splitlines() == ["schedule", ":4"]
    kubectl_complete(["schedule", "--pro"])
    assert capsys.readouterr().out.splitlines() == ["--profile", ":4"]
    kubectl_complete(["schedule", "-f", ""])
    assert capsys.readouterr().out.splitlines()[-1] == ":0"  # files: the shell completes


def test_selector_filters_what_is_shown_not_the_queue(run_cli: Any, tmp_path: Path) -> None:
    # A pod's verdict must not depend on -l: pending pods not shown still queue ahead of it.
    run_cli("demo", "--export", str(tmp_path))
    cluster = str(tmp_path / "cluster.yaml")
    trains = {"ml/train-1", "ml/train-2", "ml/train-3", "ml/train-4"}  # app=train
    for command in ("why", "schedule"):
        every = json.loads(run_cli(command, "-f", cluster, "-o", "json").out)["pods"]
        shown = json.loads(run_cli(command, "-f", cluster, "-l", "app=train", "-o", "json").out)
        assert {_pod(p) for p in shown["pods"]} == trains
        assert shown["pods"] == [p for p in every if _pod(p) in trains]


def _pod(doc: dict[str, Any]) -> str:
    return str(doc.get("pod") or f"{doc['namespace']}/{doc['name']}")


def test_output_formats_complete(capsys: pytest.CaptureFixture[str]) -> None:
    kubectl_complete(["why", "-o", ""])
    assert capsys.readouterr().out.splitlines() == [
        "table",
        "wide",
        "json",
        "yaml",
        "name",
        "jsonpath=",
        "custom-columns=",
        ":4",
    ]
    kubectl_complete(["why", "-o", "j"])
    assert capsys.readouterr().out.splitlines() == ["json", "jsonpath=", ":4"]


def test_manifests_are_a_list_even_when_one(run_cli: Any, tmp_path: Path) -> None:
    # `kubectl get pods` gives a List whatever the count, so `{.items…}` templates hold.
    solo = tmp_path / "solo.yaml"
    solo.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: solo, namespace: solo}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}\n"
    )
    args = ["schedule", "-f", EXAMPLE, "-f", str(solo), "-n", "solo"]
    res = run_cli(*args, "-o", "jsonpath={.kind} {.items[*].metadata.name}")
    assert (res.code, res.out) == (0, "List solo")
