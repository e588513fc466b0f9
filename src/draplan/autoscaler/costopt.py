"""The node set of least cost, on plain numbers: no Kubernetes object, no scheduler.

A node is a *content*: how many pods of each class one node of a pool holds, as the estimator
found it on a template node. Pools are opaque values (`P`); callers pass how to price them,
how much room each has left and how to fill one node. Three ways to cover every pod:

- `cover_exactly`: a dynamic programme over the vectors of pods left per class (exact);
- `cover_greedily`: whole nodes, the one whose price is smallest against what its pods would
  cost on their own first (mid-size problems);
- `improve`: one step of large-neighbourhood search on a greedy cover: its worst nodes chosen
  again by a caller-given exact solver.

`cover_rest` prices what covering the rest of one class would cost, for the class-by-class
choice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

P = TypeVar("P")
Content = tuple[int, ...]  # pods per class on one node
Cover = list[tuple[P, Content]]  # the nodes chosen: a pool and its content each


def below(a: Content, b: Content) -> bool:
    """`a` holds fewer pods than `b`: no more of any class, and not the same."""
    return a != b and all(x <= y for x, y in zip(a, b, strict=True))


def maximal(found: Sequence[tuple[Content, float]]) -> list[tuple[Content, float]]:
    """The non-empty contents no other content holds more than."""
    return [(c, w) for c, w in found if any(c) and not any(below(c, o) for o, _ in found)]


def cover_exactly(
    counts: Sequence[int], steps: Sequence[tuple[Content, int]]
) -> list[tuple[int, Content]] | None:
    """The minimum-value multiset of steps (node contents with an integer value) whose
    contents, each cut down to what is left, add up to `counts`; as (step index, cut content)
    pairs. Contents are downward closed (a node that holds some pods holds fewer), so cutting
    a content down keeps it a valid node. None when no multiset covers `counts`."""
    dims = len(counts)
    strides = [1] * dims
    for d in range(1, dims):
        strides[d] = strides[d - 1] * (counts[d - 1] + 1)
    total = strides[-1] * (counts[-1] + 1)
    best: list[int | None] = [None] * total
    pick: list[tuple[int, Content]] = [(-1, ())] * total
    best[0] = 0
    left = [0] * dims
    offsets = [sum(a * st for a, st in zip(c, strides, strict=True)) for c, _ in steps]
    for index in range(1, total):
        d = 0  # the vector of `index`, incremented like an odometer
        while left[d] == counts[d]:
            left[d] = 0
            d += 1
        left[d] += 1
        top: int | None = None
        choice: tuple[int, Content] = (-1, ())
        for s, (content, value) in enumerate(steps):
            if all(a <= n for a, n in zip(content, left, strict=True)):
                cut, prev = content, index - offsets[s]
            else:
                cut = tuple(min(a, n) for a, n in zip(content, left, strict=True))
                prev = index - sum(c * st for c, st in zip(cut, strides, strict=True))
                if prev == index:
                    continue
            base = best[prev]
            if base is None:
                continue
            if top is None or base + value < top:
                top, choice = base + value, (s, cut)
        best[index] = top
        pick[index] = choice
    if best[total - 1] is None:
        return None
    out: list[tuple[int, Content]] = []
    index = total - 1
    while index:
        s, cut = pick[index]
        out.append((s, cut))
        index -= sum(c * st for c, st in zip(cut, strides, strict=True))
    return out


def own_costs(
    classes: int, pools: Sequence[P], price: Callable[[P], float], per_node: Callable[[P, int], int]
) -> list[float]:
    """Per class, the cheapest price per pod on nodes holding that class alone; `per_node(pool,
    class)` is how many pods of the class one node holds (0: none)."""
    return [min(price(p) / per_node(p, i) for p in pools if per_node(p, i)) for i in range(classes)]


def cover_greedily(
    counts: Sequence[int],
    pools: Sequence[P],
    price: Callable[[P], float],
    name: Callable[[P], str],
    room: Callable[[P], int],
    take: Callable[[P, int], None],
    fill: Callable[[P, list[int], list[int]], Content],
    own: Sequence[float],
) -> list[tuple[P, Content]] | None:
    """Node by node, the node (a pool and what `fill(pool, left, order)` puts on one node of
    it, the dearest pods first) whose price is smallest against what its pods would cost on
    their own (`own`, per class); repeated while pods are left and pools have `room`; `take`
    spends room. None if some pod is left over."""
    order = sorted(range(len(counts)), key=lambda i: (-own[i], i))
    left = list(counts)
    chosen: list[tuple[P, Content]] = []
    while any(left):
        best: tuple[float, str, P, Content] | None = None
        for pool in pools:
            if room(pool) <= 0:
                continue
            content = fill(pool, left, order)
            worth = sum(n * own[i] for i, n in enumerate(content))
            if not worth:
                continue
            rank = (price(pool) / worth, name(pool))
            if best is None or rank < best[:2]:
                best = (*rank, pool, content)
        if best is None:
            return None
        pool, content = best[2], best[3]
        times = min(left[i] // n for i, n in enumerate(content) if n)
        times = max(1, min(times, room(pool)))
        for _ in range(times):
            cut = tuple(min(n, m) for n, m in zip(content, left, strict=True))
            chosen.append((pool, cut))
            left = [m - n for n, m in zip(cut, left, strict=True)]
        take(pool, times)
    return chosen


def cost(nodes: Sequence[tuple[P, Content]], price: Callable[[P], float]) -> float:
    return sum(price(pool) for pool, _ in nodes)


def improve(
    chosen: list[tuple[P, Content]],
    own: Sequence[float],
    price: Callable[[P], float],
    max_states: int,
    solve: Callable[
        [list[int], list[int], list[tuple[P, Content]]], list[tuple[P, Content]] | None
    ],
) -> list[tuple[P, Content]]:
    """One step of large-neighbourhood search on a cover: the nodes that serve their pods
    worst (price against the pods' own cost `own`), as many as an exact choice of at most
    `max_states` vectors takes at once, chosen again by `solve(classes, counts, kept)` (the
    classes with pods among them, how many of each, the nodes kept); the new nodes replace
    them if cheaper."""

    def badness(j: int) -> tuple[float, int]:
        pool, content = chosen[j]
        worth = sum(n * own[i] for i, n in enumerate(content))
        return (-price(pool) / worth if worth else -math.inf, j)

    taken: list[int] = []
    left = [0] * len(own)
    for j in sorted(range(len(chosen)), key=badness):
        more = [a + b for a, b in zip(left, chosen[j][1], strict=True)]
        if math.prod(n + 1 for n in more) > max_states:
            break
        taken.append(j)
        left = more
    if len(taken) < 2:
        return chosen
    dims = [i for i, n in enumerate(left) if n]
    kept = [c for j, c in enumerate(chosen) if j not in taken]
    better = solve(dims, [left[d] for d in dims], kept)
    if better is None:
        return chosen
    if cost(better, price) >= cost([chosen[j] for j in taken], price) - 1e-9:
        return chosen
    out = list(kept)
    for pool, content in better:
        full = [0] * len(own)
        for d, n in zip(dims, content, strict=True):
            full[d] = n
        out.append((pool, tuple(full)))
    return out


def cover_rest(left: int, offers: Sequence[tuple[float, int, int, str]]) -> tuple[int, float]:
    """(pods left uncovered, cost) of covering `left` pods of one class, the cheapest pods
    first; `offers`: (price of a node, pods per node, nodes allowed, pool name) per pool."""
    ranked = sorted(
        ((price / per, name, price, per, room) for price, per, room, name in offers if room > 0),
        key=lambda r: (r[0], r[1]),
    )
    total = 0.0
    for _, _, price, per, room in ranked:
        if not left:
            break
        take = min(left, room * per)
        total += math.ceil(take / per) * price
        left -= take
    return left, total
