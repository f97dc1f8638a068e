"""Charts as inline SVG, drawn here (no JavaScript, no CDN, nothing fetched).

Bars, histograms, line charts, grouped bars and scatter plots share one coordinate
helper and "nice" axis ticks. Every label is escaped; colours are presentation
attributes (``fill=``), not ``style=``, so the Content-Security-Policy needs no
``unsafe-inline``. Each mark carries a ``<title>`` so hovering shows its value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from markupsafe import Markup as Raw

from .render import escape_text as esc

__all__ = [
    "PALETTE",
    "bar_chart",
    "colour_scale",
    "grouped_bars",
    "histogram",
    "line_chart",
    "nice_ticks",
    "scatter",
]

#: Categorical colours (colour-blind friendly, after Okabe and Ito, plus greys).
PALETTE = (
    "#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9",
    "#f0e442", "#000000", "#999999", "#8c564b", "#17becf", "#7f7f7f",
)  # fmt: skip


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering ``[low, high]``."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0]
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / max(1, count)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step) * step
    if first > low:  # low / step underflowed to -0.0 (a subnormal low): one step further
        first -= step
    ticks = []
    value = first
    while value <= high + step * 1e-9 and len(ticks) < 50:
        ticks.append(round(value, 12))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 12))
    return ticks


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 10_000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


def _svg(width: int, height: int, title: str, inner: str, cls: str = "chart") -> Raw:
    return Raw(
        f'<svg class="{cls}" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{esc(title)}</title>{inner}</svg>"
    )


def bar_chart(
    items: Sequence[tuple[str, float, str | None]],
    *,
    title: str,
    width: int = 420,
    bar_height: int = 18,
) -> Raw:
    """Horizontal bars, one per ``(label, value, href or None)``; a bar with a link is one."""
    label_w, gap, top = 110, 4, 22
    height = top + max(1, len(items)) * (bar_height + gap) + 4
    peak = max([v for _, v, _ in items] + [1e-12])
    span = width - label_w - 60
    parts = [f'<text x="0" y="14" class="ct">{esc(title)}</text>']
    if not items:
        parts.append(f'<text x="{label_w}" y="{top + 12}" class="muted">nothing yet</text>')
    for i, (label, value, href) in enumerate(items):
        y = top + i * (bar_height + gap)
        w = max(1.0, span * value / peak) if value > 0 else 0.0
        bar = (
            f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_height}" '
            f'fill="{PALETTE[i % len(PALETTE)]}">'
            f"<title>{esc(label)}: {esc(_fmt(value))}</title></rect>"
            f'<text x="{label_w - 6}" y="{y + bar_height - 5}" text-anchor="end">'
            f"{esc(label)}</text>"
            f'<text x="{label_w + w + 4:.1f}" y="{y + bar_height - 5}" class="val">'
            f"{esc(_fmt(value))}</text>"
        )
        parts.append(f'<a href="{esc(href)}">{bar}</a>' if href else bar)
    return _svg(width, height, title, "".join(parts))


class _Frame:
    """Maps data coordinates into a plot area and draws the axes."""

    def __init__(self, width: int, height: int, x: tuple[float, float], y: tuple[float, float]):
        self.width, self.height = width, height
        self.left, self.right, self.top, self.bottom = 48, 12, 24, 34
        self.x0, self.x1 = x if x[1] > x[0] else (x[0] - 0.5, x[0] + 0.5)
        self.y0, self.y1 = y if y[1] > y[0] else (y[0] - 0.5, y[0] + 0.5)

    def px(self, x: float) -> float:
        span = self.width - self.left - self.right
        return self.left + (x - self.x0) / (self.x1 - self.x0) * span

    def py(self, y: float) -> float:
        span = self.height - self.top - self.bottom
        return self.height - self.bottom - (y - self.y0) / (self.y1 - self.y0) * span

    def axes(self, x_ticks: Sequence[float], y_ticks: Sequence[float], x_label: str) -> str:
        parts = []
        for t in y_ticks:
            y = self.py(t)
            parts.append(
                f'<line x1="{self.left}" x2="{self.width - self.right}" y1="{y:.1f}" '
                f'y2="{y:.1f}" class="grid"/><text x="{self.left - 4}" y="{y + 4:.1f}" '
                f'text-anchor="end">{esc(_fmt(t))}</text>'
            )
        base = self.height - self.bottom
        for t in x_ticks:
            x = self.px(t)
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{base}" y2="{base + 4}" class="axis"/>'
                f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle">{esc(_fmt(t))}</text>'
            )
        parts.append(
            f'<line x1="{self.left}" x2="{self.width - self.right}" y1="{base}" y2="{base}" '
            f'class="axis"/><text x="{self.width - self.right}" y="{self.height - 2}" '
            f'text-anchor="end" class="muted">{esc(x_label)}</text>'
        )
        return "".join(parts)


def histogram(
    counts: Sequence[int],
    edges: Sequence[float],
    *,
    title: str,
    x_label: str = "",
    width: int = 420,
    height: int = 200,
    hrefs: Sequence[str | None] | None = None,
) -> Raw:
    """Vertical bars of ``counts`` over bins ``edges`` (``len(edges) == len(counts) + 1``)."""
    if len(edges) != len(counts) + 1:
        raise ValueError("histogram needs one more edge than counts")
    peak = max(list(counts) + [1])
    frame = _Frame(width, height, (edges[0], edges[-1]), (0, peak))
    y_ticks = [t for t in nice_ticks(0, peak, 4) if t == int(t)]
    parts = [f'<text x="0" y="14" class="ct">{esc(title)}</text>']
    parts.append(frame.axes(nice_ticks(edges[0], edges[-1], 5), y_ticks, x_label))
    for i, count in enumerate(counts):
        x0, x1 = frame.px(edges[i]), frame.px(edges[i + 1])
        top = frame.py(count)
        bar = (
            f'<rect x="{x0 + 0.5:.1f}" y="{top:.1f}" width="{max(0.5, x1 - x0 - 1):.1f}" '
            f'height="{frame.py(0) - top:.1f}" fill="{PALETTE[0]}"><title>'
            f"{esc(_fmt(edges[i]))} to {esc(_fmt(edges[i + 1]))}: {count:,}</title></rect>"
        )
        href = hrefs[i] if hrefs else None
        parts.append(f'<a href="{esc(href)}">{bar}</a>' if href and count else bar)
    return _svg(width, height, title, "".join(parts))


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    title: str,
    x_label: str = "",
    width: int = 460,
    height: int = 220,
) -> Raw:
    """One polyline per named series of ``(x, y)`` points, with a legend when several."""
    points = [p for values in series.values() for p in values]
    if not points:
        return _svg(
            width, 60, title, f'<text x="0" y="30" class="muted">{esc(title)}: no data</text>'
        )
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    y_ticks = nice_ticks(min(ys), max(ys), 4)
    frame = _Frame(width, height, (min(xs), max(xs)), (y_ticks[0], y_ticks[-1]))
    if len(series) > 1:  # legend rows under the title
        frame.top = 36 + 14 * ((len(series) - 1) // 3)
    parts = [f'<text x="0" y="14" class="ct">{esc(title)}</text>']
    parts.append(frame.axes(nice_ticks(min(xs), max(xs), 5), y_ticks, x_label))
    for i, (name, values) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        coords = " ".join(f"{frame.px(x):.1f},{frame.py(y):.1f}" for x, y in values)
        parts.append(
            f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="1.8">'
            f"<title>{esc(name)}</title></polyline>"
        )
        if len(values) <= 60:  # markers only where they stay readable
            parts.extend(
                f'<circle cx="{frame.px(x):.1f}" cy="{frame.py(y):.1f}" r="2.5" fill="{colour}">'
                f"<title>{esc(name)} at {esc(_fmt(x))}: {esc(_fmt(y))}</title></circle>"
                for x, y in values
            )
        if len(series) > 1:
            lx = frame.left + (i % 3) * ((width - frame.left) // 3)
            ly = 30 + 14 * (i // 3)
            parts.append(
                f'<rect x="{lx}" y="{ly - 5}" width="12" height="3" fill="{colour}"/>'
                f'<text x="{lx + 16}" y="{ly}" class="legend">{esc(name)}</text>'
            )
    return _svg(width, height, title, "".join(parts))


def grouped_bars(
    groups: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    title: str,
    y_range: tuple[float, float] | None = None,
    width: int = 520,
    height: int = 230,
) -> Raw:
    """For each group (e.g. a checkpoint), one bar per series (e.g. with / without hint)."""
    values = [v for vs in series.values() for v in vs if math.isfinite(v)]
    low, high = y_range or (min([0.0, *values]), max([1.0, *values]))
    y_ticks = nice_ticks(low, high, 4)
    frame = _Frame(width, height, (0, max(1, len(groups))), (y_ticks[0], y_ticks[-1]))
    frame.top = 40  # room for the legend under the title
    parts = [f'<text x="0" y="14" class="ct">{esc(title)}</text>', frame.axes([], y_ticks, "")]
    n = max(1, len(series))
    for g, group in enumerate(groups):
        x0, x1 = frame.px(g) + 6, frame.px(g + 1) - 6
        if x1 - x0 > 48 * n:  # few groups: keep bars narrow and centred
            middle = (x0 + x1) / 2
            x0, x1 = middle - 24 * n, middle + 24 * n
        bar_w = (x1 - x0) / n
        for s, (name, vals) in enumerate(series.items()):
            value = vals[g]
            if not math.isfinite(value):
                continue
            top, base = frame.py(max(value, 0.0)), frame.py(min(value, 0.0))
            parts.append(
                f'<rect x="{x0 + s * bar_w:.1f}" y="{top:.1f}" width="{max(1.0, bar_w - 2):.1f}" '
                f'height="{max(0.5, base - top):.1f}" fill="{PALETTE[s % len(PALETTE)]}">'
                f"<title>{esc(group)}, {esc(name)}: {value:.3f}</title></rect>"
            )
        label = group if len(group) <= 18 else group[:17] + "…"
        parts.append(
            f'<text x="{(x0 + x1) / 2:.1f}" y="{height - 18}" text-anchor="middle">'
            f"{esc(label)}</text>"
        )
    for s, name in enumerate(series):
        x = frame.left + s * 130
        parts.append(
            f'<rect x="{x}" y="22" width="10" height="10" fill="{PALETTE[s % len(PALETTE)]}"/>'
            f'<text x="{x + 14}" y="31" class="legend">{esc(name)}</text>'
        )
    return _svg(width, height, title, "".join(parts))


def colour_scale(value: float, low: float = -1.0, high: float = 1.0) -> str:
    """A diverging colour: blue below the middle of ``[low, high]``, red above; grey for NaN."""
    if not math.isfinite(value):
        return "#b0b0b0"
    t = min(1.0, max(0.0, (value - low) / (high - low))) * 2 - 1  # in [-1, 1]
    end = (178, 24, 43) if t > 0 else (33, 102, 172)
    mid = (235, 235, 235)
    a = abs(t)
    rgb = (round(mid[i] + (end[i] - mid[i]) * a) for i in range(3))
    return "#" + "".join(f"{c:02x}" for c in rgb)


def scatter(
    points: Sequence[tuple[float, float, str, str, str]],
    *,
    title: str,
    legend: Sequence[tuple[str, str]] = (),
    width: int = 900,
    height: int = 620,
) -> Raw:
    """Points ``(x, y, colour, href, label)``; each point is a link with its label as a tooltip."""
    if not points:
        return _svg(
            width, 60, title, f'<text x="0" y="30" class="muted">{esc(title)}: no points</text>'
        )
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    pad_x = (max(xs) - min(xs)) * 0.03 or 1.0
    pad_y = (max(ys) - min(ys)) * 0.03 or 1.0
    frame = _Frame(
        width, height, (min(xs) - pad_x, max(xs) + pad_x), (min(ys) - pad_y, max(ys) + pad_y)
    )
    frame.left, frame.bottom = 12, 12
    frame.right = 170 if legend else 12  # the legend sits beside the plot, not on it
    parts = [f'<text x="{frame.left}" y="14" class="ct">{esc(title)}</text>']
    parts.append(
        f'<rect x="{frame.left}" y="{frame.top}" width="{width - frame.left - frame.right}" '
        f'height="{height - frame.top - frame.bottom}" class="plot"/>'
    )
    # Thousands of points: each distinct colour and link is escaped once, not per point.
    colours = {c: esc(c) for c in {p[2] for p in points}}
    for x, y, colour, href, label in points:
        parts.append(
            f'<a href="{esc(href)}"><circle cx="{frame.px(x):.1f}" cy="{frame.py(y):.1f}" r="4" '
            f'fill="{colours[colour]}" class="pt"><title>{esc(label)}</title></circle></a>'
        )
    for i, (name, colour) in enumerate(legend):
        lx = width - 155
        ly = frame.top + 14 + 15 * i
        parts.append(
            f'<circle cx="{lx}" cy="{ly - 4}" r="5" fill="{esc(colour)}"/>'
            f'<text x="{lx + 10}" y="{ly}" class="legend">{esc(name)}</text>'
        )
    return _svg(width, height, title, "".join(parts), cls="chart map")
