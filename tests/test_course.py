"""Courses of the tests' own: an exercise added as files in its folder only, two exercises, broken ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, make_course

from grader.cli import main

COURSES = FIXTURES / "courses"


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, course: Path) -> Path:
    """The course fixture (exercise 07) with the test exercise 02-scale added: its folders, one line in the course."""
    make_course(tmp_path / "scale-source", ["02-scale"], COURSES)
    for folder in ("exercises", "solutions", "hints"):
        source = tmp_path / "scale-source" / folder / "02-scale"
        if source.is_dir():
            import shutil

            shutil.copytree(source, course / folder / "02-scale")
    with open(course / "exercises/course.yaml", "a") as handle:
        handle.write("  - exercises/02-scale\n")
    return course


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_an_exercise_made_only_of_its_own_files_is_graded(two, capsys):
    code, out = run(capsys, "list")
    assert code == 0 and "07-ring-attention" in out and "02-scale" in out
    code, out = run(capsys, "run", "02", "--no-record")  # a unique prefix names it
    assert code == 1 and "Not attempted yet" in out and out.rstrip().endswith("0 passed, 0 failed, 2 not attempted")
    solution = two / "solutions/02-scale/scale.py"
    code, out = run(capsys, "submit", "02-scale/", "--file", str(solution), "--no-record", "--device", "cpu",
                    "--json", str(two / "out.json"))
    assert code == 0 and "Accepted" in out and "Score 10 of 10." in out
    data = json.loads((two / "out.json").read_text())
    assert data["score"] == data["extra_data"]["max_score"] == 10.0
    # Points per case from the YAML, scaled so that they add up to the declared maximum.
    assert [test["max_score"] for test in data["tests"]] == [1.666667, 1.666667, 3.333333, 3.333333]


def test_a_required_case_that_fails_rejects_whatever_else_passes(two, capsys, tmp_path):
    wrong = tmp_path / "scale.py"
    wrong.write_text("def scale(x, factor):\n    return x + x if factor == 1 else sum([x] * factor, x - x)\n")
    code, out = run(capsys, "submit", "02", "--file", str(wrong), "--no-record", "--device", "cpu",
                    "--json", str(tmp_path / "out.json"))
    assert code == 1 and "Score 0 of 10: the required case scale-by-one-is-required" in " ".join(out.split())
    assert json.loads((tmp_path / "out.json").read_text())["score"] == 0.0


def test_a_forbidden_operator_is_named(two, capsys, tmp_path):
    shortcut = tmp_path / "scale.py"
    shortcut.write_text("def scale(x, factor):\n    return x * factor\n")
    code, out = run(capsys, "run", "02", "--file", str(shortcut), "--no-record", "--device", "cpu")
    assert code == 1 and "called aten.mul, which this exercise forbids" in out


def test_an_exercise_without_a_distributed_suite_refuses_the_option(two, capsys):
    code, out = run(capsys, "run", "02", "--ring", "2", "--no-record")
    assert code == 2 and out.strip() == "error: --ring: 02-scale has no distributed suite"


def test_without_a_name_the_first_exercise_not_accepted_is_the_one(two, capsys):
    code, out = run(capsys, "run", "--no-record")
    assert out.startswith("07-ring-attention:")  # the first in the course, not accepted yet
    solution = two / "solutions/07-ring-attention/ring_attention.py"
    code, out = run(capsys, "submit", "--file", str(solution), "--device", "cpu")
    assert code == 0, out
    code, out = run(capsys, "run", "--no-record")
    assert out.startswith("02-scale:")  # 07 is accepted now: the next one
    code, out = run(capsys, "run", "0", "--no-record")
    assert code == 2 and "could be any of 07-ring-attention, 02-scale" in out


@pytest.mark.parametrize("name", ["07", "07-ring", "07-ring-attention", "07-ring-attention/", "exercises/07-ring-attention/",
                                  "ring-attention"])
def test_an_exercise_is_named_by_a_unique_prefix_or_its_folder(two, name):
    from grader.course.exercise import find_exercise

    assert find_exercise(two, name).name == "07-ring-attention"


@pytest.mark.parametrize(("name", "words"), [("0", "'0' could be any of 07-ring-attention, 02-scale: say which"),
                                             ("exercises/08/", "no exercise called 'exercises/08/'")])
def test_a_prefix_that_names_several_or_none_is_a_usage_error(two, name, words):
    from grader.course.exercise import find_exercise
    from grader.errors import UsageError

    with pytest.raises(UsageError, match="^" + words.replace("(", r"\(")):
        find_exercise(two, name)


@pytest.mark.parametrize("breakage, words", [
    (lambda folder: (folder / "exercise.yaml").write_text("name: 02-scale\nstub: scale.py\ncolour: red\n"),
     "exercise.yaml:3: unknown key 'colour'"),
    (lambda folder: (folder / "exercise.yaml").write_text("name: 02-scale\nstub: scale.py\ntime_limit: 0\n"),
     "exercise.yaml:3: time_limit must be positive, not 0"),
    (lambda folder: (folder / "exercise.yaml").write_text("name: 02-scale\nstub: scale.py\n\nmax_score: ten\n"),
     "exercise.yaml:4: 'max_score' must be a int or float, not 'ten'"),
    (lambda folder: (folder / "exercise.yaml").write_text("name: 02-scale\nstub: scale.py\nrules:\n"
                                                          "  inputs_unchanged: true\n  forbid: [aten.mul]\n"),
     "exercise.yaml:5: rules must be a mapping of forbidden, inputs_unchanged, not 'forbid'"),
    (lambda folder: (folder / "exercise.yaml").write_text("name: 02-scale\nstub: scale.py\nrules:\n"
                                                          "  forbidden: aten.mul\n"),
     "exercise.yaml:4: rules: forbidden must list operators such as aten._softmax"),
    (lambda folder: (folder / "checker.py").unlink(), "checker.py: the exercise's checker is missing"),
    (lambda folder: (folder / "checker.py").write_text("def broken(:\n"),
     "checker.py:1: the checker could not be loaded: SyntaxError"),
    (lambda folder: (folder / "checker.py").write_text("X = 1\n"),
     "checker.py: the checker must define exactly one subclass of grader.course.checker.Checker, found 0"),
    (lambda folder: (folder / "checker.py").write_text((folder / "checker.py").read_text().replace(
        "Function(arguments=", "Function(uses=('scale',), arguments=")),
     "checker.py: scale uses 'scale', which is not another of the checker's functions"),
    (lambda folder: (folder / "cases/examples.yaml").write_text("cases:\n  - name: a\n    function: scale\n"
                                                                 "    factor: -1\n"),
     "examples.yaml:4: case 'a': factor must be a non-negative integer"),
    (lambda folder: (folder / "cases/examples.yaml").write_text("cases:\n  - name: a\n    function: scale\n"
                                                                 "    factor: 1\n    tolerance: {float64: 0.5}\n"),
     "examples.yaml:5: case 'a': tolerance float64 must be a number from 1e-15 to 1e-06"),
])
def test_a_broken_exercise_is_one_line_naming_the_file(two, capsys, breakage, words):
    breakage(two / "exercises/02-scale")
    code, out = run(capsys, "run", "02", "--no-record")
    assert code == 2 and words in out and len(out.strip().splitlines()) == 1
    code, out = run(capsys, "run", "07", "--no-record")  # the other exercise is unaffected
    assert code == 1 and "Not attempted yet" in out
