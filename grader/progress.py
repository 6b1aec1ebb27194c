"""Learner progress in .grader/ at the repository root: hints opened, last run, submissions."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from grader.errors import GraderError
from grader.results import Report

STATE_DIR = ".grader"
# What `record` writes for a run or a submission; `status` and `list` read these fields.
SUMMARY_FIELDS = {"when": str, "file": str, "status": str, "passed": int, "failed": int, "total": int}


class ProgressError(GraderError):
    """Something in .grader/ could not be read or written; the message names it and says why."""


def now(pattern: str = "%Y%m%dT%H%M%S") -> str:
    """The local time as text; one function, so that tests can hold the clock still."""
    return time.strftime(pattern)


def unique_path(folder: Path, stem: str, suffix: str) -> Path:
    """A new, empty file `stem+suffix`, else `stem-2+suffix`, `stem-3+suffix`, ...: created with
    O_EXCL, so that no two writers, threads or processes, are ever handed the same file."""
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(1, 10_000):
        path = folder / f"{stem if number == 1 else f'{stem}-{number}'}{suffix}"
        try:
            with open(path, "x"):
                return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{folder / stem}{suffix} and 9999 numbered copies already exist")


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _shape_problem(data: Any) -> str | None:
    """Why `data` is not a state this grader wrote, or None when it is."""
    if not isinstance(data, dict):
        return "not a JSON object"
    exercises = data.get("exercises", {})
    if not isinstance(exercises, dict):
        return "its exercises are not a JSON object"
    for entry in exercises.values():
        if not isinstance(entry, dict):
            return "an exercise's entry is not a JSON object"
        hints = entry.get("hints_opened", 0)
        if type(hints) is not int or hints < 0:  # type(), not isinstance: true and false are not counts
            return "a count of hints opened is not a whole number"
        for key in ("last_run", "last_submission"):
            summary = entry.get(key)
            if summary is not None and not (isinstance(summary, dict) and all(
                    type(summary.get(field)) is kind for field, kind in SUMMARY_FIELDS.items())):
                return f"a {key.replace('_', ' ')} is incomplete"
    return None


class Progress:
    """One JSON file of state per course checkout. Changes are made under a lock and written
    atomically; a file that cannot be read is moved aside, never lost, and `notes` says so."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / STATE_DIR
        self.path = self.folder / "state.json"
        self.notes: list[str] = []

    def _show(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    def _parse(self) -> tuple[dict[str, Any], str | None]:
        """The state and None, or {} and why the file cannot be used."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}, None
        except OSError as error:
            raise ProgressError(f"{self._show(self.path)} could not be read ({_reason(error)})") from None
        try:
            data = json.loads(raw.decode("utf-8-sig"))  # -sig: an editor may have added a byte-order mark
        except UnicodeDecodeError:
            return {}, "not UTF-8 text"
        except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
            return {}, "not valid JSON"
        problem = _shape_problem(data)
        return (data, None) if problem is None else ({}, problem)

    def _load(self, locked: bool = False) -> dict[str, Any]:
        data, problem = self._parse()
        if problem is None:
            return data
        if not locked:
            # Look again under the lock: another grader may have replaced the file meanwhile, and
            # its fresh state must not be the one moved aside.
            with self._lock():
                return self._load(locked=True)
        self._move_aside(problem)
        return {}

    def _move_aside(self, problem: str) -> None:
        aside = None
        try:
            aside = unique_path(self.folder, f"{self.path.name}.corrupt-{now()}", "")
            os.replace(self.path, aside)
        except OSError as error:
            if aside is not None:
                with contextlib.suppress(OSError):
                    aside.unlink()
            raise ProgressError(f"{self._show(self.path)} could not be read ({problem}) nor moved aside "
                                f"({_reason(error)}); move or delete it, then run this again") from None
        self.notes.append(f"note: {self._show(self.path)} could not be read ({problem}); it was moved to "
                          f"{self._show(aside)} and a fresh one started")

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Hold .grader/state.lock, so that two graders at once never lose each other's changes."""
        try:
            self.folder.mkdir(exist_ok=True)
            descriptor = os.open(self.folder / "state.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise ProgressError(f"{self._show(self.folder)} could not be written to ({_reason(error)})") from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)

    def _save(self, data: dict[str, Any]) -> None:
        # A temporary file of this writer's own, then an atomic rename: readers see the old state or
        # the new one, and two writers never share a temporary file.
        descriptor, temporary = tempfile.mkstemp(dir=self.folder, prefix="state.json.", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(json.dumps(data, indent=2) + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:  # an interrupt too: no temporary file is left behind
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def _update(self, name: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Apply `change` to one exercise's entry, read and written under the lock; the new entry."""
        with self._lock():
            data = self._load(locked=True)
            entry = data.setdefault("exercises", {}).setdefault(name, {})
            change(entry)
            try:
                self._save(data)
            except OSError as error:
                raise ProgressError(f"your progress could not be saved in {self._show(self.path)} "
                                    f"({_reason(error)})") from None
        return entry

    def check(self) -> None:
        """Read the state now: a file that cannot be read is moved aside here, with a note."""
        self._load()

    def exercise(self, name: str) -> dict[str, Any]:
        """What is recorded for one exercise (empty before anything happened)."""
        return self._load().get("exercises", {}).get(name, {})

    def hints_opened(self, name: str) -> int:
        return self.exercise(name).get("hints_opened", 0)

    def open_hint(self, name: str, available: int) -> int:
        """Open the next hint if there is one; returns how many are open now."""
        def change(entry: dict[str, Any]) -> None:
            entry["hints_opened"] = min(entry.get("hints_opened", 0) + 1, available)

        return self._update(name, change)["hints_opened"]

    def record(self, report: Report, full_json: dict[str, Any]) -> Path | None:
        """Remember a run or a submission; a submission's whole results file is kept too."""
        when = now("%Y-%m-%dT%H:%M:%S")
        summary = {"when": when, "file": report.file, "status": report.status, "passed": report.passed,
                   "failed": report.failed, "total": len(report.results)}
        key = "last_submission" if report.mode == "submit" else "last_run"
        self._update(report.exercise, lambda entry: entry.update({key: summary}))
        if report.mode != "submit":
            return None
        text = json.dumps(full_json, indent=2) + "\n"
        return self._keep(self.folder / "submissions" / report.exercise, when.replace(":", ""), ".json",
                          text.encode("utf-8"), "the submission could not be recorded")

    def backup(self, name: str, source: Path) -> Path:
        """Keep a copy of the learner's file before it is reset."""
        try:
            content = source.read_bytes()
        except OSError as error:
            raise ProgressError(f"your file could not be read to back it up ({_reason(error)}); "
                                f"it was left as it is") from None
        return self._keep(self.folder / "backups" / name, f"{now()}-{source.stem}", source.suffix, content,
                          "your file could not be backed up, so it was left as it is")

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
            raise ProgressError(f"{failure} ({self._show(folder)}: {_reason(error)})") from None
        return path
