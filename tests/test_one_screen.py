"""Every report true and one screen long: a submission's verdict, its feedback file, a bad run's bounds and the views."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from grader.course.mistakes import compose
from grader.results import CaseResult, Diagnosis, Outcome, Report

MISTAKES = REPO / "solutions/07-ring-attention/mistakes"
REFERENCE = REPO / "solutions/07-ring-attention/ring_attention.py"


def grader(course: Path, *argv: str, columns: int = 80) -> tuple[subprocess.CompletedProcess, float]:
    """The command as a learner runs it, piped at `columns`; what it printed, and how long it took."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "grader", *argv], cwd=course, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": str(columns), "PYTHONPATH": str(REPO)})
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done, time.monotonic() - started


@pytest.fixture
def unrescaled(course: Path) -> Path:
    """The reference with the merge that adds both sides' statistics without rescaling them."""
    mine = course / "unrescaled.py"
    mine.write_text(compose(MISTAKES / "add_without_rescale.py", REFERENCE))
    return mine


def test_one_mistake_in_07_is_one_screen_with_the_diagnosis_first_and_its_feedback_under_4_kb(course, unrescaled):
    done, _ = grader(course, "submit", "07", "--file", unrescaled.name)
    lines = done.stdout.splitlines()
    assert done.returncode == 1 and lines[-1] == "33 passed, 134 failed", done.stdout
    assert len(lines) <= 50, done.stdout
    assert max(map(len, lines)) <= 80 and all(line == line.rstrip() for line in lines)
    assert next(n for n, line in enumerate(lines) if line.startswith("Likely mistake: Adds chunk statistics")) < 15
    # Each cause once, with its count; no case's failure repeated.
    assert "FAIL    merge_chunk_stats: output is wrong: outside the allowed error (23 cases)" in lines
    assert sum(line.startswith(("FAIL", "ERROR", "TIMEOUT", "CRASH")) for line in lines) <= 4
    assert "same error" not in done.stdout and "distributed_ring" not in done.stdout
    # The score names what the required case failed on: its values, not its memory.
    score = done.stdout[done.stdout.index("Score 0 of 100"):]
    assert "ring-memory-stays-near-one-chunk (hidden)" in score and "failed on its values" in score
    # The dependency is said because ring_attention was seen calling the merge, once.
    assert done.stdout.count("Fix merge_chunk_stats first:") == 1
    # The learner's feedback file, from the results file this submission kept: one cause a section, under 4 KB.
    from grader.report.feedback import feedback, to_markdown
    from grader.results import file
    from grader.results.cohort import read_entry
    from grader.results.file import SubmissionRecord

    kept = sorted((course / ".grader/submissions/07-ring-attention").glob("*.json"))[-1]
    results = file.read(kept)
    results.extra_data.submission = SubmissionRecord(id="learner", name=unrescaled.name)
    graded = course / "learner.json"
    graded.write_text(file.encode(results))
    text = to_markdown(feedback(read_entry(graded)))
    assert len(text.encode("utf-8")) < 4096, text
    assert "## Failed cases (134, for 3 causes)" in text and text.count("**Example:**") == 3
    # Gradescope's output groups them the same way.
    assert "134 cases failed, for 3 causes:" in results.output.splitlines()


def test_an_endless_loop_ends_the_run_within_twice_a_normal_run_naming_its_function_and_line(course):
    looping = REFERENCE.read_text().replace("    new_max = torch.maximum(acc_max, chunk_max)\n",
                                            "    new_max = torch.maximum(acc_max, chunk_max)\n"
                                            "    while True:\n        new_max = new_max + 0\n", 1)
    (course / "loops.py").write_text(looping)
    line = looping.splitlines().index("    while True:") + 1
    grader(course, "run", "07", "--file", str(REFERENCE), "--no-record")  # the machine warmed up for both
    normal, normal_seconds = grader(course, "run", "07", "--file", str(REFERENCE), "--no-record")
    loops, loop_seconds = grader(course, "run", "07", "--file", "loops.py", "--no-record", columns=200)
    assert normal.returncode == 0 and loops.returncode == 1
    assert loop_seconds <= 2 * normal_seconds, (loop_seconds, normal_seconds, loops.stdout)
    assert loops.stdout.count("did not finish within the 1 s limit") == 1
    said = " ".join(loops.stdout.split())  # its lines as one text, wherever the width wrapped them
    assert any(f"when stopped it was at loops.py:{number} in merge_chunk_stats" in said
               for number in (line, line + 1)), loops.stdout
    # Its callers were stopped where they called it, and said to depend on it.
    assert loops.stdout.count("not run to the end: it calls merge_chunk_stats, which timed out") == 1
    assert "same error in 2 more cases: ring-uneven-chunks, ring-float32-chunks-of-one" in loops.stdout


