"""The words under `grader scale`'s picture: each curve's fitted growth, what the exercise says it means, the
figures per size, and which design the learner's curve grows like (a catalogued mistake is named by its TITLE).

Everything here is plain text: it says all the picture shows, for a reader who never sees the picture.
"""

from __future__ import annotations

from grader.results.growth import FLOORS, Growth, fit_growth
from grader.results.scale import ScaleRun, Series

MEASURE_NAMES = {"memory": "peak memory", "time": "time", "traffic": "bytes each rank moved"}
OWN_NAMES = {"memory": "peak memory", "time": "time", "traffic": "ranks' traffic"}  # "Your ranks' traffic is flat"
WHAT = {"memory": "the most held at once, counted by the kernel, above what torch and your import hold",
        "time": "one call, the best of up to 5", "traffic": "counted by the kernel on the ranks' own loopback"}
CUDA_WHAT = {"memory": "torch's allocator peak on CUDA (max_memory_allocated)", "time": "one call, CUDA events"}
SAME = 1.15  # figures this close at every size are one figure ("2.0x one all-reduce at every size")


def label(series: Series, run: ScaleRun) -> str:
    """A design's short name in tables and charts: yours, reference, naive (naive 2, ... for more)."""
    naive = [other for other in run.series if other.design.naive]
    if not series.design.naive:
        return series.design.key
    return "naive" if len(naive) == 1 else f"naive {naive.index(series) + 1}"


def growth_of(series: Series, measure: str, run: ScaleRun) -> Growth | None:
    """The fitted growth of one design's curve of `measure` (None: fewer than 3 sizes measured)."""
    sizes = [point.size for point in series.points]
    return fit_growth(sizes, [point.value(measure) for point in series.points], FLOORS[measure])


def figure(value: float | None, measure: str, run: ScaleRun) -> str:
    """One figure as the tables show it: '4.1 MiB', '12.3 ms', '2.0x' (or bytes per rank without a unit)."""
    if value is None:
        return "-"
    if measure == "memory" or (measure == "traffic" and not run.unit_name):
        for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if value >= scale:
                return f"{value / scale:.1f} {unit}"
        return f"{value:.0f} B"
    if measure == "time":
        return f"{value:.2f} s" if value >= 1 else f"{value * 1000:.1f} ms" if value >= 1e-3 else \
            f"{value * 1e6:.0f} us"
    return f"{value:.1f}x" if value < 100 else f"{value:.0f}x"


def size_name(value: float) -> str:
    """A size as the axis shows it: 1k, 256k, 1.5M, 512."""
    for suffix, scale in (("M", 1 << 20), ("k", 1 << 10)):
        if value >= scale and (value / scale) == int(value / scale):
            return f"{int(value / scale)}{suffix}"
    return f"{value:g}"


def sentence(series: Series, measure: str, run: ScaleRun) -> str:
    """'grows linearly with the keys (n^0.97): every score block is kept (0.2 MiB to 37 MiB)'."""
    values = [value for point in series.points if (value := point.value(measure)) is not None]
    if not values:
        return series.ended or "not measured"
    growth = growth_of(series, measure, run)
    spread = _spread(values, measure, run)
    if growth is None:
        return f"{spread} (too few sizes for a growth)"
    said = run.spec.says.get(measure, {}).get(growth.label, "")
    axis = run.spec.axis
    if growth.label == "noisy":
        return f"{growth.words(axis)}: its figures scatter more than any curve explains ({spread})"
    if measure == "traffic":
        words = f"({growth.label})" if growth.label == "flat" else f", {growth.growing(axis)}" + (
            f" ({growth.shown})" if growth.shown else "")
        return f"each rank moves {spread}{' ' if growth.label == 'flat' else ''}{words}" + (f": {said}" if said else "")
    if said:
        return f"{growth.words(axis)}" + (f" ({growth.shown})" if growth.shown else "") + f": {said} ({spread})"
    return f"{growth.words(axis)} (" + (f"{growth.shown}, " if growth.shown else "") + f"{spread})"


