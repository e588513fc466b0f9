"""Shared helpers: run the CLI in-process and locate the shared test material."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from draplan.cli.main import main

SHARED = Path(__file__).resolve().parents[2] / "shared"
DATA = Path(__file__).resolve().parent / "data"


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Any:
    def _run(*args: str) -> Run:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return _run
