"""Messages that are true and fit: timeouts as measured, torch's own lines apart, every line within the width."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO, SUBMISSIONS
from rich.console import Console

from grader.channel.noise import split_platform
from grader.grading.failure import timeout_detail
from grader.report.terminal import THEME, TerminalRenderer
from grader.results import CaseResult, Outcome, Report

C10D = ("[W1201 12:10:14.314259333 socket.cpp:207] [c10d] The hostname of the client socket cannot be retrieved. "
        "err=-3")
GLOO = "[Gloo] Rank 1 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1"
LONG = ("output is wrong: largest error 0.5 at [0, 1] (allowed 1e-09), and the rest of a message long enough to "
        "need wrapping at any width a learner's terminal has, with a_very_long_identifier_that_cannot_be_broken_at_"
        "a_space_anywhere_in_it_at_all")
TRACEBACK = ('  File "mine.py", line 22, in ring_attention\n'
             '    state = merge_chunk_stats(*state, *attention_chunk_stats(query, key_chunk, value_chunk, scale))\n'
             '  File "mine.py", line 16, in merge_chunk_stats\n'
             '    raise ValueError("merge is broken on purpose")\n'
             'ValueError: merge is broken on purpose')
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_torchs_own_lines_about_the_sandbox_are_set_apart_and_the_learners_kept() -> None:
    text = f"hello\n{C10D}\nmy [c10d] line\n{C10D} and mine\n{GLOO}\n"
    own, platform = split_platform(text)
    assert own == f"hello\nmy [c10d] line\n{C10D} and mine\n"  # only whole lines of torch's exact shape go
    assert platform == f"{C10D}\n{GLOO}\n"
    assert split_platform("plain output\n") == ("plain output\n", "")


def test_a_ranks_output_is_split_before_it_is_marked_with_the_rank() -> None:
    from grader.grading.distributed import _joined

    ranks = [SimpleNamespace(number=number, stderr=SimpleNamespace(take=lambda wait, n=number: f"{C10D}\nmine {n}\n"))
             for number in range(2)]
    assert _joined(ranks, "stderr") == ("[rank 0] mine 0\n[rank 1] mine 1\n", f"[rank 0] {C10D}\n[rank 1] {C10D}\n")


def console(width: int = 60) -> Console:
    return Console(file=io.StringIO(), width=width, theme=THEME, no_color=True, highlight=False, soft_wrap=True,
                   color_system=None)


def rendered(results: list[CaseResult], verbose: bool = False, width: int = 60, **fields) -> str:
    report = Report("07-ring-attention", "run", "mine.py", seconds=1.0, **fields)
    view = console(width)
    renderer = TerminalRenderer(view, stub_hint="mine.py", verbose=verbose)
    renderer.header(report.exercise, "run", report.file)
    renderer.start(report)
    for result in results:
        report.results.append(result)
        renderer.finished(result)
    renderer.finish(report)
    return view.file.getvalue()


def raised(name: str, function: str = "ring_attention", **fields) -> CaseResult:
    return CaseResult(name, "examples", function, "cpu", Outcome.ERROR, message="raised ValueError: merge is broken",
                      about="the whole ring on chunks of different lengths", inputs="query (4, 8), chunks [6, 6]",
                      traceback=TRACEBACK, **fields)


def test_the_platforms_lines_are_never_called_the_learners() -> None:
    result = raised("ring2", stderr="[rank 0] mine\n", platform_output=f"[rank 0] {C10D}\n[rank 1] {C10D}\n")
    out = rendered([result])
    assert "your code printed to stderr:" in out and "| [rank 0] mine" in out and "c10d" not in out
    verbose = rendered([result], verbose=True)
    assert "torch printed on its own (about the sandbox, not your code):" in verbose and "c10d" in verbose
    assert "mine" not in verbose[verbose.index("torch printed"):]  # the learner's line is not among torch's


def test_at_60_columns_every_line_fits_with_a_hanging_indent(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    failed = CaseResult("ring-uneven-chunks-with-a-long-name", "examples", "ring_attention", "cpu", Outcome.FAILED,
                        message=LONG, about="chunks of different lengths, one of them a single key " * 2,
                        details=[LONG], stdout="x" * 150 + "\n")
    out = rendered([failed, raised("a")], notes=["A note long enough to be wrapped somewhere " * 3])
    lines = out.splitlines()
    assert max(map(len, lines)) <= 60 and all(line == line.rstrip() for line in lines)
    message = lines.index("        output is wrong: largest error 0.5 at [0, 1]")
    assert lines[message + 1].startswith("          (allowed 1e-09), and")  # the rest of it, indented deeper
    assert "        | " + "x" * 48 in lines and "          " + "x" * 50 in lines  # output: cut, not word-wrapped
    # Code is cut with a mark, never wrapped onto a line of its own; the frames name path:line.
    assert "              state = merge_chunk_stats(*state, *attention_…" in lines
    assert "            mine.py:22 in ring_attention" in lines and "            mine.py:16 in merge_chunk_stats" in lines
    assert "raised ValueError: merge is broken" in out and "File \"mine.py\"" not in out


def test_piped_without_columns_each_text_stays_one_unpadded_line(monkeypatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    out = rendered([CaseResult("a", "examples", "f", "cpu", Outcome.FAILED, message=LONG)], width=80)
    assert f"        {LONG}" in out.splitlines()
    assert all(line == line.rstrip() for line in out.splitlines())


def test_the_same_error_is_printed_once_and_the_cases_with_it_named() -> None:
    results = [raised("a"), raised("b"), raised("c"), CaseResult("p", "examples", "ring_attention", "cpu",
                                                                 Outcome.PASSED), raised("d")]
    out = rendered(results, width=100)
    lines = out.splitlines()
    assert out.count("your code's traceback:") == 1 and out.count("ValueError: merge is broken on purpose") == 1
    assert "        same error in 2 more cases: b, c" in lines
    assert lines.index("        same error in 2 more cases: b, c") < lines.index("PASS    p (ring_attention, cpu)")
    assert "ERROR   d (ring_attention, cpu)" in lines and "        same error as a above" in lines
    # Another function's failure, or another message, is its own error; --verbose prints every one in full.
    other = rendered([raised("a"), raised("m", "merge_chunk_stats")], width=100)
    assert other.count("your code's traceback:") == 2 and "same error" not in other
    assert rendered(results, verbose=True, width=100).count("your code's traceback:") == 4


def test_timeouts_say_what_was_measured() -> None:
    how, words = timeout_detail(10, 10.2, 14.0, 3.5, 32)
    assert how == "running" and "your code was running" in words and "10.2 s of CPU" in words
    how, words = timeout_detail(10, 0.1, 33.0, 0.4, 32)
    assert how == "waiting" and "your code was waiting: 32 s of 33 s" in words
    # A CPU-bound loop on a busy machine: queued, not waiting, when the most wall-clock time ran out.
    how, words = timeout_detail(10, 4.0, 320.0, 310.0, 32)
    assert how == "busy" and "waiting" not in words and "310 s queued for a core" in words
    how, words = timeout_detail(10, 4.0, 33.0, None, 32)
    assert how == "unclear" and "look alike" in words


STUBS = """
def merge_chunk_stats(*args):
    raise NotImplementedError


