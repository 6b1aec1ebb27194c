"""An exercise's history (numbered submissions, backups of replaced files), where it stands, and restoring one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grader.course.exercise import Exercise, load_course
from grader.errors import GraderError, UsageError
from grader.learner.state import LearnerState, StateError, accepted
from grader.results.learner_state import Backup, ExerciseState, Submitted, Summary

HOW_TO_RESTORE = ("grader restore EX N puts submission N of exercise EX back in its file, grader restore EX "
                  "backup-N a backup; the file is backed up first.")


@dataclass(frozen=True)
class Item:
    """One line of `grader history`: a submission (label "3") or a backup of a replaced file ("backup-2")."""

    label: str
    when: str
    kind: str      # "submission" or "backup"
    verdict: str   # "accepted", "3 of 12 failed", "your file before reset"
    score: str     # "75 of 100"; "" for a backup
    file: str      # its kept copy, from the course root; "" when none was kept


def verdict(summary: Summary | Submitted) -> str:
    """A submission's result in words: 'accepted', '3 of 12 failed', 'could not be graded'."""
    if summary.status == "passed":
        return "accepted"
    if summary.status == "error":
        return "could not be graded"
    if summary.total and summary.not_attempted == summary.total:
        return "not attempted"  # the untouched stub: nothing of it failed, it is not written yet
    return f"{summary.failed} of {summary.total} failed"


def counts(summary: Summary) -> str:
    """A run's counts as its closing line says them: '0 passed, 0 failed, 5 not attempted of 5'."""
    todo = summary.not_attempted or 0
    return (f"{summary.passed} passed, {summary.failed - todo} failed" + (f", {todo} not attempted" if todo else "")
            + f" of {summary.total}")


def standing(entry: ExerciseState) -> str:
    """Where an exercise stands, for `list`: acceptance is kept whatever came after, with the latest result beside it."""
    latest = entry.last_submission
    if not latest:
        return "not submitted"
    state = "accepted" if accepted(entry) else "submitted"
    return state if latest.status == "passed" else f"{state}; latest submission: {verdict(latest)}"


def acceptance_line(entry: ExerciseState) -> str | None:
    """`status`'s line on acceptance: 'Accepted: submission 1, 2026-11-30T10:15:00 (latest submission: ...)'."""
    first = accepted(entry)
    if first is None:
        return None
    which = f"submission {first.number}, " if first.number is not None else ""
    latest = entry.last_submission or first
    after = f" (latest submission: {verdict(latest)})" if latest.status != "passed" else ""
    return f"Accepted: {which}{first.when}{after}"


def accepted_names(root: Path, exercises: list[Exercise]) -> set[str]:
    """The exercises accepted so far; none where the state cannot be read (the command itself says why)."""
    state = LearnerState(root)
    try:
        state.check()
        return {e.name for e in exercises if accepted(state.exercise(e.name))}
    except Exception:  # noqa: BLE001  (unreadable state: the note about it is printed by the command itself)
        return set()


def next_exercise(root: Path, current: Exercise) -> Exercise | None:
    """After `current` is accepted: the next exercise of the course not yet accepted (after it, else before it)."""
    try:
        exercises = load_course(root)
    except GraderError:
        return None
    done = accepted_names(root, exercises) | {current.name}
    names = [e.name for e in exercises]
    at = names.index(current.name) + 1 if current.name in names else 0
    return next((e for e in exercises[at:] + exercises[:at] if e.name not in done), None)


def next_step(exercise: Exercise) -> str:
    """After `exercise` is accepted: the next exercise to do and the command that starts it, or that none is left."""
    following = next_exercise(exercise.root, exercise)
    if following is None:
        return "Every exercise of the course is accepted."
    return (f"Next: {following.name}, {following.title}: grader show {following.name} reads its statement "
            f"(its file: {following.stub.relative_to(following.root)}).")


