"""The command line: formats, exit codes, --check, --repeat, the demo and the kubectl plugin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA
from draplan import __version__
from draplan.cli.demo import example_path

EXAMPLE = example_path()


def _pod_claim_file(tmp_path: Path, count: int) -> Path:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpus",
                        "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count},
                    }
                ],
                "constraints": [{"matchAttribute": "gpu.nvidia.com/numa"}],
            }
        },
    }
    path = tmp_path / "claim.yaml"
    path.write_text(yaml.safe_dump(claim))
    return path


def test_version(run_cli: Any) -> None:
    result = run_cli("--version")
    assert result.code == 0
    assert __version__ in result.out


def test_validate_summarises_the_example(run_cli: Any) -> None:
    result = run_cli("validate", "-f", EXAMPLE, "-o", "json")
    assert result.code == 0
    doc = result.json()
    assert doc["kinds"]["Node (v1)"] == 10
    assert doc["devicesPerDriver"]["dra.net"] == 16


def test_allocate_with_check_and_repeat(run_cli: Any, tmp_path: Path) -> None:
    claim = _pod_claim_file(tmp_path, 4)
    result = run_cli(
        "allocate",
        "-f",
        EXAMPLE,
        "-f",
        str(claim),
        "--node",
        "l40s-pcie-0",
        "--claim",
        "ml/train",
        "--check",
        "--repeat",
        "5",
        "-o",
        "json",
    )
    assert result.code == 0, result.err
    doc = result.json()
    assert doc["satisfiable"] is True
    assert doc["check"] == {"valid": True, "problems": []}
    assert doc["timing"]["repeat"] == 5 and doc["timing"]["medianMicros"] > 0
    results = doc["claims"][0]["status"]["allocation"]["devices"]["results"]
    assert len(results) == 4


def test_allocate_unsatisfiable_is_an_answer(run_cli: Any, tmp_path: Path) -> None:
    claim = _pod_claim_file(tmp_path, 5)  # only 4 GPUs per NUMA node
    result = run_cli(
        "allocate",
        "-f",
        EXAMPLE,
        "-f",
        str(claim),
        "--node",
        "l40s-pcie-0",
        "--claim",
        "ml/train",
        "-o",
        "json",
    )
    assert result.code == 0
    doc = result.json()
    assert doc["satisfiable"] is False
    assert doc["reason"]["code"] == "ConstraintUnsatisfiable"
    assert doc["claims"] == []


def test_allocate_output_is_byte_identical(run_cli: Any, tmp_path: Path) -> None:
    claim = _pod_claim_file(tmp_path, 2)
    args = (
        "allocate",
        "-f",
        EXAMPLE,
        "-f",
        str(claim),
        "--node",
        "h100-nvl-0",
        "--claim",
        "ml/train",
        "-o",
        "yaml",
    )
    assert run_cli(*args).out == run_cli(*args).out


def test_unknown_node_is_bad_input(run_cli: Any) -> None:
    result = run_cli("allocate", "-f", EXAMPLE, "--node", "nope", "-o", "json")
    assert result.code == 2
    assert "node 'nope' is not in the input" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_demo_runs_and_writes_its_report(
    run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("demo")
    assert result.code == 0, result.err
    for policy in ("legacy", "dra", "dra+gang-atomic"):
        assert policy in result.out
    html = (tmp_path / "draplan-demo-report.html").read_text()
    assert html.startswith("<!doctype html>") and "<svg" in html
    assert (tmp_path / "draplan-demo-report.md").read_text().startswith("# draplan simulation")


def test_kubectl_plugin_entry_point() -> None:
    bin_dir = Path(sys.executable).parent
    proc = subprocess.run(
        [str(bin_dir / "kubectl-draplan"), "--help"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0
    assert "kubectl draplan" in proc.stdout


def test_a_whole_dump_directory_with_other_kinds_works(run_cli: Any) -> None:
    # `-f dir/`: the realistic dump beside a `kubectl get all` style file and Kueue's Workload.
    realistic = str(DATA / "realistic")
    for command in ("validate", "why", "schedule", "scale"):
        result = run_cli(command, "-f", realistic)
        assert result.code == 0, (command, result.err)
        notices = result.err.splitlines()
        assert notices == [
            "notice: skipped 1 Deployment (apps/v1): not a kind draplan reads",
            "notice: skipped 1 Job (batch/v1): not a kind draplan reads",
        ], command


def test_every_command_module_is_listed_for_lazy_loading() -> None:
    """`COMMAND_MODULES` names each command of each `cmd_*` module, and nothing else: a
    command missing there could never run, one listed in the wrong module fails on use."""
    import importlib
    import pkgutil

    import draplan.cli as package
    from draplan.cli.main import COMMAND_MODULES

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("cmd_"):
            module = importlib.import_module(f"draplan.cli.{info.name}")
            found.update({command.name: info.name for command in module.COMMANDS})
    assert found == COMMAND_MODULES


def test_a_command_imports_no_other_command_module() -> None:
    """`draplan why` loads cmd_why only: the other commands' imports (the simulator, the
    gRPC expander, migrate) are not paid for."""
    code = (
        "import sys; from draplan.cli.main import main\n"
        "try:\n    main(['why', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(*sorted(m for m in sys.modules if m.startswith('draplan.cli.cmd_')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # cmd_completion names the completion variable main() hands to click.
    loaded = out.stdout.strip().splitlines()[-1].split()
    assert loaded == ["draplan.cli.cmd_completion", "draplan.cli.cmd_why"]
