"""Malformed input: exit code 2 and one line naming the file, the object, the field path.

The corpus is `tests/data/bad/`; `expected.yaml` maps each file to a fragment of its line.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA, Run

BAD = DATA / "bad"
EXPECTED: dict[str, str] = yaml.safe_load((BAD / "expected.yaml").read_text())
DRAPLAN = Path(sys.executable).with_name("draplan")

GOOD_NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n"


def assert_bad_input(result: Run, source: str, fragment: str) -> str:
    """Exit 2, nothing on stdout, one line on stderr: `error: SOURCE: ...FRAGMENT...`."""
    assert result.code == 2, (result.out, result.err)
    assert "Traceback" not in result.err
    assert result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    line = lines[0]
    assert line.startswith(f"error: {source}: "), line
    assert fragment in line, line
    return line


def test_corpus_is_large_and_matches_expected() -> None:
    files = {p.name for p in BAD.iterdir() if p.is_file() and p.name != "expected.yaml"}
    assert len(EXPECTED) >= 30
    assert files == set(EXPECTED)
    assert all(isinstance(v, str) and v for v in EXPECTED.values())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_file(name: str, run_cli: Any) -> None:
    path = str(BAD / name)
    assert_bad_input(run_cli("validate", "-f", path), path, EXPECTED[name])


@pytest.mark.parametrize(
    "name",
    [
        "nested-10000-levels.yaml",
        "not-utf8.yaml",
        "class-cel-does-not-compile.yaml",
        "capacity-invalid-quantity.yaml",
    ],
)
def test_bad_file_through_the_installed_command(name: str) -> None:
    # A separate process: its own stack depth and the real console script and exit code.
    path = str(BAD / name)
    proc = subprocess.run(
        [str(DRAPLAN), "validate", "-f", path], capture_output=True, text=True, timeout=60
    )
    assert_bad_input(Run(proc.returncode, proc.stdout, proc.stderr), path, EXPECTED[name])


def test_committed_nesting_file_is_10000_levels() -> None:
    text = (BAD / "nested-10000-levels.yaml").read_text().strip()
    assert text == "[" * 10_000 + "]" * 10_000


@pytest.mark.parametrize(
    ("suffix", "text"),
    [
        (".json", '{"a": ' * 10_000 + "1" + "}" * 10_000),
        (".json", "[" * 10_000 + "]" * 10_000),
        (".yaml", "{a: " * 10_000 + "1" + "}" * 10_000),
        (".yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  x: " + "[" * 10_000 + "]" * 10_000),
    ],
)
def test_deeply_nested_generated(suffix: str, text: str, tmp_path: Path, run_cli: Any) -> None:
    path = tmp_path / f"deep{suffix}"
    path.write_text(text)
    line = assert_bad_input(run_cli("validate", "-f", str(path)), str(path), "")
    assert "nested too deeply" in line or "exceeded maximum nesting depth" in line


def test_cel_compile_error_also_stops_allocate(run_cli: Any) -> None:
    path = str(BAD / "claim-cel-does-not-compile.yaml")
    result = run_cli("allocate", "-f", path, "--node", "node-1", "-o", "json")
    assert_bad_input(result, path, EXPECTED["claim-cel-does-not-compile.yaml"])


def test_cel_compile_error_in_template(tmp_path: Path, run_cli: Any) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(
        "apiVersion: resource.k8s.io/v1\n"
        "kind: ResourceClaimTemplate\n"
        "metadata: {name: gpu-template, namespace: default}\n"
        "spec:\n"
        "  spec:\n"
        "    devices:\n"
        "      requests:\n"
        "      - name: gpu\n"
        "        exactly:\n"
        "          deviceClassName: gpu.example.com\n"
        "          selectors:\n"
        "          - cel: {expression: size(device.driver)}\n"
    )
    # `size(device.driver)` compiles but is an int, not a bool.
    assert_bad_input(
        run_cli("validate", "-f", str(path)),
        str(path),
        'ResourceClaimTemplate "gpu-template": '
        "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: CEL compile error: "
        "must evaluate to bool",
    )


def test_the_bad_file_is_named_among_good_ones(tmp_path: Path, run_cli: Any) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(GOOD_NODE)
    bad = str(BAD / "attribute-two-types.yaml")
    result = run_cli("validate", "-f", str(good), "-f", bad)
    assert_bad_input(result, bad, EXPECTED["attribute-two-types.yaml"])


def test_duplicate_across_files_names_both(tmp_path: Path, run_cli: Any) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(GOOD_NODE)
    second.write_text(GOOD_NODE)
    result = run_cli("validate", "-f", str(first), "-f", str(second))
    assert_bad_input(result, str(second), f'Node "node-1": duplicate object (also in {first})')


def test_bad_input_on_stdin(monkeypatch: pytest.MonkeyPatch, run_cli: Any) -> None:
    text = (BAD / "slice-duplicate-device-name.yaml").read_text()
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    result = run_cli("validate", "-f", "-")
    assert_bad_input(result, "<stdin>", EXPECTED["slice-duplicate-device-name.yaml"])


def test_missing_file_and_empty_directory(tmp_path: Path, run_cli: Any) -> None:
    missing = str(tmp_path / "nope.yaml")
    assert_bad_input(run_cli("validate", "-f", missing), missing, "no such file or directory")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not a manifest")
    empty = str(tmp_path / "empty")
    assert_bad_input(run_cli("validate", "-f", empty), empty, "directory holds no .yaml")


def test_empty_kind_list_is_not_an_error(tmp_path: Path, run_cli: Any) -> None:
    # `kubectl get resourceclaims -A -o yaml` with no claims prints an empty List.
    path = tmp_path / "claims.yaml"
    path.write_text("apiVersion: v1\nitems: []\nkind: List\nmetadata: {resourceVersion: ''}\n")
    node = tmp_path / "node.yaml"
    node.write_text(GOOD_NODE)
    result = run_cli("validate", "-f", str(path), "-f", str(node), "-o", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["objects"] == 1