def ring_attention(*args):
    raise NotImplementedError
"""


@pytest.mark.parametrize(("body", "said", "hint"), [
    ("while True:\n        pass", "your code was running", "a loop that never ends"),
    ("import time\n    time.sleep(60)", "your code was waiting", "a sleep, a lock or a read"),
], ids=("cpu-bound", "sleeping"))
def test_a_loop_and_a_sleep_are_told_apart(body: str, said: str, hint: str, exercise, tmp_path: Path) -> None:
    from grader.grading.pipeline import grade
    from grader.grading.request import Limits, Run

    file = tmp_path / "mine.py"
    file.write_text(f"def attention_chunk_stats(query, key_chunk, value_chunk):\n    {body}\n{STUBS}")
    report = grade(Run(Limits(time_limit=0.5).on(exercise), file, "run", "cpu", only={"stats-tiny-by-hand"}))
    [result] = report.results
    assert result.outcome is Outcome.TIMED_OUT, result.message
    assert said in result.message and hint in result.message, result.message


def test_prints_at_import_are_counted_and_shown_with_verbose(exercise, tmp_path: Path) -> None:
    from grader.grading.pipeline import grade
    from grader.grading.request import Run

    file = tmp_path / "mine.py"
    file.write_text('print("hello from import")\n' + (SUBMISSIONS / "correct_loop.py").read_text())
    for verbose in (False, True):
        view = console(100)
        renderer = TerminalRenderer(view, verbose=verbose)
        renderer.header(exercise.name, "run", "mine.py")
        report = grade(Run(exercise, file, "run", "cpu", only={"stats-tiny-by-hand"}), renderer)
        renderer.finish(report)
        out = view.file.getvalue()
        if verbose:
            assert "your file printed when imported:" in out.splitlines() and "        | hello from import" in out
        else:
            assert "Your file printed 1 line when imported (--verbose shows it)." in out.splitlines()
            assert "hello from import" not in out


def test_run_at_60_columns_fits_and_times_the_whole_command(course: Path) -> None:
    """The command as a learner runs it, piped with COLUMNS=60 and NO_COLOR (the fixture sets it)."""
    shutil.copy(SUBMISSIONS / "raises_in_merge.py", course / "mine.py")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "grader", "run", "--file", "mine.py", "--no-record", "--device", "cpu"],
                          cwd=course, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "60", "PYTHONPATH": str(REPO)})
    wall = time.monotonic() - started
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout + done.stderr
    assert max(map(len, lines)) <= 60 and all(line == line.rstrip() for line in lines), done.stdout
    assert "\x1b" not in done.stdout
    assert "            mine.py:16 in merge_chunk_stats" in lines
    assert any(line.startswith("        same error in ") for line in lines)
    seconds = float(next(line for line in lines if re.fullmatch(r"\d+\.\d s", line)).split()[0])
    assert seconds >= 0.6 * wall - 0.1, (seconds, wall)  # from the process's start, not from the first case


def test_time_left_comes_from_measured_costs_and_moves_while_a_case_runs() -> None:
    from grader.report.progress_bar import Pace

    now = [0.0]
    pace = Pace(clock=lambda: now[0])
    pace.start({"examples": 3, "ring": 3})
    assert pace.left() is None
    for at in (5.0, 6.0, 7.0):  # the first result's time (worker start, import) is no case's cost
        now[0] = at
        pace.advance("examples")
        assert pace.left() is None  # the ring has no case measured yet: no guess from the examples
    now[0] = 17.0
    pace.advance("ring")  # a ring case costs ten times an example
    assert pace.left() == 20.0
    now[0] = 21.0
    assert pace.left() == 16.0  # falls while the next case runs, not frozen until it ends
    now[0] = 37.0  # running longer than the first: the pace is slower than measured, and time left rises
    assert pace.left() == 15.0
    now[0] = 38.0
    pace.advance("ring")
    now[0] = 60.0
    assert pace.left() is None  # the last case, past every measured cost: no number rather than a wrong one


def test_the_bar_is_gone_when_the_command_is_interrupted() -> None:
    from grader.report.progress_bar import LiveProgress

    view = Console(file=io.StringIO(), force_terminal=True, width=80, theme=THEME)
    with pytest.raises(KeyboardInterrupt):
        with LiveProgress(view) as bar:
            bar.start({"examples": 3})
            bar.advance(CaseResult("a", "examples", "f", "cpu", Outcome.PASSED))
            view.print("a line above the bar")
            raise KeyboardInterrupt
    out = view.file.getvalue()
    assert "a line above the bar" in out and "\x1b[?25h" in out  # the cursor given back
    # The bar's line is erased last: after the final carriage return, nothing but erasing and the cursor.
    assert out.endswith("\r\x1b[1A\x1b[2K")  # the line up, the bar, erased last


def test_the_bar_leaves_room_for_an_echoed_ctrl_c() -> None:
    from grader.report.progress_bar import ECHO_ROOM, LiveProgress

    view = Console(file=io.StringIO(), force_terminal=True, width=70, theme=THEME)
    with LiveProgress(view) as bar:
        bar.start({"examples": 3})
        bar.advance(CaseResult("a", "examples", "f", "cpu", Outcome.PASSED))
    drawn = [line for line in re.split(r"[\r\n]", ESCAPES.sub("", view.file.getvalue())) if line.strip()]
    assert drawn and any("cases" in line for line in drawn)
    assert max(len(line) for line in drawn) <= 70 - ECHO_ROOM


def test_k_selects_the_distributed_suites_cases_too(course: Path, capsys) -> None:
    from grader.cli import main
    from grader.course.examples import select
    from grader.course.exercise import find_exercise
    from grader.errors import UsageError

    exercise = find_exercise(course, None)
    assert select(exercise, "ring2-even", ("ring", 2)) == {"ring2-even-split"}
    with pytest.raises(UsageError, match="matches no example"):
        select(exercise, "ring2-even")  # without --ring, the suite's cases are not among the examples
    solution = REPO / "solutions" / "07-ring-attention" / "ring_attention.py"
    code = main(["run", "--file", str(solution), "--ring", "2", "-k", "ring2-even", "--no-record", "--device", "cpu"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and lines[-1] == "1 passed, 0 failed", lines
    assert any(line.startswith("PASS    ring2-even-split") for line in lines)


def test_a_memory_failure_says_what_was_measured_beside_the_budget() -> None:
    from grader.course.rules.memory import MIB, RULE, hidden_multiple
    from grader.course.rules.rule import Call

    checker = SimpleNamespace(memory_budget=lambda function, inputs: 87 * MIB, rule_reasons={})

    def memory(audit, function, inputs, peak, observations, checker):
        return RULE.judge(Call(None, checker, SimpleNamespace(function=function, audit=audit), inputs, observations,
                               peak=peak))

    broken = memory(["memory"], "ring_attention", None, 250 * MIB, {}, checker)
    assert "held 250 MiB at once" in broken.message and "allows 87 MiB" in broken.message
    # A hidden case: the budget and a coarse step of the measured peak, never the exact figure its code chose.
    assert broken.hidden_message.startswith("held at least 2 times the 87 MiB this case allows, at once")
    assert "250" not in broken.hidden_message
    assert memory(["memory"], "ring_attention", None, 80 * MIB, {}, checker) is None
    assert hidden_multiple(100, 90) == "more than" and hidden_multiple(2000, 90) == "at least 16 times"
