"""`grader scale`'s curves in the terminal: one log-log chart per measure, a letter per design, drawn with rich.

Three curves of at most six points each are a grid of characters: each point is its design's letter, the
segments between are dots in its colour, the axes are labelled at the lowest, middle and highest figure and at
every size. Rich, which the grader already prints with, colours it and writes no escape code where NO_COLOR is
set or the output is piped, which a plotting library's own colours would not follow.
"""

from __future__ import annotations

import math

from rich.console import Console
from rich.text import Text

from grader.results.growth import FLOORS
from grader.results.scale import ScaleRun, Series
from grader.report.scale_words import MEASURE_NAMES, figure, label, size_name

HEIGHT = 11
MAX_WIDTH = 72
STYLES = {"yours": "bold cyan", "reference": "green", "naive": "red"}
LETTERS = {"yours": "Y", "reference": "R"}


def letter(series: Series, run: ScaleRun) -> str:
    """The design's mark: Y yours, R reference, N (then M, L, ...) for each naive design."""
    if series.design.key in LETTERS:
        return LETTERS[series.design.key]
    naive = [other for other in run.series if other.design.naive]
    return "NMLK"[naive.index(series) % 4]


def chart(run: ScaleRun, measure: str, width: int) -> list[Text]:
    """One measure's chart as lines of styled text (empty without two figures to draw)."""
    curves = [(series, [(p.size, v) for p in series.points if (v := p.value(measure)) is not None and v > 0])
              for series in run.series]
    values = [v for _, points in curves for _, v in points]
    if len(values) < 2:
        return []
    low, high = min(values), max(values)
    if high / low < 4:  # a flat set of curves still gets room: at least a factor of 4 on the axis
        middle = math.sqrt(high * low)
        low, high = middle / 2, middle * 2
    labels = [figure(value, measure, run) for value in (high, math.sqrt(high * low), low)]
    margin = max(len(text) for text in [*labels, *([figure(FLOORS[measure], measure, run)]
                                                   if measure == "memory" else [])]) + 1
    columns = max(24, min(width, MAX_WIDTH) - margin - 2)
    sizes = run.sizes
    x_of = lambda size: round((math.log(size / sizes[0]) / math.log(sizes[-1] / sizes[0])) * (columns - 1))  # noqa
    y_of = lambda value: round((math.log(value / low) / math.log(high / low)) * (HEIGHT - 1))  # noqa: E731
    grid: list[list[tuple[str, str]]] = [[(" ", "")] * columns for _ in range(HEIGHT)]
    floor = FLOORS[measure] if measure == "memory" else 0.0  # time's floor only keeps the fit from noise
    floor_row = y_of(floor) if low < floor < high else None
    if floor_row is not None:  # the measure's noise floor: a curve that stays under it is flat
        grid[floor_row] = [("╌", "muted")] * columns
    # Drawn naive first, yours last: where two meet, yours shows.
    for series, points in sorted(curves, key=lambda item: {"yours": 2, "reference": 1}.get(item[0].design.key, 0)):
        style = STYLES["naive" if series.design.naive else series.design.key]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            a, b = (x_of(x0), y_of(y0)), (x_of(x1), y_of(y1))
            steps = max(abs(b[0] - a[0]), abs(b[1] - a[1]), 1)
            for step in range(1, steps):
                column = round(a[0] + (b[0] - a[0]) * step / steps)
                row = round(a[1] + (b[1] - a[1]) * step / steps)
                if grid[row][column][0] in " ╌":
                    grid[row][column] = ("·", style)
        for size, value in points:
            grid[y_of(value)][x_of(size)] = (letter(series, run), style)
    lines = []
    for row in range(HEIGHT - 1, -1, -1):
        ticks = {HEIGHT - 1: labels[0], (HEIGHT - 1) // 2: labels[1], 0: labels[2]}
        if floor_row is not None:
            ticks[floor_row] = figure(floor, measure, run)
        tick = ticks.get(row, "")
        line = Text(tick.rjust(margin) + " ┤" if tick else " " * margin + " │", style="muted")
        for mark, style in grid[row]:
            line.append(mark, style=style or None)
        lines.append(line)
    lines.append(Text(" " * margin + " └" + "─" * columns, style="muted"))
    axis = [" "] * (columns + 8)
    for size in sizes:
        name = size_name(size)
        start = min(max(x_of(size) - len(name) // 2, 0), columns + 8 - len(name))
        axis[start:start + len(name)] = list(name)
    lines.append(Text(" " * (margin + 2) + "".join(axis).rstrip() + f"  {run.spec.axis}", style="muted"))
    return lines


def legend(run: ScaleRun) -> Text:
    """'Y yours   R reference   N naive (the mistake's title)': who each letter and line is."""
    line = Text()
    for series in run.series:
        style = STYLES["naive" if series.design.naive else series.design.key]
        if line:
            line.append("   ")
        line.append(letter(series, run), style=style)
        name = label(series, run)
        line.append(f" {name}" + (f" ({series.design.title})" if series.design.naive else ""))
    if "memory" in run.spec.measures:
        line.append("   ")
        line.append("╌", style="muted")
        line.append(" the measure's noise floor")
    return line


def draw(console: Console, run: ScaleRun) -> None:
    """Every measure's chart, each under its name, then the legend once."""
    drawn = False
    for measure in run.spec.measures:
        lines = chart(run, measure, console.width)
        if not lines:
            continue
        unit = f" (in {run.unit_name})" if measure == "traffic" and run.unit_name else ""
        console.print(Text(f"{MEASURE_NAMES[measure]}{unit}, log-log", style="heading"))
        for line in lines:
            console.print(line, overflow="crop", no_wrap=True)
        drawn = True
    if drawn:
        console.print(legend(run))
        console.print()
