"""The memory rule around the learner's call: measured by the kernel, judged in the grader, explained by the worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ring_exercise

from grader.grading.case import Judge
from grader.grading.pipeline import load_reference, load_trusted
from grader.grading.worker_client import WorkerClient
from grader.results import CaseResult, Outcome

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "audit"


def audited_results(path: Path) -> dict[str, CaseResult]:
    """Run only the hidden suite's memory-audited cases on `path`, in one worker."""
    exercise = ring_exercise()
    trusted = load_trusted(exercise, "submit", False)
    cases = [case for case in trusted.cases if "memory" in case.audit]
    worker = WorkerClient(path.resolve(), exercise.root, exercise.memory_limit_mb, use_cuda=False)
    worker.start()
    try:
        judge = Judge(exercise, trusted.checker, path.name, load_reference(exercise))
        assert worker.wait_ready(exercise.time_limit).kind == "ready"
        return {case.name: judge.run(case, "cpu", worker) for case in cases}
    finally:
        worker.stop()


@pytest.fixture(scope="module")
def reference() -> dict[str, CaseResult]:
    return audited_results(ring_exercise().solution)


def test_reference_passes_every_audit(reference):
    assert len(reference) >= 1
    assert all(result.passed for result in reference.values()), {n: r.message for n, r in reference.items()}


def test_concatenating_fails_and_is_explained():
    results = audited_results(FIXTURES / "concatenating.py")
    assert all(r.outcome is Outcome.FAILED and r.extra["violates"] == "materialization" for r in results.values())
    # A hidden case's message holds no figure the learner's code chose: no shapes, no amounts of memory.
    audited = results["ring-memory-stays-near-one-chunk"]
    assert audited.message.startswith("it built tensors spanning all 262139 keys.") and "MiB" not in audited.message


def test_gathering_every_key_a_few_queries_at_a_time_fails():
    """Every key in one place, the scores then made a few queries at a time: small scores, large gathering."""
    results = audited_results(FIXTURES / "query_tiled_gathering.py")
    audited = results["ring-memory-stays-near-one-chunk"]
    assert audited.outcome is Outcome.FAILED and audited.extra["violates"] == "materialization"


@pytest.mark.parametrize("name", ["keep_all_blocks", "numpy_full_matrix", "scores_on_dim_minus_3", "evades_the_audit",
                                  "query_tiled_evading"])
def test_holding_every_score_fails_whatever_builds_it(name, monkeypatch):
    """NumPy, an odd axis or a switched-off audit: the kernel counts the memory all the same."""
    from grader.grading.case import Judge

    seen = []
    original = Judge._judge
    monkeypatch.setattr(Judge, "_judge", lambda self, case, prepared, called, result: (
        original(self, case, prepared, called, result),
        seen.append((called.raw.peak_bytes, self.checker.memory_budget(case.function, prepared[0])))))
    results = audited_results(FIXTURES / f"{name}.py")
    assert any(r.outcome is Outcome.FAILED and r.extra.get("violates") in ("peak-memory", "materialization")
               for r in results.values()), {n: r.message for n, r in results.items()}
    # Far over, as the kernel counted: by the margin the course keeps (benchmarks/memory_margins.py).
    assert any(peak > 1.5 * budget for peak, budget in seen), seen


def test_the_budget_leaves_room_for_honest_code(reference):
    """Both ways of holding the whole sequence (every score, every key and value) are bigger than the budget by
    the course's margin before any temporary is counted; one chunk's work is far inside it."""
    trusted = load_trusted(ring_exercise(), "submit", False)
    for case in [case for case in trusted.cases if "memory" in case.audit]:
        query, keys, values = trusted.checker.build_inputs(case.function, case.params).args
        budget = trusted.checker.memory_budget(case.function, trusted.checker.build_inputs(case.function, case.params))
        length, rows = sum(key.shape[-2] for key in keys), query.numel() // query.shape[-1]
        every_score = rows * length * 8
        every_key_and_value = length * (query.shape[-1] + values[0].shape[-1]) * 8
        one_chunk = max(key.shape[-2] for key in keys) * rows * 8
        assert min(every_score, every_key_and_value) > 1.5 * budget and 8 * one_chunk < budget


def test_audited_case_needs_a_unique_prime():
    from grader.course.checker import load_checker

    checker = load_checker(ring_exercise().checker)
    base = {"lq": 3, "d": 4, "dv": 5, "audit": ["memory"]}
    checker.validate("ring_attention", {**base, "chunks": [7, 6, 10]})
    with pytest.raises(ValueError, match="prime"):
        checker.validate("ring_attention", {**base, "chunks": [8, 8]})
    with pytest.raises(ValueError, match="dv also has length 5"):
        checker.validate("ring_attention", {**base, "chunks": [2, 3]})
    with pytest.raises(ValueError, match="ring_attention only"):
        checker.validate("attention_chunk_stats", {"lk": 7, "audit": ["memory"]})


