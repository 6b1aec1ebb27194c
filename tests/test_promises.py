"""exercise.yaml's `promises`: the ranges a statement promises, read with the line of each key, and validate's check
that a case covers each one in every dtype that holds it, naming the ranges none covers."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import REPO, make_course, run_cli

from grader.course.exercise import load_exercise
from grader.errors import ConfigError

EXERCISE_YAML = "exercises/02-scale/exercise.yaml"
GOOD = """\
promises:
  values: scale.x
  ranges:
    - about: ordinary scores
      range: [-10, 10]
      dtypes: [float64, float32]
"""


def with_promises(course: Path, section: str) -> Path:
    path = course / EXERCISE_YAML
    path.write_text(path.read_text() + textwrap.dedent(section))
    return path


def line_of(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("change, marker, message", [
    (("  values: scale.x\n", "  values: scale\n"), "values:", "values must name FUNCTION.ARGUMENT"),
    (("  ranges:\n", "  rangez: []\n  ranges:\n"), "rangez", "unknown key 'rangez'"),
    (("      range: [-10, 10]\n", "      range: [10, -10]\n"), "range:", "range must rise: 10 is not below -10"),
    (("      range: [-10, 10]\n", "      range: [-10]\n"), "range:", "range must be [LOW, HIGH]"),
    (("      dtypes: [float64, float32]\n", "      dtypes: [float64, flaot32]\n"), "dtypes:",
     "dtypes must list some of float64, float32, bfloat16, float16, not 'flaot32'"),
    (("    - about: ordinary scores\n", "    - about: ''\n"), "about:", "about must say in words"),
])
def test_a_malformed_section_is_one_line_at_its_key(scale_course, change, marker, message):
    path = with_promises(scale_course, GOOD.replace(*change))
    with pytest.raises(ConfigError) as raised:
        load_exercise(scale_course, path.parent)
    assert str(raised.value).startswith(f"{EXERCISE_YAML}:{line_of(path, marker)}: promises: "), str(raised.value)
    assert message in str(raised.value), str(raised.value)


def test_a_covered_promise_passes_and_an_uncovered_one_is_named_for_each_dtype(scale_course, capsys):
    with_promises(scale_course, GOOD + "    - about: scores far above zero\n      range: [1.0e4, 1.0e308]\n")
    code, out = run_cli(capsys, "validate")
    failed = [line for line in out if line.startswith("FAIL")]
    assert code == 1 and failed == [
        "FAIL every promised range is covered by a case (no case covers: scores far above zero in float64 ([10000, "
        "1e+308]); scores far above zero in float32 ([10000, 3.40282e+38]); scores far above zero in bfloat16 "
        "([10000, 3.38953e+38]); scores far above zero in float16 ([10000, 65504]))"], out


def test_names_the_checker_does_not_know_are_an_error_of_the_courses_files(scale_course, capsys):
    path = with_promises(scale_course, GOOD.replace("scale.x", "scale.y"))
    code, out = run_cli(capsys, "validate")
    assert code == 2 and out[-1] == (f"error: {EXERCISE_YAML}:{line_of(path, 'values:')}: promises: values: scale "
                                     f"has no argument 'y' (its arguments: x, factor)"), out
    path.write_text(path.read_text().replace("      range: [-10, 10]\n      dtypes: [float64, float32]\n",
                                             "      range: [-1.0e300, -1.0e200]\n      dtypes: [float16]\n"))
    path.write_text(path.read_text().replace("scale.y", "scale.x"))
    code, out = run_cli(capsys, "validate")
    assert code == 2 and out[-1].startswith(f"error: {EXERCISE_YAML}:{line_of(path, '- about:')}: promises: "
                                            f"ranges: ordinary scores: float16 holds no value of [-1e+300, -1e+200]"), out


def test_01_without_its_far_scores_covers_neither_far_side(tmp_path):
    from grader.course.cases import load_exercise_cases
    from grader.course.checker import load_checker
    from grader.course.exercise import find_exercise
    from grader.grading.case import Judge
    from grader.grading.pipeline import load_reference
    from grader.instructor.declared import coverage_check

    root = make_course(tmp_path / "course", ["01-stable-softmax"], REPO)
    (root / "exercises/01-stable-softmax/cases/hidden/far-scores.yaml").unlink()
    exercise = find_exercise(root, None)
    checker = load_checker(exercise.checker)
    check = coverage_check(Judge(exercise, checker, "", load_reference(exercise)), load_exercise_cases(exercise, checker))
    assert not check.ok and check.detail.startswith("no case covers: every score of a slice far below zero"), check
    for words in ("every score of a slice far below zero, under any finite seed of a running max (-1e4, -5e4) in "
                  "float16 ([-65504, -10000])", "scores above 1e20 in bfloat16",
                  "scores near the most negative float64 in float64"):
        assert words in check.detail, check.detail
    assert "ordinary scores" not in check.detail  # the cases near zero cover it in every dtype
