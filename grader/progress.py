"""Learner progress in .grader/ at the repository root: hints opened, last run, submissions."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from grader.results import Report

STATE_DIR = ".grader"


class Progress:
    """One JSON file of state per course checkout, written atomically."""

    def __init__(self, root: Path) -> None:
        self.folder = root / STATE_DIR
        self.path = self.folder / "state.json"

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def _save(self, data: dict[str, Any]) -> None:
        self.folder.mkdir(exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, self.path)

    def exercise(self, name: str) -> dict[str, Any]:
        """What is recorded for one exercise (empty before anything happened)."""
        return self._load().get("exercises", {}).get(name, {})

    def _update(self, name: str, **changes: Any) -> None:
        data = self._load()
        entry = data.setdefault("exercises", {}).setdefault(name, {})
        entry.update(changes)
        self._save(data)

    def hints_opened(self, name: str) -> int:
        return int(self.exercise(name).get("hints_opened", 0))

    def open_hint(self, name: str, available: int) -> int:
        """Open the next hint if there is one; returns how many are open now."""
        opened = min(self.hints_opened(name) + 1, available)
        self._update(name, hints_opened=opened)
        return opened

    def record(self, report: Report, full_json: dict[str, Any]) -> Path | None:
        """Remember a run or a submission; a submission's whole results file is kept too."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        summary = {"when": stamp, "file": report.file, "status": report.status, "passed": report.passed,
                   "failed": report.failed, "total": len(report.results)}
        key = "last_submission" if report.mode == "submit" else "last_run"
        self._update(report.exercise, **{key: summary})
        if report.mode != "submit":
            return None
        folder = self.folder / "submissions" / report.exercise
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{stamp.replace(':', '')}.json"
        path.write_text(json.dumps(full_json, indent=2) + "\n", encoding="utf-8")
        return path

    def backup(self, name: str, source: Path) -> Path:
        """Keep a copy of the learner's file before it is reset."""
        folder = self.folder / "backups" / name
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{time.strftime('%Y%m%dT%H%M%S')}-{source.name}"
        target.write_bytes(source.read_bytes())
        return target
