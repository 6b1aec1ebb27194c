"""The course's answers checked before they judge anyone: what `expected()` returns and the half-precision baseline.

An answer that is NaN or Inf (a tensor divided by an integer 0 raises nothing), of another dtype than float64,
not one tensor per declared output, or of another shape than the checker declares (`output_shapes`), would make
every learner fail, or pass, for the course's own bug. It is refused as the course's: CourseBroken, "the course
is broken: exercises/EX/checker.py:LINE (case NAME: expected() returned NaN at [i, j])", so that the run is not
graded, never scored. A case whose exact answer does hold NaN or Inf says so (`nonfinite_answer: true`); an output
must then hold the same there (grader/grading/compare.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import CodeType
from typing import Any, Callable

import torch

from grader import PACKAGE
from grader.channel.wire import dtype_name
from grader.course.blame import shown
from grader.course.cases import Case
from grader.course.checker import Checker
from grader.errors import CourseBroken


def check_answers(judge: Any, case: Case, inputs: Any, expected: Any, baseline: Any) -> None:
    """Raise CourseBroken, naming the checker's line and the case, unless `expected` (and the half-precision
    `baseline`) are answers a learner can be judged against."""
    checker, exercise = judge.checker, judge.exercise
    names = checker.functions[case.function].outputs
    problem = _expected_problem(checker, case, inputs, expected, names)
    if problem:
        method = getattr(checker, "expected")
        raise CourseBroken(f"{_where(method, (case.function, inputs), exercise.root, exercise.checker)} "
                           f"(case {case.name}: {problem})")
    problem = _baseline_problem(case, expected, baseline, names)
    if problem:
        method = getattr(checker, "baseline")
        default = getattr(type(checker), "baseline", None) is Checker.baseline
        fallback = exercise.solution if default else exercise.checker
        place = shown(fallback, exercise.root) if default else \
            _where(method, (case.function, inputs, judge.reference), exercise.root, fallback)
        raise CourseBroken(f"{place} (case {case.name}: {problem})")


def _expected_problem(checker: Checker, case: Case, inputs: Any, expected: Any, names: tuple[str, ...]) -> str:
    """What is wrong with what expected() returned ('' when nothing is)."""
    wanted = f"{len(names)} tensor{'s' if len(names) != 1 else ''} (one per output: {', '.join(names)})"
    if not isinstance(expected, (tuple, list)):
        return f"expected() returned {_kind(expected)}, not a tuple of {wanted}"
    if len(expected) != len(names):
        return f"expected() returned {len(expected)} values, not {wanted}"
    declared = checker.output_shapes(case.function, inputs)
    for index, (name, value) in enumerate(zip(names, expected)):
        which = f" {name}" if len(names) > 1 else " its output"
        if not isinstance(value, torch.Tensor):
            return f"expected() returned {_kind(value)} as{which}, not a tensor"
        if value.dtype != torch.float64:
            return f"expected() returned{which} as {dtype_name(value.dtype)}, not float64"
        if declared is not None and index < len(declared) and tuple(value.shape) != tuple(declared[index]):
            return (f"expected() returned{which} of shape {tuple(value.shape)}, where the checker declares "
                    f"{tuple(declared[index])}")
        if not case.nonfinite_answer:
            found = first_nonfinite(value)
            if found:
                return f"expected() returned {found[0]}" + (f" in {name}" if len(names) > 1 else "") + f" at {found[1]}"
    return ""


def _baseline_problem(case: Case, expected: Any, baseline: Any, names: tuple[str, ...]) -> str:
    """What is wrong with the reference's half-precision answer, the bound's base ('' when nothing is)."""
    if baseline is None:
        return ""
    if not isinstance(baseline, (tuple, list)) or len(baseline) != len(names) or \
            not all(isinstance(value, torch.Tensor) for value in baseline):
        return f"the reference's half-precision answer is not {len(names)} tensor{'s' if len(names) != 1 else ''}"
    for name, value, answer in zip(names, baseline, expected):
        which = f" {name}" if len(names) > 1 else ""
        if tuple(value.shape) != tuple(answer.shape):
            return (f"the reference's half-precision answer{which} has shape {tuple(value.shape)}, where "
                    f"expected() has {tuple(answer.shape)}")
        exact = torch.isfinite(answer)
        found = first_nonfinite(torch.where(exact, value.to(torch.float64), 0.0))
        if found:
            return (f"the reference's {dtype_name(value.dtype)} answer{which}, which sets the half-precision bound, "
                    f"holds {found[0]} at {found[1]}")
    return ""


def first_nonfinite(value: torch.Tensor) -> tuple[str, list[int]] | None:
    """('NaN' | 'Inf' | '-Inf', its index) for the first value of `value` that is not finite; None when all are."""
    wide = value.to(torch.float64) if value.is_floating_point() else value
    bad = ~torch.isfinite(wide)
    if not bool(bad.any()):
        return None
    index = [int(i) for i in torch.nonzero(bad)[0].tolist()]
    item = float(wide[tuple(index)])
    return ("NaN" if item != item else "Inf" if item > 0 else "-Inf"), index


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"one tensor of shape {tuple(value.shape)}"
    return f"a {type(value).__name__}" if value is not None else "None"


def _where(method: Callable, args: tuple, root: Path, fallback: Path) -> str:
    """'FILE:LINE' of the line `method` returned from, FILE from the course's root: the method is called again
    (only once its answer was found wrong) under a profiler that notes the line of its own frame's return. A method
    that is not the course's own (a learner bundle's stored answers) is named by `fallback`, the file it stands for."""
    code = getattr(getattr(method, "__func__", method), "__code__", None)
    if not isinstance(code, CodeType) or Path(code.co_filename).resolve().is_relative_to(PACKAGE):
        return shown(fallback, root)
    line = _returned_line(method, args, code) or code.co_firstlineno
    return f"{shown(Path(code.co_filename), root)}:{line}"


def _returned_line(method: Callable, args: tuple, code: CodeType) -> int | None:
    returned: list[int] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "return" and frame.f_code is code:
            returned.append(frame.f_lineno)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        method(*args)
    except Exception:  # noqa: BLE001  (it did not raise the first time; a line is all that is sought)
        pass
    finally:
        sys.setprofile(previous)
    return returned[-1] if returned else None
