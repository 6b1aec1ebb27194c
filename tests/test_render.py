"""The terminal view on a fixed-width console: what a learner reads, line by line."""

from __future__ import annotations

import io
import re
from collections import Counter

from rich.console import Console

from grader.report.terminal import THEME, TerminalRenderer, make_console
from grader.results import CaseResult, Diagnosis, Outcome, Report

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def sample_report() -> Report:
    report = Report("07-ring-attention", "submit", "mine.py", seconds=1.25)
    report.results = [
        CaseResult("stats-a", "examples", "attention_chunk_stats", "cpu", Outcome.PASSED),
        CaseResult("ring-b", "examples", "ring_attention", "cpu", Outcome.FAILED,
                   message="output is wrong: largest error 0.5 at [0, 1] (allowed 1e-09)",
                   about="uneven chunks", inputs="query (3, 4), chunks [5, 1, 6], float64",
                   details=["output: 12 of 12 values are outside the bound"], stdout="hello\n",
                   diagnosis=Diagnosis("add_without_rescale", "Adds chunk statistics without rescaling",
                                       "The sums were taken against different maxes.",
                                       "Multiply each side by exp(own max - new max).")),
        CaseResult("ring-secret", "hidden", "ring_attention", "cpu", Outcome.TIMED_OUT,
                   message="did not finish within the 10 s limit", inputs="", stdout=""),
    ]
    report.notes.append("CUDA skipped: torch.cuda.is_available() is False on this machine.")
    return report


def render(report: Report, console: Console) -> str:
    renderer = TerminalRenderer(console, stub_hint="exercises/07-ring-attention/ring_attention.py")
    renderer.header(report.exercise, report.mode, report.file)
    for result in report.results:
        renderer.finished(result)
    renderer.finish(report)
    return console.file.getvalue()


def fixed(width: int = 100) -> Console:
    return Console(file=io.StringIO(), width=width, theme=THEME, no_color=True, highlight=False,
                   soft_wrap=True, color_system=None)


