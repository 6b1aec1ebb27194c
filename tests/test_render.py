"""The terminal view on a fixed-width console: what a learner reads, line by line."""

from __future__ import annotations

import io

from rich.console import Console

from grader.render_terminal import THEME, TerminalRenderer, make_console
from grader.results import CaseResult, Diagnosis, Outcome, Report


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
        renderer.case(result)
    renderer.finish(report)
    return console.file.getvalue()


def test_terminal_view_on_a_fixed_width_console() -> None:
    console = Console(file=io.StringIO(), width=100, theme=THEME, no_color=True, highlight=False,
                      soft_wrap=True, color_system=None)
    assert render(sample_report(), console).splitlines() == [
        "07-ring-attention: mine.py on every test, hidden ones included",
        "PASS    stats-a (attention_chunk_stats, cpu)",
        "FAIL    ring-b (ring_attention, cpu)",
        "        output is wrong: largest error 0.5 at [0, 1] (allowed 1e-09)",
        "        checks: uneven chunks",
        "        inputs: query (3, 4), chunks [5, 1, 6], float64",
        "        output: 12 of 12 values are outside the bound",
        "        Likely mistake: Adds chunk statistics without rescaling",
        "        why: The sums were taken against different maxes.",
        "        help: Multiply each side by exp(own max - new max).",
        "        your code printed:",
        "        | hello",
        "TIMEOUT ring-secret (ring_attention, cpu, hidden)",
        "        did not finish within the 10 s limit",
        "CUDA skipped: torch.cuda.is_available() is False on this machine.",
        "Not accepted: 2 of 3 cases failed.",
        "Score 1 of 3.",
        "1.2 s",
        "1 passed, 2 failed",
    ]


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


def test_the_plan_counts_every_suite_and_says_which_functions_call_which(exercise) -> None:
    from grader.grading import _plan, load_trusted

    trusted = load_trusted(exercise, "submit", group=True)
    report = Report(exercise.name, "submit", "mine.py")
    _plan(report, trusted, ["cpu"], ("ring", 3))
    assert report.uses == {"ring_attention": ("attention_chunk_stats", "merge_chunk_stats"),
                           "distributed_ring": ("attention_chunk_stats", "merge_chunk_stats")}
    assert list(report.planned) == ["examples", "hidden", "ring"]  # the order they run in
    assert report.planned["ring"] == len(trusted.suites["ring"].cases(3)) > 0
    assert sum(report.planned.values()) - report.planned["ring"] == len(trusted.cases)  # one device: one run each


def test_grading_announces_its_plan_before_the_first_result_and_marks_cases_a_load_error_kept(exercise) -> None:
    from conftest import SUBMISSIONS
    from grader.grading import grade

    seen: list[object] = []
    report = grade(exercise, SUBMISSIONS / "syntax_error.py", "run", "cpu", on_result=seen.append,
                   on_start=lambda report: seen.append(dict(report.planned)))
    assert seen[0] == {"examples": len(report.results)} and seen[1:] == report.results
    assert report.load_error and all(result.load_failed for result in report.results)
