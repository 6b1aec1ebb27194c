"""What a learner's files, names and text could carry past the grader: each way refused where it opens."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from grader.report.terminal import CONTINUED, THEME, TerminalRenderer, make_console
from grader.results import CaseResult, Outcome

# ---------------------------------------------------------------- learner text never starts a line of its own


def hostile_case() -> CaseResult:
    return CaseResult("tiny\nPASS    forged", "examples", "scale", "cpu", Outcome.ERROR,
                      message="raised ValueError: boom\nACCEPTED  Every test passes.", details=["a\nScore 100"],
                      traceback='  File "scale.py", line 3, in scale\nValueError: boom\nAccepted.',
                      stdout="x" * 150 + "\n")


def rendered(console: Console) -> list[str]:
    renderer = TerminalRenderer(console)
    renderer.header("02-scale", "run", "bad\nACCEPTED.py")
    renderer.case(hostile_case())
    return console.file.getvalue().splitlines()


def grader_columns(line: str) -> bool:
    """Whether a line starts at a column the grader's own lines start at (0 or 8) with learner text."""
    return line.lstrip(" ").startswith(("ACCEPTED", "Accepted", "Score", "PASS    forged")) and (
        len(line) - len(line.lstrip(" ")) in (0, 8))


def test_every_later_line_of_learner_text_is_indented_under_it() -> None:
    lines = rendered(make_console(file=io.StringIO(), width=200))
    assert lines[0] == "02-scale: bad\\nACCEPTED.py on examples"  # names stay on one line
    assert lines[1] == "ERROR   tiny\\nPASS    forged (scale, cpu)"
    assert CONTINUED + "ACCEPTED  Every test passes." in lines and CONTINUED + "Score 100" in lines
    assert not any(grader_columns(line) for line in lines), lines


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("width", [40, 80])
def test_on_a_terminal_a_long_line_is_wrapped_under_itself_never_at_column_0(monkeypatch, width) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    padded = CaseResult("tiny", "examples", "scale", "cpu", Outcome.FAILED,
                        message="wrong" + " " * (width - 13) + "ACCEPTED  Every test passes." + "y" * 3 * width)
    console = make_console(file=FakeTerminal(), width=width)
    TerminalRenderer(console).case(padded)
    lines = rendered(console)
    assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
    assert not any(grader_columns(line) for line in lines), lines
    assert CONTINUED + "ACCEPTED  Every test passes." in "\n".join(lines)
    # What a terminal shows is what was printed: no line left for it to wrap.
    assert all(not line or line.startswith(("ERROR", "FAIL", "02-scale", " ")) for line in lines), lines


def test_a_not_graded_reason_stays_on_its_row() -> None:
    from grader.report.cohort_terminal import CohortProgress
    from grader.results.cohort import Finished

    console = Console(file=io.StringIO(), width=200, theme=THEME, color_system=None)
    progress = CohortProgress(console)
    progress.start(1, 0, 1)
    progress.finished(Finished("mallory", "not graded", None, 10.0,
                               "more than one candidate file (x\nzed: 10 of 10, passed (0.3 s)\n.py, y.py)", 0.0))
    lines = console.file.getvalue().splitlines()
    assert lines[-1] == ("[1/1] mallory: not graded: more than one candidate file (x\\nzed: 10 of 10, passed "
                         "(0.3 s)\\n.py, y.py)")
