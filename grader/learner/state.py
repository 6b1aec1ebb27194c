"""Learner progress in .grader/ at the repository root: hints opened, last run, submissions, backups."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator

from grader.errors import GraderError
from grader.files import now, read_regular, unique_path, write_atomic
from grader.results import Report
from grader.results.learner_state import Backup, ExerciseState, State, Submitted, Summary, decode, encode

STATE_DIR = ".grader"
ISO = "%Y-%m-%dT%H:%M:%S"


class StateError(GraderError):
    """Something in .grader/ could not be read or written; the message names it and says why."""


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


@dataclass(frozen=True)
class Kept:
    """What `record` or `backup` kept: its number in the exercise's history, and its files."""

    number: int
    source: Path | None               # the copy of the learner's file
    results: Path | None = None       # a submission's results file


def accepted(entry: ExerciseState) -> Summary | None:
    """The first accepted submission of an exercise, whatever came after it; None before any was accepted."""
    if entry.accepted:
        return entry.accepted
    last = entry.last_submission
    # A state written before acceptance was kept apart: its last submission is all there is to go by.
    return last if last and last.status == "passed" else None


def _next_number(records: list[Submitted] | list[Backup] | None) -> int:
    return 1 + max((record.number for record in records or []), default=0)


class LearnerState:
    """One JSON file of state per course checkout. Changes are made under a lock and written
    atomically; a file that cannot be read is moved aside, never lost, and `notes` says so."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / STATE_DIR
        self.path = self.folder / "state.json"
        self.notes: list[str] = []

    def _show(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    def _parse(self) -> tuple[State, str | None]:
        """The state and None, or an empty one and why the file cannot be used."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return State(), None
        except OSError as error:
            raise StateError(f"{self._show(self.path)} could not be read ({_reason(error)})") from None
        return decode(raw)

    def _load(self, locked: bool = False) -> State:
        data, problem = self._parse()
        if problem is None:
            return data
        if not locked:
            # Look again under the lock: another grader may have replaced the file meanwhile, and
            # its fresh state must not be the one moved aside.
            with self._lock():
                return self._load(locked=True)
        self._move_aside(problem)
        return self._rebuilt()

    def _rebuilt(self) -> State:
        """After the state was moved aside: what the kept submissions prove, saved, and the note says so."""
        from grader.learner.rebuild import rebuild, rebuilt_note

        data, found = rebuild(self.folder)
        if found:
            try:
                self._save(data)
            except OSError as error:
                raise StateError(f"{self._show(self.path)} could not be rebuilt ({_reason(error)})") from None
        self.notes[-1] += rebuilt_note(data, found, self._show(self.folder / "submissions"))
        return data

    def _move_aside(self, problem: str) -> None:
        aside = None
        try:
            aside = unique_path(self.folder, f"{self.path.name}.corrupt-{now()}", "")
            os.replace(self.path, aside)
        except OSError as error:
            if aside is not None:
                with contextlib.suppress(OSError):
                    aside.unlink()
            raise StateError(f"{self._show(self.path)} could not be read ({problem}) nor moved aside "
                                f"({_reason(error)}); move or delete it, then run this again") from None
        self.notes.append(f"note: {self._show(self.path)} could not be read ({problem}); it was moved to "
                          f"{self._show(aside)}")

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Hold .grader/state.lock, so that two graders at once never lose each other's changes."""
        try:
            self.folder.mkdir(exist_ok=True)
            descriptor = os.open(self.folder / "state.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise StateError(f"{self._show(self.folder)} could not be written to ({_reason(error)})") from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)

    def _save(self, data: State) -> None:
        write_atomic(self.path, encode(data))

    def _update(self, name: str, change: Callable[[ExerciseState], None]) -> ExerciseState:
        """Apply `change` to one exercise's entry, read and written under the lock; the new entry."""
        with self._lock():
            data = self._load(locked=True)
            entry = data.exercises.setdefault(name, ExerciseState())
            change(entry)
            try:
                self._save(data)
            except OSError as error:
                raise StateError(f"your progress could not be saved in {self._show(self.path)} "
                                    f"({_reason(error)})") from None
        return entry

    def check(self) -> None:
        """Read the state now: a file that cannot be read is moved aside here, with a note."""
        self._load()

    def exercise(self, name: str) -> ExerciseState:
        """What is recorded for one exercise (empty before anything happened)."""
        return self._load().exercises.get(name) or ExerciseState()

    def open_hints(self, name: str, order: list[str], opening: list[str]) -> list[str]:
        """Mark the hint files `opening` open; every open one, in the order opened. `order` is the exercise's hint
        files, in which a state written before hints were kept by name counts its first `hints_opened`."""
        def change(entry: ExerciseState) -> None:
            seen = opened_hints(entry, order)
            seen += [hint for hint in opening if hint not in seen]
            entry.hints_seen = seen
            entry.hints_opened = sum(hint in order for hint in seen)

        return self._update(name, change).hints_seen or []

    def record(self, report: Report, full_json: dict[str, Any], source: bytes | None = None,
               suffix: str = ".py") -> Kept | None:
        """Remember a run or a submission. A submission is numbered, and its results file and `source` (the
        bytes that were graded) are kept in .grader/submissions/EX/ as NNN-<stamp>.json and NNN-<stamp>.py."""
        when, todo = now(ISO), report.not_attempted or None
        summary = Summary(when=when, file=report.file, status=report.status, passed=report.passed,
                          failed=report.failed, total=len(report.results), only=report.selection or None, not_attempted=todo)
        if report.mode != "submit":
            def ran(entry: ExerciseState) -> None:
                entry.last_run = summary

            self._update(report.exercise, ran)
            return None
        # The results file as its encoder gave it (grader.results.file), kept as it is.
        results = (json.dumps(full_json, indent=2) + "\n").encode("utf-8")
        kept: list[Path] = []

        def change(entry: ExerciseState) -> None:
            first = accepted(entry)
            if entry.accepted is None and first is not None:
                entry.accepted = replace(first)  # the last submission, kept before this one replaces it
            number = _next_number(entry.submissions)
            folder, stem = self.folder / "submissions" / report.exercise, f"{number:03d}-{_compact(when)}"
            kept.append(self._keep(folder, stem, ".json", results, "the submission could not be recorded"))
            record = Submitted(when=when, file=summary.file, status=summary.status, passed=summary.passed,
                               failed=summary.failed, total=summary.total, number=number, score=report.score,
                               max_score=report.max_score, results=self._show(kept[0]), not_attempted=todo)
            if source is not None:
                kept.append(self._keep(folder, stem, suffix, source, "your submitted file could not be kept"))
                record.source = self._show(kept[1])
            entry.last_submission = summary
            entry.submissions = [*(entry.submissions or []), record]
            if report.status == "passed" and entry.accepted is None:
                entry.accepted = replace(summary, number=number)

        entry = self._update_keeping(report.exercise, change, kept)
        number = entry.submissions[-1].number if entry.submissions else 0
        return Kept(number, kept[1] if len(kept) > 1 else None, kept[0])

    def backup(self, name: str, source: Path, before: str = "reset") -> Kept:
        """Keep a numbered copy of the learner's file before `before` (reset, restore N) replaces it."""
        try:
            content = source.read_bytes()
        except OSError as error:
            raise StateError(f"your file could not be read to back it up ({_reason(error)}); "
                                f"it was left as it is") from None
        when = now(ISO)
        kept: list[Path] = []

        def change(entry: ExerciseState) -> None:
            self._adopt_backups(name, entry)
            number = _next_number(entry.backups)
            kept.append(self._keep(self.folder / "backups" / name, f"{number:03d}-{_compact(when)}-{source.stem}",
                                   source.suffix, content, "your file could not be backed up, so it was left as it is"))
            entry.backups = [*(entry.backups or []),
                             Backup(number=number, when=when, file=self._show(kept[0]), before=before)]

        entry = self._update_keeping(name, change, kept)
        return Kept(entry.backups[-1].number if entry.backups else 0, kept[0])

    def history(self, name: str) -> ExerciseState:
        """One exercise's entry for `history` and `restore`; backups an older grader made unrecorded are
        numbered now, oldest first, so that a number, once shown, always means the same file."""
        entry = self.exercise(name)
        if self._unrecorded_backups(name, entry):
            entry = self._update(name, lambda entry: self._adopt_backups(name, entry))
        return entry

    def _unrecorded_backups(self, name: str, entry: ExerciseState) -> list[Path]:
        recorded = {record.file for record in entry.backups or []}
        try:
            found = [path for path in (self.folder / "backups" / name).iterdir() if path.is_file()]
        except OSError:
            return []
        unrecorded = [path for path in found if self._show(path) not in recorded]
        try:
            return sorted(unrecorded, key=lambda path: (path.stat().st_mtime_ns, path.name))
        except OSError:  # one removed meanwhile: by name, then
            return sorted(unrecorded)

    def _adopt_backups(self, name: str, entry: ExerciseState) -> None:
        for path in self._unrecorded_backups(name, entry):
            # Made by `reset`, the only command that made backups then.
            adopted = Backup(number=_next_number(entry.backups), when=_when_of(path), file=self._show(path),
                             before="reset")
            entry.backups = [*(entry.backups or []), adopted]

    def _update_keeping(self, name: str, change: Callable[[ExerciseState], None], kept: list[Path]) -> ExerciseState:
        """`_update`, where `change` writes files into `kept`: removed again if the state could not be saved."""
        try:
            return self._update(name, change)
        except (StateError, OSError):
            for path in kept:
                with contextlib.suppress(OSError):
                    path.unlink()
            raise

    def _keep(self, folder: Path, stem: str, suffix: str, content: bytes, failure: str) -> Path:
        """Write `content` to a new file in `folder` that no other writer can be handed."""
        path = None
        try:
            path = unique_path(folder, stem, suffix)
            path.write_bytes(content)
        except OSError as error:
            if path is not None:
                with contextlib.suppress(OSError):
                    path.unlink()
            raise StateError(f"{failure} ({self._show(folder)}: {_reason(error)})") from None
        return path

    def first_sight(self, said: str, remember: bool = True) -> bool:
        """Whether this checkout's learner has not been shown `said` (what confines their code here) before, and
        (with `remember`) remember that they have now. Keyed by what it says, the uid it runs as aside (drawn afresh
        each run): a machine whose containment changes says so again. Where nothing can be remembered, it is always
        shown."""
        key = hashlib.sha256(re.sub(r"\buid \d+", "uid N", said).encode("utf-8")).hexdigest()[:32]
        seen = self.folder / SEEN
        try:
            known = read_regular(seen).decode("ascii", errors="replace").split() if seen.is_file() else []
        except OSError:
            known = []
        if key in known:
            return False
        if not remember:
            return True
        try:
            self.folder.mkdir(exist_ok=True)
            write_atomic(seen, "\n".join([*known[-31:], key]) + "\n")
        except OSError:
            pass
        return True


SEEN = "containment-seen"  # what confines the learner's code, as said once per machine: one key a line


def opened_hints(entry: ExerciseState, order: list[str]) -> list[str]:
    """The hint files open in one exercise's entry, by name (an older state's count: the first ones of `order`)."""
    if entry.hints_seen is not None:
        return list(entry.hints_seen)
    return order[:entry.hints_opened or 0]


def snapshot(path: Path) -> bytes | None:
    """The bytes of the file about to be graded, to keep with its submission; None if it cannot be read as a
    regular file within the grader's bound (a link, a pipe, a file too large are refused when graded too)."""
    try:
        return read_regular(path)
    except OSError:
        return None


def _compact(when: str) -> str:
    """2026-11-30T10:15:00 as it goes into a file name: 20261130T101500."""
    return when.replace("-", "").replace(":", "")


def _when_of(path: Path) -> str:
    """When an unrecorded backup was made: the stamp its name starts with, else its modification time."""
    try:
        return time.strftime(ISO, time.strptime(path.name[:15], "%Y%m%dT%H%M%S"))
    except ValueError:
        return time.strftime(ISO, time.localtime(path.stat().st_mtime))
