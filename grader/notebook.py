"""The notebook's front door: `%grader COMMAND ...` runs a command as the terminal does, `%%grader_file EX` saves a cell.

Loaded by `%load_ext grader` (grader/__init__.py hands IPython's hook on to `register`). `run` and `submit` are
graded by the learner's library entry point (grader/learner/submit.py), every other command runs through the
`grader` command's own `main`; either way its report, its messages and its exit statuses are the terminal's.
Inside a notebook (Jupyter, JupyterLab, VS Code, Colab) a command's whole report is one output of its cell: every
console the command makes is one that records what it prints (grader/report/console.py, in_place), shown in one
display updated in place as lines come, as HTML with the report's colours and as plain text without escape codes.
Nothing here ever leaves a traceback in a cell.
"""

from __future__ import annotations

import os
import shlex
import signal
import time
from pathlib import Path
from typing import Any

from grader.errors import GraderError, UsageError
from grader.inert import inert

LINE_MAGIC, CELL_MAGIC = "grader", "grader_file"
GRADED = ("run", "submit")  # the commands graded here through grader/learner/submit.py
USAGE = "usage: %%grader_file EX, then the file's whole text in the rest of the cell (EX: 07 or its full name)"
WIDTH = 100     # columns a report is laid out in, unless COLUMNS says: the page wraps what is longer
EVERY = 0.3     # seconds between two updates of a cell's output while a command runs
PAGE = ('<pre style="white-space:pre-wrap;overflow-wrap:anywhere;line-height:1.35;margin:0;'
        'font-family:Menlo,\'DejaVu Sans Mono\',consolas,\'Courier New\',monospace">{code}</pre>')


class OneOutput:
    """A command's report as one output of its cell: what its console prints is recorded, and shown in one display
    (HTML with its colours, plain text without escape codes), updated in place at most every EVERY seconds."""

    def __init__(self) -> None:
        from rich.console import Console

        from grader.report.console import THEME

        plain = bool(os.environ.get("NO_COLOR"))
        columns = os.environ.get("COLUMNS", "").strip()
        self._handle: Any = None
        self._shown = 0.0
        self.console = Console(file=_Sink(self._written), record=True, theme=THEME, force_jupyter=False,
                               force_terminal=False, width=int(columns) if columns.isdigit() else WIDTH, no_color=plain,
                               color_system=None if plain else "truecolor", highlight=False, soft_wrap=True,
                               emoji=False)

    def _written(self) -> None:
        if time.monotonic() - self._shown >= EVERY:
            self.show()

    def show(self) -> None:
        """Show what was printed so far (nothing, before anything was)."""
        from IPython.display import display

        text = self.console.export_text(clear=False, styles=False).rstrip("\n")
        if not text:
            return
        data = {"text/plain": text, "text/html": self.console.export_html(clear=False, inline_styles=True,
                                                                            code_format=PAGE)}
        if self._handle is None:
            self._handle = display(data, raw=True, display_id=True)
        else:
            self._handle.update(data, raw=True)
        self._shown = time.monotonic()


class _Sink:
    """Where the recording console writes: nowhere (the record is shown), saying each time that it did."""

    def __init__(self, written: Any) -> None:
        self._written = written

    def write(self, text: str) -> int:
        self._written()
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def register(ipython: Any) -> None:
    """Give `ipython` the %grader line magic and the %%grader_file cell magic."""
    ipython.register_magic_function(run_command, magic_kind="line", magic_name=LINE_MAGIC)
    ipython.register_magic_function(write_cell, magic_kind="cell", magic_name=CELL_MAGIC)


def run_command(line: str) -> None:
    """`%grader run 07 --verbose`: the rest of the line is a `grader` command line, run in this kernel; what it
    prints is one output of the cell."""
    from grader.report.console import in_place

    output = OneOutput()
    try:
        with in_place(output.console):
            _command(line)
    finally:
        output.show()


