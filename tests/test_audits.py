"""The audits around the learner's call: materialization and peak memory, judged in the grader."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.cases import load_suites
from grader.checkers import get_checker, ring_attention
from grader.course import load_course
from grader.grading import Judge
from grader.results import CaseResult
from grader.supervisor import Worker

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "audit"
EXERCISE = load_course(REPO)[0]


def audited_results(path: Path) -> dict[str, CaseResult]:
    """Run only the hidden suite's audited cases on `path`, in one worker."""
    checker = get_checker(EXERCISE.checker)
    cases = [case for case in load_suites(EXERCISE.examples, EXERCISE.hidden_files(), checker.FUNCTIONS,
                                          checker.validate, True) if case.params.get("audit")]
    worker = Worker(path.resolve(), EXERCISE.root, EXERCISE.memory_limit_mb, use_cuda=False)
    worker.start()
    try:
        assert worker.wait_ready(EXERCISE.time_limit).kind == "ready"
        judge = Judge(EXERCISE, checker, path)
        return {case.name: judge.run(case, "cpu", worker) for case in cases}
    finally:
        worker.stop()


@pytest.fixture(scope="module")
def reference() -> dict[str, CaseResult]:
    return audited_results(EXERCISE.solution)


def test_reference_passes_every_audit(reference):
    assert len(reference) >= 3
    assert all(result.passed for result in reference.values()), {n: r.message for n, r in reference.items()}


def test_concatenating_fails_materialization():
    results = audited_results(FIXTURES / "concatenating.py")
    result = results["ring-never-holds-all-keys"]
    assert not result.passed
    assert result.extra["violates"] == "materialization"
    assert "spanning all 23 keys" in result.message and "cat -> (2, 23, 4)" in result.message
    assert "no device ever holds every key" in result.message


def test_keep_all_blocks_fails_peak_memory():
    results = audited_results(FIXTURES / "keep_all_blocks.py")
    result = results["ring-keeps-only-running-statistics"]
    assert not result.passed and result.extra["violates"] == "peak-memory"
    assert "keep only the running statistics" in result.message
    # It never builds a tensor over all keys, so the materialization audit alone lets it through.
    assert results["ring-never-holds-all-keys"].passed


def test_audited_case_needs_a_unique_prime():
    base = {"lq": 3, "d": 4, "dv": 5, "audit": ["materialization"]}
    ring_attention.validate("ring_attention", {**base, "chunks": [7, 6, 10]})
    with pytest.raises(ValueError, match="prime"):
        ring_attention.validate("ring_attention", {**base, "chunks": [8, 8]})
    with pytest.raises(ValueError, match="dv also has length 5"):
        ring_attention.validate("ring_attention", {**base, "chunks": [2, 3]})
    with pytest.raises(ValueError, match="ring_attention only"):
        ring_attention.validate("attention_chunk_stats", {"lk": 7, "audit": ["peak-memory"]})
