"""How fast `grader grade` gets through a cohort of exercise 07, one at a time and several at once.

Usage, from the repository root with the package installed:
    python benchmarks/cohort_throughput.py [--size 40] [--jobs 1 2] [--repeat 1] [--keep DIR]

The cohort is copies of the reference, every correct variant and every catalogued mistake composed
with the reference, as learners' files. Each --jobs value grades it afresh into a gradebook of its
own, in turn (1, 2, 1, 2, ... with --repeat), so that other work on the machine weighs on all of
them alike; the last one is then run again, when everything is skipped. Printed per run: wall
time, CPU time of the whole process tree (user + system, as the kernel counted it for processes
that were waited for), submissions per minute, its throughput next to the first run's, and the
machine's load average before and after (other people's work shows there).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXERCISE = "07-ring-attention"


def build_cohort(folder: Path, size: int) -> int:
    """Variants, composed mistakes, then copies of the reference up to `size` files; how many were written."""
    sys.path.insert(0, str(REPO))
    from grader.course.mistakes import as_submission

    solutions = REPO / "solutions" / EXERCISE
    reference = solutions / "ring_attention.py"
    folder.mkdir(parents=True)
    for variant in sorted((solutions / "variants").glob("[!_]*.py")):
        shutil.copy(variant, folder / f"variant_{variant.name}")
    for mistake in sorted((solutions / "mistakes").glob("[!_]*.py")):
        as_submission(mistake, reference, folder).rename(folder / f"mistake_{mistake.name}")
    copies = 0
    while len(list(folder.iterdir())) < size:
        copies += 1
        shutil.copy(reference, folder / f"reference_{copies:02d}.py")
    return len(list(folder.iterdir()))


def timed(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of the process tree, and the output's line of status counts."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith(("status:", "error"))]
    return wall, cpu, lines[-1] if lines else f"exit {done.returncode}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=40)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="build the cohort and gradebooks here, and keep them")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="grader-cohort-bench-"))
    try:
        count = build_cohort(base / "cohort", args.size)
        print(f"{count} submissions of {EXERCISE} in {base / 'cohort'}")
        grader = [sys.executable, "-m", "grader", "grade", str(base / "cohort"), "--exercise", EXERCISE]
        first = None
        for round_ in range(args.repeat):
            for jobs in args.jobs:
                book = base / f"book-j{jobs}-{round_ + 1}"
                load = os.getloadavg()[0]
                wall, cpu, last = timed(grader + ["--out", str(book), "--jobs", str(jobs)])
                rate = count / wall * 60
                first = first or rate
                print(f"--jobs {jobs}: {wall:7.1f} s wall, {cpu:7.1f} s CPU ({cpu / wall:.2f} cores busy), "
                      f"{rate:5.1f} submissions/min, {rate / first:.2f}x  load {load:.1f} -> "
                      f"{os.getloadavg()[0]:.1f}  [{last}]", flush=True)
        wall, cpu, last = timed(grader + ["--out", str(book), "--jobs", str(args.jobs[-1])])
        print(f"rerun, all skipped: {wall:.1f} s wall, {cpu:.1f} s CPU  [{last}]")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
