"""How far a submission's outputs are from a catalogued mistake's, in units of the case's error bound.

The diagnosis compares one set of outputs with every mistake's, and `grader validate`'s matrix
compares every mistake with every other on every case: tens of thousands of comparisons. So each
set of outputs is brought to float64 once, with its finite values and the rest set apart, and each
output's bound is worked out once per case; a comparison is then one subtraction per output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from grader.grading import compare


@dataclass
class Output:
    """One output, ready to compare: float64 values, which are finite, the non-finite ones (NaN as 0)."""

    shape: torch.Size
    dtype: torch.dtype
    values: torch.Tensor
    finite: torch.Tensor
    finite_values: torch.Tensor
    others: torch.Tensor
    top: float  # the largest finite magnitude (0 when nothing is finite)


def prepared(outputs: list[torch.Tensor | None] | None) -> list[Output | None] | None:
    """Each tensor of `outputs` made ready to compare (None stays None: it agrees with nothing)."""
    if outputs is None:
        return None
    found: list[Output | None] = []
    for tensor in outputs:
        if tensor is None:
            found.append(None)
            continue
        values = tensor.detach().cpu().to(torch.float64)
        finite = torch.isfinite(values)
        kept = values[finite]
        found.append(Output(tensor.shape, tensor.dtype, values, finite, kept, values[~finite].nan_to_num(),
                            float(kept.abs().max()) if kept.numel() else 0.0))
    return found


class Bounds:
    """The case's error bound on each output, worked out once: `for_mistake` grows it to a mistake's scale."""

    def __init__(self, expected: tuple, baseline: tuple | None, dtype: torch.dtype, tolerance: Any) -> None:
        self.expected, self.baseline, self.dtype, self.tolerance = expected, baseline, dtype, tolerance
        self._known: dict[int, tuple[float, float]] = {}

    def for_mistake(self, index: int, theirs: Output) -> float:
        if index < len(self.expected):
            if index not in self._known:
                self._known[index] = self._bound(self.expected[index], index)
            bound, top = self._known[index]
        else:
            bound, top = self._bound(theirs.values, index)  # no expected value: the mistake's own is the scale
        # Grown to the mistake's own scale: a wrong answer can be far larger than the right one.
        return bound * max(1.0, max(theirs.top, compare.TINY) / top)

    def _bound(self, want: torch.Tensor, index: int) -> tuple[float, float]:
        """The bound on `want` and its largest magnitude."""
        base = self.baseline[index] if self.baseline is not None and index < len(self.baseline) else None
        return (compare.error_bound(want, self.dtype, base, self.tolerance),
                max(float(want.abs().max()) if want.numel() else 0.0, compare.TINY))


def distance(mine: list[Output | None], theirs: list[Output | None] | None, bounds: Bounds) -> float:
    """The largest error between two sets of outputs, in units of the case's bound; inf if they are unlike."""
    if theirs is None or len(mine) != len(theirs):
        return math.inf
    worst = 0.0
    for index, (a, b) in enumerate(zip(mine, theirs)):
        if a is None or b is None or a.shape != b.shape or a.dtype != b.dtype:
            return math.inf
        if not torch.equal(a.finite, b.finite) or not torch.equal(a.others, b.others):
            return math.inf
        error = float((a.finite_values - b.finite_values).abs().max()) if a.finite_values.numel() else 0.0
        worst = max(worst, error / bounds.for_mistake(index, b))
    return worst
