"""Slow answers kept on disk: read back only when safe, whole or not at all, never anything but what was stored."""

from __future__ import annotations

import pytest
import torch

from grader.grading import answer_cache, case
from grader.grading.pipeline import grade
from grader.grading.request import Run

KEY = "exercise-hash\0case-json"


@pytest.fixture
def trusted_disk(monkeypatch):
    monkeypatch.setattr(answer_cache, "usable", lambda: True)


def test_an_answer_round_trips_and_only_under_its_own_key(tmp_path) -> None:
    expected, baseline = (torch.arange(6, dtype=torch.float64).reshape(2, 3), torch.ones(2, 1)), None
    answer_cache.store(tmp_path, KEY, expected, baseline)
    got_expected, got_baseline = answer_cache.load(tmp_path, KEY)
    assert got_baseline is None and all(torch.equal(a, b) for a, b in zip(got_expected, expected))
    assert answer_cache.load(tmp_path, KEY + "x") is None
    assert not list((tmp_path / answer_cache.FOLDER).glob("*.part"))


def test_a_damaged_or_foreign_file_is_treated_as_absent(tmp_path) -> None:
    answer_cache.store(tmp_path, KEY, (torch.zeros(2),), None)
    [stored] = (tmp_path / answer_cache.FOLDER).glob("*.pt")
    stored.write_bytes(stored.read_bytes()[:100])  # cut short
    assert answer_cache.load(tmp_path, KEY) is None
    torch.save({"key": "another key", "answer": ((torch.ones(2),), None)}, stored)  # stored under another key
    assert answer_cache.load(tmp_path, KEY) is None
    torch.save([1, 2, 3], stored)  # not what this module writes
    assert answer_cache.load(tmp_path, KEY) is None


def test_what_would_not_load_back_is_not_stored_and_a_read_only_course_is_passed_over(tmp_path) -> None:
    answer_cache.store(tmp_path, KEY, (object(),), None)
    assert not (tmp_path / answer_cache.FOLDER).exists()
    (tmp_path / ".grader").write_text("a file where the folder would go")
    answer_cache.store(tmp_path, KEY, (torch.zeros(2),), None)  # no exception: the answer is computed next time
    assert answer_cache.load(tmp_path, KEY) is None


def test_a_second_command_reads_the_slow_answers_instead_of_computing_them(exercise, course, trusted_disk,
                                                                           monkeypatch) -> None:
    monkeypatch.setattr(answer_cache, "SLOW_SECONDS", 0.0)  # every answer counts as slow: all of them stored
    first = grade(Run(exercise, exercise.solution, "run", "cpu"))
    assert first.failed == 0
    stored = list((course / answer_cache.FOLDER).glob("*.pt"))
    assert len(stored) == len(first.results)
    case._PREPARED.clear()  # as in a new process
    case._PREPARING.clear()
    from grader.grading import pipeline

    loaded = pipeline.load_checker

    def refusing(path):
        checker = loaded(path)

        def refuse(*args):
            raise AssertionError("computed again, though stored")

        checker.expected = refuse
        return checker

    monkeypatch.setattr(pipeline, "load_checker", refusing)
    second = grade(Run(exercise, exercise.solution, "run", "cpu"))
    assert [r.outcome for r in second.results] == [r.outcome for r in first.results]


def test_only_where_learner_code_cannot_write_the_course_is_an_answer_trusted(monkeypatch) -> None:
    """A view, Landlock or a uid of its own keep learner code from the folder; as the grader's own user with none of
    them (macOS, an ordinary user with GRADER_SANDBOX=off and no Landlock) it could plant an answer."""
    from grader.sandbox import machine

    for found, trusted in ((machine.Support("namespaces", None, ""), True),
                           (machine.Support("none", None, "", landlock=6), True),
                           (machine.Support("none", 240_000, ""), True),
                           (machine.Support("none", None, ""), False)):
        monkeypatch.setattr(machine, "support", lambda found=found: found)
        assert answer_cache.usable() is trusted, found


def test_where_it_cannot_be_trusted_nothing_is_read_or_written(exercise, course, unsandboxed, monkeypatch) -> None:
    monkeypatch.setattr(answer_cache, "SLOW_SECONDS", 0.0)
    monkeypatch.setattr(answer_cache, "usable", lambda: False)
    case._PREPARED.clear()
    case._PREPARING.clear()
    report = grade(Run(exercise, exercise.solution, "run", "cpu"))
    assert report.failed == 0
    assert not (course / answer_cache.FOLDER).exists()
