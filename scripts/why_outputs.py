"""Print `draplan why -o json` (and its stderr) on every fixture `why` is tried on: the
realistic dump with and without its pools / Kueue / full-L4 files, the demo's cluster, the
other dumps in tests/data and every scenario of tests/audit_scenarios.py.

Run it before and after a change meant to keep `why`'s answers, and diff the two outputs:

    .venv/bin/python scripts/why_outputs.py > /tmp/before.txt
    ... change ...
    .venv/bin/python scripts/why_outputs.py > /tmp/after.txt && cmp /tmp/before.txt /tmp/after.txt
"""

from __future__ import annotations

import inspect
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import yaml
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import audit_scenarios  # noqa: E402
from draplan.cli.demo import example_path  # noqa: E402
from draplan.cli.main import cli  # noqa: E402

DATA = ROOT / "tests" / "data"
REALISTIC = DATA / "realistic"


def fixtures() -> Iterator[tuple[str, list[str]]]:
    """(title, arguments) of every run."""
    cluster = str(REALISTIC / "cluster.yaml")
    for extra in (
        [],
        ["pools"],
        ["kueue"],
        ["pools", "kueue"],
        ["l4-serving"],
        ["l4-serving", "pools"],
        ["other-kinds"],
    ):
        files = [cluster, *(str(REALISTIC / f"{e}.yaml") for e in extra)]
        yield f"realistic+{'+'.join(extra)}", [a for f in files for a in ("-f", f)]
        yield (
            f"realistic+{'+'.join(extra)} 1.36",
            [*(a for f in files for a in ("-f", f)), "--kubernetes-version", "1.36"],
        )
    yield "demo", ["-f", str(example_path())]
    groups = DATA / "node-groups"
    yield "eks", ["-f", str(groups / "eks-cluster.yaml"), "--prices", str(groups / "prices.yaml")]
    yield (
        "karpenter",
        [
            *(
                "-f",
                str(REALISTIC / "cluster.yaml"),
                "-f",
                str(groups / "karpenter-nodepools.yaml"),
            ),
            *("--prices", str(groups / "prices.yaml")),
        ],
    )
    yield "k137", ["-f", str(DATA / "k137")]
    yield "expander", ["-f", str(DATA / "expander" / "shape.yaml")]
    if (DATA / "multivendor").is_dir():
        yield "multivendor", ["-f", str(DATA / "multivendor")]


def scenarios(tmp: Path) -> Iterator[tuple[str, list[str]]]:
    profile = tmp / "zero-timeout.yaml"
    profile.write_text(yaml.safe_dump(audit_scenarios.zero_timeout_profile()))
    for name, fn in sorted(vars(audit_scenarios).items()):
        if not inspect.isfunction(fn) or fn.__module__ != audit_scenarios.__name__:
            continue
        params = inspect.signature(fn).parameters.values()
        if name == "zero_timeout_profile" or any(p.default is p.empty for p in params):
            continue
        objs = fn()
        if not (isinstance(objs, list) and objs and all(isinstance(o, dict) for o in objs)):
            continue
        path = tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump_all(objs))
        yield f"scenario {name}", ["-f", str(path)]
        yield f"scenario {name} zero-timeout", ["-f", str(path), "--profile", str(profile)]


def main() -> None:
    runner = CliRunner()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [*fixtures(), *scenarios(Path(tmp))]
        for title, args in runs:
            result = runner.invoke(cli, ["why", *args, "-o", "json"])
            stderr = result.stderr.replace(tmp, "TMP")
            sys.stdout.write(f"=== {title}: exit {result.exit_code}\n{result.stdout}{stderr}")
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                sys.stdout.write(f"exception: {result.exception!r}\n")


if __name__ == "__main__":
    main()
