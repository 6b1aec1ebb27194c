"""Catalogued mistakes written as differences: the reference solution with some of its definitions replaced.

A mistake file holds the three strings a learner will read (TITLE, RATIONALE, HELP, and VIOLATES
for a broken rule) and only the functions (or constants) that differ from the reference. The
grader composes the runnable module by appending the mistake to the reference's source, so
later definitions win: a reader sees the mistake at once, and it still runs as a whole
submission (in the sandbox, for `grader validate`) and as a module (in the grader, for the
diagnosis).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import ModuleType

SEAM = "\n\n# ---------------- the mistake: what follows replaces the reference's definitions ----------------\n"


def compose(mistake: Path, reference: Path) -> str:
    """The reference's source with the mistake's appended (its `from __future__` lines dropped: not allowed there)."""
    own = [line for line in mistake.read_text(encoding="utf-8").splitlines()
           if not line.startswith("from __future__ import")]
    return reference.read_text(encoding="utf-8").rstrip() + SEAM + "\n".join(own) + "\n"


def load(mistake: Path, reference: Path) -> ModuleType:
    """The composed module, imported in this process (instructor code: trusted)."""
    module = ModuleType(f"mistake_{mistake.stem}")
    module.__file__ = str(mistake)
    exec(compile(compose(mistake, reference), str(mistake), "exec"), module.__dict__)  # noqa: S102
    return module


def as_submission(mistake: Path, reference: Path, folder: Path) -> Path:
    """The composed module written as a learner's file would be, under the mistake's own name."""
    path = folder / mistake.name
    path.write_text(compose(mistake, reference), encoding="utf-8")
    return path


def temporary_folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="grader-mistakes-"))
