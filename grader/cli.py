"""The `grader` command: thin argument parsing; each command calls one library function."""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

from grader import __version__
from grader.errors import GraderError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description="Exercises for ML systems, graded locally.")
    parser.add_argument("--version", action="version", version=f"grader {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("list", help="list the course's exercises")
    for name, text in (("show", "show an exercise's statement"), ("hint", "open the next hint"),
                       ("status", "where you stand"), ("reset", "restore the stub (your file is backed up)"),
                       ("validate", "instructors: check cases, reference, stub and hints")):
        command = commands.add_parser(name, help=text)
        command.add_argument("exercise", nargs="?", help="exercise name (optional while the course has one)")
    for name, text in (("run", "check your code against the examples"),
                       ("submit", "run every test, hidden ones included")):
        command = commands.add_parser(name, help=text)
        command.add_argument("exercise", nargs="?", help="exercise name (optional while the course has one)")
        command.add_argument("--file", type=Path, help="grade this file instead of the exercise's stub")
        command.add_argument("--device", default="all", choices=("cpu", "cuda", "all"),
                             help="where to run the cases (default: all: the CPU, and CUDA when present)")
        command.add_argument("--json", type=Path, metavar="PATH", help="also write a results file (Gradescope)")
        command.add_argument("--no-record", action="store_true", help="do not record this in .grader/")
        command.add_argument("--time-limit", type=float, metavar="SECONDS",
                             help="default per-case time limit (cases that set their own keep it)")
        command.add_argument("--memory-limit-mb", type=int, metavar="MIB", help="memory limit of the worker")
        command.add_argument("--ring", type=int, metavar="N",
                             help="then run a real ring of N >= 2 processes (torch.distributed)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; every outcome is an exit status and a clear message, never a traceback."""
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
        console.print(f"error: {error}", markup=False, highlight=False)
        return error.exit_code
    except KeyboardInterrupt:
        console.print("interrupted", markup=False)
        return 130
    except Exception:  # noqa: BLE001  (the one place the grader's own failures meet the user)
        return internal_error(console)


def internal_error(console) -> int:
    """Say 'grader error' in one line and keep the traceback in a file for a bug report."""
    folder = Path.cwd() / ".grader" / "crashes"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"grader-error-{time.strftime('%Y%m%dT%H%M%S')}.txt"
        path.write_text(traceback.format_exc(), encoding="utf-8")
        where = str(path.relative_to(Path.cwd()))
    except OSError:
        where = "(could not be written)"
    kind = sys.exc_info()[0].__name__
    console.print(f"grader error: the grader itself failed ({kind}); this is not about your code. "
                  f"Report: {where}", markup=False, highlight=False)
    return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
