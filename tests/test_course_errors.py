"""The course's own bugs are the course's: a broken mistake is left out and named at its real line, a checker or rank
program that raises makes the run "not graded: the course is broken" (never a learner's failure or a 0), and
validate fails on each of them, on a gap in the hints and on a stub that is not its starter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, run_gradescope_autograder

from grader.cli import main

SCALE = "exercises/02-scale"
CHECKER_BUG = ("    def expected(self, function, inputs):\n        x, factor = inputs.args\n",
               "    def expected(self, function, inputs):\n        x, factor = inputs.args\n"
               "        if factor == 5:\n            return (x / 0.0, 1 // (factor - 5))\n")


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr().out
    assert "Traceback" not in out
    return code, out


def break_checker(course: Path) -> int:
    """Make the 02-scale checker's expected() divide by zero on the hidden factor-5 case; the line it is on."""
    path = course / SCALE / "checker.py"
    text = path.read_text()
    assert CHECKER_BUG[0] in text
    path.write_text(text.replace(*CHECKER_BUG))
    return path.read_text().splitlines().index("            return (x / 0.0, 1 // (factor - 5))") + 1


def test_a_mistake_that_does_not_load_is_left_out_and_named_at_its_own_line(scale_course, capsys, tmp_path):
    mistakes = scale_course / "solutions/02-scale/mistakes"
    (mistakes / "broken_syntax.py").write_text('TITLE = "t"\nRATIONALE = "r"\nHELP = "h"\n\n\ndef scale(x, f:\n'
                                               '    return x\n')
    (mistakes / "raises_at_import.py").write_text('TITLE = "t"\nRATIONALE = "r"\nHELP = "h"\nLIMIT = undefined_name\n')
    solution = scale_course / "solutions/02-scale/scale.py"
    code, out = run(capsys, "submit", "--file", str(solution), "--no-record", "--device", "cpu",
                    "--json", str(tmp_path / "r.json"))
    assert code == 0 and "Accepted" in out, out
    notes = json.loads((tmp_path / "r.json").read_text())["extra_data"]["notes"]
    assert any("solutions/02-scale/mistakes/broken_syntax.py:6: SyntaxError" in note for note in notes), notes
    assert any("solutions/02-scale/mistakes/raises_at_import.py:4: NameError: name 'undefined_name' is not defined"
               in note for note in notes), notes
    # A learner's wrong file is still diagnosed by the mistakes that load.
    wrong = tmp_path / "scale.py"
    wrong.write_text((mistakes / "one_copy_short.py").read_text())
    code, out = run(capsys, "run", "--file", str(wrong), "--no-record", "--device", "cpu")
    assert code == 1 and "Likely mistake: Adds one copy too few" in out, out
    code, out = run(capsys, "validate")
    assert code == 1 and "FAIL mistakes and variants load" in out, out
    assert "broken_syntax.py:6: SyntaxError" in out and "raises_at_import.py:4: NameError" in out


def test_a_broken_mistake_of_07_keeps_the_diagnosis_and_its_line(course, tmp_path):
    """Line 41 of a 14-line file no more: the line is the mistake file's own."""
    from grader.course.exercise import find_exercise
    from grader.grading.pipeline import grade
    from grader.grading.request import Run

    broken = course / "solutions/07-ring-attention/mistakes/first_chunk_skipped.py"
    lines = broken.read_text().splitlines()
    lines.insert(3, "this line is not Python")
    broken.write_text("\n".join(lines) + "\n")
    report = grade(Run(find_exercise(course, None), REPO / "tests/fixtures/submissions/wrong_no_rescale.py", "run",
                       "cpu"))
    assert {r.diagnosis.mistake for r in report.results if r.diagnosis} == {"add_without_rescale"}
    assert any("mistakes/first_chunk_skipped.py:4: SyntaxError" in note for note in report.notes), report.notes
    assert grade(Run(find_exercise(course, None), course / "solutions/07-ring-attention/ring_attention.py", "run",
                     "cpu")).status == "passed"


def test_a_variant_that_does_not_load_fails_validate_at_its_line(scale_course, capsys):
    variant = scale_course / "solutions/02-scale/variants/sum_of_copies.py"
    variant.write_text("import torch\n\nSTART = torch.no_such_thing\n")
    code, out = run(capsys, "validate")
    assert code == 1 and "variants/sum_of_copies.py:3: AttributeError" in out, out


