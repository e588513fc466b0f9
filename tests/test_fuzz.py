"""Mutated inputs through every command, in process: exit 0 or 2 (never 1), no traceback, an
exit-2 line that names a file, each case in bounded time (issue 19).

Seeded, so a failure is reproducible: the case number, the mutation and the command are in
the assertion message. DRAPLAN_FUZZ_CASES runs more (or fewer) cases.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA, Run
from draplan.cli.demo import example_path

CASES = int(os.environ.get("DRAPLAN_FUZZ_CASES", "120"))
SECONDS_PER_CASE = 10.0
REALISTIC = DATA / "realistic"
MIGRATE = DATA / "migrate"
# (command, the input mutated, inputs read as they are)
TARGETS: list[tuple[str, Path, list[Path]]] = [
    *(
        (c, REALISTIC / "cluster.yaml", [REALISTIC / "pools.yaml"])
        for c in ("validate", "why", "schedule", "scale", "metrics")
    ),
    *((c, REALISTIC / "pools.yaml", [REALISTIC / "cluster.yaml"]) for c in ("validate", "scale")),
    ("why", REALISTIC / "kueue.yaml", [REALISTIC / "cluster.yaml"]),
    ("validate", REALISTIC / "other-kinds.yaml", []),
    *((c, Path(example_path()), []) for c in ("validate", "why", "schedule", "metrics")),
    *(
        ("migrate", MIGRATE / name, [])
        for name in ("deployment.yaml", "job.yaml", "mig.yaml", "pytorchjob.yaml", "sidecars.yaml")
    ),
    ("migrate", MIGRATE / "pinned.yaml", [MIGRATE / "cluster.yaml"]),
]

ODD_VALUES: list[Any] = [
    None,
    [],
    {},
    "",
    "x\ny",
    "Bad_Name",
    "../etc",
    2**64,
    -(2**64),
    10**400,
    -1,
    0,
    1.5,
    float("nan"),
    True,
    "1e400",
    "-5Gi",
    [[1]],
    {"a": [None]},
    "\x1b[31m",
    "é" * 300,
]
TEXT_VALUES = [
    "18446744073709551616",
    "-1",
    ".nan",
    ".inf",
    "[]",
    "{}",
    "null",
    '"a\\nb"',
    "*x",
    "&x a",
    "1" + "0" * 400,
    "'\\x00'",
    "[v1]",
    "!!binary aGk=",
]


def _mutate_text(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    if not lines:
        return "\n", "empty"
    i = rng.randrange(len(lines))
    how = rng.randrange(7)
    if how == 0:
        return "".join(lines[:i] + lines[i + 1 :]), f"delete line {i + 1}"
    if how == 1:
        return "".join(lines[: i + 1] + lines[i:]), f"repeat line {i + 1}"
    if how == 2:
        cut = rng.randrange(len(text))
        return text[:cut], f"truncate at {cut}"
    if how == 3:
        cut = rng.randrange(len(text))
        char = rng.choice(["\x00", "\t", "\u2028", "\ufeff", "&", "*", "{", "'", "\x7f"])
        return text[:cut] + char + text[cut:], f"insert {char!r} at {cut}"
    line = lines[i]
    key, sep, _ = line.partition(": ")
    if not sep:
        return "".join([*lines[:i], "  " + line, *lines[i + 1 :]]), f"indent line {i + 1}"
    value = rng.choice(TEXT_VALUES)
    return "".join([*lines[:i], f"{key}: {value}\n", *lines[i + 1 :]]), f"line {i + 1} = {value}"


def _leaves(data: Any, trail: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [trail]
    if isinstance(data, dict):
        for k, v in data.items():
            out.extend(_leaves(v, (*trail, k)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.extend(_leaves(v, (*trail, i)))
    return out


def _mutate_data(rng: random.Random, text: str) -> tuple[str, str]:
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError:  # an earlier mutation broke the syntax: mutate the text
        return _mutate_text(rng, text)
    if not docs:
        return _mutate_text(rng, text)
    d = rng.randrange(len(docs))
    trail = rng.choice(_leaves(docs[d])[1:] or [()])
    if not trail:
        return text, "unchanged"
    parent = docs[d]
    for step in trail[:-1]:
        parent = parent[step]
    value = rng.choice(ODD_VALUES)
    if rng.random() < 0.2 and isinstance(parent, dict):
        del parent[trail[-1]]
        what = "delete"
    else:
        parent[trail[-1]] = value
        what = f"= {value!r}"[:60]
    return yaml.safe_dump_all(docs, sort_keys=False), f"doc {d} {'.'.join(map(str, trail))} {what}"


def _case(rng: random.Random, case: int, tmp: Path) -> tuple[list[str], list[str], str]:
    command, target, others = rng.choice(TARGETS)
    text = target.read_text(encoding="utf-8")
    mutate: Callable[[random.Random, str], tuple[str, str]] = rng.choice(
        [_mutate_text, _mutate_data]
    )
    for _ in range(rng.randint(1, 3)):
        text, what = mutate(rng, text)
    path = tmp / f"case-{case}-{target.name}"
    path.write_text(text, encoding="utf-8")
    files = [str(path), *map(str, others)]
    return [command, *(a for f in files for a in ("-f", f))], files, what


def test_mutated_inputs_never_crash(tmp_path: Path, run_cli: Callable[..., Run]) -> None:
    rng = random.Random(19)
    exits = {0: 0, 2: 0}
    for case in range(CASES):
        args, files, what = _case(rng, case, tmp_path)
        where = f"case {case}: {what}: draplan {' '.join(args)}"
        start = time.perf_counter()
        result = run_cli(*args)
        took = time.perf_counter() - start
        assert took < SECONDS_PER_CASE, f"{where}: {took:.1f}s"
        assert result.code in (0, 2), f"{where}: exit {result.code}: {result.err}"
        assert "Traceback" not in result.err and "internal error" not in result.err, where
        exits[result.code] += 1
        if result.code == 2:
            lines = [line for line in result.err.splitlines() if not line.startswith("notice: ")]
            assert len(lines) == 1, f"{where}: {result.err}"
            assert any(lines[0].startswith(f"error: {f}: ") for f in files), f"{where}: {lines}"
    # The mutations are neither all harmless nor all fatal.
    assert exits[0] > CASES // 10 and exits[2] > CASES // 10, exits


@pytest.mark.parametrize("seed", range(3))
def test_mutations_are_reproducible(seed: int, tmp_path: Path) -> None:
    one = _case(random.Random(seed), 0, tmp_path)
    two = _case(random.Random(seed), 0, tmp_path)
    assert one == two
