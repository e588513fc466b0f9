"""`draplan.audit.classifiers`: the contract every classifier keeps (package docstring).

The lists name every category and nothing else, each classifier is a module of its own with a
unique name, configuration classifiers come before the pass. A shared classifier's answer
depends only on the pod's shape and gang: judging every pod itself (no sharing) gives the same
verdicts, on the audit scenarios (gangs, pools, fixes) and on generated clusters whose pending
pods share shapes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

import audit_scenarios as sc
from draplan.audit import CATEGORIES, why
from draplan.audit.classifiers import CONFIGURATION, PLACEMENT
from draplan.audit.classifiers.timeout import TimedOut
from generated_clusters import generate
from scale_scenarios import load

Objs = list[dict[str, Any]]


def _scenarios() -> list[tuple[str, Callable[[], Objs]]]:
    """Every scenario of audit_scenarios that takes no argument and has a pending pod."""
    out = []
    for name, fn in sorted(vars(sc).items()):
        if not inspect.isfunction(fn) or fn.__module__ != sc.__name__ or name.endswith("profile"):
            continue
        if all(p.default is not p.empty for p in inspect.signature(fn).parameters.values()):
            objs = fn()
            if isinstance(objs, list) and any(
                isinstance(o, dict) and o["kind"] == "Pod" and not o["spec"].get("nodeName")
                for o in objs
            ):
                out.append((name, fn))
    return out


def test_the_lists_name_every_category_once_each_classifier_in_its_own_module() -> None:
    classifiers = [*CONFIGURATION, *PLACEMENT]
    names = [c.name for c in classifiers]
    assert len(set(names)) == len(names)
    modules = [type(c).__module__ for c in classifiers]
    assert len(set(modules)) == len(modules)
    assert all(m.startswith("draplan.audit.classifiers.") for m in modules)
    answered = {category for c in classifiers for category in c.categories}
    assert answered == set(CATEGORIES)
    # The last one answers every pod the others passed (its return type says so).
    assert isinstance(PLACEMENT[-1], TimedOut)
    assert inspect.signature(TimedOut.classify).return_annotation == "Diagnosis"


def _verdicts(objs: Objs) -> list[dict[str, Any]]:
    return [d.to_dict() for d in why(load(objs))]


def _unshared(monkeypatch: pytest.MonkeyPatch) -> None:
    for classifier in PLACEMENT:
        monkeypatch.setattr(classifier, "shared", False)


SCENARIOS = _scenarios()


@pytest.mark.parametrize("scenario", [fn for _, fn in SCENARIOS], ids=[n for n, _ in SCENARIOS])
def test_shared_answers_equal_each_pod_judged_alone(
    scenario: Callable[[], Objs], monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = _verdicts(scenario())
    _unshared(monkeypatch)
    assert _verdicts(scenario()) == shared


def test_shared_answers_on_generated_clusters_with_repeated_shapes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clusters = []
    for seed in range(40):
        objs = generate(seed, pending=(3, 6))
        # Every pending pod once more, from the same template: pods of one shape.
        twins = [
            {**o, "metadata": {**o["metadata"], "name": o["metadata"]["name"] + "-twin"}}
            for o in objs
            if o["kind"] == "Pod" and not o["spec"].get("nodeName")
        ]
        clusters.append(objs + twins)
    shared = [_verdicts(objs) for objs in clusters]
    categories = {d["category"] for verdicts in shared for d in verdicts}
    assert len(categories) >= 4  # the clusters reach several classifiers
    _unshared(monkeypatch)
    assert [_verdicts(objs) for objs in clusters] == shared
