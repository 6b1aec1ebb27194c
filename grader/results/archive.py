"""Submission archives: the learner's file and a manifest of hashes, from a bundle's `grader submit`, read safely."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import stat
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import __version__
from grader.errors import GraderError
from grader.files import now, unique_path

MANIFEST = "manifest.json"
FORMAT = "grader-submission/1"
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")  # a bare file name: no folder, no '..', no drive
MAX_ARCHIVE_BYTES = 8 << 20  # a learner's file or two and a manifest: bounds the zip's directory too
MAX_MEMBER_BYTES = 2 << 20
MAX_MEMBERS = 16
# What a damaged or hostile zip can raise while it is read; each becomes one line naming the archive.
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, RuntimeError, NotImplementedError,
              ValueError, zlib.error, OverflowError, UnicodeDecodeError, RecursionError)


class ArchiveError(GraderError):
    """A submission archive that is malformed, tampered with, or not the one expected."""


@dataclass(frozen=True)
class Archive:
    """A verified archive: which exercise, its files by name, and the manifest they matched."""

    path: Path
    exercise: str
    files: dict[str, bytes]
    manifest: dict[str, Any]


def content_hash(files: dict[str, bytes]) -> str:
    """One hash over every file: each name with its own sha256, in name order."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0{hashlib.sha256(files[name]).hexdigest()}\n".encode())
    return digest.hexdigest()


def write_submission(folder: Path, exercise: str, files: dict[str, bytes]) -> Archive:
    """A new archive `folder/EX-<stamp>.zip` (never one that exists) holding `files` and their manifest, verified."""
    manifest = {"format": FORMAT, "exercise": exercise,
                "files": [{"name": name, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
                          for name, data in sorted(files.items())],
                "content_sha256": content_hash(files), "grader_version": __version__,
                "created": now("%Y-%m-%dT%H:%M:%S%z")}
    path = None
    try:
        path = unique_path(folder, f"{exercise}-{now()}", ".zip")
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in sorted(files.items()):
                archive.writestr(_member(name), data)
            archive.writestr(_member(MANIFEST), json.dumps(manifest, indent=2) + "\n")
        written = read_submission(path, exercise)
    except BaseException as error:  # an interrupt too: no half-written archive is left to be handed in
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()
        if isinstance(error, OSError):
            raise ArchiveError(f"{path or folder}: the archive could not be written "
                                  f"({error.strerror or error})") from None
        raise
    if written.files != files:
        path.unlink()
        raise ArchiveError(f"{path}: the archive does not hold what was written to it")
    return written


def _member(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, time.localtime()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (stat.S_IFREG | 0o644) << 16
    return info


def read_submission(path: Path, exercise: str | None = None, data: bytes | None = None) -> Archive:
    """The archive's files, once its manifest matches them; ArchiveError (one line naming it) otherwise.

    The archive is read as hostile: it is never extracted, its size, member count and each member's
    size are bounded before anything is decompressed, and member names must be bare file names.
    `data`: the archive's bytes, already read (as a regular file, bounded); `path` then only names it.
    """
    def refuse(why: str) -> ArchiveError:
        return ArchiveError(f"{path}: {why}")

    try:
        size = Path(path).stat().st_size if data is None else len(data)
    except OSError as error:
        raise refuse(f"cannot be read ({error.strerror or error})") from None
    if size > MAX_ARCHIVE_BYTES:
        raise refuse(f"is {size} bytes; a submission archive is at most {MAX_ARCHIVE_BYTES >> 20} MiB")
    try:
        with zipfile.ZipFile(path if data is None else io.BytesIO(data)) as archive:
            members = _check_members(archive.infolist(), refuse)
            contents = {info.filename: _read_member(archive, info, refuse) for info in members}
    except ArchiveError:
        raise
    except ZIP_ERRORS as error:
        raise refuse(f"is not a readable zip archive ({type(error).__name__}: {_one_line(error)})") from None
    if MANIFEST not in contents:
        raise refuse(f"has no {MANIFEST}")
    manifest = _parse_manifest(contents.pop(MANIFEST), refuse)
    listed = {entry["name"]: entry for entry in manifest["files"]}
    if set(listed) != set(contents):
        raise refuse(f"its files ({', '.join(sorted(contents)) or 'none'}) are not those its manifest lists "
                     f"({', '.join(sorted(listed)) or 'none'}): it was changed after it was written")
    for name, data in contents.items():
        if hashlib.sha256(data).hexdigest() != listed[name]["sha256"]:
            raise refuse(f"{name} does not match its hash in the manifest: it was changed after it was written")
    if content_hash(contents) != manifest["content_sha256"]:
        raise refuse("its content hash does not match the manifest: it was changed after it was written")
    if exercise is not None and manifest["exercise"] != exercise:
        raise refuse(f"is a submission for {manifest['exercise']!r}, not {exercise!r}")
    return Archive(Path(path), manifest["exercise"], contents, manifest)


def _check_members(members: list[zipfile.ZipInfo], refuse: Any) -> list[zipfile.ZipInfo]:
    """The members, if there are few, each a regular file with a bare name, a bounded size and no twin."""
    if len(members) > MAX_MEMBERS:
        raise refuse(f"holds {len(members)} members; at most {MAX_MEMBERS}")
    seen: set[str] = set()
    for info in members:
        name = info.filename
        if not SAFE_NAME.fullmatch(name):
            raise refuse(f"holds a member named {_one_line(repr(name))[:120]}, which is not a bare file name")
        kind = stat.S_IFMT(info.external_attr >> 16)
        if info.is_dir() or kind not in (0, stat.S_IFREG):  # 0: made where zip records no mode
            raise refuse(f"member {name} is not a regular file")
        if info.file_size > MAX_MEMBER_BYTES:
            raise refuse(f"member {name} is {info.file_size} bytes; at most {MAX_MEMBER_BYTES >> 20} MiB each")
        if name in seen:
            raise refuse(f"holds {name} twice")
        seen.add(name)
    return members


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, refuse: Any) -> bytes:
    # The declared size may lie: never read more than the bound, whatever the header says.
    with archive.open(info) as member:
        data = member.read(MAX_MEMBER_BYTES + 1)
    if len(data) > MAX_MEMBER_BYTES:
        raise refuse(f"member {info.filename} unpacks to more than {MAX_MEMBER_BYTES >> 20} MiB")
    return data


def _parse_manifest(raw: bytes, refuse: Any) -> dict[str, Any]:
    try:
        manifest = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise refuse(f"its {MANIFEST} is not valid JSON ({type(error).__name__})") from None
    entries = manifest.get("files") if isinstance(manifest, dict) else None
    well_formed = (
        isinstance(entries, list) and manifest.get("format") == FORMAT
        and isinstance(manifest.get("exercise"), str) and SAFE_NAME.fullmatch(manifest["exercise"])
        and _is_sha256(manifest.get("content_sha256"))
        and all(isinstance(manifest.get(key), str) for key in ("grader_version", "created"))
        and all(isinstance(entry, dict) and isinstance(entry.get("name"), str)
                and SAFE_NAME.fullmatch(entry["name"]) and entry["name"] != MANIFEST
                and _is_sha256(entry.get("sha256")) for entry in entries)
        and len({entry["name"] for entry in entries}) == len(entries))
    if not well_formed:
        raise refuse(f"its {MANIFEST} is not a {FORMAT} manifest")
    return manifest


def _is_sha256(value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _one_line(error: object) -> str:
    return " ".join(str(error).split())[:200]
