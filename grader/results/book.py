"""The files a gradebook keeps beside its results: shard.json (which shard it is) and gradebook.json (its roster).

shard.json is written on every `grader grade`, an empty shard's included: the exercise, the settings its verdicts
were reached under (the course key among them), which shard of how many, the ids of the shard's submissions, and
a hash of every id the run found, so that a merge can tell shards of one cohort, graded one way, from anything
else. gradebook.json keeps the roster and the late policy a gradebook was graded with, applied again on every run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from grader.results.typed import from_json, to_json

SHARD_FILE = "shard.json"
SHARD_FORMAT = 1  # shard.json's own layout; a merge refuses one it does not know
BOOK_FILE = "gradebook.json"


@dataclass(frozen=True, kw_only=True)
class ShardFile:
    """shard.json: one shard's submissions of one cohort, graded one way, and how many of them await a retry."""

    format: int = SHARD_FORMAT
    exercise: str
    settings: dict[str, Any]
    shard: str                  # "K/N", 1-based
    submissions: list[str]      # this shard's ids, every one of which has a results file
    cohort: str                 # the hash of every id the run found, in every shard
    cohort_size: int
    not_graded: int = 0         # submissions that cannot be graded as handed in
    to_retry: int = 0           # submissions with no verdict that stands: a job script runs the shard again

    @property
    def split(self) -> tuple[int, int]:
        """(K, N) of "K/N"; ValueError unless 1 <= K <= N."""
        k, n = (int(part) for part in self.shard.split("/"))
        if not 1 <= k <= n:
            raise ValueError(f"shard {self.shard!r}")
        return k, n


def encode_shard(record: ShardFile) -> str:
    return json.dumps(to_json(record), indent=2) + "\n"


def decode_shard(text: str | bytes) -> ShardFile:
    """shard.json's record; a ValueError says what is wrong with it (a layout of another version among them)."""
    data = json.loads(text)
    found = data.get("format") if isinstance(data, dict) else None
    if found != SHARD_FORMAT:
        raise ValueError(f"format {found!r}, not {SHARD_FORMAT}")
    record = from_json(ShardFile, data)
    record.split  # noqa: B018  (checked now: a record read is a record that can be used)
    return record


@dataclass(frozen=True, kw_only=True)
class BookFile:
    """gradebook.json: the roster a gradebook was graded with, and its due date and late penalty as given."""

    roster: str = ""        # the roster file's absolute path; "" for none
    due: str = ""
    late_penalty: str = ""


def encode_book(record: BookFile) -> str:
    return json.dumps(to_json(record), indent=2) + "\n"


def decode_book(text: str | bytes) -> BookFile:
    """gradebook.json's record; a ValueError (a Mismatch when it is JSON of another shape) says what is wrong."""
    return from_json(BookFile, json.loads(text))
