"""`grader scale [EX]`: the learner's function measured at growing sizes beside the reference and the catalogue's
naive design, drawn in the terminal and in .grader/scale/EX.svg, each curve's growth said under the picture."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader.cli import EXIT_FAILED, EXIT_OK
from grader.cli.common import exercise_from_args
from grader.course.exercise import Exercise, learner_file
from grader.errors import UsageError
from grader.inert import inert

PICTURES = Path(".grader") / "scale"


def picture_path(exercise: Exercise) -> Path:
    """Where the SVG of an exercise's curves is written: .grader/scale/EX.svg under the course's root."""
    return exercise.root / PICTURES / f"{exercise.name}.svg"


def cmd_scale(args: argparse.Namespace, console: Console) -> int:
    from grader.sandbox import zygote

    # The budget counts from here, the course loaded and every worker started within it: not from the process's
    # start, which in a notebook's kernel or a test may be long before.
    started = time.monotonic()
    exercise = exercise_from_args(args)
    if exercise.scale is None:
        raise UsageError(f"{exercise.name} declares nothing for grader scale to measure (no `scale` in its "
                         f"exercise.yaml)")
    file = learner_file(args.file or exercise.stub)
    if args.time_budget is not None and args.time_budget <= 0:
        raise UsageError(f"--time-budget must be a positive number of seconds, not {args.time_budget:g}")
    spec = exercise.scale
    shown = str(args.file) if args.file else str(exercise.stub.relative_to(exercise.root))
    console.print(f"[heading]{escape(exercise.name)}[/]: {escape(inert(shown))}: {escape(spec.function)} at "
                  f"{len(spec.sizes)} sizes of {escape(spec.axis)}, beside the reference and the catalogue's naive "
                  f"design")
    with zygote.held():  # torch is imported in the zygote while this process loads the course
        device = _device(args.device)
        from grader.grading.scale_run import measure_scale

        run = measure_scale(exercise, file, device, args.time_budget, started)
    from grader.report import scale_chart, scale_svg, scale_words

    for note in run.notes:
        console.print(f"[muted]{escape(note)}[/]")
    console.print()
    scale_chart.draw(console, run)
    for line in scale_words.words(run):
        console.print(escape(line), highlight=False)
    picture = scale_svg.write(run, picture_path(exercise))
    console.print(f"Picture: {escape(str(picture.relative_to(exercise.root)))} (open it in a browser).")
    console.print(f"[muted]{time.monotonic() - started:.1f} s (budget {run.budget:g} s)[/]")
    mine = next(series for series in run.series if series.design.key == "yours")
    return EXIT_OK if mine.points else EXIT_FAILED


def _device(asked: str | None) -> str:
    """Where the single-process calls run: CUDA where present (or asked for), else the CPU."""
    if asked == "cpu":
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if asked == "cuda":
        raise UsageError("--device cuda: torch.cuda.is_available() is False on this machine; use --device cpu")
    return "cpu"
