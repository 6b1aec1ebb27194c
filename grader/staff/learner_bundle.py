"""`grader export learner`: a bundle of what learners need (statements, stubs, hints, examples) and no answers.

In: the grader package and pyproject.toml, a README for learners, the course file (with `hand_in`),
and per exercise its statement, stub, starter, hints and its examples stored as data
(grader/course/precomputed.py). Out: hidden cases, reference solutions, mistakes, variants, checkers and
any other code of an exercise's folder (exercise 07's ring suite computes answers and drives the
learner's code: it stays behind, and `--ring` in a bundle is the usage error of an exercise without one).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import yaml

from grader import PACKAGE
from grader.course.cases import load_exercise_cases
from grader.course.checker import load_checker
from grader.course.exercise import COURSE_FILE, HAND_IN_DEFAULT, Exercise, check_exists, find_exercise, load_course
from grader.course.precomputed import encode_examples, load_precomputed
from grader.course.yamlfile import load_yaml
from grader.errors import ConfigError, UsageError
from grader.grading.case import Judge
from grader.grading.pipeline import load_reference

EXAMPLES_FILE = "cases/examples.grader"
MAX_HAND_IN = 300
GITIGNORE = ".venv/\n.grader/\n*.egg-info/\n__pycache__/\n"
README = """\
# {title}

Exercises for ML systems, graded on your own machine. For each exercise this folder holds its
statement, the file you write, its visible examples (their inputs and answers stored as data) and
staged hints, with the grader that runs your code against the examples.

{exercises}

## Set up

On a machine with Python 3.10 or newer, in this folder:

```sh
python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/grader run
```

makes a virtual environment, installs the grader in it and runs the first exercise's stub against
its examples: each reads "not attempted" until you write the functions. Then
`source .venv/bin/activate` puts `grader` on your path (or type `.venv/bin/grader`).

## Work on an exercise

| command | what it does |
| --- | --- |
| `grader show [EX]` | the statement |
| `grader run [EX]` | your file against the examples, with full detail on each failure; `-k PATTERN` runs only the examples whose name contains it |
| `grader watch [EX]` | runs the examples, then again each time you save your file; Ctrl-C stops it |
| `grader repro CASE [EX]` | writes `.grader/repro/CASE.py`: a script calling your function on that example's inputs, for `python -i` or `python -m pdb` (it runs your code as it is, outside the sandbox) |
| `grader hint [EX]` | the hints opened so far, plus the next one; each gives away more than the last |
| `grader status [EX]`, `grader list` | your last run and the hints opened; the exercises |
| `grader reset [EX]` | restores the stub; your file is backed up in `.grader/backups/` first |
| `grader submit [EX]` | runs the examples, then writes your file to `submissions/EX-<time>.zip` |

`EX` is an exercise's name or a unique prefix of it (`01`).

## Hand in