@pytest.mark.parametrize("where", ["expected", "build_inputs"])
def test_a_checker_that_raises_makes_the_run_not_graded_naming_its_line(scale_course, capsys, where):
    if where == "expected":
        line = break_checker(scale_course)
        said = f"the course is broken: {SCALE}/checker.py:{line}: ZeroDivisionError"
    else:
        path = scale_course / SCALE / "checker.py"
        path.write_text(path.read_text().replace("        generator = torch.Generator()",
                                                 "        assert params['factor'] != 5, 'no fives'\n"
                                                 "        generator = torch.Generator()"))
        line = path.read_text().splitlines().index("        assert params['factor'] != 5, 'no fives'") + 1
        said = f"the course is broken: {SCALE}/checker.py:{line}: AssertionError: no fives"
    solution = scale_course / "solutions/02-scale/scale.py"
    code, out = run(capsys, "submit", "--file", str(solution), "--no-record", "--device", "cpu")
    assert code == 3 and f"Not graded: {said}" in out, out
    assert "grader error" not in out and "0 of 10" not in out
    code, out = run(capsys, "run", "--file", str(solution), "--no-record", "--device", "cpu")
    assert code == 0, out  # the examples never reach the broken case
    code, out = run(capsys, "validate")
    assert code == 1 and f"FAIL the course's own code runs ({said}" in out, out


def test_a_cohort_shows_a_broken_checker_as_not_graded_never_as_zero(scale_course, capsys, tmp_path):
    break_checker(scale_course)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.py").write_text((scale_course / "solutions/02-scale/scale.py").read_text())
    (subs / "bob.py").write_text("def scale(x, factor):\n    return x\n")
    code, out = run(capsys, "grade", str(subs), "--exercise", "02", "--out", str(tmp_path / "book"), "--jobs", "1")
    assert code == 1
    rows = (tmp_path / "book" / "grades.csv").read_text().splitlines()[1:]
    assert len(rows) == 2 and all(",,10," in row and ",not graded," in row and "the course is broken: "
                                  f"{SCALE}/checker.py:" in row for row in rows), rows


def test_gradescope_shows_a_broken_checker_as_an_autograder_error_never_a_zero(scale_course, capsys, tmp_path):
    line = break_checker(scale_course)
    done = run_gradescope_autograder(scale_course, tmp_path)
    root = tmp_path / "autograder"
    # No results.json, and a status that is not 0: Gradescope shows "The autograder failed to execute correctly"
    # to the learner, and the cause, in the panel only instructors see.
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert not (root / "results" / "results.json").exists()
    said = f"the course is broken: {SCALE}/checker.py:{line}: ZeroDivisionError"
    lines = done.stdout.splitlines()
    assert lines[1].startswith("AUTOGRADER ERROR: this submission was not graded") and lines[2].startswith(
        f"cause: {said}"), done.stdout
    assert "02-scale, scale.py" in done.stdout and "containment: " in done.stdout


@pytest.mark.parametrize("bug, wrong, said", [
    ("        steps.append(", "        step_log.append(", "NameError: name 'step_log' is not defined (rank "),
    ("import time\n", "import time as\n", "SyntaxError: "),
])
def test_a_rank_program_that_raises_is_the_courses_not_the_learners(course, capsys, bug, wrong, said):
    """Outside its calls of the learner's code, the program's own NameError or syntax: never a rank's crash, nor a
    peer given up on."""
    path = course / "exercises/07-ring-attention/ring_rank.py"
    text = path.read_text()
    assert text.count(bug) == 1
    path.write_text(text.replace(bug, wrong))
    line = next(number for number, text in enumerate(path.read_text().splitlines(), 1) if text.startswith(wrong.rstrip()))
    solution = course / "solutions/07-ring-attention/ring_attention.py"
    code, out = run(capsys, "run", "--file", str(solution), "--no-record", "--device", "cpu", "--ring", "2")
    assert code == 3, out
    assert f"Not graded: the course is broken: exercises/07-ring-attention/ring_rank.py:{line}: {said}" in out, out
    assert "gave up waiting" not in out and "CRASH" not in out


