"""Which submissions of a cohort are copies of each other, from the fingerprints their results files hold.

Two submissions' similarity is the share of their fingerprints they have in common: the fingerprints both
have over those either has (1.0 for identical files, and for a copy whose names, comments and layout were
changed). Pairs at THRESHOLD or above are flagged, and joined into clusters: four copies of one file are one
cluster of four. Computed from the results files alone, so that merged shards give what one run gives.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Protocol

THRESHOLD = 0.7   # flagged at this similarity or above: the reference and a correct variant derived from it
                  # (one function of three rewritten) share about half their fingerprints
NOTED = 0.4       # pairs listed in similarity.csv, flagged or not, for staff who want to look further
MIN_FINGERPRINTS = 3  # a file with fewer of its own (the stub, nearly untouched) is compared with nothing
# Tokens of code fingerprinted, counted once comments, docstrings and blank lines are gone: an exercise's file has a
# few thousand; a file whose code runs past it is compared on its first TOKEN_LIMIT, and said to be.
TOKEN_LIMIT = 16_384


class Fingerprinted(Protocol):
    id: str
    sha256: str
    fingerprints: tuple[int, ...] | None  # None: not recorded
    fingerprints_cut: bool                # its code ran past TOKEN_LIMIT: its first part gave the fingerprints


@dataclass(frozen=True)
class Pair:
    """Two submissions and how similar they are; `identical`: byte for byte."""

    first: str
    second: str
    similarity: float
    shared: int
    identical: bool

    @property
    def flagged(self) -> bool:
        return self.similarity >= THRESHOLD


@dataclass(frozen=True)
class Cluster:
    """Submissions joined by flagged pairs, with those pairs; the most similar first."""

    members: tuple[str, ...]
    pairs: tuple[Pair, ...]

    @property
    def identical(self) -> bool:
        return len(self.pairs) == len(self.members) * (len(self.members) - 1) // 2 and all(
            pair.identical for pair in self.pairs)


@dataclass
class Similarity:
    """Every noted pair, the clusters of flagged ones, and the submissions that could not be compared."""

    pairs: list[Pair] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    compared: int = 0
    unrecorded: list[str] = field(default_factory=list)  # graded before fingerprints were kept: grade again
    too_small: list[str] = field(default_factory=list)   # fewer than MIN_FINGERPRINTS of its own: compared with none
    in_part: list[str] = field(default_factory=list)     # compared on its first TOKEN_LIMIT tokens of code only

    def similar_to(self, submission_id: str) -> list[tuple[str, float]]:
        """The submissions flagged with this one, the most similar first."""
        found = [(pair.second if pair.first == submission_id else pair.first, pair.similarity)
                 for pair in self.pairs if pair.flagged and submission_id in (pair.first, pair.second)]
        return sorted(found, key=lambda item: (-item[1], item[0]))


def compare(entries: list[Fingerprinted]) -> Similarity:
    """Every pair of the entries with fingerprints enough, through an index of who holds which fingerprint."""
    prints = {entry.id: set(entry.fingerprints) for entry in entries
              if entry.fingerprints and len(entry.fingerprints) >= MIN_FINGERPRINTS}
    sha = {entry.id: entry.sha256 for entry in entries}
    holders: dict[int, list[str]] = defaultdict(list)
    for submission_id in sorted(prints):
        for value in prints[submission_id]:
            holders[value].append(submission_id)
    shared: dict[tuple[str, str], int] = defaultdict(int)
    for ids in holders.values():
        for pair in combinations(ids, 2):
            shared[pair] += 1
    pairs = []
    for (first, second), common in shared.items():
        ratio = common / len(prints[first] | prints[second])
        if ratio >= NOTED:
            same = bool(sha[first]) and sha[first] == sha[second]
            pairs.append(Pair(first, second, round(ratio, 4), common, same))
    pairs.sort(key=lambda pair: (-pair.similarity, pair.first, pair.second))
    unrecorded = sorted(entry.id for entry in entries if entry.sha256 and entry.fingerprints is None)
    too_small = sorted(entry.id for entry in entries if entry.fingerprints is not None and entry.id not in prints)
    in_part = sorted(entry.id for entry in entries if entry.id in prints and entry.fingerprints_cut)
    return Similarity(pairs, _clusters([pair for pair in pairs if pair.flagged]), len(prints), unrecorded,
                      too_small, in_part)


def _clusters(flagged: list[Pair]) -> list[Cluster]:
    """Flagged pairs joined where they share a submission (union-find), the largest and closest first."""
    parent: dict[str, str] = {}

    def root(item: str) -> str:
        while parent.setdefault(item, item) != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    for pair in flagged:
        parent[root(pair.first)] = root(pair.second)
    groups: dict[str, list[str]] = defaultdict(list)
    for item in sorted(parent):
        groups[root(item)].append(item)
    clusters = [Cluster(tuple(members), tuple(pair for pair in flagged if pair.first in members))
                for members in groups.values()]
    return sorted(clusters, key=lambda cluster: (-len(cluster.members), -cluster.pairs[0].similarity,
                                                 cluster.members))