`grader submit` writes an archive holding your file and a manifest of its hashes, checks it, and
says where it is. How to hand it in: {hand_in}. The course grades what you hand in on every test,
hidden ones included; here only the examples run.
"""


def export_learner(root: Path, names: list[str], output: Path, hand_in: str | None = None) -> list[Exercise]:
    """Write a learner bundle of the named exercises (all of the course's when none) to `output`; the exercises."""
    exercises = _chosen(root, names)
    hand_in = _checked_hand_in(hand_in)
    output = output.resolve()
    _check_output(output, exercises)
    output.parent.mkdir(parents=True, exist_ok=True)
    # Built beside the target and renamed into place: a failed export leaves no half bundle behind.
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    try:
        _copy_grader(staging)
        for exercise in exercises:
            _export_exercise(exercise, staging)
        course = load_yaml(root / COURSE_FILE)
        title = course.get("course") if isinstance(course, dict) and isinstance(course.get("course"), str) else None
        title = title or "Exercises"
        listing = {"course": title, "hand_in": hand_in,
                   "exercises": [f"exercises/{exercise.name}" for exercise in exercises]}
        (staging / COURSE_FILE).write_text("# A learner bundle, written by `grader export learner`.\n"
                                           + yaml.safe_dump(listing, sort_keys=False, allow_unicode=True),
                                           encoding="utf-8")
        lines = "\n".join(f"- `{exercise.name}`: {exercise.title}" for exercise in exercises)
        (staging / "README.md").write_text(README.format(title=title, exercises=lines, hand_in=hand_in.rstrip(".")),
                                           encoding="utf-8")
        (staging / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
        staging.chmod(0o755)  # mkdtemp's folder is private to its maker; a bundle is meant to be shared
        if output.exists():
            output.rmdir()  # checked empty above
        os.rename(staging, output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return exercises


def _chosen(root: Path, names: list[str]) -> list[Exercise]:
    if not names:
        return load_course(root)
    chosen: list[Exercise] = []
    for name in names:
        exercise = find_exercise(root, name)
        if exercise not in chosen:
            chosen.append(exercise)
    return chosen


def _checked_hand_in(text: str | None) -> str:
    if text is None:
        return HAND_IN_DEFAULT
    text = text.strip()
    if not text or len(text) > MAX_HAND_IN or not text.isprintable():
        raise UsageError(f"--hand-in must be one line of 1 to {MAX_HAND_IN} printable characters")
    return text


def _check_output(output: Path, exercises: list[Exercise]) -> None:
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        # Never written over: it may be a bundle a learner already works in.
        raise UsageError(f"{output}: already exists and is not an empty folder; choose another")
    for source in [PACKAGE, *(exercise.directory for exercise in exercises)]:
        if output == source or source in output.parents:
            raise UsageError(f"{output}: is inside {source}, which the bundle is copied from; choose another")


def _copy_grader(staging: Path) -> None:
    """The grader package that is running, and the pyproject.toml beside it that installs it."""
    project = check_exists(PACKAGE.parent / "pyproject.toml",
                           "the grader's pyproject.toml (export from a checkout of the grader)")
    shutil.copytree(PACKAGE, staging / "grader", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(project, staging / "pyproject.toml")


def _export_exercise(exercise: Exercise, staging: Path) -> None:
    """Statement, stub, starter, hints, examples as data and an exercise.yaml that points at them."""
    folder = staging / "exercises" / exercise.name
    try:
        stub = exercise.stub.relative_to(exercise.directory)
    except ValueError:
        raise ConfigError("the stub must be inside the exercise's folder to be exported", exercise.stub) from None
    # The starter, not the stub: the stub of the checkout exporting may hold someone's work.
    starter = check_exists(exercise.starter, "the starter copy of the stub").read_bytes()
    for path in (folder / stub, folder / "starter" / stub.name):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(starter)
    shutil.copy2(check_exists(exercise.statement, "the statement"), folder / "README.md")
    hints = staging / "hints" / exercise.name
    hints.mkdir(parents=True, exist_ok=True)
    for hint in exercise.hint_files():
        shutil.copy2(hint, hints / hint.name)
    _write_examples(exercise, folder / EXAMPLES_FILE)
    settings = {"name": exercise.name, "title": exercise.title, "stub": stub.as_posix(),
                "time_limit": exercise.time_limit, "memory_limit_mb": exercise.memory_limit_mb,
                **({"max_score": exercise.max_score} if exercise.max_score is not None else {}),
                "rules": exercise.rules.to_yaml(),
                "precomputed": EXAMPLES_FILE}
    (folder / "exercise.yaml").write_text(
        f"# {exercise.name} as a learner bundle has it: the examples are stored in {EXAMPLES_FILE}.\n"
        + yaml.safe_dump(settings, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _write_examples(exercise: Exercise, path: Path) -> None:
    """The examples with everything judging them needs, computed here by the checker and the reference."""
    checker = load_checker(exercise.checker)
    cases = load_exercise_cases(exercise, checker, include_hidden=False)
    judge = Judge(exercise, checker, exercise.stub.name, load_reference(exercise))
    try:
        data = encode_examples(exercise.name, checker, judge, cases)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"the examples could not be stored: {error}", exercise.examples) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    try:
        load_precomputed(path)  # read back now: a file a bundle cannot read must fail here, not on a learner's machine
    except ConfigError as error:
        raise ConfigError(f"the examples were stored in a form a bundle cannot read back ({error})",
                          exercise.examples) from None
