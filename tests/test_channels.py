"""What a learner's files, names and text could carry past the grader: each way refused where it opens."""

from __future__ import annotations

import io
import os
import textwrap
from pathlib import Path

import pytest
from conftest import own_processes, survivors
from rich.console import Console

from grader.errors import UsageError
from grader.files import SOURCE_LIMIT, RefusedFile, read_regular
from grader.grading import failure
from grader.learner.state import snapshot
from grader.report.terminal import CONTINUED, THEME, TerminalRenderer, make_console
from grader.results import CaseResult, Outcome
from grader.staff.intake import find_submissions, make_ids

# ---------------------------------------------------------------- a learner's file: regular, not a link, bounded


def test_a_link_a_fifo_a_folder_and_a_huge_file_are_refused_without_reading_them(tmp_path) -> None:
    real = tmp_path / "real.py"
    real.write_text("x = 1\n")
    (tmp_path / "link.py").symlink_to(real)
    os.mkfifo(tmp_path / "pipe.py")  # opened for reading, it would block a reader that waited for a writer
    (tmp_path / "folder.py").mkdir()
    with open(tmp_path / "huge.py", "wb") as handle:
        handle.truncate(16 << 30)  # sparse: no disk, and never read
    assert read_regular(real) == b"x = 1\n"
    for name, reason in (("link.py", "a symbolic link"), ("pipe.py", "not a regular file"), ("folder.py", "a folder"),
                         ("huge.py", f"too large (17,179,869,184 bytes; the limit is {SOURCE_LIMIT:,})")):
        with pytest.raises(RefusedFile) as refused:
            read_regular(tmp_path / name)
        assert refused.value.reason == reason and refused.value.lasting
    with pytest.raises(RefusedFile) as refused:
        read_regular(tmp_path / "gone.py")
    assert refused.value.reason.startswith("unreadable: ") and not refused.value.lasting  # looked at again later


def test_no_more_than_the_limit_and_one_byte_is_read_whatever_fstat_said() -> None:
    # A file whose size reads 0 yet holds more (as one that grew after fstat would): cut at limit + 1.
    with pytest.raises(RefusedFile, match=r"too large \(more than 10 bytes\)"):
        read_regular(Path("/proc/self/status"), limit=10)


def test_folders_above_the_file_may_be_links_the_file_may_not(tmp_path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "mine.py").write_text("x = 1\n")
    (tmp_path / "through").symlink_to(tmp_path / "real")
    assert read_regular(tmp_path / "through" / "mine.py") == b"x = 1\n"
    (tmp_path / "real" / "other.py").symlink_to("mine.py")
    with pytest.raises(RefusedFile, match="a symbolic link"):
        read_regular(tmp_path / "through" / "other.py")


def test_the_submitted_snapshot_and_the_bundle_archive_never_follow_a_link(exercise, tmp_path) -> None:
    from grader.learner.submit import _archive

    real = tmp_path / "real.py"
    real.write_text("x = 1\n")
    (tmp_path / "link.py").symlink_to(real)
    assert snapshot(real) == b"x = 1\n" and snapshot(tmp_path / "link.py") is None
    with pytest.raises(UsageError, match=r"could not be read to archive it \(a symbolic link\)"):
        _archive(exercise, tmp_path / "link.py")
    assert not (exercise.root / "submissions").exists()


def test_a_file_refused_as_the_sandbox_copies_it_is_one_error_and_leaves_no_worker(scale_course, monkeypatch) -> None:
    from grader.course.exercise import find_exercise
    from grader.grading.pipeline import grade
    from grader.grading.request import Run
    from grader.sandbox.box import Sandbox

    def refused(self, host, folder="submission"):  # as a file swapped for a link after it was looked at is
        raise UsageError(f"{host}: not graded: a symbolic link")

    monkeypatch.setattr(Sandbox, "add_file", refused)
    before = own_processes()
    with pytest.raises(UsageError, match="not graded: a symbolic link"):
        grade(Run(find_exercise(scale_course, "02"), scale_course / "solutions/02-scale/scale.py", "submit", "cpu"))
    assert survivors(before, wait=1.0) == []


