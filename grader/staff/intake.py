"""A cohort's submissions (files, archives, folders of them) with ids safe for file names, and their bytes."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from grader.errors import GraderError
from grader.files import SOURCE_LIMIT, kind_of, read_regular

ID_LIMIT = 120  # characters of an id before its hash; results/<id>.json stays well under any file-name limit
# What tools leave next to submissions (Gradescope's export: its metadata); not a learner's work.
SKIPPED_ENTRIES = {"__pycache__", "__MACOSX", "submission_metadata.yml"}


@dataclass(frozen=True)
class Submission:
    """One learner's submission: what was given, the Python file to grade, or why there is none."""

    id: str
    name: str             # its path relative to the cohort's common root, as found (the learner's characters)
    path: Path            # the file, folder or archive as found
    file: Path | None     # the Python file that is graded; None when it cannot be graded
    problem: str = ""     # why it cannot be graded; "" when it can
    lasting: bool = True  # whether the problem stays while the submission does (else it is tried again)


def find_submissions(paths: list[Path], stub: str, exclude: tuple[Path, ...] = ()) -> list[Submission]:
    """Every submission under `paths`, in id order: a file, a folder holding `stub` or exactly one .py,
    or a folder of those (one submission per entry); never what is in `exclude` (the gradebook itself).

    A folder named here may be reached through a link (the staff's own layout); nothing found inside one is
    followed: an entry that is a symbolic link, or holds one as its file, is that entry's "not graded" row,
    and so is one that is not a regular file (a FIFO, a device)."""
    found: list[tuple[Path, Path | None, str, bool]] = []
    skip = {Path(os.path.abspath(path)) for path in exclude}
    for given in paths:
        path = Path(os.path.abspath(given))
        try:
            if not os.path.lexists(path):
                found.append((path, None, "missing: no such file or folder", False))
            elif path.is_dir() and not _is_one_submission(path, stub):
                entries = sorted(entry for entry in path.iterdir() if entry not in skip
                                 and not entry.name.startswith(".") and entry.name not in SKIPPED_ENTRIES)
                found += [(entry, *_graded_file(entry, stub, named=False)) for entry in entries]
            else:
                found.append((path, *_graded_file(path, stub, named=True)))
        except OSError as error:  # a folder that cannot be listed: recorded, and looked at again next run
            found.append((path, None, f"unreadable: {error.strerror or error}", False))
    ids = make_ids([path for path, *_ in found])
    submissions = [Submission(*ids[path], path, file, problem, lasting) for path, file, problem, lasting in found]
    # Named twice on the command line, or a folder and a file in it: graded once.
    unique = {submission.id: submission for submission in submissions}
    return sorted(unique.values(), key=lambda submission: submission.id)


def _is_one_submission(folder: Path, stub: str) -> bool:
    """A learner's folder (the stub's name, or one .py, or no .py and one archive; no folders), not a folder
    of submissions. Links are looked at, never followed: a link to a folder counts as a folder."""
    if os.path.lexists(folder / stub):
        return True
    entries = [(entry, kind_of(entry)) for entry in folder.iterdir() if entry.name not in SKIPPED_ENTRIES]
    python = [entry for entry, kind in entries if entry.suffix == ".py" and kind != "folder"]
    archives = [entry for entry, kind in entries if entry.suffix.lower() == ".zip" and kind != "folder"]
    others = [entry for entry, kind in entries if kind in ("folder", "link") and entry not in python + archives]
    return (len(python) == 1 or (not python and len(archives) == 1)) and not any(
        not entry.name.startswith(".") for entry in others)


def _graded_file(path: Path, stub: str, named: bool) -> tuple[Path | None, str, bool]:
    """The Python file a submission entry stands for, or why there is none (and whether that lasts)."""
    try:
        return _graded_file_in(path, stub, named)
    except OSError as error:
        return None, f"unreadable: {error.strerror or error}", False