def items(exercise: Exercise, state: LearnerState) -> list[Item]:
    """Every submission and backup of an exercise, oldest first."""
    entry = state.history(exercise.name)
    found = []
    for record in entry.submissions or []:
        score = f"{record.score:.4g} of {record.max_score:g}" \
            if record.score is not None and record.max_score is not None else ""
        found.append((record.when, 0, record.number, Item(str(record.number), record.when, "submission",
                                                          verdict(record), score, record.source or "")))
    for backup in entry.backups or []:
        found.append((backup.when, 1, backup.number, Item(f"backup-{backup.number}", backup.when, "backup",
                                                          f"your file before {backup.before}", "", backup.file)))
    return [item for *_, item in sorted(found, key=lambda found: found[:3])]


def render(exercise: Exercise, listed: list[Item]) -> list[str]:
    """`grader history`'s lines for one exercise: a heading, then one aligned line per item."""
    lines = [f"{exercise.name}: {exercise.stub.relative_to(exercise.root)}"]
    if not listed:
        return lines + [f"  nothing yet: each submission is kept (grader submit {exercise.name}), and so is each file "
                        f"reset or restore replaces"]
    width = max(len(item.label) for item in listed)
    verdicts = max(len(item.verdict) for item in listed)
    for item in listed:
        score = f"  score {item.score}" if item.score else ""
        missing = "" if item.file else "  (no copy kept)"
        lines.append(f"  {item.label:<{width}}  {item.when.replace('T', ' ')}  {item.kind:<10}  "
                     f"{item.verdict:<{verdicts}}{score}{missing}".rstrip())
    return lines


def restore(exercise: Exercise, which: str, state: LearnerState) -> str:
    """Put a kept submission or backup back in the learner's file, backing up what it replaces; one line saying so."""
    kind, number = _parse(which)
    entry = state.history(exercise.name)
    records: list[Submitted] | list[Backup] = (entry.submissions if kind == "submission" else entry.backups) or []
    record = next((r for r in records if r.number == number), None)
    name = f"submission {number}" if kind == "submission" else f"backup-{number}"
    if record is None:
        raise UsageError(f"{exercise.name} has no {name}: grader history {exercise.name} lists what it has")
    copy = record.source if isinstance(record, Submitted) else record.file
    if not copy:
        raise StateError(f"{name} was recorded without a copy of its file: there is nothing to restore")
    content = _read_kept(state, copy)
    stub, shown = exercise.stub, str(exercise.stub.relative_to(exercise.root))
    what = verdict(record) if isinstance(record, Submitted) else f"before {record.before}"
    described = f"{name} of {exercise.name} ({record.when.replace('T', ' ')}, {what})"
    if stub.is_file() and stub.read_bytes() == content:
        return f"{shown} already holds {described}: nothing to do."
    previous = ""
    if stub.exists():
        # Restoring is itself undoable: what the learner had is the newest backup.
        kept = state.backup(exercise.name, stub, before=f"restore {which}")
        previous = (f"; what it held is backup-{kept.number} "
                    f"(grader restore {exercise.name} backup-{kept.number} brings it back)")
    try:
        stub.write_bytes(content)
    except OSError as error:
        raise StateError(f"{shown} could not be written ({error.strerror or error}){previous}") from None
    return f"Restored {described} into {shown}{previous}."


def _parse(which: str) -> tuple[str, int]:
    """('submission', 3) for '3', ('backup', 2) for 'backup-2'."""
    found = re.fullmatch(r"(?:#?(\d+)|backup-(\d+))", which.strip())
    if not found:
        raise UsageError(f"restore what? {which!r} is neither a submission's number (grader restore 3) nor a "
                         f"backup (grader restore backup-2); grader history lists them")
    return ("submission", int(found[1])) if found[1] else ("backup", int(found[2]))


def _read_kept(state: LearnerState, relative: str) -> bytes:
    """A kept copy's bytes; only from inside .grader/, whatever an edited state file says."""
    path = (state.root / relative).resolve()
    if not path.is_relative_to(state.folder.resolve()):
        raise StateError(f"{relative} is not in {state.folder.name}/: the state file was edited by hand; "
                            f"nothing was restored")
    try:
        return path.read_bytes()
    except OSError as error:
        raise StateError(f"{relative} could not be read ({error.strerror or error}); nothing was restored") \
            from None