@pytest.mark.parametrize("change, said", [
    (lambda hints: (hints / "1-add.md").rename(hints / "2-add.md"), "hint numbers 2: no 1"),
    (lambda hints: (hints / "3-more.md").write_text("more"), "hint numbers 1, 3: no 2"),
    (lambda hints: (hints / "2-more.txt").write_text("more"), "2-more.txt is not a .md file: it is never shown"),
    (lambda hints: (hints / "notes.md").write_text("more"), "not numbered: notes.md"),
])
def test_validate_fails_on_hints_a_learner_would_miss(scale_course, capsys, change, said):
    change(scale_course / "hints/02-scale")
    code, out = run(capsys, "validate")
    assert code == 1 and "FAIL hints numbered 1, 2, 3, ... and written in .md" in out and said in out, out


def test_validate_fails_on_a_stub_that_is_not_its_starter(scale_course, capsys):
    stub = scale_course / SCALE / "scale.py"
    stub.write_text(stub.read_text().replace("by addition", "by adding"))
    code, out = run(capsys, "validate")
    assert code == 1 and "FAIL learner stub is its starter copy (exercises/02-scale/scale.py differs from " \
                         "exercises/02-scale/starter/scale.py" in out, out


def test_the_fixture_courses_pass_the_new_checks(scale_course, capsys):
    code, out = run(capsys, "validate")
    assert code == 0 and "ok   hints numbered" in out and "ok   learner stub is its starter copy" in out, out
    assert FIXTURES.is_dir()


def test_a_reference_that_does_not_import_is_one_line_naming_its_line(scale_course, capsys):
    reference = scale_course / "solutions/02-scale/scale.py"
    reference.write_text("import torch\n\nFACTOR = torch.no_such_thing\n" + reference.read_text())
    code, out = run(capsys, "run", "--no-record")
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert out.startswith("error: solutions/02-scale/scale.py:3: the reference solution could not be loaded: "
                          "AttributeError"), out
    code, out = run(capsys, "validate")  # an error in the course's files, as every command says it
    assert code == 2 and out.strip().splitlines()[-1].startswith("error: solutions/02-scale/scale.py:3: the reference "
                                                                 "solution could not be loaded: AttributeError"), out
    assert "FAIL" not in out


@pytest.mark.parametrize("file, change, said", [
    (f"{SCALE}/exercise.yaml", ("aten.mul", "aten.mull"),
     "rules: forbidden: aten.mull is no operator torch dispatches (did you mean aten.mul or aten.mul_?)"),
    (f"{SCALE}/exercise.yaml", ("[aten.mul]", "[{family: layer_nrom}]"), "rules: forbidden: no family called "
                                                                        "'layer_nrom'"),
    (f"{SCALE}/cases/hidden/more.yaml", ("    dtype: float32\n", "    dtpye: float32\n"),
     "case 'scale-float32': unknown key 'dtpye' for scale"),
    (f"{SCALE}/exercise.yaml", ("max_score: 10", "max_score: 0"), "max_score must be positive, not 0"),
])
def test_an_error_in_the_courses_files_is_one_line_from_the_course_root_exit_2_in_every_command(
        scale_course, capsys, tmp_path, file, change, said):
    path = scale_course / file
    text = path.read_text()
    assert change[0] in text
    path.write_text(text.replace(*change, 1))
    line = next(number for number, written in enumerate(path.read_text().splitlines(), 1)
                if change[1].strip() in written)
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "alice.py").write_text("def scale(x, factor):\n    return x\n")
    commands = [("validate",), ("validate", "02"), ("submit", "--no-record"),
                ("grade", str(tmp_path / "subs"), "--exercise", "02", "--out", str(tmp_path / "book"))]
    for argv in commands + ([] if "hidden" in file else [("run", "--no-record")]):  # a run reads no hidden case
        code, out = run(capsys, *argv)
        errors = [text for text in out.splitlines() if text.startswith("error: ")]
        assert code == 2 and errors == [f"error: {file}:{line}: {said}" + errors[0].split(said, 1)[1]], (argv, out)
        assert "FAIL" not in out and str(scale_course) not in out, (argv, out)


def test_a_hint_whose_front_matter_cannot_be_read_is_an_error_for_validate_as_for_hint(scale_course, capsys):
    hint = scale_course / "hints/02-scale/1-add.md"
    hint.write_text("---\nabout: scale\n---\n" + hint.read_text())
    for argv in (("validate",), ("hint", "02")):
        code, out = run(capsys, *argv)
        assert code == 2 and out.strip().splitlines()[-1].startswith(
            "error: hints/02-scale/1-add.md:2: front matter: expected 'function: NAME'"), (argv, out)