# ---------------------------------------------------------------- a cohort: each bad entry its own row


def test_every_entry_that_is_not_a_regular_file_is_its_own_row(tmp_path) -> None:
    cohort = tmp_path / "cohort"
    (cohort / "bob").mkdir(parents=True)
    (cohort / "alice.py").write_text("x = 1\n")
    (cohort / "bob" / "scale.py").symlink_to(cohort / "alice.py")  # a link inside a learner's folder
    (cohort / "carl.py").symlink_to("alice.py")  # a relative link
    (cohort / "dora").symlink_to(cohort / "bob")  # a link to a folder
    os.mkfifo(cohort / "erin.py")
    (cohort / "fred").mkdir()
    os.mkfifo(cohort / "fred" / "scale.py")
    strange = os.fsdecode(b"g\xffne.py")  # a name that is not UTF-8
    (cohort / strange).write_text("x = 2\n")
    found = {submission.name: submission for submission in find_submissions([cohort], "scale.py")}
    assert {name: submission.problem for name, submission in found.items()} == {
        "alice.py": "", "bob": "scale.py is a symbolic link", "carl.py": "a symbolic link", "dora": "a symbolic link",
        "erin.py": "not a regular file", "fred": "scale.py is not a regular file", strange: ""}
    assert all(submission.lasting for submission in found.values())
    assert all(submission.id.isascii() and submission.id.isprintable() for submission in found.values())
    assert found[strange].id.startswith("g_ne.py-") and found[strange].file == cohort / strange


def test_a_folder_named_on_the_command_line_may_be_reached_through_a_link(tmp_path) -> None:
    (tmp_path / "real" / "alice").mkdir(parents=True)
    (tmp_path / "real" / "alice" / "scale.py").write_text("x = 1\n")
    (tmp_path / "real" / "bob.py").write_text("x = 2\n")
    (tmp_path / "cohort").symlink_to(tmp_path / "real")
    found = find_submissions([tmp_path / "cohort"], "scale.py")
    assert [(submission.id, submission.problem) for submission in found] == [("alice", ""), ("bob.py", "")]
    (tmp_path / "one").symlink_to(tmp_path / "real" / "alice")  # one learner's folder, named through a link
    assert [(s.id, s.problem) for s in find_submissions([tmp_path / "one"], "scale.py")] == [("one", "")]
    (tmp_path / "file.py").symlink_to(tmp_path / "real" / "bob.py")  # a file named through a link is not followed
    assert [s.problem for s in find_submissions([tmp_path / "file.py"], "scale.py")] == ["a symbolic link"]


def test_ids_are_made_from_the_names_bytes() -> None:
    paths = [Path("/c") / os.fsdecode(name) for name in (b"a\xff.py", b"a\xfe.py", "a\udcff.py".encode(
        "utf-8", "surrogatepass"))]
    ids = [made for made, _ in make_ids(paths).values()]
    assert len(set(ids)) == 3 and all(made.isascii() and made.startswith("a_.py-") for made in ids)


# ---------------------------------------------------------------- hidden cases: only what the grader chose


def test_a_hidden_line_is_a_line_of_the_exercise_s_functions_and_a_type_is_from_a_fixed_list() -> None:
    lines = failure.nameable_lines({"scale": (1, 14), "helper": (15, 20)}, ["scale"])
    assert failure.line_named('  File "scale.py", line 8, in scale', lines) == " (line 8)"
    assert failure.line_named('  File "scale.py", line 350, in scale', lines) == ""
    assert failure.line_named('  File "scale.py", line 0, in scale', lines) == ""
    assert failure.line_named('  File "scale.py", line 17, in helper', lines) == ""  # not the exercise's function
    # A function too long to name a line of, however the file is padded: no line at all.
    assert failure.nameable_lines({"scale": (1, failure.MAX_NAMED_FUNCTION + 1)}, ["scale"]) == frozenset()
    assert failure.hidden_exception("KeyError") == "KeyError"
    assert failure.hidden_exception("EOFError") == failure.hidden_exception("LEAK_3x4") == failure.OTHER_EXCEPTION
    assert failure.OTHER_EXCEPTION == "an exception of another type"
    assert [failure.hidden_ending(how) for how in ("SIGSEGV", "SIGUSR1", "signal 40", "exit status 35", "killed")] == [
        "SIGSEGV", "a signal", "a signal", "exit status", "killed"]


