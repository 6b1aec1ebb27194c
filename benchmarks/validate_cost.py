"""What `grader validate` costs as an exercise changes: everything, nothing, a case added, a mistake added.

Usage, from the repository root with the package installed:
    python benchmarks/validate_cost.py [--exercise 07]

On a private copy of the course, in turn: `grader validate EX --fresh` (everything graded again, as after a
change to a rule, the checker, the reference or the grader), the same without --fresh (nothing changed), then
with the first example copied under a new name (a case added), then with the first mistake copied under a new
name (a mistake added). Printed per step: wall seconds, CPU seconds of the process tree, validate's own line of
verdicts graded and remembered, and the machine's load average before and after (other work shows there).
docs/instructors/index.md's table of validate's cost is this script's output.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASE = re.compile(r"^  - name: (\S+)$", re.M)


def copy_course(folder: Path) -> Path:
    """The course's exercises, solutions and hints, without what earlier runs remembered."""
    for part in ("exercises", "solutions", "hints"):
        shutil.copytree(REPO / part, folder / part, ignore=shutil.ignore_patterns("__pycache__", ".grader"))
    return folder


def add_case(examples: Path) -> str:
    """The file's first case written again at its end under a new name; the name."""
    text = examples.read_text(encoding="utf-8")
    first = CASE.search(text)
    following = CASE.search(text, first.end())
    block = text[first.start():following.start() if following else len(text)].rstrip() + "\n"
    name = f"{first.group(1)}-again"
    examples.write_text(text.rstrip() + "\n\n" + block.replace(first.group(1), name, 1), encoding="utf-8")
    return name


def add_mistake(mistakes: Path) -> str:
    """The first catalogued mistake written again under a new name, a line longer (verdicts are kept by content,
    so an exact copy would be remembered); the name."""
    first = sorted(mistakes.glob("[!_]*.py"))[0]
    text = first.read_text(encoding="utf-8").rstrip() + "\n\n# The same mistake, written again.\n"
    (mistakes / f"{first.stem}_again.py").write_text(text, encoding="utf-8")
    return f"{first.stem}_again"


def timed(course: Path, *argv: str) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of the process tree, and validate's line of verdicts graded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "grader", "validate", *argv], capture_output=True, text=True,
                          cwd=course, env={**os.environ, "GRADER_ROOT": str(course), "NO_COLOR": "1"}, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    said = [line for line in done.stdout.splitlines() if "case verdicts graded" in line]
    return wall, cpu, said[-1].split("; ", 1)[-1] if said else f"exit {done.returncode}: {done.stdout[-300:]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercise", default="07")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="validate-cost-") as folder:
        course = copy_course(Path(folder) / "course")
        sys.path.insert(0, str(REPO))
        from grader.course.exercise import find_exercise

        exercise = find_exercise(course, args.exercise)
        steps = (("everything (--fresh): a rule, the checker, the reference or the grader changed", None, ("--fresh",)),
                 ("nothing changed", None, ()),
                 ("a case added", lambda: add_case(exercise.examples), ()),
                 ("a mistake added", lambda: add_mistake(exercise.mistakes), ()))
        print(f"grader validate {exercise.name}, on {os.cpu_count()} CPUs")
        for label, change, extra in steps:
            if change is not None:
                label = f"{label} ({change()})"
            load = os.getloadavg()[0]
            wall, cpu, said = timed(course, exercise.name, *extra)
            print(f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU; {said} (load {load:.1f} to {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