def test_a_hidden_case_that_timed_out_never_shows_where_it_was(course, exercise):
    from grader.grading.pipeline import grade
    from grader.grading.request import Limits, Run

    looping = REFERENCE.read_text().replace("    new_max = torch.maximum(acc_max, chunk_max)\n",
                                            "    new_max = torch.maximum(acc_max, chunk_max)\n    while True:\n"
                                            "        new_max = new_max + 0\n", 1)
    mine = course / "loops.py"
    mine.write_text(looping)
    report = grade(Run(Limits(time_limit=1.0).on(exercise), mine, "submit", "cpu",
                       only={"merge-acc-max-below", "merge-acc-max-above", "stats-tiny-by-hand"}))
    hidden = [result for result in report.results if result.hidden]
    assert [result.outcome for result in hidden] == [Outcome.TIMED_OUT] * 2
    assert not hidden[0].not_run and hidden[1].not_run == "timeouts"
    assert all("when stopped" not in result.message and "loops.py" not in result.message for result in hidden)


def test_a_stack_sample_is_read_as_hostile_text() -> None:
    from grader.channel.stack_sample import Frame, described, where

    sample = (b"Timeout (0:00:04)!\nThread 0x00007f (most recent call first):\n"
              b'  File "/submission/mine.py", line 12 in merge\n'
              b'  File "/usr/lib/python3/site.py", line 5 in helper\n'
              b'  File "/submission/mine.py", line 30 in ring\n'
              b'  File "/work/grader/sandboxed/worker.py", line 140 in run_task\n')
    assert where(sample, "/submission/mine.py", 40) == [Frame(12, "merge"), Frame(30, "ring")]
    # A line the file does not have, another file, a name Python could not give, or no sample: nothing.
    assert where(sample, "/submission/mine.py", 20) == [Frame(12, "merge")]
    assert where(sample, "/submission/other.py", 40) == []
    assert where(b'Thread 0x1:\n  File "/submission/mine.py", line 3 in not a name; rm\n', "/submission/mine.py",
                 9) == []
    assert where(b"", "/submission/mine.py", 9) == [] and described([], "mine.py") == ""
    # The last sample counts: a call sampled twice is where the second sample found it.
    later = sample + b'Timeout (0:00:08)!\nThread 0x1:\n  File "/submission/mine.py", line 14 in merge\n'
    assert described(where(later, "/submission/mine.py", 40), "mine.py") == "when stopped it was at mine.py:14 in merge"


def test_the_calls_between_the_learners_functions_are_observed_and_a_stopped_one_is_not_run() -> None:
    import types

    from grader.sandboxed.observe import Calls, StoppedCall, observe

    module = types.ModuleType("submission")
    exec(compile("def merge(x):\n    return x + 1\n\ndef ring(x):\n    return merge(merge(x))\n\n"
                 "def alone(x):\n    return x\n", "/submission/mine.py", "exec"), module.__dict__)
    calls = Calls()
    calls.install(module, "/submission/mine.py")
    with observe({"kind": "case"}, calls) as seen:
        assert module.ring(1) == 3 and module.alone(2) == 2
    assert seen == {"calls": ["ring>merge"]} and module.ring.__name__ == "ring"
    with observe({"kind": "case", "stopped": ["merge"]}, calls) as seen, pytest.raises(StoppedCall):
        module.ring(1)
    with observe({"kind": "case"}, calls) as seen:
        module.alone(1)
    assert seen == {}  # nothing seen, nothing said


def test_the_reply_schema_checks_the_observed_calls_on_every_kind_of_reply() -> None:
    from grader.channel.replies import MalformedReply, parse_case
    from grader.grading.worker_client import OBSERVATIONS

    raised = {"kind": "raised", "id": 1, "exception": "ValueError", "message": "m",
              "observations": {"calls": ["ring_attention>merge_chunk_stats"]}}
    assert parse_case(raised, [], 1, 0, OBSERVATIONS).observations == {"calls": ["ring_attention>merge_chunk_stats"]}
    for wrong in ({"calls": [3]}, {"calls": ["x" * 301]}, {"calls": ["a>b"] * 17}, {"materialized": ["x"]}):
        with pytest.raises(MalformedReply):
            parse_case({**raised, "observations": wrong}, [], 1, 0, OBSERVATIONS)
    assert parse_case({"kind": "stopped", "id": 1, "message": "merge"}, [], 1, 0, OBSERVATIONS).kind == "stopped"


