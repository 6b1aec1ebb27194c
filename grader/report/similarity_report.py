"""The similarity report: similarity.csv, the grades.csv cell of each submission, and report.html's section."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from urllib.parse import quote

from grader.report.cohort_csv import CSV_FORMULA
from grader.results.similarity import NOTED, THRESHOLD, TOKEN_LIMIT, Cluster, Similarity

TOO_SMALL = "not compared: too little code of its own"
IN_PART = f"compared on its first {TOKEN_LIMIT:,} tokens of code only"


def similarity_csv(similarity: Similarity) -> str:
    """Every pair at NOTED or above, the most similar first: its cluster (when flagged), how similar, why."""
    cluster_of = {member: number for number, cluster in enumerate(similarity.clusters, start=1)
                  for member in cluster.members}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["cluster", "first", "second", "similarity", "shared_fingerprints", "identical", "flagged"])
    for pair in similarity.pairs:
        writer.writerow([cluster_of.get(pair.first, "") if pair.flagged else "", _cell(pair.first), _cell(pair.second),
                         _percent(pair.similarity), pair.shared, "yes" if pair.identical else "no",
                         "yes" if pair.flagged else "no"])
    return buffer.getvalue()


def similar_to(similarity: Similarity) -> dict[str, str]:
    """Each flagged submission's grades.csv cell, the others by how similar: 'bob, carol (100%); dan (96%)'; and
    the cell of one that was compared in part, or not at all, saying so."""
    cells = {}
    for cluster in similarity.clusters:
        for member in cluster.members:
            by_percent: dict[str, list[str]] = {}
            for other, ratio in similarity.similar_to(member):
                by_percent.setdefault(_percent(ratio), []).append(other)
            cells[member] = "; ".join(f"{', '.join(others)} ({percent})" for percent, others in by_percent.items())
    for member in similarity.in_part:
        cells[member] = "; ".join(filter(None, [cells.get(member, ""), IN_PART]))
    cells.update((member, TOO_SMALL) for member in similarity.too_small)
    return cells


def _percent(ratio: float) -> str:
    return f"{ratio * 100:.0f}%"


def _cell(text: str) -> str:
    return "'" + text if text.startswith(CSV_FORMULA) else text


def anchor(submission_id: str) -> str:
    """The id of a submission's row in report.html's table."""
    return "entry-" + quote(submission_id, safe="")


@dataclass(frozen=True)
class ClusterRow:
    """One flagged cluster: its submissions (with their rows' anchors), how alike, and its pairs."""

    number: int
    members: list[tuple[str, str]]               # (anchor, submission id)
    alike: str                                   # "identical files", "96%", "90% to 100%"
    pairs: list[tuple[str, str, str, bool]]      # (first, second, similarity, identical)
    count: str                                   # "10 pairs"


@dataclass(frozen=True)
class SimilaritySection:
    """report.html's section on copies (templates/similarity.html.j2): how they were found, and the clusters."""

    compared: int
    unrecorded: int   # submissions graded before fingerprints were kept
    too_small: list[str]   # submissions with too little code of their own to compare
    in_part: list[str]     # submissions compared on their first tokens of code only
    limit: str             # how many tokens of code a submission is compared on, "16,384"
    threshold: str    # how alike two are to be flagged, "70%"
    noted: str        # how alike to be listed in similarity.csv
    clusters: list[ClusterRow]


def similarity_section(similarity: Similarity) -> SimilaritySection:
    """The flagged clusters, one row each: its submissions (linked to their rows), how alike, its pairs folded."""
    clusters = [_cluster(number, cluster) for number, cluster in enumerate(similarity.clusters, start=1)]
    return SimilaritySection(similarity.compared, len(similarity.unrecorded), similarity.too_small,
                             similarity.in_part, f"{TOKEN_LIMIT:,}", _percent(THRESHOLD), _percent(NOTED), clusters)


def _cluster(number: int, cluster: Cluster) -> ClusterRow:
    low, high = min(pair.similarity for pair in cluster.pairs), max(pair.similarity for pair in cluster.pairs)
    alike = _percent(high) if low == high else f"{_percent(low)} to {_percent(high)}"
    pairs = [(pair.first, pair.second, _percent(pair.similarity), pair.identical) for pair in cluster.pairs]
    return ClusterRow(number, [(anchor(member), member) for member in cluster.members],
                      "identical files" if cluster.identical else alike, pairs,
                      f"{len(cluster.pairs)} pair{'s' * (len(cluster.pairs) != 1)}")