def test_where_nothing_counts_every_process_the_memory_cases_are_not_judged_never_passed(monkeypatch):
    """macOS, or a kernel with no seccomp: no figure the grader could stand behind, so no pass either."""
    from grader.results import Outcome
    from grader.sandbox.box import Sandbox

    monkeypatch.setattr(Sandbox, "memory_judged", property(lambda self: False))
    results = audited_results(ring_exercise().solution)
    assert results and {result.outcome for result in results.values()} == {Outcome.NOT_JUDGED}
    assert all("not judged here" in result.message for result in results.values())


def memory_cases_graded(path: Path) -> dict[str, CaseResult]:
    """The memory-audited cases alone, graded as a submission is: after a warm-up call of the learner's function."""
    from grader.grading.pipeline import grade
    from grader.grading.request import Limits, Run

    exercise = ring_exercise()
    names = {case.name for case in load_trusted(exercise, "submit", False).cases if "memory" in case.audit}
    # A generous limit: importing torch._dynamo takes a few seconds of the import's own limit on a busy machine.
    report = grade(Run(Limits(time_limit=30).on(exercise), path, "submit", "cpu", only=names, diagnose=False))
    return {result.name: result for result in report.results}


def with_dynamo_imported(tmp_path: Path) -> Path:
    path = tmp_path / "ring_attention.py"
    path.write_text(ring_exercise().solution.read_text().replace(
        "import torch\n", "import torch\nimport torch._dynamo  # noqa: F401  (about 71 MiB, however long the sequence)\n",
        1))
    return path


@pytest.mark.parametrize("made", [with_dynamo_imported, lambda tmp_path: FIXTURES / "checkpointed_two_pass.py"])
def test_what_an_import_or_a_first_call_leaves_is_not_the_working_set(made, tmp_path):
    """torch._dynamo imported at import time, or by torch.utils.checkpoint on first use: measured from before the
    learner's import it is over the budget; measured after a warm-up call, both designs are accepted."""
    path = made(tmp_path)
    cold = audited_results(path)
    assert {result.extra.get("violates") for result in cold.values()} == {"peak-memory"}, \
        {n: r.message for n, r in cold.items()}
    warm = memory_cases_graded(path)
    assert warm and all(result.passed for result in warm.values()), {n: r.message for n, r in warm.items()}


def test_a_first_call_slower_than_the_small_case_allows_is_given_the_audited_case_s_time(tmp_path):
    """The warm-up call is made on a visible example (1 s of CPU in 07) but belongs to the audited case: a first
    call that spends 1.5 s (an import on first use, on a slow laptop) is not a timeout of the audited case."""
    path = tmp_path / "ring_attention.py"
    path.write_text(ring_exercise().solution.read_text() + """

import time as _time
_first_ring = ring_attention


def ring_attention(query, key_chunks, value_chunks):
    global ring_attention
    ring_attention = _first_ring
    spun = _time.process_time() + 1.5
    while _time.process_time() < spun:
        pass
    return _first_ring(query, key_chunks, value_chunks)
""")
    warm = memory_cases_graded(path)
    assert warm and all(result.passed for result in warm.values()), {n: r.message for n, r in warm.items()}


@pytest.mark.parametrize("name, rule", [("keep_all_score_blocks", "peak-memory"),
                                        ("concatenate_all_chunks", "materialization")])
def test_a_warm_up_excuses_nothing_that_grows_with_the_sequence(name, rule, tmp_path):
    from grader.course import mistakes

    exercise = ring_exercise()
    path = mistakes.as_submission(exercise.mistakes / f"{name}.py", exercise.solution, tmp_path)
    results = memory_cases_graded(path)
    assert results and all(result.extra.get("violates") == rule for result in results.values()), \
        {n: r.message for n, r in results.items()}


def test_the_warm_up_is_made_on_a_visible_case_of_the_same_function():
    from grader.grading.warm_up import warm_up_cases

    trusted = load_trusted(ring_exercise(), "submit", False)
    chosen = warm_up_cases(trusted.cases)
    assert set(chosen) == {"attention_chunk_stats", "merge_chunk_stats", "ring_attention"}
    assert all(not case.hidden and "memory" not in case.audit and case.function == function
               for function, case in chosen.items())


@pytest.mark.parametrize("devices", [["cuda"], ["cpu", "cuda"], ["cpu"]])
def test_the_memory_cases_run_on_the_cpu_whichever_devices_are_asked_for(devices):
    """`submit --device cuda` judges the memory rule too (on the CPU, where the kernel measures it): a design that
    gathers every key is never accepted because only CUDA was asked for."""
    from types import SimpleNamespace

    from grader.grading.phases import phases
    from grader.grading.pipeline import _expected

    cases = [SimpleNamespace(name=name, audit=audit, hidden=hidden) for name, audit, hidden in (
        ("shown", (), False), ("memory", ("memory",), True), ("hidden", (), True))]
    planned = [(case.name, device) for case, device in _expected(cases, devices)]
    ran = [(case.name, device) for phase in phases(cases, devices) for case, device in phase]
    assert ("memory", "cpu") in planned and sorted(ran) == sorted(planned)
    assert [name for name, device in planned].count("memory") == 1
    assert {device for name, device in planned if name != "memory"} == set(devices)
