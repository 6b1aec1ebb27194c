"""Files the grader writes and reads: a name never handed out twice, a whole write, a learner's file read bounded."""

from __future__ import annotations

import errno
import os
import secrets
import stat
import time
from pathlib import Path

SOURCE_LIMIT = 2 << 20  # bytes of a learner's .py: far above any plausible solution, far below the grader's memory
# A symbolic link fails to open (never followed to the reference or a hidden case); a FIFO cannot hold the open;
# a terminal never becomes the grader's.
READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
              | getattr(os, "O_CLOEXEC", 0))


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


class RefusedFile(OSError):
    """Why a file is not read, in the words of a "not graded" row: "a symbolic link", "too large (...)"."""

    def __init__(self, reason: str, lasting: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.lasting = lasting  # whether it stays while the file does (else it is looked at again next time)


def kind_of(path: Path) -> str:
    """What an entry is, without following it: "file", "folder", "link" or "other" (a FIFO, a device, a socket)."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "folder"
    return "file" if stat.S_ISREG(mode) else "other"


def read_regular(path: Path, limit: int = SOURCE_LIMIT) -> bytes:
    """The bytes of `path` if it is a regular file of at most `limit` bytes; RefusedFile, saying why, if not.

    One descriptor, opened without following a last component that is a link, is checked (fstat) and read:
    nothing can be swapped between the check and the read, and at most `limit` + 1 bytes are ever read, so
    a 16 GiB file costs one fstat. The folders above the file may be links: they are the user's own."""
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EMLINK) and _is_link(path):  # O_NOFOLLOW's answer (BSDs: EMLINK)
            raise RefusedFile("a symbolic link") from None
        raise RefusedFile(f"unreadable: {error.strerror or error}", lasting=False) from None
    try:
        found = os.fstat(fd)
        if stat.S_ISDIR(found.st_mode):
            raise RefusedFile("a folder")
        if not stat.S_ISREG(found.st_mode):
            raise RefusedFile("not a regular file")
        if found.st_size > limit:
            raise RefusedFile(f"too large ({found.st_size:,} bytes; the limit is {limit:,})")
        chunks, left = [], limit + 1  # one byte past the limit: a file that grew since fstat is seen
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise RefusedFile(f"too large (more than {limit:,} bytes)")
        return data
    except RefusedFile:
        raise
    except OSError as error:
        raise RefusedFile(f"unreadable: {error.strerror or error}", lasting=False) from None
    finally:
        os.close(fd)


def _is_link(path: Path) -> bool:
    try:
        return kind_of(path) == "link"
    except OSError:
        return False
