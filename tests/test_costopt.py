"""The cost optimisation on plain numbers: pools are strings, contents tuples; an exhaustive
search over small node multisets is the independent check of the exact cover."""

from __future__ import annotations

import itertools
import random

import pytest

from draplan.autoscaler import costopt

PRICES = {"a": 3.0, "b": 5.0, "c": 8.0}


def _price(pool: str) -> float:
    return PRICES[pool]


def _brute(counts: list[int], steps: list[tuple[tuple[int, ...], int]], most: int) -> int | None:
    """The least total value of at most `most` steps whose contents add up to >= counts."""
    best = None
    for n in range(most + 1):
        for combo in itertools.combinations_with_replacement(range(len(steps)), n):
            got = [sum(steps[s][0][d] for s in combo) for d in range(len(counts))]
            if all(g >= c for g, c in zip(got, counts, strict=True)):
                value = sum(steps[s][1] for s in combo)
                best = value if best is None else min(best, value)
    return best


def test_cover_exactly_is_the_least_value_cover() -> None:
    rng = random.Random(3)
    for _ in range(40):
        dims = rng.randint(1, 3)
        counts = [rng.randint(0, 4) for _ in range(dims)]
        if not any(counts):
            counts[0] = 1
        steps = [
            (tuple(rng.randint(0, 3) for _ in range(dims)), rng.randint(1, 20))
            for _ in range(rng.randint(1, 4))
        ]
        steps = [s for s in steps if any(s[0])] or [((1,) * dims, 7)]
        picked = costopt.cover_exactly(counts, steps)
        expected = _brute(counts, steps, sum(counts))
        if expected is None:
            assert picked is None
            continue
        assert picked is not None
        assert sum(steps[s][1] for s, _ in picked) == expected
        # The cut contents add up to the counts exactly, each no more than its step.
        assert [sum(cut[d] for _, cut in picked) for d in range(dims)] == counts
        assert all(costopt.below(cut, steps[s][0]) or cut == steps[s][0] for s, cut in picked)


def test_cover_exactly_none_when_a_class_has_no_node() -> None:
    assert costopt.cover_exactly([2, 1], [((2, 0), 5)]) is None


def test_maximal_drops_contents_another_holds() -> None:
    found = [((2, 0), 0.1), ((1, 0), 0.5), ((1, 1), 0.2), ((0, 0), 1.0), ((0, 1), 0.4)]
    assert costopt.maximal(found) == [((2, 0), 0.1), ((1, 1), 0.2)]


def test_own_costs_cheapest_per_pod() -> None:
    per = {("a", 0): 1, ("b", 0): 4, ("a", 1): 0, ("c", 1): 2}
    own = costopt.own_costs(2, ["a", "b", "c"], _price, lambda p, i: per.get((p, i), 0))
    assert own == [5.0 / 4, 8.0 / 2]


def _greedy(
    counts: list[int], per: dict[str, tuple[int, ...]], room: dict[str, int]
) -> list[tuple[str, tuple[int, ...]]] | None:
    def fill(pool: str, left: list[int], order: list[int]) -> tuple[int, ...]:
        return tuple(min(n, m) for n, m in zip(per[pool], left, strict=True))

    def take(pool: str, n: int) -> None:
        room[pool] -= n

    own = costopt.own_costs(len(counts), sorted(per), _price, lambda p, i: per[p][i])
    return costopt.cover_greedily(
        counts, sorted(per), _price, str, room.__getitem__, take, fill, own
    )


def test_cover_greedily_prefers_the_cheaper_node_per_pod_and_respects_room() -> None:
    # a: 1 pod for 3 (3/pod); b: 2 pods for 5 (2.5/pod): b while two pods are left, then a
    # for the last pod (3 against b's 5 for one pod).
    chosen = _greedy([5], {"a": (1,), "b": (2,)}, {"a": 10, "b": 10})
    assert chosen is not None
    assert chosen == [("b", (2,)), ("b", (2,)), ("a", (1,))]
    assert sum(c[0] for _, c in chosen) == 5
    # b may add one node only: the rest goes to a.
    chosen = _greedy([5], {"a": (1,), "b": (2,)}, {"a": 10, "b": 1})
    assert chosen is not None and [p for p, _ in chosen].count("b") == 1
    assert sum(c[0] for _, c in chosen) == 5
    # No room anywhere: nothing covers the pods.
    assert _greedy([1], {"a": (1,)}, {"a": 0}) is None


def test_improve_replaces_the_worst_nodes_when_the_solver_is_cheaper() -> None:
    # The c nodes serve their pod worst (8 for a pod worth 2.5); an exact choice of at most
    # 3 vectors (up to 2 pods) takes both of them, not the b node too.
    chosen = [("c", (1,)), ("c", (1,)), ("b", (2,))]
    own = [2.5]

    def solve(
        dims: list[int], counts: list[int], kept: list[tuple[str, tuple[int, ...]]]
    ) -> list[tuple[str, tuple[int, ...]]]:
        assert dims == [0] and counts == [2] and kept == [("b", (2,))]
        return [("b", (2,))]

    better = costopt.improve(chosen, own, _price, 3, solve)
    assert better == [("b", (2,)), ("b", (2,))]
    assert costopt.cost(better, _price) == 10.0

    def dearer(
        dims: list[int], counts: list[int], kept: list[tuple[str, tuple[int, ...]]]
    ) -> list[tuple[str, tuple[int, ...]]]:
        return [("c", (1,)), ("c", (1,)), ("a", (0,))]

    assert costopt.improve(chosen, own, _price, 3, dearer) == chosen


@pytest.mark.parametrize(
    ("left", "offers", "expected"),
    [
        (5, [(3.0, 1, 10, "a"), (5.0, 2, 10, "b")], (0, 15.0)),  # b b b (the last half full)
        (5, [(3.0, 1, 10, "a"), (5.0, 2, 1, "b")], (0, 14.0)),  # b, then a a a
        (5, [(3.0, 1, 2, "a")], (3, 6.0)),  # room for two only
        (0, [(3.0, 1, 2, "a")], (0, 0.0)),
    ],
)
def test_cover_rest(
    left: int, offers: list[tuple[float, int, int, str]], expected: tuple[int, float]
) -> None:
    assert costopt.cover_rest(left, offers) == expected
