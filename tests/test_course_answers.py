"""The course's answers are checked before they judge anyone: an expected() that returns NaN or Inf (a tensor divided by
an integer 0), the wrong dtype, count or declared shape makes every entry point say "not graded: the course is
broken" at the checker's line, never score a learner; a case may declare an answer that holds NaN; and an instructor,
who may read the course, sees a hidden failure's figures where a learner sees the grader's words."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import run_cli, run_gradescope_autograder

from grader.errors import CourseBroken

SCALE = "exercises/02-scale"
RETURN = "        return (x.to(torch.float64) * factor,)"


def nan_checker(course: Path, answer: str = "(x.to(torch.float64) * 0) / 0") -> int:
    """02-scale's expected() made to return `answer` (by default 0/0: NaN, raising nothing); the line it returns on."""
    path = course / SCALE / "checker.py"
    text = path.read_text()
    assert RETURN in text
    path.write_text(text.replace(RETURN, f"        return ({answer},)"))
    return path.read_text().splitlines().index(f"        return ({answer},)") + 1


def said(line: int, case: str = "scale-by-three", found: str = "NaN at [0, 0]") -> str:
    return f"the course is broken: {SCALE}/checker.py:{line} (case {case}: expected() returned {found})"


def test_a_nan_answer_makes_run_and_submit_not_graded_at_the_checkers_line(scale_course, capsys):
    line = nan_checker(scale_course)
    solution = scale_course / "solutions/02-scale/scale.py"
    for command in ("run", "submit"):
        code, out = run_cli(capsys, command, "--file", str(solution), "--no-record", "--device", "cpu")
        text = "\n".join(out)
        assert code == 3 and f"Not graded: {said(line)}" in text, text
        assert "CRASH" not in text and "0 of 10" not in text and "grader error" not in text


def test_validate_names_the_checker_never_the_grader(scale_course, capsys):
    line = nan_checker(scale_course)
    code, out = run_cli(capsys, "validate")
    text = "\n".join(out)
    assert code == 1 and f"FAIL the course's own code runs ({said(line)})" in text, text
    assert "grader itself failed" not in text and not (scale_course / ".grader" / "crashes").exists()


def test_a_cohort_has_every_entry_not_graded_and_is_incomplete(scale_course, capsys, tmp_path):
    line = nan_checker(scale_course)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.py").write_text((scale_course / "solutions/02-scale/scale.py").read_text())
    (subs / "bob.py").write_text("def scale(x, factor):\n    return x\n")
    code, _ = run_cli(capsys, "grade", str(subs), "--exercise", "02", "--out", str(tmp_path / "book"), "--jobs", "1")
    assert code == 1
    rows = (tmp_path / "book" / "grades.csv").read_text().splitlines()[1:]
    assert len(rows) == 2 and all(",,10,not graded," in row and said(line) in row for row in rows), rows


def test_gradescope_fails_the_autograder_and_writes_no_score(scale_course, capsys, tmp_path):
    line = nan_checker(scale_course)
    done = run_gradescope_autograder(scale_course, tmp_path)
    root = tmp_path / "autograder"
    assert done.returncode == 1 and not (root / "results" / "results.json").exists(), done.stdout + done.stderr
    assert f"cause: {said(line)}" in done.stdout, done.stdout


def test_an_infinite_answer_is_refused_where_it_would_pass_everyone(scale_course, capsys):
    """x * 3 / 0 is Inf: its bound is Inf too, and every output, however wrong, was within it."""
    line = nan_checker(scale_course, "x.to(torch.float64) * factor / 0")
    code, out = run_cli(capsys, "submit", "--file", str(scale_course / "solutions/02-scale/scale.py"), "--no-record",
                        "--device", "cpu")
    assert code == 3 and f"Not graded: {said(line, found='Inf at [0, 0]')}" in "\n".join(out), out


def test_a_case_may_declare_an_answer_that_holds_nan(scale_course, capsys, tmp_path):
    nan_checker(scale_course)
    for name in ("examples.yaml", "hidden/more.yaml"):
        path = scale_course / SCALE / "cases" / name
        path.write_text(path.read_text().replace("    function: scale\n", "    function: scale\n"
                                                 "    nonfinite_answer: true\n"))
    same = tmp_path / "scale.py"
    same.write_text("def scale(x, factor):\n    return (x - x) / (x - x)\n")
    code, out = run_cli(capsys, "submit", "--file", str(same), "--no-record", "--device", "cpu")
    assert code == 0 and "Accepted" in "\n".join(out), out
    code, out = run_cli(capsys, "submit", "--file", str(scale_course / "solutions/02-scale/scale.py"), "--no-record",
                        "--device", "cpu")
    text = "\n".join(out)
    assert code == 1 and "the course is broken" not in text, text
    assert "output is wrong at [0, 0]: got" in text and "output is wrong where the answer is NaN or Inf" in text


