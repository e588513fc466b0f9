"""Small inline-SVG charts: lines over time, grouped bars, and a heat map."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

PALETTE = ("#d1495b", "#edae49", "#00798c", "#30638e", "#66a182", "#8d96a3")
W, H, PAD = 640, 260, 44


def _frame(title: str, body: str, width: int = W, height: int = H) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
        f'<text x="{PAD}" y="18" font-size="13" font-weight="bold">{escape(title)}</text>'
        f"{body}</svg>"
    )


def _legend(names: Sequence[str], x: float, y: float) -> str:
    out = []
    for i, name in enumerate(names):
        color = PALETTE[i % len(PALETTE)]
        out.append(
            f'<rect x="{x}" y="{y + 16 * i - 9}" width="10" height="10" fill="{color}"/>'
            f'<text x="{x + 14}" y="{y + 16 * i}" font-size="11">{escape(name)}</text>'
        )
    return "".join(out)


def _axes(ymax: float, xlabel: str, ylabel: str, width: int = W, height: int = H) -> str:
    x0, y0, x1, y1 = PAD, height - PAD, width - 150, 30
    ticks = []
    for k in range(5):
        v = ymax * k / 4
        y = y0 - (y0 - y1) * k / 4
        ticks.append(
            f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{x0 - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">'
            f"{v:.4g}</text>"
        )
    return (
        "".join(ticks)
        + f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="#333"/>'
        + f'<text x="{(x0 + x1) / 2}" y="{height - 8}" font-size="11" text-anchor="middle">'
        + f"{escape(xlabel)}</text>"
        + f'<text x="12" y="{(y0 + y1) / 2}" font-size="11" transform="rotate(-90 12 '
        + f'{(y0 + y1) / 2})" text-anchor="middle">{escape(ylabel)}</text>'
    )


def line_chart(
    title: str,
    series: dict[str, list[tuple[float, float]]],
    xlabel: str,
    ylabel: str,
    xscale: float = 1.0,
) -> str:
    points = [p for s in series.values() for p in s]
    if not points:
        return _frame(title, '<text x="50" y="60" font-size="12">no data</text>')
    xmax = max(p[0] for p in points) / xscale or 1.0
    ymax = max(p[1] for p in points) or 1.0
    x0, y0, x1, y1 = PAD, H - PAD, W - 150, 30
    paths = []
    for i, (name, pts) in enumerate(series.items()):
        coords = " ".join(
            f"{x0 + (x / xscale) / xmax * (x1 - x0):.1f},{y0 - y / ymax * (y0 - y1):.1f}"
            for x, y in pts
        )
        paths.append(
            f'<polyline fill="none" stroke="{PALETTE[i % len(PALETTE)]}" '
            f'stroke-width="1.8" points="{coords}"><title>{escape(name)}</title>'
            "</polyline>"
        )
    body = (
        _axes(ymax, f"{xlabel} (0 – {xmax:.3g})", ylabel)
        + "".join(paths)
        + _legend(list(series), W - 140, 50)
    )
    return _frame(title, body)


def bar_chart(title: str, groups: list[str], series: dict[str, list[float]], ylabel: str) -> str:
    values = [v for vs in series.values() for v in vs]
    ymax = max(values, default=0.0) or 1.0
    x0, y0, x1, y1 = PAD, H - PAD, W - 150, 30
    slot = (x1 - x0) / max(1, len(groups))
    width = slot * 0.8 / max(1, len(series))
    bars = []
    for g, group in enumerate(groups):
        for i, (name, vs) in enumerate(series.items()):
            v = vs[g]
            h = v / ymax * (y0 - y1)
            x = x0 + g * slot + slot * 0.1 + i * width
            bars.append(
                f'<rect x="{x:.1f}" y="{y0 - h:.1f}" width="{width:.1f}" height="{h:.1f}"'
                f' fill="{PALETTE[i % len(PALETTE)]}"><title>{escape(name)} '
                f"{escape(group)}: {v:.4g}</title></rect>"
            )
        bars.append(
            f'<text x="{x0 + g * slot + slot / 2:.1f}" y="{y0 + 14}" font-size="10" '
            f'text-anchor="middle">{escape(group)}</text>'
        )
    body = _axes(ymax, "", ylabel) + "".join(bars) + _legend(list(series), W - 140, 50)
    return _frame(title, body)


def heat_map(title: str, rows: dict[str, list[tuple[float, float]]], xmax: float) -> str:
    """Rows are nodes, columns time; colour is the fraction of the node's GPUs in use."""
    names = sorted(rows)
    height = max(H, 40 + 12 * len(names) + 30)
    x0, x1 = 150, W - 20
    cells = []
    for r, name in enumerate(names):
        y = 30 + 12 * r
        pts = rows[name]
        cells.append(
            f'<text x="{x0 - 4}" y="{y + 9}" font-size="9" text-anchor="end">{escape(name)}</text>'
        )
        k = 0
        while k < len(pts):
            t, frac = pts[k]
            k += 1
            while k < len(pts) and pts[k][1] == frac:
                k += 1  # one cell per run of equal values keeps long runs' reports small
            t_next = pts[k][0] if k < len(pts) else xmax
            xa = x0 + t / (xmax or 1) * (x1 - x0)
            xb = x0 + t_next / (xmax or 1) * (x1 - x0)
            shade = int(235 - 200 * min(1.0, frac))
            cells.append(
                f'<rect x="{xa:.1f}" y="{y}" width="{max(0.5, xb - xa):.1f}" '
                f'height="11" fill="rgb({shade},{shade},255)"><title>{escape(name)} '
                f"{frac:.0%}</title></rect>"
            )
    return _frame(title, "".join(cells), height=height)
