"""Shared fixtures: a private copy of the course per test, so progress files never touch the checkout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SUBMISSIONS = FIXTURES / "submissions"


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the course (exercises, solutions, hints) that the grader treats as its root."""
    root = tmp_path / "course"
    for folder in ("exercises", "solutions", "hints"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("GRADER_ROOT", str(root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def exercise(course: Path):
    """The ring-attention exercise of the private course copy."""
    from grader.course import find_exercise

    return find_exercise(course, None)
