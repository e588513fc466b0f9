"""LayeredDict: fork / commit / revert behave like copies without copying."""

from __future__ import annotations

import pytest

from draplan.cluster.layered import LayeredDict


def test_fork_writes_do_not_touch_the_base() -> None:
    d: LayeredDict[str, int] = LayeredDict({"a": 1, "b": 2})
    d.fork()
    d["a"] = 10
    del d["b"]
    d["c"] = 3
    assert dict(d.items()) == {"a": 10, "c": 3}
    assert "b" not in d and d.get("b") is None
    d.revert()
    assert dict(d.items()) == {"a": 1, "b": 2}


def test_commit_merges_the_top_layer_including_deletions() -> None:
    d: LayeredDict[str, int] = LayeredDict({"a": 1, "b": 2})
    d.fork()
    d.fork()
    del d["a"]
    d["z"] = 26
    d.commit()
    assert dict(d.items()) == {"b": 2, "z": 26}
    d.commit()
    assert d.depth == 1
    assert dict(d.items()) == {"b": 2, "z": 26}
    assert len(d) == 2


def test_unbalanced_revert_and_commit_raise() -> None:
    d: LayeredDict[str, int] = LayeredDict()
    with pytest.raises(RuntimeError):
        d.revert()
    with pytest.raises(RuntimeError):
        d.commit()
    with pytest.raises(KeyError):
        del d["missing"]
