"""The `grader` command: thin argument parsing; each command calls one library function."""

from __future__ import annotations

import argparse
import atexit
import os
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from grader import __version__, progress
from grader.errors import GraderError
from grader.text import inert

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

if TYPE_CHECKING:
    from rich.console import Console


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description="Exercises for ML systems, graded locally.")
    parser.add_argument("--version", action="version", version=f"grader {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("list", help="list the course's exercises")
    for name, text in (("show", "show an exercise's statement"), ("hint", "open the next hint"),
                       ("status", "where you stand"), ("reset", "restore the stub (your file is backed up)"),
                       ("validate", "instructors: check cases, reference, stub, hints and the catalogue")):
        command = commands.add_parser(name, help=text)
        command.add_argument("exercise", nargs="?", help="exercise name (optional while the course has one)")
        if name == "validate":
            command.add_argument("--json", type=Path, metavar="PATH", help="also write the checks and the matrix")
            command.add_argument("--fresh", action="store_true",
                                 help="grade everything again instead of reusing remembered verdicts")
    for name, text in (("run", "check your code against the examples"),
                       ("submit", "run every test, hidden ones included"),
                       ("watch", "run the examples again each time your file is saved (Ctrl-C stops)")):
        command = commands.add_parser(name, help=text)
        command.add_argument("exercise", nargs="?", help="exercise name (optional while the course has one)")
        command.add_argument("--file", type=Path, help="grade this file instead of the exercise's stub")
        command.add_argument("--device", default="all", choices=("cpu", "cuda", "all"),
                             help="where to run the cases (default: all: the CPU, and CUDA when present)")
        command.add_argument("--json", type=Path, metavar="PATH", help="also write a results file (Gradescope)")
        command.add_argument("--no-record", action="store_true", help="do not record this in .grader/")
        _limit_options(command, "memory limit of the worker",
                       "for the whole command (default: the exercise's, 300 s): cases left then are not run")
        command.add_argument("--ring", type=int, metavar="N",
                             help="then run a real ring of N >= 2 processes (torch.distributed)")
        command.add_argument("--verbose", action="store_true",
                             help="a line for every case, passing ones included (submit shows failures only)")
        if name in ("run", "watch"):
            command.add_argument("-k", dest="pattern", metavar="PATTERN",
                                 help="only the examples whose name contains PATTERN (or matches it: 'ring-*')")
    _add_history_commands(commands)
    repro = commands.add_parser("repro", help="write a script that calls your function on one example's inputs")
    repro.add_argument("case", help="the example's name, as grader run shows it")
    repro.add_argument("exercise", nargs="?", help="exercise name (optional while the course has one)")
    repro.add_argument("--file", type=Path, help="call the functions of this file instead of the exercise's stub")
    export = commands.add_parser("export", help="course staff: build what is handed out or uploaded")
    kinds = export.add_subparsers(dest="kind", metavar="KIND", required=True)
    gradescope = kinds.add_parser("gradescope", help="the autograder zip for one exercise")
    gradescope.add_argument("exercise", nargs="?", help="exercise name (optional while the course has one)")
    gradescope.add_argument("-o", "--out", type=Path, required=True, metavar="PATH", help="where to write it")
    learner = kinds.add_parser("learner", help="a bundle for learners: statements, stubs, hints, examples; no answers")
    learner.add_argument("exercise", nargs="*", help="the exercises to include (default: every one of the course)")
    learner.add_argument("-o", "--out", type=Path, required=True, metavar="DIR", help="a new or empty folder")
    learner.add_argument("--hand-in", metavar="TEXT",
                         help="how learners hand in their archive, said by `grader submit` in the bundle")
    autograde = commands.add_parser("autograde", help="what an exported autograder runs for each submission")
    autograde.add_argument("--root", type=Path, default=Path("/autograder"), help="the autograder's tree")
    _add_staff_commands(commands)
    return parser


def _add_history_commands(commands: Any) -> None:
    """`history` and `restore`: every submission and every replaced file is kept in .grader/ and can come back."""
    history = commands.add_parser("history", help="your submissions and backups, numbered")
    history.add_argument("exercise", nargs="?", help="exercise name (default: every exercise)")
    restore = commands.add_parser("restore", help="put a submission or a backup back in your file (backed up first)")
    restore.add_argument("which", metavar="N", help="a submission's number (3) or a backup (backup-2)")
    restore.add_argument("exercise", nargs="?", help="exercise name (optional while the course has one)")


def _add_staff_commands(commands: argparse._SubParsersAction) -> None:
    """Course staff's commands: grade a cohort, merge shards' gradebooks."""
    command = commands.add_parser("grade", help="course staff: grade a cohort's submissions into a gradebook")
    command.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION",
                         help="a learner's .py or submission archive, a folder holding one, or a folder of those")
    command.add_argument("--out", type=Path, required=True, metavar="DIR", help="the gradebook's folder")
    command.add_argument("--exercise", metavar="EX", help="the exercise (optional while the course has one)")
    command.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                         help="submissions graded at once (default: the number of cores)")
    command.add_argument("--force", action="store_true", help="grade again what is already graded")
    command.add_argument("--shard", metavar="K/N", help="grade only shard K of N (1-based); merge them after")
    command.add_argument("--device", default="cpu", choices=("cpu", "all"),
                         help="where cases run (default cpu, the same on every machine; all: CUDA too)")
    _limit_options(command, "memory limit of the learner's code",
                   "for each submission (default: the exercise's): cases left then are not run")
    book = commands.add_parser("gradebook", help="course staff: work with gradebooks")
    actions = book.add_subparsers(dest="action", metavar="ACTION", required=True)
    merge = actions.add_parser("merge", help="join shards' gradebooks into one")
    merge.add_argument("folders", nargs="+", type=Path, metavar="DIR", help="gradebooks written by grader grade")
    merge.add_argument("--out", type=Path, required=True, metavar="DIR", help="the merged gradebook's folder")


