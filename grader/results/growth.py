"""How a measured curve grows with the size: a fit of a + b * n^k, and the growth it names (flat, linear, ...).

A measure has a fixed cost that does not grow (a call's set-up, the allocator's own pages, one collective's
framing), so a straight line through log-log points bends at the small sizes and reads a linear curve as
slower than it is. The fit keeps that constant apart: for each exponent k on a fine grid it finds the best
a >= 0 and b >= 0 (least squares on relative errors, so that the small sizes count as much as the large), and
keeps the k whose fit is closest. A curve whose whole rise is within the measure's floor (what it cannot tell
from nothing: a few MiB of a process's own bookkeeping, a few milliseconds of a busy machine), or within
FLAT_SHARE of its middle value, is flat, whatever its exponent would be.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


# Every growth a curve can be named by, slowest first (exercise.yaml's `scale.says` keys words to them).
GROWTHS = ("flat", "slowly", "sqrt", "linear", "n^1.5", "quadratic", "cubic")
FLAT_SHARE = 0.25  # a rise within this share of the middle value is flat
# The exponents each name covers, from (inclusive) to (exclusive): a measured linear curve often fits at 1.2 to 1.3,
# its small sizes dominated by a fixed cost; one that rises past its floor below 0.25 grows "slowly".
BANDS = ((0.0, 0.25, "slowly"), (0.25, 0.7, "sqrt"), (0.7, 1.35, "linear"), (1.35, 1.7, "n^1.5"),
         (1.7, 2.4, "quadratic"), (2.7, 3.3, "cubic"))
GRID = [step / 100 for step in range(5, 401)]
MIN_POINTS = 3
# What each measure cannot tell from nothing: a process's own bookkeeping moves its peak by a few MiB (the
# sandbox maps each input on pages of its own: about 16 KiB an input tensor), a busy machine a call by a few ms.
FLOORS = {"time": 2e-3, "memory": 8.0 * (1 << 20), "traffic": 0.0}
WORDS = {"flat": "flat", "slowly": "grows slowly with the {axis}", "sqrt": "grows as the square root of the {axis}",
         "linear": "grows linearly with the {axis}", "n^1.5": "grows as the {axis} to the power 1.5",
         "quadratic": "grows quadratically with the {axis}", "cubic": "grows as the cube of the {axis}"}
NOISY = 0.25  # a best fit this far off its points (relative, root mean square) shows no clear growth
WORDS["noisy"] = "shows no clear growth with the {axis}"
assert set(WORDS) == {*GROWTHS, "noisy"}


@dataclass(frozen=True)
class Growth:
    """A fitted curve: its exponent k in a + b * n^k (0 when flat) and the name of its growth."""

    exponent: float
    label: str  # one of GROWTHS, or "n^K" for an exponent between the named ones

    def words(self, axis: str) -> str:
        """'flat', 'grows linearly with the keys', 'grows as the keys to the power 2.6'."""
        if self.label in WORDS:
            return WORDS[self.label].format(axis=axis)
        return f"grows as the {axis} to the power {self.exponent:.1f}"

    def growing(self, axis: str) -> str:
        """The same words to follow a figure: 'growing linearly with the keys'; 'flat' stays 'flat'."""
        words = self.words(axis)
        return "growing" + words[len("grows"):] if words.startswith("grows ") else words

    @property
    def shown(self) -> str:
        """The exponent as the words give it beside the name: 'n^0.98'; '' when flat or noisy."""
        return "" if self.label in ("flat", "noisy") else f"n^{self.exponent:.2f}"


def fit_growth(sizes: list[float], values: list[float | None], floor: float = 0.0) -> Growth | None:
    """The growth of `values` measured at `sizes` (a None is a size not measured); None with fewer than 3 points.

    `floor`: the least rise the measure can tell from noise."""
    points = [(float(x), float(y)) for x, y in zip(sizes, values) if y is not None and x > 0 and math.isfinite(y)]
    if len(points) < MIN_POINTS:
        return None
    ys = sorted(y for _, y in points)
    middle = ys[len(ys) // 2]
    rise = _rise(points)
    if rise <= max(floor, FLAT_SHARE * abs(middle)):
        return Growth(0.0, "flat")
    exponent, error = _best_exponent(points, floor)
    return Growth(exponent, "noisy" if error > NOISY else _name(exponent))


def _rise(points: list[tuple[float, float]]) -> float:
    """How far the curve climbs from its lowest point to its highest after it (a fall is not growth)."""
    lowest, rise = math.inf, 0.0
    for _, y in points:
        lowest = min(lowest, y)
        rise = max(rise, y - lowest)
    return rise


def _name(exponent: float) -> str:
    return next((name for low, high, name in BANDS if low <= exponent < high), f"n^{exponent:.1f}")


def _best_exponent(points: list[tuple[float, float]], floor: float) -> tuple[float, float]:
    """The k of the closest a + b * n^k (a, b >= 0), by weighted least squares at each k of the grid, and how far
    that fit is from the points (relative, root mean square)."""
    top = max(x for x, _ in points)
    # Relative errors: each point weighs as 1 / its value, never less than the floor (or a tiny share of the top).
    largest = max(abs(y) for _, y in points)
    weights = [1.0 / max(abs(y), floor, 1e-9 * largest, 1e-300) ** 2 for _, y in points]
    best, best_error = GRID[0], math.inf
    for k in GRID:
        f = [(x / top) ** k for x, _ in points]
        error = _fit_error(f, [y for _, y in points], weights)
        if error < best_error - 1e-15:
            best, best_error = k, error
    return best, math.sqrt(best_error / len(points))


def _fit_error(f: list[float], y: list[float], w: list[float]) -> float:
    """The weighted squared error of the best a + b * f with a >= 0 and b >= 0."""
    sw = sum(w)
    sf = sum(wi * fi for wi, fi in zip(w, f))
    sy = sum(wi * yi for wi, yi in zip(w, y))
    sff = sum(wi * fi * fi for wi, fi in zip(w, f))
    sfy = sum(wi * fi * yi for wi, fi, yi in zip(w, f, y))
    determinant = sw * sff - sf * sf
    candidates = []
    if determinant > 0:
        b = (sw * sfy - sf * sy) / determinant
        a = (sy - b * sf) / sw
        if a >= 0 and b >= 0:
            candidates.append((a, b))
    if sff > 0:
        candidates.append((0.0, max(sfy / sff, 0.0)))  # no constant
    candidates.append((max(sy / sw, 0.0), 0.0))        # nothing that grows
    return min(sum(wi * (yi - a - b * fi) ** 2 for wi, fi, yi in zip(w, f, y)) for a, b in candidates)
