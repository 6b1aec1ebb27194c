"""`grader scale`'s picture as an SVG file: one log-log panel per measure, a polyline and dots per design.

Written by hand: a few polylines, circles, axes and labels are a page of XML, and no plotting library light
enough to install beside the grader draws them (matplotlib alone is larger than the rest of its dependencies
but torch). Every text is escaped, the mistake titles included.
"""

from __future__ import annotations

import math
from pathlib import Path
from xml.sax.saxutils import escape

from grader.files import write_atomic
from grader.results.scale import ScaleRun
from grader.results.growth import FLOORS
from grader.report.scale_words import MEASURE_NAMES, OWN_NAMES, figure, growth_of, label, size_name

PANEL_W, PANEL_H = 440, 300
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 50
LEGEND_H = 22
COLOURS = {"yours": "#1f77b4", "reference": "#2ca02c"}
NAIVE_COLOURS = ("#d62728", "#ff7f0e", "#9467bd", "#8c564b")
ORDER = {"reference": 1, "yours": 2}  # drawn naive first, yours last
CHAR_W = 6.6  # roughly what a character of the 12 px sans-serif takes, for the legend's width


def colour(run: ScaleRun, index: int) -> str:
    """The colour of the `index`-th design: yours blue, the reference green, the naive ones red, orange, ..."""
    series = run.series[index]
    if series.design.key in COLOURS:
        return COLOURS[series.design.key]
    naive = [other for other in run.series if other.design.naive]
    return NAIVE_COLOURS[naive.index(series) % len(NAIVE_COLOURS)]


def _panel(run: ScaleRun, measure: str, left: float) -> list[str]:
    """One measure's axes, ticks and curves, its top left corner at x = `left`."""
    plot_w, plot_h = PANEL_W - LEFT - RIGHT, PANEL_H - TOP - BOTTOM
    x0, y0 = left + LEFT, TOP + plot_h
    values = [v for series in run.series for p in series.points if (v := p.value(measure)) is not None and v > 0]
    unit = f" (in {run.unit_name})" if measure == "traffic" and run.unit_name else ""
    out = [f'<text x="{left + PANEL_W / 2:.1f}" y="22" text-anchor="middle" font-weight="bold">'
           f'{escape(MEASURE_NAMES[measure] + unit)}</text>',
           f'<rect x="{x0}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#888"/>']
    if not values:
        out.append(f'<text x="{x0 + plot_w / 2:.1f}" y="{TOP + plot_h / 2:.1f}" text-anchor="middle">'
                   f'nothing measured</text>')
        return out
    low, high = min(values), max(values)
    if high / low < 4:
        middle = math.sqrt(high * low)
        low, high = middle / 2, middle * 2
    sizes = run.sizes

    def x_of(size: float) -> float:
        return x0 + math.log(size / sizes[0]) / math.log(sizes[-1] / sizes[0]) * plot_w

    def y_of(value: float) -> float:
        return y0 - math.log(value / low) / math.log(high / low) * plot_h

    for size in sizes:
        x = x_of(size)
        out.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y0 + 5}" stroke="#888"/>')
        out.append(f'<text x="{x:.1f}" y="{y0 + 18}" text-anchor="middle">{escape(size_name(size))}</text>')
    out.append(f'<text x="{x0 + plot_w / 2:.1f}" y="{y0 + 38}" text-anchor="middle">{escape(run.spec.axis)} '
               f'(log)</text>')
    for value in (low, math.sqrt(low * high), high):
        y = y_of(value)
        out.append(f'<line x1="{x0 - 5}" y1="{y:.1f}" x2="{x0}" y2="{y:.1f}" stroke="#888"/>')
        out.append(f'<text x="{x0 - 8}" y="{y + 4:.1f}" text-anchor="end">{escape(figure(value, measure, run))}'
                   f'</text>')
    floor = FLOORS[measure] if measure == "memory" else 0.0  # time's floor only keeps the fit from noise
    if floor > low:  # what the measure cannot tell from nothing, shaded: a curve inside it is flat
        top = y_of(min(floor, high))
        out.append(f'<rect x="{x0}" y="{top:.1f}" width="{plot_w}" height="{y0 - top:.1f}" fill="#eee"/>')
        out.append(f'<text x="{x0 + 6}" y="{top + 14:.1f}" fill="#777" font-size="10">below '
                   f'{escape(figure(floor, measure, run))}: the measure\'s noise</text>')
    # Yours last, dashed: drawn over a design it matches, both still show.
    for index in sorted(range(len(run.series)), key=lambda i: ORDER.get(run.series[i].design.key, 0)):
        series = run.series[index]
        points = [(x_of(p.size), y_of(v)) for p in series.points if (v := p.value(measure)) is not None and v > 0]
        if not points:
            continue
        stroke = colour(run, index)
        growth = growth_of(series, measure, run)
        title = f"{label(series, run)}: {growth.words(run.spec.axis)}" if growth else label(series, run)
        dashes = ' stroke-dasharray="6 4"' if series.design.key == "yours" else ""
        out.append(f'<g><title>{escape(title)}</title>')
        out.append(f'<polyline fill="none" stroke="{stroke}" stroke-width="2"{dashes} points='
                   f'"{" ".join(f"{x:.1f},{y:.1f}" for x, y in points)}"/>')
        out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{stroke}"/>' for x, y in points]
        out.append("</g>")
    return out


def render(run: ScaleRun) -> str:
    """The whole picture: the panels side by side, a legend and a caption under them."""
    measures = list(run.spec.measures)
    legend = []
    for series in run.series:
        name = label(series, run) + (f": {series.design.title}" if series.design.naive else "")
        words = "; ".join(f"{OWN_NAMES[m]} {g.words(run.spec.axis)}" for m in measures
                          if (g := growth_of(series, m, run)) is not None)
        legend.append(name + (f" - {words}" if words else f" - {series.ended}" if series.ended else ""))
    caption = f"{run.exercise}: {run.spec.function} on {run.device}, {len(run.series)} designs"
    longest = max(len(line) for line in [*legend, caption, run.stopped])
    width = max(PANEL_W * len(measures), round(LEFT + 22 + CHAR_W * longest + RIGHT))
    rows = len(run.series) + 1 + bool(run.stopped)
    height = PANEL_H + LEGEND_H * rows + 10
    body = [f'<rect width="{width}" height="{height}" fill="white"/>']
    for index, measure in enumerate(measures):
        body += _panel(run, measure, index * PANEL_W)
    y = PANEL_H + 14
    for index, line in enumerate(legend):
        body.append(f'<rect x="{LEFT}" y="{y - 10}" width="14" height="4" fill="{colour(run, index)}"/>')
        body.append(f'<text x="{LEFT + 22}" y="{y}">{escape(line)}</text>')
        y += LEGEND_H
    body.append(f'<text x="{LEFT}" y="{y}" fill="#555">{escape(caption)}</text>')
    if run.stopped:
        body.append(f'<text x="{LEFT}" y="{y + LEGEND_H}" fill="#a00">{escape(run.stopped)}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">\n'
            f'<title>{escape(caption)}</title>\n' + "\n".join(body) + "\n</svg>\n")


def write(run: ScaleRun, path: Path) -> Path:
    """Write the picture to `path` (its folder made if need be) and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, render(run))
    return path
