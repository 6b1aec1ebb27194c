"""The learner's and the instructor's commands, timed as ratios to a bare `python -c "import torch"`.

Usage, from the repository root with the package installed:
    python benchmarks/learner_loop.py [--runs 5] [--ring 4] [--validate] [--busy] [--tests]

Whole processes are timed, in turn (A, B, C, A, B, C, ...), so that drift in the machine's speed
affects all of them alike; medians are printed, each as a ratio to the torch import and, where it
is the figure that matters, to a plain `grader submit`. Everything runs on a private copy of the
course in a temporary folder, so nothing in the checkout is recorded or changed.

  --validate  also time `grader validate EX --fresh` (once: minutes) and two incremental validates,
              one after adding a case and one after adding a mistake to the catalogue
  --busy      keep one other process spinning on a core throughout, as on a shared machine
  --tests     also time the test suite once (several minutes)
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parent.parent
EXERCISE = "07-ring-attention"
SOLUTION = f"solutions/{EXERCISE}/ring_attention.py"
EXTRA_CASE = """
  - name: benchmark-extra-case
    function: ring_attention
    lq: 5
    d: 8
    chunks: [3, 4, 2]
    seed: 12345
"""


def wall_seconds(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   env={**os.environ, "GRADER_ROOT": str(cwd)})
    return time.perf_counter() - started


def course_copy(folder: Path) -> Path:
    """The exercise, its solution folder and hints, with a course file of its own."""
    for part in ("exercises", "solutions", "hints"):
        shutil.copytree(REPO / part / EXERCISE, folder / part / EXERCISE, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "exercises" / "course.yaml").write_text(f"course: benchmark\nexercises:\n  - exercises/{EXERCISE}\n")
    return folder


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy(enabled: bool) -> Iterator[None]:
    """One other process using a whole core, as when the learner's editor or a browser is busy."""
    if not enabled:
        yield
        return
    spinner = multiprocessing.Process(target=_spin, daemon=True)
    spinner.start()
    try:
        yield
    finally:
        spinner.kill()
        spinner.join()


def interleaved(commands: dict[str, list[str]], runs: int, cwd: Path) -> dict[str, float]:
    for command in commands.values():  # warm-up: page cache, bytecode
        wall_seconds(command, cwd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            times[name].append(wall_seconds(command, cwd))
    return {name: statistics.median(values) for name, values in times.items()}


def validate_times(grader: list[str], course: Path) -> dict[str, float]:
    """A full validate from nothing, then one after a new case, then one after a new mistake."""
    validate = grader + ["validate", EXERCISE]
    found = {"grader validate (full, --fresh)": wall_seconds(validate + ["--fresh"], course)}
    wall_seconds(validate, course)  # everything remembered now
    with open(course / "exercises" / EXERCISE / "cases" / "examples.yaml", "a") as cases:
        cases.write(EXTRA_CASE)
    found["grader validate (+1 case)"] = wall_seconds(validate, course)
    mistakes = sorted((course / "solutions" / EXERCISE / "mistakes").glob("[!_]*.py"))
    source = mistakes[0]
    (source.parent / f"benchmark_{source.name}").write_text(source.read_text() + "\n# one more, to be graded\n")
    found["grader validate (+1 mistake)"] = wall_seconds(validate, course)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ring", type=int, default=4, help="world size of the timed `submit --ring N` (0: none)")
    parser.add_argument("--validate", action="store_true")
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--tests", action="store_true")
    args = parser.parse_args()
    grader = [sys.executable, "-m", "grader"]
    with tempfile.TemporaryDirectory() as temporary, busy(args.busy):
        course = course_copy(Path(temporary))
        solution = str(course / SOLUTION)
        graded = ["--file", solution, "--no-record", "--device", "cpu"]
        commands = {
            "import torch": [sys.executable, "-c", "import torch"],
            "grader run": grader + ["run", EXERCISE, *graded],
            "grader submit": grader + ["submit", EXERCISE, *graded],
        }
        if args.ring:
            commands[f"grader submit --ring {args.ring}"] = commands["grader submit"] + ["--ring", str(args.ring)]
        medians = interleaved(commands, args.runs, course)
        if args.validate:
            medians.update(validate_times(grader, course))
        if args.tests:
            medians["test suite"] = wall_seconds([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], REPO)
    base, submit = medians["import torch"], medians["grader submit"]
    print(f"{'command':<34} {'seconds':>8} {'x import torch':>15} {'x submit':>9}"
          + ("   (one other process busy)" if args.busy else ""))
    for name, seconds in medians.items():
        print(f"{name:<34} {seconds:8.2f} {seconds / base:15.2f} {seconds / submit:9.2f}")


if __name__ == "__main__":
    main()