def _limit_options(command: argparse.ArgumentParser, memory: str, budget: str) -> None:
    """The options that replace an exercise's limits, for the commands that grade."""
    command.add_argument("--time-limit", type=float, metavar="SECONDS",
                         help="default per-case time limit (cases that set their own keep it)")
    command.add_argument("--time-budget", type=float, metavar="SECONDS", help=budget)
    command.add_argument("--memory-limit-mb", type=int, metavar="MIB", help=memory)


def main(argv: list[str] | None = None) -> int:
    """Run one command; every outcome is an exit status and a clear message, never a traceback.

    The first SIGINT or SIGTERM stops the command as an exception would, so that its cleanup runs
    (workers and their children are stopped); it prints `interrupted` and returns 130 or 143.
    Further ones are ignored. The previous handlers are restored on return, except after a real
    signal: the process is then on its way out, and one more Ctrl-C while the interpreter shuts
    down would print a traceback."""
    previous: dict[int, Any] = {}
    signalled = False
    try:
        _catch_stop_signals(previous)
        return _dispatch(argv)
    except KeyboardInterrupt as stop:  # wherever it landed, the error handling included
        if previous:
            _ignore_stop_signals()
        signalled = isinstance(stop, _Stopped)
        _say("interrupted")
        return 128 + getattr(stop, "signum", signal.SIGINT)
    finally:
        if not signalled:
            for signum, handler in previous.items():
                signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def entry() -> NoReturn:
    """The installed `grader` command and `python -m grader`: main(), then out without tearing the interpreter down.

    Finalizing every module torch loaded takes about 0.3 s at exit, a fifth of a `grader run`, and buys
    nothing: by then the grader's files are written and closed and its processes stopped. Exit handlers
    still run and the standard streams are flushed. Where a thread of the grader's own is still at work,
    the interpreter exits as usual and waits for it."""
    status = main()
    others = [thread for thread in threading.enumerate() if thread is not threading.main_thread()]
    if any(thread.is_alive() and not thread.daemon for thread in others):
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a reader that went away, or no stream at all
            pass
    os._exit(status)


def _dispatch(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None:
        build_parser().print_help()
        return EXIT_USAGE
    from grader import commands
    from grader.render_terminal import make_console

    console = make_console()
    try:
        return getattr(commands, f"cmd_{args.command}")(args, console)
    except GraderError as error:
        # Messages may quote the command line or a file name: shown inert.
        console.print(f"error: {inert(str(error))}", markup=False, highlight=False)
        return error.exit_code
    except Exception:  # noqa: BLE001  (the one place the grader's own failures meet the user)
        return internal_error(console)


class _Stopped(KeyboardInterrupt):
    """Raised once, by the handler of SIGINT or SIGTERM, where the command happens to be."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _catch_stop_signals(previous: dict[int, Any]) -> None:
    """Make SIGINT and SIGTERM stop the command; `previous` gets the handlers they had."""
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set handlers; a caller elsewhere keeps its own

    def stop(signum: int, frame: object) -> None:
        # Ignored from now on, so that a second Ctrl-C cannot cut the cleanup short.
        _ignore_stop_signals()
        raise _Stopped(signum)

    for signum in STOP_SIGNALS:
        previous[signum] = signal.signal(signum, stop)


def _ignore_stop_signals() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def _say(line: str) -> None:
    """Print one line where Rich is not at hand; a closed stdout is silenced as Rich does it."""
    try:
        print(line, flush=True)
    except (OSError, ValueError):  # the reader went away (`grader run | head`)
        try:
            # Python flushes stdout once more at exit; into /dev/null, that cannot fail loudly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # no file descriptor behind sys.stdout (tests capture it)
            pass


def internal_error(console: Console) -> int:
    """Say 'grader error' in one line and keep the traceback in a file for a bug report."""
    try:
        # A file of its own, even for two failures in one second or two graders at once.
        path = progress.unique_path(Path.cwd() / ".grader" / "crashes", f"grader-error-{progress.now()}", ".txt")
        path.write_text(traceback.format_exc(), encoding="utf-8")
        where = str(path.relative_to(Path.cwd()))
    except OSError:
        where = "(could not be written)"
    kind = sys.exc_info()[0].__name__
    console.print(f"grader error: the grader itself failed ({kind}); this is not about your code. "
                  f"Report: {inert(where)}", markup=False, highlight=False)
    return EXIT_INTERNAL


if __name__ == "__main__":
    entry()
