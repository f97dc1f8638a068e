"""SVG charts: well-formed, escaped, and drawing what they are given."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_envs.web.charts import (
    bar_chart,
    colour_scale,
    grouped_bars,
    histogram,
    line_chart,
    nice_ticks,
    scatter,
)

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # raises on malformed XML (e.g. an unescaped "<")


def test_bar_chart_escapes_labels_and_links_bars():
    root = parse(bar_chart([("<script>", 3, "/envs?skill=x&y=1"), ("b", 1, None)], title="t&t"))
    texts = [t.text for t in root.iter(SVG + "text")]
    assert "<script>" in texts and "t&t" in texts
    links = list(root.iter(SVG + "a"))
    assert [a.get("href") for a in links] == ["/envs?skill=x&y=1"]
    widths = [float(r.get("width")) for r in root.iter(SVG + "rect")]
    assert widths[0] == pytest.approx(3 * widths[1], abs=0.2)  # rounded to 0.1 px


def test_histogram_bar_heights_follow_counts():
    root = parse(histogram([1, 4, 0, 2], [0, 0.25, 0.5, 0.75, 1.0], title="h"))
    rects = list(root.iter(SVG + "rect"))
    heights = [float(r.get("height")) for r in rects]
    assert heights[1] == pytest.approx(4 * heights[0], rel=0.01)
    assert heights[3] == pytest.approx(2 * heights[0], rel=0.01)
    titles = [r.find(SVG + "title").text for r in rects]
    assert titles[1] == "0.25 to 0.5: 4"
    with pytest.raises(ValueError, match="one more edge"):
        histogram([1], [0, 1, 2], title="bad")


def test_line_chart_draws_one_polyline_per_series_in_order():
    series = {"with hint": [(0, 0.1), (1, 0.5), (2, 0.9)], "without": [(0, 0.0), (2, 0.2)]}
    root = parse(line_chart(series, title="returns", x_label="iteration"))
    lines = list(root.iter(SVG + "polyline"))
    assert [line.find(SVG + "title").text for line in lines] == ["with hint", "without"]
    points = [tuple(map(float, p.split(","))) for p in lines[0].get("points").split()]
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    assert xs == sorted(xs) and ys == sorted(ys, reverse=True)  # SVG y grows downwards
    assert "no data" in line_chart({}, title="empty")


def test_grouped_bars_and_scatter_are_well_formed():
    root = parse(
        grouped_bars(["c0", "c1"], {"a": [0.5, float("nan")], "b": [-0.2, 1.0]}, title="g")
    )
    assert len([r for r in root.iter(SVG + "rect") if r.find(SVG + "title") is not None]) == 3
    points = [
        (0.0, 0.0, "#000", "/env/A-v1", "A <1>"),
        (1.0, 2.0, colour_scale(0.5), "/env/B-v1", "B"),
    ]
    root = parse(scatter(points, title="map", legend=[("x", "#fff")]))
    hrefs = [a.get("href") for a in root.iter(SVG + "a")]
    assert hrefs == ["/env/A-v1", "/env/B-v1"]


def test_colour_scale_is_diverging_and_grey_for_missing():
    assert colour_scale(float("nan")) == "#b0b0b0"
    assert colour_scale(0.0) == "#ebebeb"
    red, blue = colour_scale(1.0), colour_scale(-1.0)
    assert int(red[1:3], 16) > int(red[5:7], 16) and int(blue[5:7], 16) > int(blue[1:3], 16)


@given(st.floats(-1e6, 1e6), st.floats(0.001, 1e6))
def test_nice_ticks_cover_the_range(low, span):
    ticks = nice_ticks(low, low + span)
    assert ticks[0] <= low + 1e-9 * abs(low) and ticks[-1] >= (low + span) - 1e-9 * abs(low + span)
    assert 2 <= len(ticks) <= 50
