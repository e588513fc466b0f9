"""README's commands run as written: every `draplan …` line of its fenced sh blocks, in order,
from a fresh directory holding what `draplan demo --export .` wrote."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

# Commands that cannot run here, each with the reason.
SKIP = {
    "draplan bench openb": "needs the openb trace and hours of CPU (tests/test_bench_openb.py)",
    "draplan validate --kubeconfig": "needs a live cluster",
    "draplan allocate --node gpu-node-2": "needs a live cluster (no -f: the current context)",
    "draplan snapshot": "needs a live cluster",
    "draplan scale -o yaml": "needs a live cluster (no -f)",
    "draplan schedule -o yaml --manifests": "needs a live cluster and kubectl",
    "draplan serve": "serves until SIGTERM (tests/test_serve.py runs it)",
    "draplan migrate -f k8s/ --context": "needs a live cluster",
}


def readme_commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    return [
        line.strip()
        for block in blocks
        for line in block.splitlines()
        if line.strip().startswith("draplan ")
    ]


def _skipped(command: str) -> bool:
    return any(command.startswith(prefix) for prefix in SKIP)


def test_the_readme_has_a_tour() -> None:
    commands = readme_commands()
    assert commands[0].startswith("draplan demo --export")
    assert sum(1 for c in commands if not _skipped(c)) >= 10
    for prefix in SKIP:  # a stale skip entry hides nothing: each still names a command
        assert any(c.startswith(prefix) for c in commands), prefix


def test_every_readme_command_runs(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "SOURCE_DATE_EPOCH": "1764547200",
        "COLUMNS": "80",
    }
    failures = []
    for command in readme_commands():
        if _skipped(command):
            continue
        args = shlex.split(command, comments=True)
        if "|" in args:
            pytest.fail(f"a piped README command must be in SKIP: {command}")
        run = subprocess.run(
            [sys.executable, "-c", "from draplan.cli.main import main; main()", *args[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if run.returncode != 0:
            failures.append(f"{command}\n  exit {run.returncode}: {run.stderr.strip()[-500:]}")
    assert not failures, "\n".join(failures)
    assert (tmp_path / "report.html").stat().st_size > 10_000
    assert (tmp_path / "demo.html").is_file() and (tmp_path / "demo.md").is_file()
