"""LayeredDict: fork / commit / revert behave like copies without copying; VersionedDict names
its content."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.cluster.layered import LayeredDict, VersionedDict


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


def test_a_versioned_dict_names_its_content() -> None:
    d: VersionedDict[str, int] = VersionedDict({"a": 1})
    first = d.version
    d["b"] = 2
    second = d.version
    assert second != first
    d.fork()
    assert d.version == second  # nothing written yet: the same content
    d["c"] = 3
    assert d.version not in (first, second)
    d.revert()
    assert d.version == second and dict(d.items()) == {"a": 1, "b": 2}
    d.fork()
    d.pop("a")
    popped = d.version
    assert popped != second
    d.commit()
    assert d.version == popped and dict(d.items()) == {"b": 2}
    del d["b"]
    assert d.version != popped


def test_an_unpickled_versioned_dict_takes_new_versions() -> None:
    d: VersionedDict[str, int] = VersionedDict({"a": 1})
    d.fork()
    d["b"] = 2
    copy = pickle.loads(pickle.dumps(d))
    assert dict(copy.items()) == {"a": 1, "b": 2} and copy.depth == 2
    assert copy.version > d.version  # issued after every version of this process so far
    copy.revert()
    assert dict(copy.items()) == {"a": 1}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["set", "del", "fork", "revert", "commit", "len"]),
            st.sampled_from("abcd"),
        ),
        max_size=40,
    )
)
def test_length_and_truth_follow_every_operation(ops: list[tuple[str, str]]) -> None:
    """len() and truth (counted once per layer, then kept) against copies of a plain dict."""
    d: LayeredDict[str, int] = LayeredDict({"a": 0})
    copies: list[dict[str, int]] = [{"a": 0}]
    for i, (op, key) in enumerate(ops):
        if op == "set":
            d[key] = i
            copies[-1][key] = i
        elif op == "del" and key in copies[-1]:
            del d[key]
            del copies[-1][key]
        elif op == "fork":
            d.fork()
            copies.append(dict(copies[-1]))
        elif op == "revert" and len(copies) > 1:
            d.revert()
            copies.pop()
        elif op == "commit" and len(copies) > 1:
            d.commit()
            top = copies.pop()
            copies[-1] = top
        assert len(d) == len(copies[-1]) and bool(d) == bool(copies[-1])
        assert dict(d.items()) == copies[-1]
    copy = pickle.loads(pickle.dumps(d))
    assert len(copy) == len(copies[-1])