def _spread(values: list[float], measure: str, run: ScaleRun) -> str:
    low, high = min(values), max(values)
    unit = f" {run.unit_name}" if measure == "traffic" and run.unit_name else ""
    if low > 0 and high / low <= SAME and measure == "traffic":
        return f"{figure(sum(values) / len(values), measure, run)}{unit} at every size"
    first, last = figure(values[0], measure, run), figure(values[-1], measure, run)
    return f"{first} to {last}{unit}" if first != last else f"{first}{unit}"


def resemblance(run: ScaleRun, measure: str) -> str:
    """Which design the learner's curve grows like: the reference, a catalogued mistake (by TITLE), or neither."""
    mine = next((series for series in run.series if series.design.key == "yours"), None)
    found = growth_of(mine, measure, run) if mine is not None else None
    if found is None:
        return ""
    others = {series.design.key: (series, growth_of(series, measure, run)) for series in run.series
              if series is not mine}
    reference = others.get("reference", (None, None))[1]
    name, axis = OWN_NAMES[measure], run.spec.axis
    if found.label == "noisy":
        return f"Your {name} {found.words(axis)}: measure again on a quieter machine."
    if reference is not None and reference.label == found.label:
        return f"Your {name} is flat, as the reference's is." if found.label == "flat" else \
            f"Your {name} {found.words(axis)}, as the reference's does."
    for key, (series, growth) in others.items():
        if series.design.naive and growth is not None and growth.label == found.label:
            told = f" {series.design.help}" if series.design.help else ""
            return (f"Your {name} {'is flat' if found.label == 'flat' else found.words(axis)} as the catalogue's "
                    f"\"{series.design.title}\" does, not as the reference's.{told}")
    if reference is not None:
        return f"Your {name} {found.words(axis)}; the reference's {reference.words(axis)}."
    return ""


def table(run: ScaleRun, measure: str) -> list[str]:
    """The figures per size, one row per design."""
    shown = [series for series in run.series if series.points]
    if not shown:
        return []
    width = max(len(label(series, run)) for series in shown) + 2
    columns = [size_name(size) for size in run.sizes]
    cells = {id(series): {point.size: figure(point.value(measure), measure, run) for point in series.points}
             for series in shown}
    step = max([len(column) for column in columns]
               + [len(cell) for row in cells.values() for cell in row.values()]) + 2
    lines = [" " * (width + 2) + "".join(column.rjust(step) for column in columns) + f"  {run.spec.axis}"]
    for series in shown:
        row = cells[id(series)]
        lines.append(f"  {label(series, run):<{width}}" + "".join(row.get(size, "").rjust(step)
                                                                  for size in run.sizes))
    return lines


def words(run: ScaleRun) -> list[str]:
    """Every line under the picture: per measure its table, each design's growth and the resemblance; then who
    stopped short and why."""
    lines: list[str] = []
    what = CUDA_WHAT if run.device == "cuda" else WHAT
    for measure in run.spec.measures:
        unit = f", in {run.unit_name}" if measure == "traffic" and run.unit_name else ""
        lines.append(f"{MEASURE_NAMES[measure]} ({what.get(measure, WHAT[measure])}{unit}):")
        lines += table(run, measure)
        for series in run.series:
            lines.append(f"  {label(series, run)}: {sentence(series, measure, run)}")
        close = resemblance(run, measure)
        if close:
            lines.append(close)
        lines.append("")
    naive = [series for series in run.series if series.design.naive]
    for series in naive:
        lines.append(f"{label(series, run)}: the catalogue's \"{series.design.title}\" ({series.design.key}).")
    for series in run.series:
        if series.ended and series.points:
            lines.append(f"{label(series, run)}: no figure past {size_name(series.points[-1].size)} "
                         f"{run.spec.axis}: {series.ended}.")
        elif series.ended:
            lines.append(f"{label(series, run)}: nothing measured: {series.ended}.")
    if run.stopped:
        lines.append(run.stopped + ".")
    return lines
