"""`grader validate`: the instructor's one command: checks, the catalogue's matrix, leave-one-out, remembered verdicts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from grader.cli import main


@pytest.fixture
def scale(scale_course: Path) -> Path:
    return scale_course


def validate(capsys, *argv: str) -> tuple[int, str]:
    code = main(["validate", *argv])
    return code, capsys.readouterr().out


def test_validate_passes_on_exercise_07_with_its_ring(course, capsys) -> None:
    solutions = course / "solutions/07-ring-attention"
    for folder, keep in (("mistakes", {"add_without_rescale.py", "keep_all_score_blocks.py"}),
                         ("variants", {"einsum.py"})):
        for path in (solutions / folder).glob("*.py"):
            if path.name not in keep:
                path.unlink()
    code, out = validate(capsys)
    assert code == 0, out
    for line in ("ok   case files load (7 examples,", "ok   reference passes every case",
                 "ok   starter fails every case as not attempted", "ok   reference passes the --ring suite",
                 "ok   every mistake is caught by a case", "ok   every correct variant passes every case",
                 "cases that alone catch a mistake:\n  ring-memory-stays-near-one-chunk: keep_all_score_blocks"):
        assert line in out, line  # the memory rule is one audited case: the one mistake only that rule sees is its
    assert out.rstrip().splitlines()[-1] == "07-ring-attention is valid: 17 passed, 0 failed"


def test_the_matrix_in_json_with_leave_one_out_and_collisions(scale, capsys) -> None:
    mistakes = scale / "solutions/02-scale/mistakes"
    # A second mistake that behaves exactly like the first: the diagnosis cannot tell them apart.
    shutil.copy(mistakes / "one_copy_short.py", mistakes / "drops_one_copy.py")
    code, out = validate(capsys, "--json", str(scale / "v.json"))
    assert code == 0, out
    assert "mistakes the diagnosis cannot tell apart:\n  drops_one_copy and one_copy_short" in out
    data = json.loads((scale / "v.json").read_text())
    assert data["valid"] and data["matrix"]["cases"] == ["scale-by-three", "scale-by-zero", "scale-float32",
                                                         "scale-by-one-is-required"]
    row = data["matrix"]["mistakes"]["one_copy_short"]
    assert row["caught_by"] == ["scale-by-three", "scale-float32", "scale-by-one-is-required"]
    # Without itself in the catalogue, a learner who made it would have been told it was the other one.
    assert set(row["named_without_itself"].values()) == {"drops_one_copy"}
    assert data["matrix"]["cases_catching_nothing"] == ["scale-by-zero"]
    assert data["matrix"]["indistinguishable"] == [["drops_one_copy", "one_copy_short"]]


def test_verdicts_are_remembered_and_only_what_changed_is_graded(scale, capsys) -> None:
    code, out = validate(capsys)
    assert code == 0 and "16 case verdicts graded, 0 remembered" in out  # 4 files, 4 cases
    code, out = validate(capsys)
    assert "0 case verdicts graded, 16 remembered" in out
    with open(scale / "exercises/02-scale/cases/hidden/more.yaml", "a") as handle:
        handle.write("  - name: scale-by-seven\n    function: scale\n    about: a new case\n    factor: 7\n")
    code, out = validate(capsys)
    # The new case, for each of the four files (reference, starter, one mistake, one variant): nothing else.
    assert "4 case verdicts graded, 16 remembered" in out
    (scale / "solutions/02-scale/mistakes/two_copies_short.py").write_text(
        (scale / "solutions/02-scale/mistakes/one_copy_short.py").read_text().replace("factor - 1", "factor - 2"))
    code, out = validate(capsys)
    assert "5 case verdicts graded, 20 remembered" in out  # the new mistake, on every case
    code, out = validate(capsys, "--fresh")
    assert "25 case verdicts graded, 0 remembered" in out


def test_a_course_copied_elsewhere_keeps_what_validate_remembered(scale, capsys, monkeypatch) -> None:
    assert "16 case verdicts graded, 0 remembered" in validate(capsys)[1]
    copy = shutil.copytree(scale, scale.parent / "moved")
    monkeypatch.setenv("GRADER_ROOT", str(copy))
    monkeypatch.chdir(copy)
    assert "0 case verdicts graded, 16 remembered" in validate(capsys)[1]


def test_an_empty_catalogue_is_a_warning_not_a_failure(scale, capsys) -> None:
    shutil.rmtree(scale / "solutions/02-scale/mistakes")
    code, out = validate(capsys)
    assert code == 0
    assert "warn catalogue of mistakes (no mistakes in solutions/02-scale/mistakes" in out


def test_validate_fails_on_an_uncaught_mistake_and_a_rejected_variant(scale, capsys) -> None:
    solutions = scale / "solutions/02-scale"
    (solutions / "mistakes/not_really_wrong.py").write_text(
        'TITLE = "Not wrong"\nRATIONALE = "It is the reference."\nHELP = "None needed."\n')
    (solutions / "variants/claims_to_be_right.py").write_text("def scale(x, factor):\n    return x\n")
    code, out = validate(capsys)
    assert code == 1
    assert "FAIL every mistake is caught by a case (not caught: not_really_wrong)" in out
    assert "FAIL every correct variant passes every case (claims_to_be_right:" in out
    assert "not_really_wrong  NOT CAUGHT" in out
    assert out.rstrip().splitlines()[-1].startswith("02-scale is NOT valid")


def test_the_matrix_is_remembered_a_new_case_works_out_its_cells_alone_and_a_new_mistake_all(
        scale, capsys, monkeypatch) -> None:
    from grader.instructor import matrix

    worked: list[tuple[str, str]] = []
    agreeing = matrix._agreeing

    def counted(judge, known, case, result, stem):
        worked.append((case.name, stem))
        return agreeing(judge, known, case, result, stem)

    monkeypatch.setattr(matrix, "_agreeing", counted)
    mistakes = scale / "solutions/02-scale/mistakes"
    shutil.copy(mistakes / "one_copy_short.py", mistakes / "drops_one_copy.py")
    assert validate(capsys)[0] == 0
    assert len(worked) == 6  # two mistakes, each caught by three cases
    worked.clear()
    assert validate(capsys)[0] == 0 and worked == []
    with open(scale / "exercises/02-scale/cases/hidden/more.yaml", "a") as handle:
        handle.write("  - name: scale-by-seven\n    function: scale\n    about: a new case\n    factor: 7\n")
    assert validate(capsys, "--json", str(scale / "remembered.json"))[0] == 0
    assert sorted(worked) == [("scale-by-seven", "drops_one_copy"), ("scale-by-seven", "one_copy_short")]
    worked.clear()
    # Another mistake may agree with any of them on any case: the whole catalogue is worked out again.
    (mistakes / "two_copies_short.py").write_text(
        (mistakes / "one_copy_short.py").read_text().replace("factor - 1", "factor - 2"))
    assert validate(capsys)[0] == 0
    assert {case for case, _ in worked} == {"scale-by-three", "scale-float32", "scale-by-one-is-required",
                                           "scale-by-seven"} and len(worked) == 12
    (mistakes / "two_copies_short.py").unlink()
    worked.clear()
    assert validate(capsys, "--fresh", "--json", str(scale / "fresh.json"))[0] == 0
    assert len(worked) == 8
    remembered, fresh = (json.loads((scale / name).read_text()) for name in ("remembered.json", "fresh.json"))
    assert remembered["matrix"] == fresh["matrix"]


def test_a_changed_catalogue_is_worked_out_on_a_thread_while_grading_and_a_known_one_is_not(
        scale, capsys, monkeypatch) -> None:
    import threading

    from grader.grading import diagnosis

    threads: list[str] = []
    behaviour = diagnosis.Catalogue.behaviour

    def recorded(self, judge, case, stems=None):
        threads.append(threading.current_thread().name)
        return behaviour(self, judge, case, stems)

    monkeypatch.setattr(diagnosis.Catalogue, "behaviour", recorded)
    assert validate(capsys, "--json", str(scale / "first.json"))[0] == 0
    assert "grader-matrix-warm-up" in threads  # never seen before: worked out ahead
    threads.clear()
    with open(scale / "exercises/02-scale/cases/hidden/more.yaml", "a") as handle:
        handle.write("  - name: scale-by-seven\n    function: scale\n    about: a new case\n    factor: 7\n")
    assert validate(capsys)[0] == 0
    # The catalogue is the one the matrix was worked out for: only the new case's cells, in the grader's thread.
    assert threads and set(threads) == {threading.main_thread().name}


def test_grading_without_a_diagnosis_names_no_mistake(scale) -> None:
    from grader.course.exercise import find_exercise
    from grader.course.mistakes import as_submission
    from grader.grading.pipeline import grade
    from grader.grading.request import Run

    exercise = find_exercise(scale, "02-scale")
    wrong = as_submission(exercise.mistakes / "one_copy_short.py", exercise.solution, scale)
    diagnosed = grade(Run(exercise, wrong, "submit", "cpu")).results
    plain = grade(Run(exercise, wrong, "submit", "cpu", diagnose=False)).results
    assert [r.outcome for r in diagnosed] == [r.outcome for r in plain]
    assert any(r.diagnosis for r in diagnosed) and not any(r.diagnosis for r in plain)


def test_the_matrix_says_when_a_mistake_is_caught_only_by_raising() -> None:
    from grader.instructor.matrix import Matrix, MistakeRow
    from grader.report.validation import matrix_lines

    raises = MistakeRow("raises_on_odd_shapes", caught_by=["a", "b"], named={"a": None, "b": None},
                        without_itself={"a": None, "b": None}, raised=["a", "b"])
    some = MistakeRow("wrong_sum", caught_by=["a", "c"], named={"a": "wrong_sum", "c": "wrong_sum"},
                      without_itself={"a": None, "c": None}, raised=["c"])
    answers = MistakeRow("wrong_max", caught_by=["b"], named={"b": "wrong_max"}, without_itself={"b": None})
    lines = matrix_lines(Matrix(["a", "b", "c"], [raises, some, answers], {}))
    assert lines[1].endswith("caught only by raising (no case sees a wrong answer from it)")
    assert lines[2].endswith("; 1 of them by raising")
    assert "raising" not in lines[3]
    assert Matrix(["a", "b", "c"], [raises], {}).to_json()["mistakes"]["raises_on_odd_shapes"]["caught_by_raising"] \
        == ["a", "b"]


def test_the_matrix_says_when_only_the_distributed_suite_catches_a_mistake_and_what_it_names_there() -> None:
    from grader.instructor.matrix import Matrix, MistakeRow
    from grader.report.validation import matrix_lines

    row = MistakeRow("forgets_the_all_reduce", caught_by=["mlp-2", "mlp-3"],
                     named={"mlp-2": "forgets_the_all_reduce", "mlp-3": None},
                     without_itself={"mlp-2": None, "mlp-3": None}, distributed=["mlp-2", "mlp-3"])
    line = matrix_lines(Matrix(["mlp-2", "mlp-3"], [row], {}))[1]
    assert "2 cases (the distributed suite's alone)  named 1/2 (also nothing on 1)" in line, line
