"""`grader validate`: the instructor's one command, on the real course and on a broken one."""

from __future__ import annotations

import shutil

from conftest import REPO, SUBMISSIONS
from grader.cli import main


def test_validate_passes_on_the_course(course, capsys) -> None:
    code = main(["validate"])
    out = capsys.readouterr().out
    assert code == 0, out
    for line in ("ok   case files load (7 examples,", "ok   reference passes every case",
                 "ok   starter fails every case as not attempted", "ok   reference passes the --ring suite",
                 "ok   every mistake is caught by a case", "ok   every correct variant passes every case",
                 "cases that are the only catcher of a mistake:"):
        assert line in out, line
    assert out.rstrip().splitlines()[-1] == "07-ring-attention is valid: 12 passed, 0 failed"


def test_validate_fails_on_an_uncaught_mistake_and_a_rejected_variant(course, capsys) -> None:
    exercise_dir = course / "solutions/07-ring-attention"
    shutil.rmtree(course / "exercises/07-ring-attention/cases/hidden")
    course_file = course / "exercises/course.yaml"
    course_file.write_text("\n".join(line for line in course_file.read_text().splitlines()
                                     if not line.strip().startswith("ring:")) + "\n")
    for folder in ("mistakes", "variants"):
        shutil.rmtree(exercise_dir / folder)
        (exercise_dir / folder).mkdir()
    # A "mistake" that is really correct: no case can catch it.
    (exercise_dir / "mistakes/not_really_wrong.py").write_text(
        (REPO / "solutions/07-ring-attention/ring_attention.py").read_text()
        + '\nTITLE = "Not wrong"\nRATIONALE = "It is the reference."\nHELP = "None needed."\n')
    shutil.copy(SUBMISSIONS / "wrong_no_rescale.py", exercise_dir / "variants/claims_to_be_right.py")
    code = main(["validate"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL every mistake is caught by a case (not caught: not_really_wrong)" in out
    assert "FAIL every correct variant passes every case (claims_to_be_right:" in out
    assert "not_really_wrong" in out and "NOT CAUGHT" in out
    assert out.rstrip().splitlines()[-1].startswith("07-ring-attention is NOT valid")
