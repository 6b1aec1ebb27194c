"""Learner progress in .grader/ at the repository root: hints opened, last run, submissions, backups."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from grader.errors import GraderError
from grader.files import now, read_regular, unique_path, write_atomic
from grader.learner.state_schema import shape_problem
from grader.results import Report

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


def accepted(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The first accepted submission of an exercise, whatever came after it; None before any was accepted."""
    if entry.get("accepted"):
        return entry["accepted"]
    last = entry.get("last_submission")
    # A state written before acceptance was kept apart: its last submission is all there is to go by.
    return last if last and last["status"] == "passed" else None


def _next_number(records: list[dict[str, Any]]) -> int:
    return 1 + max((record["number"] for record in records), default=0)


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

    def _parse(self) -> tuple[dict[str, Any], str | None]:
        """The state and None, or {} and why the file cannot be used."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}, None
        except OSError as error:
            raise StateError(f"{self._show(self.path)} could not be read ({_reason(error)})") from None
        try:
            data = json.loads(raw.decode("utf-8-sig"))  # -sig: an editor may have added a byte-order mark
        except UnicodeDecodeError:
            return {}, "not UTF-8 text"
        except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
            return {}, "not valid JSON"
        problem = shape_problem(data)
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
        return self._rebuilt()

    def _rebuilt(self) -> dict[str, Any]:
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

    def _save(self, data: dict[str, Any]) -> None:
        write_atomic(self.path, json.dumps(data, indent=2) + "\n")

    def _update(self, name: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Apply `change` to one exercise's entry, read and written under the lock; the new entry."""
        with self._lock():
            data = self._load(locked=True)
            entry = data.setdefault("exercises", {}).setdefault(name, {})
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

    def exercise(self, name: str) -> dict[str, Any]:
        """What is recorded for one exercise (empty before anything happened)."""
        return self._load().get("exercises", {}).get(name, {})

    def open_hints(self, name: str, order: list[str], opening: list[str]) -> list[str]:
        """Mark the hint files `opening` open; every open one, in the order opened. `order` is the exercise's hint
        files, in which a state written before hints were kept by name counts its first `hints_opened`."""
        def change(entry: dict[str, Any]) -> None:
            seen = opened_hints(entry, order)
            seen += [hint for hint in opening if hint not in seen]
            entry["hints_seen"] = seen
            entry["hints_opened"] = sum(hint in order for hint in seen)

        return self._update(name, change)["hints_seen"]

    def record(self, report: Report, full_json: dict[str, Any], source: bytes | None = None,
               suffix: str = ".py") -> Kept | None:
        """Remember a run or a submission. A submission is numbered, and its results file and `source` (the
        bytes that were graded) are kept in .grader/submissions/EX/ as NNN-<stamp>.json and NNN-<stamp>.py."""
        when = now(ISO)
        summary = {"when": when, "file": report.file, "status": report.status, "passed": report.passed,
                   "failed": report.failed, "total": len(report.results)}
        if report.selection:
            summary["only"] = report.selection
        if report.mode != "submit":
            self._update(report.exercise, lambda entry: entry.update({"last_run": summary}))
            return None
        results = (json.dumps(full_json, indent=2) + "\n").encode("utf-8")
        kept: list[Path] = []

        def change(entry: dict[str, Any]) -> None:
            if "accepted" not in entry and accepted(entry):
                entry["accepted"] = dict(entry["last_submission"])  # kept before this submission replaces it
            number = _next_number(entry.get("submissions", []))
            folder, stem = self.folder / "submissions" / report.exercise, f"{number:03d}-{_compact(when)}"
            kept.append(self._keep(folder, stem, ".json", results, "the submission could not be recorded"))
            record = {**summary, "number": number, "score": report.score, "max_score": report.max_score,
                      "results": self._show(kept[0])}
            if source is not None:
                kept.append(self._keep(folder, stem, suffix, source, "your submitted file could not be kept"))
                record["source"] = self._show(kept[1])
            entry["last_submission"] = summary
            entry.setdefault("submissions", []).append(record)
            if report.status == "passed" and "accepted" not in entry:
                entry["accepted"] = {**summary, "number": number}

        entry = self._update_keeping(report.exercise, change, kept)
        number = entry["submissions"][-1]["number"]
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

        def change(entry: dict[str, Any]) -> None:
            self._adopt_backups(name, entry)
            records = entry.setdefault("backups", [])
            number = _next_number(records)
            kept.append(self._keep(self.folder / "backups" / name, f"{number:03d}-{_compact(when)}-{source.stem}",
                                   source.suffix, content, "your file could not be backed up, so it was left as it is"))
            records.append({"number": number, "when": when, "file": self._show(kept[0]), "before": before})

        entry = self._update_keeping(name, change, kept)
        return Kept(entry["backups"][-1]["number"], kept[0])

    def history(self, name: str) -> dict[str, Any]:
        """One exercise's entry for `history` and `restore`; backups an older grader made unrecorded are
        numbered now, oldest first, so that a number, once shown, always means the same file."""
        entry = self.exercise(name)
        if self._unrecorded_backups(name, entry):
            entry = self._update(name, lambda entry: self._adopt_backups(name, entry))
        return entry

    def _unrecorded_backups(self, name: str, entry: dict[str, Any]) -> list[Path]:
        recorded = {record["file"] for record in entry.get("backups", [])}
        try:
            found = [path for path in (self.folder / "backups" / name).iterdir() if path.is_file()]
        except OSError:
            return []
        unrecorded = [path for path in found if self._show(path) not in recorded]
        try:
            return sorted(unrecorded, key=lambda path: (path.stat().st_mtime_ns, path.name))
        except OSError:  # one removed meanwhile: by name, then
            return sorted(unrecorded)

    def _adopt_backups(self, name: str, entry: dict[str, Any]) -> None:
        for path in self._unrecorded_backups(name, entry):
            records = entry.setdefault("backups", [])
            records.append({"number": _next_number(records), "when": _when_of(path), "file": self._show(path),
                            "before": "reset"})  # the only command that made backups then

    def _update_keeping(self, name: str, change: Callable[[dict[str, Any]], None], kept: list[Path]) -> dict[str, Any]:
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


def opened_hints(entry: dict[str, Any], order: list[str]) -> list[str]:
    """The hint files open in one exercise's entry, by name (an older state's count: the first ones of `order`)."""
    if "hints_seen" in entry:
        return list(entry["hints_seen"])
    return order[:entry.get("hints_opened", 0)]


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
