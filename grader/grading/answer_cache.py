"""Answers that are slow to compute, kept on disk between commands under a hash of everything that decides them.

Most cases' expected values take well under a millisecond and are simply computed again. A few (the
memory-audited ring case: a float64 attention over a quarter of a million keys) take a tenth of a second
or more and tens of MiB; those are stored in `.grader/cache/answers/` and read back by later commands.

An answer read from disk decides verdicts, so the cache is used only where learner code cannot have
written it: in a sandbox with namespaces the learner's processes see the course read-only; without
them, Landlock keeps them to a folder of their own, or they run as a uid of their own. Where learner
code runs as the grader's own user with nothing to hold it (macOS, GRADER_SANDBOX=off as an ordinary
user), it could plant an answer, so every answer is computed, every time. Anything unreadable or
malformed in the cache is treated as absent.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import Any

import torch

from grader.files import write_atomic

FOLDER = Path(".grader") / "cache" / "answers"
SLOW_SECONDS = 0.05   # answers quicker than this to compute are not worth a file


def usable() -> bool:
    """Whether an answer on disk can be trusted here: only where learner code cannot write it (a read-only view,
    Landlock, or a uid of its own that the course's folders are not writable by)."""
    from grader.sandbox.machine import support

    found = support()
    return found.namespaces or bool(found.landlock) or found.user is not None


def _path(root: Path, key: str) -> Path:
    return root / FOLDER / f"{hashlib.sha256(key.encode()).hexdigest()}.pt"


def load(root: Path, key: str) -> tuple[Any, Any] | None:
    """(expected, baseline) stored under `key`, or None when there is none or it cannot be read as stored."""
    key = f"{torch.__version__}\0{key}"
    path = _path(root, key)
    if not os.path.isfile(path):  # most answers are never stored: no torch.load (and its exception) for them
        return None
    try:
        stored = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001  (missing, truncated, or not what this module writes: compute instead)
        return None
    if not isinstance(stored, dict) or stored.get("key") != key or not _plain(stored.get("answer")):
        return None
    return stored["answer"]


def store(root: Path, key: str, expected: Any, baseline: Any) -> None:
    """Keep (expected, baseline) under `key`; a folder that cannot be written is passed over in silence."""
    answer = (expected, baseline)
    if not _plain(answer):
        return  # a checker's own types would not load back with weights_only; computing them again is correct
    key = f"{torch.__version__}\0{key}"
    buffer = io.BytesIO()
    torch.save({"key": key, "answer": answer}, buffer)
    try:
        write_atomic(_path(root, key), buffer.getvalue())  # whole or not at all: another grader may be reading it
    except OSError:  # read-only course, full disk: the answer is simply computed next time
        pass


def _plain(value: Any, depth: int = 0) -> bool:
    """Tensors, numbers, None and tuples or lists of them: what is stored and read back unchanged."""
    if depth > 8:
        return False
    if value is None or isinstance(value, (torch.Tensor, bool, int, float, str)):
        return True
    if isinstance(value, (tuple, list)):
        return all(_plain(item, depth + 1) for item in value)
    return False
