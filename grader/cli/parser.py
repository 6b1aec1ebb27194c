"""The command line: every command, its options and help, and the table saying which function handles it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from grader import __version__
from grader.grading.devices import COHORT_DEVICES, DEVICES
from grader.report.cohort_exports import FORMATS

# Every command and the function that handles it (module:function under grader.cli), imported only when it runs,
# so that `grader list` never waits for torch. A test holds this table and the parser to each other.
HANDLERS = {
    "list": "learner:cmd_list", "show": "learner:cmd_show", "run": "learner:cmd_run", "submit": "learner:cmd_submit",
    "watch": "learner:cmd_watch", "hint": "hints:cmd_hint", "status": "learner:cmd_status",
    "reset": "kept:cmd_reset", "history": "kept:cmd_history", "restore": "kept:cmd_restore",
    "repro": "learner:cmd_repro", "scale": "scale:cmd_scale",
    "validate": "instructor:cmd_validate",
    "export": "staff:cmd_export", "autograde": "staff:cmd_autograde", "grade": "staff:cmd_grade",
    "gradebook": "staff:cmd_gradebook",
}


EXERCISE_HELP = ("exercise name or unique prefix (07); default: the exercise of the current folder, else the first "
                 "not yet accepted")
# `grader --help` lists the commands by who types them.
GROUPS = (
    ("commands for learners", ("list", "show", "run", "watch", "hint", "submit", "status", "history", "restore",
                               "reset", "repro", "scale")),
    ("commands for instructors", ("validate",)),
    ("commands for course staff", ("export", "grade", "gradebook", "autograde")),
)


class _GroupedHelp(argparse.ArgumentParser):
    """The top-level parser: its help lists the commands in GROUPS, each group under its own heading."""

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        commands = {choice.dest: choice for action in self._actions
                    if isinstance(action, argparse._SubParsersAction) for choice in action._choices_actions}
        for title, names in GROUPS:
            formatter.start_section(title)
            formatter.add_arguments([commands[name] for name in names if name in commands])
            formatter.end_section()
        formatter.start_section("options")
        formatter.add_arguments([action for action in self._actions if action.option_strings])
        formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()


def build_parser() -> argparse.ArgumentParser:
    parser = _GroupedHelp(prog="grader", description="Exercises for ML systems, graded locally.",
                          usage="grader [-h] [--version] COMMAND ...",
                          epilog="grader COMMAND --help says more about each command.")
    parser.add_argument("--version", action="version", version=f"grader {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", prog="grader",
                                     parser_class=argparse.ArgumentParser)
    commands.add_parser("list", help="list the course's exercises")
    for name, text in (("show", "show an exercise's statement"),
                       ("status", "where you stand"), ("reset", "put the stub back (your file is backed up first)"),
                       ("validate", "check cases, reference, stub, hints and the catalogue")):
        command = commands.add_parser(name, help=text)
        command.add_argument("exercise", nargs="?", help=EXERCISE_HELP)
        if name == "reset":
            command.add_argument("--yes", action="store_true",
                                 help="do not ask: reset even without naming the exercise, or without a terminal")
        if name == "validate":
            command.add_argument("--json", type=Path, metavar="PATH", help="also write the checks and the matrix")
            command.add_argument("--fresh", action="store_true",
                                 help="grade everything again instead of reusing remembered verdicts")
    hint = commands.add_parser("hint", help="open the next hint (of one function: grader hint merge_chunk_stats)",
                               usage="grader hint [-h] [EX] [FUNCTION] [N]")
    hint.add_argument("words", nargs="*", metavar="EX FUNCTION N",
                      help="an exercise (default: the exercise of the current folder, else the first not yet "
                           "accepted); a function, to open the hints about it alone; a number, to show that hint")
    for name, text in (("run", "check your code against the examples"),
                       ("submit", "run every test, hidden ones included"),
                       ("watch", "run the examples again each time your file is saved (Ctrl-C stops)")):
        command = commands.add_parser(name, help=text)
        command.add_argument("exercise", nargs="?",
                             help=EXERCISE_HELP.replace("the current folder", "--file's folder or the current one"))
        command.add_argument("--file", type=Path, help="grade this file instead of the exercise's stub")
        command.add_argument("--device", default="all", choices=DEVICES,
                             help="where to run the cases (default: all: the CPU, and CUDA when present)")
        command.add_argument("--json", type=Path, metavar="PATH", help="also write a results file (Gradescope)")
        command.add_argument("--no-record", action="store_true", help="do not record this in .grader/")
        _limit_options(command, "memory limit of the worker",
                       "for the whole command (default: the exercise's, 300 s): cases left then are not run")
        ranks = command.add_mutually_exclusive_group()
        ranks.add_argument("--ranks", type=int, metavar="N",
                           help="then run the exercise's distributed suite with N >= 2 processes (torch.distributed; "
                                "a submit runs it anyway where the exercise says so)")
        ranks.add_argument("--ring", type=int, metavar="N", help="the same, for an exercise whose suite is a ring (07)")
        command.add_argument("--verbose", action="store_true",
                             help="a line for every case, passing ones included (submit shows failures only)")
        if name in ("run", "watch"):
            command.add_argument("-k", dest="pattern", metavar="PATTERN",
                                 help="only the examples whose name contains PATTERN (or matches it: 'ring-*')")
    _add_history_commands(commands)
    repro = commands.add_parser("repro", help="write a script that calls your function on one example's inputs")
    repro.add_argument("case", help="the example's name, as grader run shows it")
    repro.add_argument("exercise", nargs="?", help=EXERCISE_HELP)
    repro.add_argument("--file", type=Path, help="call the functions of this file instead of the exercise's stub")
    scale = commands.add_parser("scale", help="measure your function as the work grows, beside the reference: a "
                                              "picture of its time, memory or traffic")
    scale.add_argument("exercise", nargs="?", help=EXERCISE_HELP)
    scale.add_argument("--file", type=Path, help="measure this file instead of the exercise's stub")
    scale.add_argument("--device", choices=("cpu", "cuda"),
                       help="where the calls run (default: CUDA when present, else the CPU)")
    scale.add_argument("--time-budget", type=float, metavar="SECONDS",
                       help="wall-clock seconds for the whole command (default: the exercise's, twice a submit); "
                            "sizes that would not fit are not measured")
    export = commands.add_parser("export", help="build what is handed out or uploaded")
    kinds = export.add_subparsers(dest="kind", metavar="KIND", required=True)
    gradescope = kinds.add_parser("gradescope", help="the autograder zip for one exercise")
    gradescope.add_argument("exercise", nargs="?", help="exercise name (may be left out when the course has one)")
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
    restore = commands.add_parser("restore", help="put a submission or a backup back in your file (backed up first)",
                                  usage="grader restore [-h] [EX] N")
    restore.add_argument("words", nargs="+", metavar="EX N",
                         help="the exercise (a name or unique prefix such as 01; default: the exercise of the "
                              "current folder, else the first not yet accepted), then a submission's number (3) "
                              "or a backup (backup-2); N EX is read too")


def _add_staff_commands(commands: argparse._SubParsersAction) -> None:
    """Course staff's commands: grade a cohort, merge shards' gradebooks."""
    command = commands.add_parser("grade", help="grade a cohort's submissions into a gradebook")
    command.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION",
                         help="a learner's .py or submission archive, a folder holding one, or a folder of those")
    command.add_argument("--out", type=Path, required=True, metavar="DIR", help="the gradebook's folder")
    command.add_argument("--exercise", metavar="EX", help="the exercise (may be left out when the course has one)")
    command.add_argument("--jobs", type=int, metavar="N",
                         help="submissions graded at once (default: the CPUs this process may use)")
    command.add_argument("--force", action="store_true", help="grade again what is already graded")
    command.add_argument("--shard", metavar="K/N", help="grade only shard K of N (1-based); merge them after")
    command.add_argument("--device", default="cpu", choices=COHORT_DEVICES,
                         help="where cases run (default cpu, the same on every machine; all: CUDA too)")
    _limit_options(command, "memory limit of the learner's code",
                   "for each submission (default: the exercise's): cases left then are not run")
    command.add_argument("--roster", type=Path, metavar="CSV",
                         help="roster.csv (id,name,email,submission) or a Gradescope export's folder: a row per "
                              "learner (default: the roster the gradebook was graded with)")
    command.add_argument("--only", action="append", default=[], metavar="ID",
                         help="grade only this learner (roster id) or submission; the gradebook keeps the rest")
    command.add_argument("--due", metavar="TIME", help="due date, such as 2026-12-01T23:59 (this machine's zone) "
                                                       "or 2026-12-01T23:59+01:00")
    command.add_argument("--late-penalty", metavar="RULE", help="what lateness costs, such as 10%%/day or 2%%/hour "
                                                                "of the points earned")
    book = commands.add_parser("gradebook", help="work with gradebooks")
    actions = book.add_subparsers(dest="action", metavar="ACTION", required=True)
    merge = actions.add_parser("merge", help="join shards' gradebooks into one")
    merge.add_argument("folders", nargs="+", type=Path, metavar="DIR", help="gradebooks written by grader grade")
    merge.add_argument("--out", type=Path, required=True, metavar="DIR", help="the merged gradebook's folder")
    export = actions.add_parser("export", help="a roster gradebook's scores as Canvas or Gradescope import them")
    export.add_argument("book", type=Path, metavar="BOOK", help="a gradebook graded with --roster")
    export.add_argument("--format", required=True, choices=FORMATS, help="the platform")
    export.add_argument("--out", type=Path, metavar="FILE", help="where to write it (default: BOOK/FORMAT.csv)")
    export.add_argument("--assignment", metavar="NAME",
                        help="Canvas's assignment column (default: the exercise's name)")


def _limit_options(command: argparse.ArgumentParser, memory: str, budget: str) -> None:
    """The options that replace an exercise's limits, for the commands that grade."""
    command.add_argument("--time-limit", type=float, metavar="SECONDS",
                         help="default per-case time limit (cases that set their own keep it)")
    command.add_argument("--time-budget", type=float, metavar="SECONDS", help=budget)
    command.add_argument("--memory-limit-mb", type=int, metavar="MIB", help=memory)
