"""How far each design of exercise 07 lands from its memory budget, on every memory-audited case.

Usage, from the repository root with the package installed:
    python benchmarks/memory_margins.py [--cases FILE] [--only NAME ...] [--json OUT]

Every correct design (the reference, each variant, the checkpointed two-pass fixture) and every
design that holds the whole sequence at once (the catalogue's keep-every-block and concatenating
mistakes, and the audit fixtures that hide from the worker's own audit) is graded on the audited
cases alone, as a submission is (after its warm-up call), and the peak the kernel measured is set
against the checker's budget. A correct design's margin is budget / peak; a wrong one's is peak /
budget; the rule keeps its power where both are at least 1.5. `--cases` grades a candidate case
file in place of the exercise's own audited cases, on a private copy of the course. The figures
are this machine's containment level's: run it again as an ordinary user, in a container, and
with GRADER_SANDBOX=off to see each level.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from learner_loop import EXERCISE, REPO, course_copy  # the same private copy of the exercise

AUDIT_FILE = Path("cases") / "hidden" / "constraints.yaml"
MARGIN = 1.5
FIXTURES = REPO / "tests" / "fixtures" / "audit"
CORRECT_FIXTURES = ("checkpointed_two_pass",)


def designs(root: Path, folder: Path) -> list[tuple[str, bool, Path]]:
    """(name, correct, learner file) for every design measured, written as a learner's files would be."""
    from grader.course import mistakes

    solutions = root / "solutions" / EXERCISE
    reference = solutions / "ring_attention.py"
    found = [("reference", True, reference)]
    for path in sorted((solutions / "variants").glob("*.py")):
        found.append((f"variant {path.stem}", True, mistakes.as_submission(path, reference, folder / "variants")))
    for path in sorted(FIXTURES.glob("*.py")):
        found.append((f"fixture {path.stem}", path.stem in CORRECT_FIXTURES, path))
    for name in ("keep_all_score_blocks", "concatenate_all_chunks"):
        path = solutions / "mistakes" / f"{name}.py"
        found.append((f"mistake {name}", False, mistakes.as_submission(path, reference, folder / "mistakes")))
    return found


def course(folder: Path, cases: Path | None) -> Path:
    """A private copy of the exercise, its audited cases replaced by `cases` when given."""
    root = course_copy(folder / "course")
    if cases is not None:
        shutil.copyfile(cases, root / "exercises" / EXERCISE / AUDIT_FILE)
    for part in ("variants", "mistakes"):
        (folder / part).mkdir()
    return root


def audited_cases(root: Path) -> tuple[object, set[str]]:
    """The course copy's exercise and the names of its memory-audited cases."""
    from grader.course.exercise import load_exercise
    from grader.grading.case import MEMORY_AUDIT
    from grader.grading.pipeline import load_trusted

    exercise = load_exercise(root, root / "exercises" / EXERCISE)
    return exercise, {case.name for case in load_trusted(exercise, "submit").cases if MEMORY_AUDIT in case.audit}


def measure(exercise: object, audited: set[str], path: Path) -> dict[str, tuple[int | None, int, str, float, str]]:
    """Per audited case: (peak bytes, budget bytes, outcome, seconds, message) for `path`, graded as a submission is."""
    from grader.grading.case import Judge
    from grader.grading.pipeline import grade
    from grader.grading.request import Limits, Run
    from grader.sandbox import zygote

    seen: dict[str, tuple[int | None, int]] = {}
    original = Judge._judge

    def judged(self, case, prepared, called, result):
        budget = self.checker.memory_budget(case.function, prepared[0])
        seen[case.name] = (called.raw.peak_bytes, budget)
        return original(self, case, prepared, called, result)

    Judge._judge = judged
    try:
        with zygote.held():  # the grade's workers fork from one process that imported torch
            report = grade(Run(Limits(time_limit=60).on(exercise), path, "submit", "cpu", only=audited,
                               diagnose=False))
    finally:
        Judge._judge = original
    if report.not_graded or report.load_error:
        print(f"  not graded: {report.not_graded or report.load_error}")
    return {result.name: (*seen.get(result.name, (None, 0)), result.outcome.value, result.seconds or 0.0,
                          result.message) for result in report.results}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, help="a case file to grade in place of the audited cases")
    parser.add_argument("--only", nargs="*", default=[], help="designs whose name contains one of these")
    parser.add_argument("--json", type=Path, help="write every figure here too")
    args = parser.parse_args()
    from grader.sandbox.machine import containment

    with tempfile.TemporaryDirectory(prefix="grader-margins-") as name:
        folder = Path(name)
        root = course(folder, args.cases.resolve() if args.cases else None)
        print(f"containment: {containment()}")
        exercise, audited = audited_cases(root)
        rows, worst = [], {True: float("inf"), False: float("inf")}
        for design, correct, path in designs(root, folder):
            if args.only and not any(word in design for word in args.only):
                continue
            started = time.monotonic()
            margins = []
            for case, (peak, budget, outcome, seconds, message) in measure(exercise, audited, path).items():
                if peak is None:
                    margin = None  # no figure here (a call that failed, or nothing counts every process)
                else:
                    margin = (budget / peak if peak else float("inf")) if correct else peak / budget
                if margin is not None:
                    margins.append(margin)
                rows.append({"design": design, "correct": correct, "case": case, "peak_mib": _mib(peak),
                             "budget_mib": _mib(budget), "margin": margin, "outcome": outcome, "seconds": seconds})
                shown = "-" if margin is None else f"{margin:6.2f}"
                print(f"{design:40} {case:40} peak {_mib(peak):>7} MiB  budget {_mib(budget):>6} MiB  "
                      f"margin {shown}  {outcome:10} {seconds:5.2f} s", flush=True)
                if peak is None or (correct and outcome != "passed"):
                    print(f"  {message}", flush=True)
            if margins:  # a correct design must be inside on every case; a wrong one far over on one at least
                worst[correct] = min(worst[correct], min(margins) if correct else max(margins))
            print(f"{'':40} ({time.monotonic() - started:.1f} s)", flush=True)
    print(f"smallest margin: correct designs {worst[True]:.2f}, designs holding the sequence {worst[False]:.2f} "
          f"(the rule keeps its power where both are at least {MARGIN})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if min(worst.values()) >= MARGIN else 1


def _mib(size: int | None) -> str:
    return "-" if size is None else f"{size / (1 << 20):.1f}"


if __name__ == "__main__":
    sys.exit(main())
