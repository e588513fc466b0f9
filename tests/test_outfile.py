"""`--report` / `--markdown`: checked before the work, written whole, results printed even when
the write fails at the end (issue 19)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import DATA, Run
from draplan.api.errors import BadInput
from draplan.cli import outfile

MISSING = "/no/such/directory/report.html"
SCENARIO = """\
apiVersion: draplan.io/v1alpha1
kind: Scenario
metadata: {name: small}
spec:
  policies: [dra]
  workload:
    jobs:
    - name: j
      arrivalSeconds: 0
      durationSeconds: 60
      objects:
      - apiVersion: v1
        kind: Pod
        metadata: {name: p, namespace: default}
        spec:
          containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""
NODE = """\
apiVersion: v1
kind: Node
metadata: {name: n}
status: {allocatable: {cpu: '4', memory: 16Gi, pods: '110'}}
"""


def _inputs(tmp_path: Path) -> list[str]:
    (tmp_path / "scenario.yaml").write_text(SCENARIO)
    (tmp_path / "node.yaml").write_text(NODE)
    return ["-f", str(tmp_path / "scenario.yaml"), "-f", str(tmp_path / "node.yaml")]


def _one_error(result: Run) -> str:
    assert result.code == 2, (result.out, result.err)
    assert "Traceback" not in result.err
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    return lines[0]


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--report", MISSING, f"error: {MISSING}: --report: no such directory"),
        ("--markdown", MISSING, f"error: {MISSING}: --markdown: no such directory"),
        ("--report", "", "error: --report: must name a file, got an empty string"),
        ("--markdown", "", "error: --markdown: must name a file, got an empty string"),
    ],
)
def test_simulate_checks_the_target_before_the_work(
    option: str, value: str, expected: str, run_cli: Any
) -> None:
    # The input file does not exist either: the target is checked first, before any reading.
    result = run_cli("simulate", "-f", "/no/such/input.yaml", option, value)
    assert _one_error(result) == expected
    assert result.out == ""


def test_a_directory_is_not_a_report(tmp_path: Path, run_cli: Any) -> None:
    result = run_cli("simulate", *_inputs(tmp_path), "--report", str(tmp_path))
    assert _one_error(result) == f"error: {tmp_path}: --report: is a directory"


def test_report_command_checks_its_targets(tmp_path: Path, run_cli: Any) -> None:
    result = run_cli("report", "--input", "/no/such.json", "--html", MISSING)
    assert _one_error(result) == f"error: {MISSING}: --html: no such directory"


def test_demo_checks_its_report_before_simulating(run_cli: Any) -> None:
    result = run_cli("demo", "--report", MISSING)
    assert _one_error(result) == f"error: {MISSING}: --report: no such directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(BadInput, match="the directory is not writable"):
            outfile.check_target(str(locked / "r.html"), "--report")
    finally:
        locked.chmod(0o755)


def _disk_full(fd: int) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_leaves_the_old_report_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "report.html"
    report.write_text("the old report")
    monkeypatch.setattr(outfile.os, "fsync", _disk_full)
    with pytest.raises(BadInput) as caught:
        outfile.write_file(str(report), "a new report " * 1000, "--report")
    assert str(caught.value) == f"{report}: --report: cannot write: No space left on device"
    assert report.read_text() == "the old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no temp file left


def test_a_new_report_gets_the_usual_permissions(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    outfile.write_file(str(report), "# results\n", "--markdown")
    umask = os.umask(0)
    os.umask(umask)
    assert report.read_text() == "# results\n"
    assert report.stat().st_mode & 0o777 == 0o666 & ~umask


def test_results_are_printed_when_the_report_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Any
) -> None:
    monkeypatch.setattr(outfile.os, "fsync", _disk_full)
    target = tmp_path / "out.md"
    result = run_cli("simulate", *_inputs(tmp_path), "--markdown", str(target), "-o", "json")
    line = _one_error(result)
    assert line == f"error: {target}: --markdown: cannot write: No space left on device"
    assert result.json()["scenario"] == "small"  # the results, whole, on stdout
    assert not target.exists()


def test_reports_are_written(tmp_path: Path, run_cli: Any) -> None:
    html, markdown = tmp_path / "r.html", tmp_path / "r.md"
    result = run_cli(
        "simulate", *_inputs(tmp_path), "--report", str(html), "--markdown", str(markdown)
    )
    assert result.code == 0, result.err
    assert "<html" in html.read_text()
    assert "small" in markdown.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "node.yaml",
        "r.html",
        "r.md",
        "scenario.yaml",
    ]


def test_seeds_are_bounded(run_cli: Any) -> None:
    realistic = str(DATA / "realistic" / "cluster.yaml")
    result = run_cli("sweep", "-f", realistic, "--seeds", "1-100000000000")
    assert _one_error(result) == "error: --seeds: 100000000000 seeds: give 1 to 10000"
