"""The report's charts, drawn by matplotlib as inline SVG: lines over time, grouped bars, and
the node × time occupancy heat map. Output is byte-for-byte repeatable (fixed hash salt, no
date in the metadata), and text stays text (`svg.fonttype: none`), so a page can be searched
and tested for its axes."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

HOUR = 3600.0
PALETTE = ("#d1495b", "#00798c", "#edae49", "#30638e", "#66a182", "#8d96a3")
# Blues without its near-white end, so an idle node (0 %) stays visible against the blank
# cells where no node existed.
OCCUPANCY = ListedColormap(mpl.colormaps["Blues"](np.linspace(0.18, 1.0, 256)))
WIDTH = 8.0  # inches; 72 SVG units each
_STYLE: dict[str, Any] = {
    "svg.fonttype": "none",
    "font.size": 9.0,
    "font.family": "sans-serif",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e6e6e6",
    "axes.titlesize": 11.0,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
}


def _style(salt: str = "") -> Any:
    """The charts' rc settings (typed Any: matplotlib types rc keys as a closed Literal)."""
    return {**_STYLE, "svg.hashsalt": salt} if salt else dict(_STYLE)


def _svg(fig: Figure, salt: str) -> str:
    """The figure as an `<svg>` element; ids salted per chart so several can share a page."""
    buffer = io.StringIO()
    with mpl.rc_context(_style(salt)):
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _figure(height: float) -> Figure:
    with mpl.rc_context(_style()):
        return Figure(figsize=(WIDTH, height), layout="constrained")


def line_chart(
    title: str, series: dict[str, list[tuple[float, float]]], ylabel: str, percent: bool = False
) -> str:
    """Step lines over simulated time (seconds), drawn in hours."""
    fig = _figure(3.0)
    with mpl.rc_context(_style()):
        ax = fig.add_subplot()
        ax.set_title(title)
        for i, (name, points) in enumerate(series.items()):
            if not points:
                continue
            xs = [t / HOUR for t, _ in points]
            ys = [v for _, v in points]
            ax.step(xs, ys, where="post", color=PALETTE[i % len(PALETTE)], lw=1.6, label=name)
        _hours_axis(ax, max((t for s in series.values() for t, _ in s), default=HOUR))
        ax.set_ylabel(ylabel)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=not percent, min_n_ticks=3))
        ax.set_ylim(bottom=0, top=100 if percent else None)
        if any(series.values()):
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return _svg(fig, title)


def _hours_axis(ax: Axes, end_seconds: float) -> None:
    hours = max(end_seconds / HOUR, 1e-9)
    ax.set_xlim(0, hours)
    step = _hour_step(hours)
    ax.set_xticks([k * step for k in range(int(hours / step) + 1)])
    ax.xaxis.set_major_formatter(lambda v, _pos: f"{v:g}")
    ax.set_xlabel("simulated time (hours)")


def _hour_step(hours: float) -> float:
    """A round tick spacing in hours giving at most ~12 ticks."""
    for step in (0.25, 0.5, 1, 2, 3, 4, 6, 12, 24, 48, 72, 168, 336, 720):
        if hours / step <= 12:
            return step
    return 24 * math.ceil(hours / 24 / 12)


def bar_chart(
    title: str, groups: Sequence[str], series: dict[str, list[float]], ylabel: str
) -> str:
    """Grouped bars: one group per label, one bar per series (policy), values on top."""
    fig = _figure(3.0)
    with mpl.rc_context(_style()):
        ax = fig.add_subplot()
        ax.set_title(title)
        width = 0.8 / max(1, len(series))
        for i, (name, values) in enumerate(series.items()):
            xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
            bars = ax.bar(xs, values, width, color=PALETTE[i % len(PALETTE)], label=name)
            ax.bar_label(bars, fmt="%.4g", fontsize=7, padding=2)
        ax.set_xticks(range(len(groups)), list(groups))
        ax.set_xlabel("")
        ax.set_ylabel(ylabel)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=5, min_n_ticks=3))
        ax.grid(axis="x", visible=False)
        ax.margins(y=0.15)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return _svg(fig, title)


def heat_map(title: str, rows: dict[str, list[tuple[float, float]]], end: float) -> str:
    """Every node a row, time in columns; colour is the share of the node's GPUs allocated,
    blank before the node was added and after it was removed."""
    names = sorted(rows)
    columns = 480
    step = (end or 1.0) / columns
    grid = [[math.nan] * columns for _ in names]
    samples = sorted({t for points in rows.values() for t, _ in points})
    following = dict(zip(samples, [*samples[1:], end], strict=True))
    for r, name in enumerate(names):
        points = rows[name]
        for k, (t, frac) in enumerate(points):
            # A node is sampled while it exists: its last value lasts until the next sample.
            t_next = points[k + 1][0] if k + 1 < len(points) else following[t]
            first, last = int(t / step), min(columns, math.ceil(t_next / step))
            for c in range(first, max(first + 1, last)):
                if c < columns:
                    grid[r][c] = frac
    height = min(40.0, 1.4 + 0.13 * max(len(names), 8))
    fig = _figure(height)
    with mpl.rc_context(_style()):
        ax = fig.add_subplot()
        ax.set_title(title)
        ax.grid(False)
        image = ax.imshow(
            grid,
            aspect="auto",
            interpolation="nearest",
            cmap=OCCUPANCY,
            vmin=0.0,
            vmax=1.0,
            extent=(0.0, (end or 1.0) / HOUR, len(names), 0.0),
        )
        _hours_axis(ax, end or 1.0)
        ax.set_yticks([r + 0.5 for r in range(len(names))], names)
        ax.tick_params(axis="y", labelsize=max(4.5, min(8.0, 400 / max(1, len(names)))))
        ax.set_ylabel("node")
        bar = fig.colorbar(image, ax=ax, shrink=min(1.0, 3.0 / height), aspect=15, pad=0.01)
        bar.set_label("share of the node's GPUs allocated")
        bar.ax.yaxis.set_major_formatter(lambda v, _pos: f"{v:.0%}")
    return _svg(fig, title)
