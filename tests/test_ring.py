"""Exercise 07's distributed suite through the grader's distributed suites: real gloo rings of 2 and 4 ranks on the CPU."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from conftest import own_processes, ring_checker, ring_exercise, survivors

from grader import cli
from grader.course.cases import Case
from grader.errors import ConfigError
from grader.grading.distributed import DistributedRun, run_distributed_suite
from grader.grading.distributed import run_case as run_group_case
from grader.grading.pipeline import load_reference
from grader.grading.request import UNHEARD, Run
from grader.report.gradescope_json import test_to_json as result_to_json
from grader.report.terminal import TerminalRenderer, make_console
from grader.results import Outcome, Report

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
REFERENCE = ROOT / "solutions" / "07-ring-attention" / "ring_attention.py"
LIMIT = 3.0  # seconds for the ring itself; torch's import and the rendezvous are not counted
HANG_LIMIT = 1.5


@pytest.fixture(scope="module")
def exercise():
    return ring_exercise()


@pytest.fixture(scope="module")
def suite():
    return ring_checker().suites()["ring"]


def run_case(exercise, learner, case, use_cuda, solution, limit):
    suite = ring_checker().suites()["ring"]
    return run_group_case(Run(exercise, learner, "run", "cpu"), DistributedRun(suite, suite.world_of(case), solution, limit),
                          case, use_cuda)


@pytest.fixture(scope="module")
def solution(exercise):
    return load_reference(exercise)


@pytest.fixture(autouse=True)
def no_rank_survives():
    before = own_processes()
    yield
    assert survivors(before) == [], "processes of the ring survived"


def misbehaving(tmp_path: Path, how: str) -> Path:
    """The misbehaving fixture with rank 1's behaviour written in (learner code sees no environment of ours)."""
    path = tmp_path / f"ring_{how}.py"
    path.write_text((FIXTURES / "ring_misbehaves.py").read_text().replace('HOW = "nothing"', f'HOW = "{how}"'))
    return path


def _case(shards: list[int], **params) -> Case:
    return Case(f"test-ring{len(shards)}", "ring", "distributed_ring", "", {"shards": shards, "d": 8, **params},
                None, "test")


def test_reference_passes_on_two_ranks_with_the_case_file(exercise, solution, suite):
    report = Report(exercise.name, "run", "reference")
    run_distributed_suite(Run(exercise, REFERENCE, "run", "cpu"), UNHEARD, DistributedRun(suite, 2, solution, LIMIT), report)
    assert [result.name for result in report.results] == ["ring2-uneven", "ring2-even-split"]
    assert all(result.passed for result in report.results), [r.message for r in report.results]
    table = report.results[0].extra["table"]["data"]
    assert table["communication_steps"] == 1
    # Each rank sends its own shard (keys + values, float64) and receives its neighbour's.
    assert [row["bytes_sent"] for row in table["ranks"]] == [5 * (8 + 5) * 8, 2 * (8 + 5) * 8]
    assert [row["bytes_received"] for row in table["ranks"]] == [2 * (8 + 5) * 8, 5 * (8 + 5) * 8]


def test_reference_passes_on_four_uneven_ranks(exercise, solution):
    result = run_case(exercise, REFERENCE, _case([3, 5, 1, 4], lq=[2, 1, 3, 2], seed=3), False, solution, LIMIT)
    assert result.passed, result.message
    assert [row["steps"] for row in result.extra["table"]["data"]["ranks"]] == [4, 4, 4, 4]


def test_a_merge_without_rescaling_fails_with_a_clear_message(exercise, solution):
    result = run_case(exercise, FIXTURES / "ring_wrong_merge.py", _case([4, 4], lq=3, seed=4), False, solution, LIMIT)
    assert result.outcome is Outcome.FAILED
    assert result.message.startswith("the output of rank 0 is wrong: largest error")


