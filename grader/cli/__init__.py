"""The `grader` command: parse, hand the command to its handler, and meet every error in one place."""

from __future__ import annotations

import atexit
import importlib
import os
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn

from grader.cli.parser import HANDLERS, build_parser
from grader.errors import GraderError, did_you_mean
from grader.files import now, unique_path
from grader.inert import inert

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

if TYPE_CHECKING:
    from rich.console import Console


def main(argv: list[str] | None = None) -> int:
    """Run one command; every outcome is an exit status and a clear message, never a traceback (stoppable())."""
    return stoppable(lambda: _dispatch(argv))


def stoppable(command: Callable[[], int]) -> int:
    """`command`'s exit status, where a signal stops it cleanly.

    The first SIGINT or SIGTERM stops the command as an exception would, so that its cleanup runs
    (workers and their children are stopped); it prints `interrupted` and returns 130 or 143.
    Further ones are ignored. The previous handlers are restored on return, except after a real
    signal: the process is then on its way out, and one more Ctrl-C while the interpreter shuts
    down would print a traceback."""
    previous: dict[int, Any] = {}
    signalled = False
    try:
        _catch_stop_signals(previous)
        return command()
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
    the interpreter exits as usual and waits for it. A run still stuck after the watchdog told it that the grader
    stalled (grader/grading/watchdog.py) ends the command here: said in one line, exit status 3."""
    from grader.grading.watchdog import last_resort

    last_resort(_stalled)
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


def _stalled(message: str) -> NoReturn:
    """The command's end when its run never came back from being told it stalled: nothing of it runs on (its
    sandboxes die with this process), and it says so."""
    _say(f"Not graded: {message}")
    os._exit(EXIT_INTERNAL)


def _dispatch(argv: list[str] | None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if words and not words[0].startswith("-") and words[0] not in HANDLERS:
        # Before argparse, whose answer lists every command but suggests none.
        _say(f"error: no command called {inert(repr(words[0]))}{did_you_mean(words[0], list(HANDLERS))}; "
             f"grader --help lists them")
        return EXIT_USAGE
    args = build_parser().parse_args(argv)
    if args.command is None:
        build_parser().print_help()
        return EXIT_USAGE
    from grader.report.terminal import make_console

    console = make_console()
    return answered(console, lambda: handler(args.command)(args, console))


def answered(console: Console, command: Callable[[], int]) -> int:
    """`command`'s exit status; a GraderError is its one line and status, any other failure a 'grader error'."""
    try:
        return command()
    except GraderError as error:
        # Messages may quote the command line or a file name: shown inert.
        console.print(f"error: {inert(str(error))}", markup=False, highlight=False)
        return error.exit_code
    except Exception:  # noqa: BLE001  (the one place the grader's own failures meet the user)
        return internal_error(console)


def handler(command: str) -> Callable[[Any, Console], int]:
    """The function that handles `command`, from the table beside the parser, imported only now."""
    module, function = HANDLERS[command].split(":")
    return getattr(importlib.import_module(f"grader.cli.{module}"), function)


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
        path = unique_path(Path.cwd() / ".grader" / "crashes", f"grader-error-{now()}", ".txt")
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
