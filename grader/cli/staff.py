"""Course staff's commands: export a bundle or an autograder, run an autograder, grade a cohort, merge gradebooks."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from grader.cli import EXIT_FAILED, EXIT_OK
from grader.cli.common import exercise_from_args
from grader.course.exercise import find_exercise, find_root


def cmd_export(args: argparse.Namespace, console: Console) -> int:
    """`grader export KIND`: one function per kind of export."""
    return {"gradescope": _export_gradescope, "learner": _export_learner}[args.kind](args, console)


def _export_gradescope(args: argparse.Namespace, console: Console) -> int:
    from grader.staff import gradescope

    exercise = exercise_from_args(args)
    path = gradescope.export(exercise, args.out)
    console.print(f"Wrote {escape(str(path))}: upload it as the autograder of {escape(exercise.name)} "
                  f"(setup.sh installs Python, torch and the sandbox; run_autograder grades each submission).")
    return EXIT_OK


def _export_learner(args: argparse.Namespace, console: Console) -> int:
    from grader.staff.learner_bundle import export_learner

    exercises = export_learner(find_root(), args.exercise, args.out, args.hand_in)
    console.print(f"Wrote a learner bundle of {len(exercises)} exercise{'s' if len(exercises) != 1 else ''} "
                  f"({escape(', '.join(exercise.name for exercise in exercises))}) to {escape(str(args.out))}.")
    return EXIT_OK


def cmd_autograde(args: argparse.Namespace, console: Console) -> int:
    from grader.staff import gradescope

    return gradescope.autograde(args.root)


def cmd_grade(args: argparse.Namespace, console: Console) -> int:
    from grader.grading.budget import checked_seconds
    from grader.report.cohort_terminal import CohortProgress, print_completeness, print_summary
    from grader.staff.cohort import Options, grade_cohort, parse_shard
    from grader.staff.cpus import usable_cpus

    exercise = find_exercise(find_root(), args.exercise)
    jobs, said = (args.jobs, "") if args.jobs is not None else usable_cpus()
    options = Options(jobs=jobs, force=args.force, shard=parse_shard(args.shard) if args.shard else (1, 1),
                      device=args.device, time_limit=args.time_limit, memory_limit_mb=args.memory_limit_mb,
                      time_budget=checked_seconds(args.time_budget), roster=args.roster, due=args.due,
                      late_penalty=args.late_penalty, only=tuple(args.only))
    run = grade_cohort(exercise, args.submissions, args.out, options, CohortProgress(console, said))
    print_summary(run, console)
    print_completeness(run, console)
    # Not gradable as handed in (not Python, a link, a bad archive) is a verdict: the gradebook is complete, and a
    # Slurm task or a Kubernetes pod succeeds. Only what the next run grades again (a grader error) is a failure.
    return EXIT_FAILED if run.to_retry else EXIT_OK


def cmd_gradebook(args: argparse.Namespace, console: Console) -> int:
    """`grader gradebook ACTION`: merge shards, or export a roster gradebook for a course platform."""
    if args.action == "export":
        return _export_gradebook(args, console)
    from grader.report.cohort_terminal import print_completeness, print_summary
    from grader.results.cohort import CohortRun
    from grader.staff.gradebook import merge

    summary, retry, rows, unmatched = merge(args.folders, args.out)
    run = CohortRun(summary, args.out, rows=rows, unmatched=unmatched, to_retry=retry)
    print_summary(run, console)
    print_completeness(run, console)
    return EXIT_FAILED if retry else EXIT_OK


def _export_gradebook(args: argparse.Namespace, console: Console) -> int:
    from grader.staff.gradebook import export

    path, count = export(args.book, args.format, args.out, args.assignment)
    console.print(f"Wrote {escape(str(path))}: {count} learner{'s' * (count != 1)}, as {args.format.capitalize()} "
                  f"imports scores.")
    return EXIT_OK
