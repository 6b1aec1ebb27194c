"""Files the grader writes: a new name never handed out twice, a write that is whole or absent, the time."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path


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


def write_atomic(path: Path, content: str | bytes) -> None:
    """Write `content` so that `path` is either its old self or all of the new one, never half a file: readers
    (another grader, a rerun after a kill) see one or the other, and two writers never share a temporary file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A name of its own (hidden, never read as a result), created with the umask's permissions, unlike mkstemp's.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        with open(temporary, "xb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:  # an interrupt too: no temporary file is left behind
        temporary.unlink(missing_ok=True)
        raise