def _graded_file_in(path: Path, stub: str, named: bool) -> tuple[Path | None, str, bool]:
    kind = kind_of(path)
    if kind == "link" and not (named and path.is_dir()):  # only a folder named on the command line is followed
        return None, "a symbolic link", True
    if kind in ("folder", "link"):
        listed = {entry.name: kind_of(entry) for entry in path.iterdir()}
        if stub in listed:
            return _one_of(path, stub, listed[stub])
        candidates = sorted(name for name, inner in listed.items() if name.endswith(".py") and inner != "folder")
        if not candidates:
            # What a learner's bundle hands in: one archive, its manifest checked when it is read.
            candidates = sorted(name for name, inner in listed.items()
                                if name.lower().endswith(".zip") and inner != "folder")
            if not candidates:
                return None, f"no Python file or submission archive in the folder (expected {stub})", True
        if len(candidates) > 1:
            shown = ", ".join(candidates[:4]) + (", ..." if len(candidates) > 4 else "")
            return None, f"more than one candidate file ({shown}) and none called {stub}", True
        return _one_of(path, candidates[0], listed[candidates[0]])
    if kind != "file":
        return None, "not a regular file", True
    if path.suffix.lower() == ".zip":
        return path, "", True  # the archive itself: its manifest is checked when it is read (read_graded)
    if path.suffix != ".py":
        return None, f"not a Python file ({path.suffix or 'no extension'})", True
    return path, "", True


def _one_of(folder: Path, name: str, kind: str) -> tuple[Path | None, str, bool]:
    """The file `name` in a learner's folder, if it is a regular file."""
    if kind == "file":
        return folder / name, "", True
    what = {"link": "a symbolic link", "folder": "a folder"}.get(kind, "not a regular file")
    return None, f"{name} is {what}", True


def make_ids(paths: list[Path]) -> dict[Path, tuple[str, str]]:
    """Each path's id (its path relative to the paths' common root, made safe for a file name and unique)
    and that relative path as it is."""
    if not paths:
        return {}
    root = Path(os.path.commonpath([str(path.parent) for path in paths]))
    relatives = {path: path.relative_to(root).as_posix() for path in paths}
    safe = {path: _safe(relative) for path, relative in relatives.items()}
    # Case-folded: alice.py and Alice.py would be one file on a case-insensitive disk.
    seen: dict[str, int] = {}
    for name in safe.values():
        seen[name.lower()] = seen.get(name.lower(), 0) + 1
    ids = {}
    for path, name in safe.items():
        changed = name != relatives[path].replace("/", "__")
        if changed or seen[name.lower()] > 1:
            # A name that was altered or shared gets a hash of its true path: two submissions never share a file.
            # Of the name's bytes as the file system holds them: any byte, UTF-8 or not, hashes.
            name = f"{name}-{hashlib.sha256(os.fsencode(relatives[path])).hexdigest()[:8]}"
        ids[path] = (name, relatives[path])
    return ids


def _safe(relative: str) -> str:
    """Letters, digits, '.', '_' and '-' only; never hidden, never an option, never too long."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", relative.replace("/", "__")).lstrip(".-")
    return name[:ID_LIMIT] or "submission"


def read_graded(submission: Submission, stub: str, exercise: str) -> tuple[str, bytes]:
    """The bytes that are graded and their sha256: the file, or the stub's file in a verified archive.

    RefusedFile (an OSError, with the reason for the entry's row) for a link, a file that is not regular, one
    over its limit or one that cannot be read; ArchiveError (its why, without the path) for an archive that
    is malformed, changed after it was written, for another exercise, or without the stub's file.
    """
    assert submission.file is not None
    if submission.file.suffix.lower() != ".zip":
        data = read_regular(submission.file, SOURCE_LIMIT)
        return hashlib.sha256(data).hexdigest(), data
    from grader.results.archive import MAX_ARCHIVE_BYTES, ArchiveError, read_submission

    data = read_regular(submission.file, MAX_ARCHIVE_BYTES)  # read once: the archive checked is the one read
    try:
        files = read_submission(submission.file, exercise, data=data).files
    except ArchiveError as error:
        # Named by the id in every file of the gradebook: the path, long and local, is left out.
        raise ArchiveError(f"archive: {str(error).removeprefix(f'{submission.file}: ')}") from None
    if stub not in files:
        raise ArchiveError(f"archive: holds {', '.join(sorted(files)) or 'nothing'}, not {stub}")
    return hashlib.sha256(files[stub]).hexdigest(), files[stub]


def submitted_at(submission: Submission) -> str:
    """When it was handed in, as ISO 8601: an archive's manifest time, else the graded file's modification time;
    "" when neither can be read (its lateness is then not judged)."""
    if submission.file is None:
        return ""
    try:
        if submission.file.suffix.lower() == ".zip":
            from grader.results.archive import read_submission

            created = read_submission(submission.file).manifest["created"]
            return datetime.strptime(created, "%Y-%m-%dT%H:%M:%S%z").isoformat()
        stamp = os.lstat(submission.file).st_mtime
        return datetime.fromtimestamp(stamp, timezone.utc).astimezone().isoformat(timespec="seconds")
    except (OSError, ValueError, GraderError):
        return ""