@pytest.mark.parametrize("how", ["hang", "spin"])
def test_a_rank_that_hangs_is_named_and_every_rank_is_killed(exercise, solution, tmp_path, how):
    started = time.monotonic()
    # A shorter limit than the others': a rank that sleeps is waited on three times the limit.
    result = run_case(exercise, misbehaving(tmp_path, how), _case([2, 2, 2, 2], lq=2), False, solution, HANG_LIMIT)
    assert result.outcome is Outcome.TIMED_OUT
    assert result.message == f"rank 1 did not finish within {HANG_LIMIT:g} s; the others waited for it"
    assert f"[rank 1] rank 1 is about to {how}" in result.stdout
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("how, outcome, message", [
    ("segfault", Outcome.CRASHED, "rank 1 crashed (SIGSEGV)"),
    ("exit", Outcome.CRASHED, "rank 1 ended (exit status 3) before it finished (did your code call os._exit"),
    ("raise", Outcome.ERROR, "rank 1 raised ValueError: rank 1 does not like its chunk"),
])
def test_a_rank_that_dies_or_raises_is_named(exercise, solution, tmp_path, how, outcome, message):
    result = run_case(exercise, misbehaving(tmp_path, how), _case([2, 3]), False, solution, LIMIT)
    assert result.outcome is outcome
    assert result.message.startswith(message), result.message


def test_ring_below_two_is_a_usage_error(capsys):
    assert cli.main(["run", "--ring", "1", "--no-record"]) == 2
    assert capsys.readouterr().out.strip() == "error: --ring needs at least 2 ranks, not 1"


def test_a_bad_ring_case_names_file_and_line(tmp_path):
    suite = ring_checker().suites()["ring"]
    path = tmp_path / "ring.yaml"
    path.write_text("cases:\n  - name: ok\n    function: distributed_ring\n    shards: [2, 2]\n"
                    "  - name: bad\n    function: distributed_ring\n    shards: [2, 2]\n    lq: [1]\n")
    suite.file = path
    with pytest.raises(ConfigError, match=r"ring.yaml:8: case 'bad': lq must be a positive integer or one per rank"):
        suite.cases(2)


def test_the_course_ring_file_selects_by_world_size(suite):
    names = [case.name for case in suite.cases(4)]
    assert names == ["ring4-uneven", "ring4-bfloat16", "ring4-even-split"]


def test_an_exercise_without_the_suite_refuses_the_option(course, capsys, tmp_path):
    (course / "exercises/07-ring-attention/ring.py").write_text("")  # a checker whose suites() finds nothing
    checker = course / "exercises/07-ring-attention/checker.py"
    checker.write_text(checker.read_text().replace('return {"ring": RingSuite(self, Path(__file__).parent)}',
                                                   "return {}").replace("from ring import RingSuite", "pass"))
    assert cli.main(["run", "--ring", "2", "--no-record"]) == 2
    assert capsys.readouterr().out.strip() == "error: --ring: 07-ring-attention has no distributed suite"


def test_ring_table_in_terminal_and_json(suite):
    from grader.course.distributed import DistributedInputs
    from grader.results import CaseResult

    inputs = suite.build(suite.cases(2)[0], load_reference(ring_exercise()))
    stats = [[{"seconds": 0.002, "sent": 512, "received": 256}] * 2, []]
    result = CaseResult("r", "ring", "distributed_ring", "cpu", Outcome.PASSED,
                        extra={"table": suite.table(stats, inputs)})
    out = io.StringIO()
    TerminalRenderer(make_console(file=out, width=100)).finished(result)
    assert "1024 B" in out.getvalue() and "2.00 ms" in out.getvalue() and "1 communication step," in out.getvalue()
    assert result_to_json(1, result)["extra_data"]["extra"]["table"]["data"]["ranks"][0]["bytes_sent"] == 1024
    assert isinstance(inputs, DistributedInputs)


def test_a_file_that_does_not_import_is_named_with_its_line(exercise, solution, tmp_path):
    learner = tmp_path / "broken.py"
    learner.write_text("def attention_chunk_stats(:\n")
    result = run_case(exercise, learner, _case([2, 2]), False, solution, LIMIT)
    assert result.outcome is Outcome.ERROR
    assert result.message.startswith("rank 0 could not import your file (line 1): SyntaxError")