CHOOSES_ITS_LINE_AND_EXIT = textwrap.dedent("""\
    import os


    def scale(x, factor):
        if factor == 5:  # a hidden case: a type and a line chosen to carry what the code saw
            exec(compile("\\n" * 349 + "raise EOFError()", __file__, "exec"))
        if factor == 1:  # the other one: an exit status chosen likewise
            os._exit(35)
        return sum((x for _ in range(factor)), x - x)
    """)
HONEST_FAILURES = textwrap.dedent("""\
    import os
    import signal


    def scale(x, factor):
        if factor == 5:
            raise KeyError("a hidden case")
        if factor == 1:
            os.kill(os.getpid(), signal.SIGUSR1)
        return sum((x for _ in range(factor)), x - x)
    """)


@pytest.mark.parametrize("source, expected", [
    (CHOOSES_ITS_LINE_AND_EXIT, {"scale-float32": "raised an exception of another type",
                                 "scale-by-one-is-required": "crashed: the worker process ended (exit status) while "
                                                             "running this case (your code ended the process"}),
    (HONEST_FAILURES, {"scale-float32": "raised KeyError (line 7)",
                       "scale-by-one-is-required": "crashed: the worker process ended (a signal) while running this "
                                                   "case"}),
])
def test_a_hidden_case_says_only_what_the_grader_chose(scale_course, tmp_path, source, expected) -> None:
    from grader.course.exercise import find_exercise
    from grader.grading.pipeline import grade
    from grader.grading.request import Run

    submission = tmp_path / "scale.py"
    submission.write_text(source)
    report = grade(Run(find_exercise(scale_course, "02"), submission, "submit", "cpu"))
    hidden = {result.name: result.message for result in report.results if result.hidden}
    assert set(hidden) == set(expected)
    for name, message in hidden.items():
        assert message.startswith(expected[name]), message
        assert "350" not in message and "35)" not in message and "SIGUSR1" not in message
    assert all(result.outcome is Outcome.PASSED for result in report.results if not result.hidden)


def test_a_file_padded_to_choose_its_line_names_none(scale_course, tmp_path) -> None:
    """700,000 lines, so that "line N" could be any of them: the raising function is too long to name a line of."""
    from grader.course.exercise import find_exercise
    from grader.grading.pipeline import grade
    from grader.grading.request import Run

    submission = tmp_path / "scale.py"
    submission.write_text("def scale(x, factor):\n" + "\n" * 699_990 + "    if factor == 5:\n"
                          "        raise KeyError('a line chosen among 700,000')\n"
                          "    return sum((x for _ in range(factor)), x - x)\n")
    report = grade(Run(find_exercise(scale_course, "02"), submission, "submit", "cpu"))
    hidden = {result.name: result.message for result in report.results if result.hidden}
    assert hidden["scale-float32"] == "raised KeyError"


# ---------------------------------------------------------------- learner text never starts a line of its own


def hostile_case() -> CaseResult:
    return CaseResult("tiny\nPASS    forged", "examples", "scale", "cpu", Outcome.ERROR,
                      message="raised ValueError: boom\nACCEPTED  Every test passes.", details=["a\nScore 100"],
                      traceback='  File "scale.py", line 3, in scale\nValueError: boom\nAccepted.',
                      stdout="x" * 150 + "\n")


def rendered(console: Console) -> list[str]:
    renderer = TerminalRenderer(console)
    renderer.header("02-scale", "run", "bad\nACCEPTED.py")
    renderer.finished(hostile_case())
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
    TerminalRenderer(console).finished(padded)
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
