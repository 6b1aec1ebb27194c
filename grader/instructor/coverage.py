"""Which ranges the statement promises (exercise.yaml's `promises`) no case covers: validate's coverage check.

A case covers a promised range in a dtype when the argument the promises are about arrives in that
dtype and every one of its values lies within the range, clipped to what the dtype holds: a slice
whose every score is far below zero is then a case of its own, not one row of an ordinary case. The
check fails on a range some dtype can hold that no case covers there, and names each, so that an
exercise whose statement says "any scores" is held to cases far below and far above zero in every
dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from grader.course.cases import Case
from grader.course.checker import DTYPES, tensors
from grader.course.promises import Promise, Promises
from grader.errors import ConfigError
from grader.grading.case import Judge
from grader.results.validation import Check


@dataclass(frozen=True)
class Seen:
    """The values of the promised argument in one case: their dtype and the lowest and highest of them."""

    case: str
    dtype: str
    low: float
    high: float


def coverage_check(judge: Judge, cases: list[Case]) -> Check | None:
    """'every promised range is covered by a case', failed with the ranges none covers; None without promises."""
    promises = judge.exercise.promises
    if promises is None:
        return None
    promises.check_names(judge.checker.functions)
    seen = seen_values(judge, promises, cases)
    missing, asked = [], 0
    for promise in promises.ranges:
        for dtype, (low, high) in wanted(promise, promises).items():
            asked += 1
            if not any(item.dtype == dtype and low <= item.low and item.high <= high for item in seen):
                missing.append(f"{promise.about} in {dtype} ([{low:g}, {high:g}])")
    if missing:
        return Check("every promised range is covered by a case", False, "no case covers: " + "; ".join(missing))
    return Check("every promised range is covered by a case", True,
                 f"{len(promises.ranges)} ranges, {asked} with their dtypes, each by a case of "
                 f"{promises.function}.{promises.argument}")


def wanted(promise: Promise, promises: Promises) -> dict[str, tuple[float, float]]:
    """dtype -> the range clipped to what the dtype holds, for each dtype the promise is asked of: those it names
    (ConfigError if one of them holds no value of the range), else every dtype that holds some of it."""
    found = {}
    for name in promise.dtypes or tuple(DTYPES):
        largest = float(torch.finfo(DTYPES[name]).max)
        low, high = max(promise.low, -largest), min(promise.high, largest)
        if low <= high:
            found[name] = (low, high)
        elif promise.dtypes:
            raise ConfigError(f"promises: ranges: {promise.about}: {name} holds no value of "
                              f"[{promise.low:g}, {promise.high:g}] (its largest is {largest:g})", promises.path,
                              promise.line)
    return found


def seen_values(judge: Judge, promises: Promises, cases: list[Case]) -> list[Seen]:
    """The promised argument's dtype and range of values in each case of the promised function, as the checker
    builds its inputs (prepared once per process, as grading prepares them)."""
    position = judge.checker.functions[promises.function].arguments.index(promises.argument)
    found = []
    for case in cases:
        if case.function != promises.function:
            continue
        inputs = judge.prepare(case)[0]
        given = list(tensors(inputs.args[position])) if position < len(inputs.args) else []
        values = [tensor.detach().to(torch.float64).flatten() for tensor in given if tensor.is_floating_point()]
        if not values or len({tensor.dtype for tensor in given}) != 1:
            continue
        every = torch.cat(values)
        every = every[torch.isfinite(every)]
        dtype = next((name for name, kind in DTYPES.items() if kind == given[0].dtype), None)
        if every.numel() and dtype is not None:
            found.append(Seen(case.name, dtype, float(every.min()), float(every.max())))
    return found