def test_terminal_view_on_a_fixed_width_console() -> None:
    # A submission's verdict on one screen: the likely mistake first, then each cause once with one case.
    assert render(sample_report(), fixed()).splitlines() == [
        "07-ring-attention: mine.py on every test, hidden ones included",
        "Likely mistake: Adds chunk statistics without rescaling",
        "  explains: ring-b",
        "  why: The sums were taken against different maxes.",
        "  help: Multiply each side by exp(own max - new max).",
        "2 cases failed, for 2 causes:",
        "FAIL    ring_attention: output is wrong (1 case)",
        "        e.g. ring-b: largest error 0.5 at [0, 1] (allowed 1e-09)",
        "        checks: uneven chunks",
        "        your code printed:",
        "        | hello",
        "TIMEOUT ring_attention: did not finish within the 10 s limit (1 case)",
        "        e.g. ring-secret (hidden)",
        "grader run shows each example in full; --verbose, every case.",
        "CUDA skipped: torch.cuda.is_available() is False on this machine.",
        "examples  1/2 passed",
        "hidden    0/1 passed",
        "Not accepted: 2 of 3 cases failed.",
        "Score 1 of 3.",
        "1.2 s",
        "1 passed, 2 failed",
    ]
    # With --verbose, every case in full as it comes, then the summary.
    report = sample_report()
    console = fixed()
    renderer = TerminalRenderer(console, stub_hint="ring_attention.py", verbose=True)
    renderer.header(report.exercise, report.mode, report.file)
    for result in report.results:
        renderer.finished(result)
    renderer.finish(report)
    lines = console.file.getvalue().splitlines()
    assert lines[1:4] == ["PASS    stats-a (attention_chunk_stats, cpu)", "FAIL    ring-b (ring_attention, cpu)",
                          "        output is wrong: largest error 0.5 at [0, 1] (allowed 1e-09)"]
    assert "        output: 12 of 12 values are outside the bound" in lines


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_on_a_terminal_and_none_with_no_color(monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert "\x1b[" in render(sample_report(), make_console(file=FakeTerminal(), width=100))
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in render(sample_report(), make_console(file=FakeTerminal(), width=100))


def test_piped_output_is_plain(monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[" not in render(sample_report(), make_console(file=io.StringIO(), width=100))


def test_summary_line_counts_not_attempted_cases_apart() -> None:
    report = Report("07-ring-attention", "run", "mine.py")
    report.results = [CaseResult(f"case-{n}", "examples", "ring_attention", "cpu", Outcome.NOT_ATTEMPTED)
                      for n in range(7)]
    assert report.summary_line() == "0 passed, 0 failed, 7 not attempted"
    assert report.status == "failed" and report.failed == 7  # not accepted all the same
    report.results[:3] = [CaseResult("a", "examples", "f", "cpu", Outcome.PASSED),
                          CaseResult("b", "examples", "f", "cpu", Outcome.FAILED),
                          CaseResult("c", "examples", "f", "cuda", Outcome.SKIPPED)]
    assert report.summary_line() == "1 passed, 1 failed, 4 not attempted, 1 skipped"


RESCALE = Diagnosis("add_without_rescale", "Adds chunk statistics without rescaling", "Different maxes.", "Rescale.")
USES = {"ring_attention": ("attention_chunk_stats", "merge_chunk_stats")}


def case(name: str, function: str, outcome: Outcome = Outcome.PASSED, suite: str = "examples", **fields) -> CaseResult:
    return CaseResult(name, suite, function, "cpu", outcome, **fields)


def graded(mode: str, results: list[CaseResult], verbose: bool = False, console: Console | None = None,
           **fields) -> str:
    """What the terminal shows for a run, fed as grading feeds it: the plan, each result, the report."""
    report = Report("07-ring-attention", mode, "mine.py", seconds=2.0, uses=dict(USES), **fields)
    report.planned = dict(Counter(result.suite for result in results))
    console = console or fixed()
    renderer = TerminalRenderer(console, stub_hint="ring_attention.py", verbose=verbose)
    renderer.header(report.exercise, mode, report.file)
    with renderer.live():
        renderer.start(report)
        for result in results:
            report.results.append(result)
            renderer.finished(result)
    renderer.finish(report)
    return console.file.getvalue()


def mixed() -> list[CaseResult]:
    return [case("stats-a", "attention_chunk_stats"),
            case("merge-a", "merge_chunk_stats", Outcome.FAILED, message="output is wrong", diagnosis=RESCALE),
            case("ring-a", "ring_attention", Outcome.FAILED, message="output is wrong", diagnosis=RESCALE),
            case("stats-h", "attention_chunk_stats", suite="hidden"),
            case("ring-h", "ring_attention", Outcome.FAILED, "hidden", message="outside the allowed error",
                 diagnosis=RESCALE),
            case("ring-t", "ring_attention", Outcome.NOT_ATTEMPTED, "hidden")]


def test_submit_prints_failures_and_counts_per_suite_but_no_pass_lines() -> None:
    out = graded("submit", mixed())
    lines = out.splitlines()
    assert not any(line.startswith(("PASS", "TODO")) for line in lines)
    assert "FAIL    merge_chunk_stats: output is wrong (1 case)" in lines and "        e.g. ring-h (hidden)" in lines
    assert "examples  1/3 passed" in lines and "hidden    1/3 passed, 1 not attempted" in lines
    verbose = graded("submit", mixed(), verbose=True).splitlines()
    assert "PASS    stats-a (attention_chunk_stats, cpu)" in verbose
    assert "PASS    stats-h (attention_chunk_stats, cpu, hidden)" in verbose
    assert "TODO    ring-t (ring_attention, cpu, hidden)" in verbose
    # A run shows its few examples one by one, and has one suite: no per suite counts.
    run = graded("run", mixed()[:3]).splitlines()
    assert "PASS    stats-a (attention_chunk_stats, cpu)" in run and not any(" passed," in l for l in run[:-1])
    assert not any(line.startswith("examples ") for line in run)


def test_a_diagnosis_is_printed_once_with_the_cases_it_explains() -> None:
    out = graded("submit", mixed())
    assert out.count("Adds chunk statistics without rescaling") == 1
    assert out.count("why: Different maxes.") == 1 and out.count("help: Rescale.") == 1
    assert "  explains: merge-a, ring-a; and 1 hidden case" in out.splitlines()
    assert "Hidden cases suggest" not in out


def test_a_diagnosis_seen_only_in_hidden_cases_points_to_the_hints_not_to_help_never_shown() -> None:
    results = [case("merge-a", "merge_chunk_stats"),
               case("merge-h", "merge_chunk_stats", Outcome.FAILED, "hidden", message="wrong", diagnosis=RESCALE),
               case("merge-i", "merge_chunk_stats", Outcome.FAILED, "hidden", message="wrong", diagnosis=RESCALE)]
    out = graded("submit", results)
    assert ("Hidden cases suggest: Adds chunk statistics without rescaling (2 hidden cases). Stuck? grader hint "
            "opens one hint at a time.") in out.splitlines()
    assert "examples' help" not in out and "why:" not in out and "help:" not in out


def observed() -> list[CaseResult]:
    """mixed(), where the worker saw each ring_attention call reach merge_chunk_stats."""
    results = mixed()
    for result in results:
        if result.function == "ring_attention":
            result.reached = ["attention_chunk_stats", "merge_chunk_stats"]
    return results


def test_a_failure_that_may_follow_from_a_function_it_calls_says_so() -> None:
    out = graded("run", observed(), verbose=True)
    ring = out[out.index("FAIL    ring-a"):]
    assert "        this may follow from merge_chunk_stats failing above: fix that first" in ring.splitlines()
    assert "may follow" not in out[:out.index("FAIL    ring-a")]  # not on merge's own failure
    assert ("        outside the allowed error (may follow from merge_chunk_stats failing above)"
            in out.splitlines())  # a hidden case: on its one line
    said = "Fix merge_chunk_stats first: ring_attention called it in this run, so its failures may follow from that one."
    assert said in out and said in graded("submit", observed())
    # Printed above or not, a function that calls nothing that failed gets no note.
    alone = graded("submit", [case("ring-a", "ring_attention", Outcome.FAILED, message="wrong", reached=["f"]),
                              case("merge-a", "merge_chunk_stats")])
    assert "may follow" not in alone and "Fix " not in alone


def test_the_hedge_is_said_only_of_a_call_the_learners_code_showed() -> None:
    # The checker says ring_attention uses merge_chunk_stats (USES), but this file's ring_attention was never seen
    # calling it: nothing may follow from it.
    unseen = graded("submit", mixed())
    assert "may follow" not in unseen and "Fix " not in unseen
    assert "may follow" not in graded("run", mixed(), verbose=True)
    # A distributed case's program is the course's own: what it calls, it calls.
    ring = case("ring2-a", "distributed_ring", Outcome.FAILED, "ring", message="the output of rank 0 is wrong",
                extra={"ranks": 2}, reached=["merge_chunk_stats"])
    out = graded("submit", [*mixed(), ring])
    assert "Fix merge_chunk_stats first: the ring suite calls it, so its failures may follow from that one." in out
    assert "distributed_ring" not in out and "FAIL    ring suite, 2 ranks: the output of rank 0 is wrong" in out


def test_the_note_waits_for_a_failure_above_and_the_summary_names_one_below() -> None:
    out = graded("run", [case("ring-a", "ring_attention", Outcome.FAILED, message="wrong", reached=["merge_chunk_stats"]),
                         case("merge-h", "merge_chunk_stats", Outcome.FAILED, "hidden", message="wrong")])
    assert "failing above" not in out  # nothing had failed above ring-a when it was printed
    assert "Fix merge_chunk_stats first:" in out


def test_a_file_that_cannot_be_imported_is_reported_once_with_the_count() -> None:
    error = "mine.py:3: your file could not be imported: SyntaxError: invalid syntax\n    def f(:"
    results = [case(f"case-{n}", "ring_attention", Outcome.ERROR, "hidden" if n > 2 else "examples",
                    message=error.splitlines()[0], load_failed=True) for n in range(9)]
    out = graded("submit", results, load_error=error)
    assert out.count("SyntaxError") == 1 and "ERROR" not in out
    assert "Your file could not be imported, so none of its 9 cases ran:" in out.splitlines()
    assert "      def f(:" in out.splitlines()
    assert out.splitlines()[-1] == "0 passed, 0 failed, 9 not run (the file could not be imported)"
    # The visible cases ran in a worker that imported the file; the hidden ones' worker could not.
    results[:3] = [case(f"case-{n}", "ring_attention") for n in range(3)]
    out = graded("submit", results, load_error=error)
    assert "Your file could not be imported, so 6 of its 9 cases did not run:" in out.splitlines()
    assert out.splitlines()[-1] == "3 passed, 0 failed, 6 not run (the file could not be imported)"


def test_not_attempted_functions_are_named_and_not_counted_as_failures() -> None:
    results = [case("stats-a", "attention_chunk_stats"),
               case("merge-a", "merge_chunk_stats", Outcome.FAILED, message="wrong"),
               case("ring-a", "ring_attention", Outcome.NOT_ATTEMPTED),
               case("ring-b", "ring_attention", Outcome.NOT_ATTEMPTED)]
    out = graded("submit", results).splitlines()
    assert "Not attempted yet: ring_attention (it raises NotImplementedError)." in out
    assert "Not accepted: 1 of 4 cases failed and 2 are not attempted yet." in out
    assert out[-1] == "1 passed, 1 failed, 2 not attempted"
    stub = graded("submit", [case(f"c{n}", "ring_attention", Outcome.NOT_ATTEMPTED) for n in range(7)]).splitlines()
    assert stub[-1] == "0 passed, 0 failed, 7 not attempted"
    assert any(line.startswith("Not attempted yet. Write the functions in ring_attention.py") for line in stub)


def test_the_progress_bar_is_drawn_on_a_terminal_and_never_piped(monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    piped = graded("submit", mixed(), console=make_console(file=io.StringIO(), width=100))
    without = io.StringIO()
    console = make_console(file=without, width=100)
    renderer = TerminalRenderer(console, stub_hint="ring_attention.py")
    report = Report("07-ring-attention", "submit", "mine.py", seconds=2.0, uses=dict(USES), results=mixed())
    renderer.header(report.exercise, "submit", report.file)
    renderer.start(report)
    for result in report.results:
        renderer.finished(result)
    renderer.finish(report)
    assert piped == without.getvalue()  # the bar adds nothing at all to a pipe
    assert "\x1b" not in piped and "\r" not in piped
    drawn = graded("submit", mixed(), console=make_console(file=FakeTerminal(), width=100))
    assert "\x1b[?25l" in drawn and "\x1b[?25h" in drawn  # the cursor hidden while the bar is drawn, then back
    assert "6/6" in drawn  # cases done of planned, drawn before the bar was taken away
    assert ESCAPES.sub("", drawn).splitlines()[-1] == "2 passed, 3 failed, 1 not attempted"


def test_the_bar_names_the_suite_running_and_its_progress() -> None:
    from grader.report.progress_bar import LiveProgress

    bar = LiveProgress(fixed())
    assert not LiveProgress.wanted(bar.console) and bar.describe() == "starting"
    with bar:
        bar.start({"examples": 2, "hidden": 3})
        assert bar.describe() == "examples 0/2"
        for result in (case("a", "f"), case("b", "f"), case("c", "f", suite="hidden")):
            bar.advance(result)
        assert bar.describe() == "hidden 1/3"
    assert bar.console.file.getvalue() == ""


def test_a_forced_terminal_draws_the_bar_and_still_ends_with_the_summary() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=100, theme=THEME, highlight=False, soft_wrap=True)
    drawn = graded("submit", mixed(), console=console)
    lines = ESCAPES.sub("", drawn).splitlines()
    assert "\x1b[2K" in drawn and any("6/6 cases" in line for line in lines)  # the bar, redrawn in place
    assert "examples  1/3 passed" in lines and "hidden    1/3 passed, 1 not attempted" in lines
    assert "Not accepted: 3 of 6 cases failed and 1 is not attempted yet." in lines
    assert lines[-1] == "2 passed, 3 failed, 1 not attempted"
    # The header stays above the bar; the failures are shown once the bar is gone, each cause once.
    header = lines.index("07-ring-attention: mine.py on every test, hidden ones included")
    assert header < lines.index("FAIL    merge_chunk_stats: output is wrong (1 case)") < \
        lines.index("examples  1/3 passed")


def test_the_plan_counts_every_suite_and_says_which_functions_call_which(exercise) -> None:
    from grader.grading.distributed import DistributedRun
    from grader.grading.pipeline import _plan, load_trusted

    trusted = load_trusted(exercise, "submit", distributed=True)
    report = Report(exercise.name, "submit", "mine.py")
    _plan(report, trusted, ["cpu"], DistributedRun(trusted.suites["ring"], 3))
    assert report.uses == {"ring_attention": ("attention_chunk_stats", "merge_chunk_stats"),
                           "distributed_ring": ("attention_chunk_stats", "merge_chunk_stats")}
    assert list(report.planned) == ["examples", "hidden", "ring"]  # the order they run in
    assert report.planned["ring"] == len(trusted.suites["ring"].cases(3)) > 0
    assert sum(report.planned.values()) - report.planned["ring"] == len(trusted.cases)  # one device: one run each


def test_grading_announces_its_plan_before_the_first_result_and_marks_cases_a_load_error_kept(exercise) -> None:
    from conftest import SUBMISSIONS, Heard

    from grader.grading.pipeline import grade
    from grader.grading.request import Run

    seen: list[object] = []
    report = grade(Run(exercise, SUBMISSIONS / "syntax_error.py", "run", "cpu"),
                   Heard(start=lambda report: seen.append(dict(report.planned)), finished=seen.append))
    assert seen[0] == {"examples": len(report.results)} and seen[1:] == report.results
    assert report.load_error and all(result.load_failed for result in report.results)


def test_cases_the_time_budget_kept_from_running_are_counted_once_not_listed() -> None:
    reason = "not run: ring_attention already timed out on a; it is not called again in this run"
    results = [case("a", "ring_attention", Outcome.TIMED_OUT, "hidden", message="did not finish within the 10 s limit",
                    cause="timed out (running)")]
    results += [case(f"left-{n}", "ring_attention", Outcome.TIMED_OUT, "hidden", message=reason,
                     not_run="timeouts", cause="not run: it timed out before") for n in range(40)]
    note = "ring_attention timed out and was not called again: 40 more of its cases did not run."
    out = graded("submit", results, notes=[note])
    # The timeout once, the cases it kept from running once, counted.
    assert out.count("TIMEOUT") == 2 and out.count("already timed out on") == 1 and out.count(note) == 1
    assert "TIMEOUT ring_attention: not run: it timed out before (40 cases)" in out.splitlines()
    assert "hidden  0/41 passed" in out.splitlines()
    assert graded("submit", results, verbose=True, notes=[note]).count("already timed out on") == 40  # when asked


def test_one_mistake_across_a_whole_submission_is_one_cause_wherever_its_cases_came() -> None:
    # A hundred cases failing the same way, with passes between them: one cause, counted, one case shown.
    results = []
    for n in range(100):
        results.append(case(f"ring-{n}", "ring_attention", Outcome.FAILED, "hidden" if n > 2 else "examples",
                            message="output is wrong: outside the allowed error" if n > 2 else
                            f"output is wrong: largest error 0.{n + 1} at [0, {n}] (allowed 1e-09)",
                            cause="output is wrong: outside the allowed error", about="a ring"))
        results.append(case(f"stats-{n}", "attention_chunk_stats", suite="hidden"))
    out = graded("submit", results)
    lines = out.splitlines()
    assert "FAIL    ring_attention: output is wrong: outside the allowed error (100 cases)" in lines
    assert "        e.g. ring-0: largest error 0.1 at [0, 0] (allowed 1e-09)" in lines
    assert "        also: ring-1, ring-2 and 97 hidden cases" in lines
    assert out.count("ring-5") == 0 and len(lines) < 20