def test_groups_gather_a_cause_wherever_its_cases_came_and_show_a_visible_one() -> None:
    from grader.results import verdict_text as verdict_line
    from grader.results.groups import blame, failure_groups, under_label

    def case(name, suite="hidden", outcome=Outcome.FAILED, cause="output is wrong: outside the allowed error"):
        return CaseResult(name, suite, "ring_attention", "cpu", outcome, message=cause, cause=cause)

    results = [case("h1"), case("ok", outcome=Outcome.PASSED), case("v1", "examples"),
               case("t1", outcome=Outcome.TIMED_OUT, cause="timed out (running)"), case("h2")]
    first, second = failure_groups(results)
    assert [c.name for c in first.cases] == ["h1", "v1", "h2"] and first.example.name == "v1" and first.hidden == 2
    assert second.cause.what == "timed out (running)" and second.count == 1
    assert verdict_line("crashed", "crashed: the worker ended") == "crashed: the worker ended"
    assert verdict_line("failed", "output is wrong") == "failed: output is wrong"
    assert under_label("crashed", "crashed: the worker ended") == "the worker ended"
    assert blame("failed", "output is wrong: outside the allowed error") == \
        "failed on its values (output is wrong: outside the allowed error)"
    assert blame("failed", "broke the peak-memory rule", "peak-memory") == "broke the peak-memory rule"
    assert blame("crashed", "crashed (SIGSEGV)") == "crashed (SIGSEGV)" and blame("timed out", "") == "timed out"


def test_a_crash_is_named_once_in_every_view() -> None:
    from grader.report.terminal import TerminalRenderer
    from grader.results.from_report import results_file
    from test_render import fixed

    report = Report("07-ring-attention", "submit", "mine.py", results=[
        CaseResult("seg", "examples", "ring_attention", "cpu", Outcome.CRASHED,
                   message="crashed: the worker process ended (SIGSEGV) while running this case",
                   cause="crashed (SIGSEGV)")])
    output = results_file(report).tests[0].output
    assert output.startswith("crashed: the worker process ended (SIGSEGV)") and output.count("crashed") == 1
    console = fixed()
    renderer = TerminalRenderer(console, verbose=True)
    renderer.header(report.exercise, "run", report.file)
    renderer.finished(report.results[0])
    shown = console.file.getvalue()
    assert "CRASH   seg" in shown and "crashed" not in shown


def test_the_ring_table_wraps_at_60_columns_without_padding() -> None:
    from grader.report.layout import table
    from test_render import fixed

    ring = {"caption": "1 communication step, overlapped with compute",
            "columns": ["rank", "queries", "keys", "shards", "sent", "received", "per shard"],
            "rows": [[0, 3, 5, 2, "520 B", "208 B", "6.60 ms"], [1, 4, 2, 2, "208 B", "520 B", "7.43 ms"]]}
    for width in (60, 80, 200):
        console = fixed(width)
        table(console, ring, " " * 8)
        lines = console.file.getvalue().splitlines()
        assert len(lines) == 4 and all(len(line) <= width and line == line.rstrip() for line in lines), lines
        assert lines[0].split() == ["rank", "queries", "keys", "shards", "sent", "received", "per", "shard"]


@pytest.mark.parametrize("command", [["list"], ["status", "07"], ["history", "07"]])
def test_every_view_wraps_at_the_width_and_pads_no_line(course, unrescaled, capsys, monkeypatch, command):
    run_cli(capsys, "submit", "07", "--file", str(unrescaled))  # something to list, in status and history
    for width in (60, 200):
        monkeypatch.setenv("COLUMNS", str(width))
        code, lines = run_cli(capsys, *command)
        assert code == 0 and lines and all(len(line) <= width and line == line.rstrip() for line in lines), lines
    monkeypatch.delenv("COLUMNS")
    code, lines = run_cli(capsys, *command)  # piped without a width: one line per text, for grep
    assert code == 0 and all(line == line.rstrip() for line in lines)


def test_the_containment_line_is_said_once_per_machine_or_with_verbose(course, capsys):
    def banner(*more: str) -> list[str]:
        lines = run_cli(capsys, "run", "07", "--file", str(REFERENCE), "-k", "stats-tiny", *more)[1]
        return [line for line in lines if line.startswith(("sandbox (", "no sandbox"))]

    assert len(banner("--no-record")) == 1 and not (course / ".grader").exists()  # --no-record keeps nothing
    assert len(banner()) == 1 and (course / ".grader/containment-seen").is_file()
    assert banner() == [] and banner("--no-record") == []  # the same machine, the same words: said once
    assert len(banner("--verbose")) == 1