def judge(outputs: tuple[str, ...] = ("output",), shapes=None):
    from grader.course.checker import Checker, Function

    class Made(Checker):
        functions = {"f": Function(arguments=("x",), outputs=outputs)}

        def expected(self, function, inputs):
            return self.answer

        def output_shapes(self, function, inputs):
            return shapes

    root = Path(__file__).resolve().parent
    exercise = SimpleNamespace(root=root, checker=root / "checker.py", solution=root / "solution.py")
    return SimpleNamespace(checker=Made(), exercise=exercise, reference=None)


def case(**fields):
    from grader.course.cases import Case

    return Case("c", "hidden", "f", "", {}, None, "cases.yaml:1", **fields)


@pytest.mark.parametrize("answer, outputs, shapes, found", [
    (torch.ones(3), ("output",), None, "expected() returned one tensor of shape (3,), not a tuple of 1 tensor"),
    ((torch.ones(3),), ("out", "total"), None, "expected() returned 1 values, not 2 tensors (one per output: out, "
                                               "total)"),
    ((torch.ones(3, dtype=torch.float32),), ("output",), None, "expected() returned its output as float32, not float64"),
    ((torch.ones(3, dtype=torch.float64), 2.0), ("out", "total"), None, "expected() returned a float as total, not a tensor"),
    ((torch.ones(3, dtype=torch.float64),), ("output",), ((3, 1),), "expected() returned its output of shape (3,), where the checker declares (3, 1)"),
    ((torch.ones(2, dtype=torch.float64), torch.tensor([[0.0, -float("inf")]], dtype=torch.float64)),
     ("out", "total"), None,
     "expected() returned -Inf in total at [0, 1]"),
])
def test_each_wrong_answer_is_named(answer, outputs, shapes, found):
    from grader.grading.course_answers import check_answers

    made = judge(outputs, shapes)
    made.checker.answer = answer
    with pytest.raises(CourseBroken) as raised:
        check_answers(made, case(), None, made.checker.expected("f", None), None)
    assert f"(case c: {found}" in raised.value.where and "test_course_answers.py:" in raised.value.where, \
        raised.value.where


def test_a_half_precision_baseline_that_holds_nan_is_the_references():
    from grader.grading.course_answers import check_answers

    made = judge()
    expected = (torch.ones(2, dtype=torch.float64),)
    with pytest.raises(CourseBroken) as raised:
        check_answers(made, case(), None, expected, (torch.tensor([1.0, float("nan")], dtype=torch.float16),))
    assert raised.value.where == ("solution.py (case c: the reference's float16 answer, which sets the half-precision "
                                  "bound, holds NaN at [1])")
    check_answers(made, case(), None, expected, (torch.ones(2, dtype=torch.float16),))  # a finite one stands
    check_answers(made, case(nonfinite_answer=True), None, (torch.tensor([1.0, float("nan")], dtype=torch.float64),),
                  (torch.tensor([1.0, float("nan")], dtype=torch.float16),))  # NaN where the answer is NaN


HIDDEN_OFF = ("def scale(x, factor):\n    out = x\n    for _ in range(factor - 1):\n        out = out + x\n"
              "    if factor == 5:\n        out = out + out / 100\n    return out\n")


def test_hidden_figures_for_whoever_may_read_the_course_alone(scale_course, capsys, tmp_path):
    off = tmp_path / "scale.py"
    off.write_text(HIDDEN_OFF)
    code, out = run_cli(capsys, "submit", "--file", str(off), "--no-record", "--device", "cpu")
    lines = [line.strip() for line in out]
    # A learner's, exactly as it was: the hidden case's words, never its figures.
    assert code == 1 and any("output is wrong: outside the allowed error" in line for line in lines), out
    assert "(allowed 0.000402)" not in "\n".join(lines), out
    code, out = run_cli(capsys, "submit", "--file", str(off), "--no-record", "--device", "cpu", "--verbose")
    assert code == 1 and any(line.startswith("output is wrong: largest error 0.0") and line.endswith(
        "at [0] (allowed 0.000402)") for line in (line.strip() for line in out)), out
    # validate's own verdicts, which the instructor reads in its reference line, carry the figures too.
    reference = scale_course / "solutions/02-scale/scale.py"
    reference.write_text(HIDDEN_OFF)
    code, out = run_cli(capsys, "validate")
    assert code == 1 and "scale-float32 [cpu]: failed: output is wrong: largest error 0.0" in "\n".join(out), out


def test_a_learner_bundle_is_never_readable(scale_course):
    from grader.course.exercise import find_exercise
    from grader.course.trust import course_readable

    exercise = find_exercise(scale_course, None)
    assert course_readable(exercise)
    assert not course_readable(dataclasses.replace(exercise, precomputed=exercise.examples))
    assert not course_readable(dataclasses.replace(exercise, solution=exercise.solution.with_name("gone.py")))