def _command(line: str) -> None:
    from grader.cli import main, stoppable

    try:
        argv = shlex.split(line)
    except ValueError as error:  # an unclosed quote
        _say(f"error: %grader {inert(line)}: {error}")
        return
    # A real Ctrl-C leaves main's handlers ignoring the next one, as a process on its way out wants; a kernel
    # lives on, and its next interrupt must work: its own handlers come back whatever happened.
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        if argv and argv[0] in GRADED:
            stoppable(lambda: _graded(argv))
        else:
            main(argv)
    except SystemExit:
        pass  # argparse has said what was wrong (or printed the help): the terminal's words, not a traceback
    finally:
        for signum, handler in handlers.items():
            try:
                signal.signal(signum, signal.SIG_DFL if handler is None else handler)
            except ValueError:  # not the main thread: main() set nothing there either
                pass


def _graded(argv: list[str]) -> int:
    """`%grader run ...` or `%grader submit ...`: the line read as the command reads it, then graded and shown as the
    terminal shows it; the command's exit status. The duration shown is the cell's, not the kernel's."""
    from grader.cli import answered
    from grader.cli.common import exercise_from_args, exit_status, learner_view
    from grader.cli.parser import build_parser
    from grader.learner.submit import Request, grade_learner
    from grader.report.terminal import make_console

    started = time.monotonic()
    args = build_parser().parse_args(argv)  # a usage error: argparse's own words, and SystemExit
    console = make_console()

    def graded() -> int:
        exercise = exercise_from_args(args)
        view = learner_view(console, exercise, args.verbose, started, not args.no_record)
        return exit_status(grade_learner(Request.from_args(args, args.command, exercise), view).report)

    return answered(console, graded)


def write_cell(line: str, cell: str) -> None:
    """`%%grader_file 07` above a cell: the cell's text becomes the learner's file of exercise 07."""
    output = OneOutput()
    try:
        _write_cell(output.console, line, cell)
    finally:
        output.show()


def _write_cell(console: Any, line: str, cell: str) -> None:
    try:
        said = save(line, cell)
    except GraderError as error:
        said = f"error: {inert(str(error))}"
    except Exception:  # noqa: BLE001  (the one place this magic's own failures meet the learner)
        from grader.cli import internal_error

        internal_error(console)
        return
    console.print(said, markup=False, highlight=False)


def save(line: str, cell: str, start: Path | None = None) -> str:
    """Write `cell` to the stub of the exercise `line` names, in the course found from `start` (the working
    folder), backing up a file of the learner's own first; the one line that says what was done."""
    from grader.course.exercise import find_exercise, find_root
    from grader.files import write_atomic
    from grader.learner.state import LearnerState

    try:
        words = shlex.split(line)
    except ValueError:
        words = []
    if len(words) != 1:
        # Never a default exercise: a cell run again after an acceptance would overwrite the next exercise's file.
        raise UsageError(USAGE)
    exercise = find_exercise(find_root(start), words[0])
    stub, text = exercise.stub, cell if cell.endswith("\n") else cell + "\n"
    shown = stub.relative_to(exercise.root)
    old = _read(stub)
    if old == text.encode("utf-8"):
        return f"{shown} already holds this cell's text: nothing written."
    kept = None
    if old is not None and old != _read(exercise.starter):
        kept = LearnerState(exercise.root).backup(exercise.name, stub, before="a notebook cell")
    write_atomic(stub, text)
    lines = text.count("\n")
    said = f"Wrote {shown} ({lines} line{'s' if lines != 1 else ''}), {exercise.name}'s file."
    if kept is not None:
        said += (f" Your previous file is kept in {kept.source.relative_to(exercise.root)} "
                 f"(%grader restore backup-{kept.number} {exercise.name} brings it back).")
    return inert(said + f" Next: %grader run {exercise.name}")


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _say(text: str) -> None:
    from grader.report.terminal import make_console

    make_console().print(text, markup=False, highlight=False)
