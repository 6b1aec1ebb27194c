"""The checks that shards' gradebooks make one gradebook together, over the shard records (shard.json) they keep.

The record's fields and its file are grader.results.book's; a merge reads each folder's, and tells shards of one
cohort, graded one way, from anything else, saying which shard is missing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grader.errors import UsageError
from grader.files import write_atomic
from grader.inert import one_line
from grader.results.book import SHARD_FILE, ShardFile, decode_shard, encode_shard

RECORD = SHARD_FILE
SHOWN = 5   # ids named in one line of a merge's complaint; the rest are counted


@dataclass(frozen=True)
class ShardRecord:
    """What one gradebook folder holds: one shard's submissions of one cohort, graded one way."""

    folder: Path
    exercise: str
    settings: dict[str, Any]
    shard: tuple[int, int]
    submissions: tuple[str, ...]  # this shard's ids, every one of which has a results file
    cohort: str                   # the hash of every id the run found, in every shard
    cohort_size: int

    @property
    def label(self) -> str:
        return f"shard {self.shard[0]}/{self.shard[1]}"


def cohort_hash(ids: list[str]) -> str:
    """Which submissions a run found, all shards' together: the same on every machine that sees the same folder."""
    return hashlib.sha256("\n".join(sorted(ids)).encode("utf-8", "surrogatepass")).hexdigest()


def write_record(out: Path, record: ShardFile) -> None:
    """shard.json in `out`; its counts let a job script tell a complete shard with ungradable entries (to_retry 0)
    from one to run again, whatever its exit status."""
    write_atomic(out / RECORD, encode_shard(replace(record, submissions=sorted(record.submissions))))


def read_record(folder: Path) -> ShardRecord:
    """A gradebook folder's shard.json; a UsageError says in one line why it is not one."""
    path = folder / RECORD
    if not path.is_file():
        raise UsageError(f"{folder}: no {RECORD} here: not a gradebook of `grader grade`, or one written by an "
                         f"earlier version (run its `grader grade` command again: what is graded is kept)")
    try:
        found = decode_shard(path.read_bytes())
        return ShardRecord(folder, found.exercise, dict(found.settings), found.split, tuple(found.submissions),
                           found.cohort, found.cohort_size)
    except (OSError, ValueError) as error:
        detail = error.strerror if isinstance(error, OSError) else f"{type(error).__name__}: {error}"
        raise UsageError(f"{path}: not a shard record of `grader grade` ({one_line(str(detail))})") from None


def problems(records: list[ShardRecord], results: dict[Path, set[str]]) -> list[str]:
    """Every reason these gradebooks are not the shards of one cohort graded one way, one line each ([] if none).

    `results` is, per folder, the ids of the results files it holds."""
    first = records[0]
    lines = []
    for record in records[1:]:
        if record.exercise != first.exercise:
            lines.append(f"{record.folder}: exercise {record.exercise}, where {first.folder} has {first.exercise}")
        else:
            lines += [f"{record.folder}: graded with {what}, where {first.folder} was graded with {theirs}"
                      for what, theirs in _differences(record.settings, first.settings)]
    counts = sorted({record.shard[1] for record in records})
    if len(counts) > 1:
        lines.append(f"the folders are shards of different splits ({', '.join(f'of {n}' for n in counts)}): "
                     f"merge the shards of one --shard K/N run")
    else:
        lines += _coverage(records, counts[0])
    cohorts = {record.cohort for record in records}
    if len(cohorts) > 1:
        sizes = ", ".join(f"{record.folder} {record.cohort_size}" for record in records)
        lines.append(f"the shards were graded from different sets of submissions ({sizes}): run every shard again on "
                     f"the same folder (what is graded already is skipped)")
    lines += _clashes(records)
    for record in records:
        missing = sorted(set(record.submissions) - results[record.folder])
        if missing:
            lines.append(f"{record.folder}: no results file for {_some(missing)}: run its shard again")
    return lines


def _differences(mine: dict[str, Any], theirs: dict[str, Any]) -> list[tuple[str, str]]:
    """(this setting, that one) for each setting that differs; the course key shortened as git shortens a hash."""
    def shown(key: str, value: Any) -> str:
        if key == "course":
            return f"course version {str(value)[:12]}"
        return f"{key.replace('_', ' ')} {value}"
    keys = sorted(set(mine) | set(theirs))
    return [(shown(key, mine.get(key)), shown(key, theirs.get(key)))
            for key in keys if mine.get(key) != theirs.get(key)]


def _coverage(records: list[ShardRecord], n: int) -> list[str]:
    by_k: dict[int, list[ShardRecord]] = {}
    for record in records:
        by_k.setdefault(record.shard[0], []).append(record)
    lines = [f"shard {k}/{n} is in more than one folder: {', '.join(str(r.folder) for r in by_k[k])}"
             for k in sorted(by_k) if len(by_k[k]) > 1]
    missing = [k for k in range(1, n + 1) if k not in by_k]
    lines += [f"shard {k}/{n} is missing" for k in missing[:SHOWN]]
    if len(missing) > SHOWN:
        lines.append(f"{len(missing) - SHOWN} more of the {n} shards are missing")
    return lines


def _clashes(records: list[ShardRecord]) -> list[str]:
    """A submission in two shards' records: the shards overlap, and which verdict counts is not for a merge to say."""
    owner: dict[str, ShardRecord] = {}
    shared: dict[tuple[Path, Path], list[str]] = {}
    for record in records:
        for submission in record.submissions:
            if submission in owner:
                shared.setdefault((owner[submission].folder, record.folder), []).append(submission)
            else:
                owner[submission] = record
    return [f"{first} and {second} both hold {_some(ids)}: shards must not overlap"
            for (first, second), ids in shared.items()]


def _some(ids: list[str]) -> str:
    named = ", ".join(one_line(item) for item in ids[:SHOWN])
    return named + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")
