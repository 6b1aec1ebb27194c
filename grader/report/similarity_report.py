"""The similarity report: similarity.csv, the grades.csv cell of each submission, and report.html's section."""

from __future__ import annotations

import csv
import html
import io
from urllib.parse import quote

from grader.inert import inert
from grader.report.cohort_csv import CSV_FORMULA
from grader.results.similarity import NOTED, THRESHOLD, Cluster, Similarity


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
    """Each flagged submission's grades.csv cell, the others by how similar: 'bob, carol (100%); dan (96%)'."""
    cells = {}
    for cluster in similarity.clusters:
        for member in cluster.members:
            by_percent: dict[str, list[str]] = {}
            for other, ratio in similarity.similar_to(member):
                by_percent.setdefault(_percent(ratio), []).append(other)
            cells[member] = "; ".join(f"{', '.join(others)} ({percent})" for percent, others in by_percent.items())
    return cells


def _percent(ratio: float) -> str:
    return f"{ratio * 100:.0f}%"


def _cell(text: str) -> str:
    return "'" + text if text.startswith(CSV_FORMULA) else text


def _esc(text: object) -> str:
    return html.escape(inert(str(text)), quote=True)


def anchor(submission_id: str) -> str:
    """The id of a submission's row in report.html's table."""
    return "entry-" + quote(submission_id, safe="")


def _name(submission_id: str) -> str:
    return f'<a href="#{_esc(anchor(submission_id))}">{_esc(submission_id)}</a>'


def similarity_section(similarity: Similarity) -> str:
    """The flagged clusters, one row each: its submissions (linked to their rows), how alike, its pairs folded."""
    how = (f"<p class=\"muted\">Compared after dropping comments, docstrings and the stub's own code, with every "
           f"name the file binds and every string made alike; flagged at {_percent(THRESHOLD)} of fingerprints "
           f"shared or more ({similarity.compared} submissions compared; similarity.csv lists every pair from "
           f"{_percent(NOTED)}).</p>")
    if similarity.unrecorded:
        how += (f"<p>{len(similarity.unrecorded)} submissions were graded before fingerprints were kept and are "
                f"not compared: grade them again with <code>--force</code>.</p>")
    if not similarity.clusters:
        return "<p>No two submissions are alike.</p>" + how
    rows = "".join(_cluster(number, cluster) for number, cluster in enumerate(similarity.clusters, start=1))
    return (f'<table class="clusters"><tr><th>cluster</th><th>submissions</th><th>similarity</th><th>pairs</th></tr>'
            f"{rows}</table>{how}")


def _cluster(number: int, cluster: Cluster) -> str:
    low, high = min(pair.similarity for pair in cluster.pairs), max(pair.similarity for pair in cluster.pairs)
    alike = _percent(high) if low == high else f"{_percent(low)} to {_percent(high)}"
    kind = "identical files" if cluster.identical else alike
    members = ", ".join(_name(member) for member in cluster.members)
    pairs = "".join(f"<li>{_esc(pair.first)} and {_esc(pair.second)}: {_percent(pair.similarity)}"
                    f"{' (byte for byte)' if pair.identical else ''}</li>" for pair in cluster.pairs)
    count = f"{len(cluster.pairs)} pair{'s' * (len(cluster.pairs) != 1)}"
    return (f'<tr><td class="number">{number}</td><td>{len(cluster.members)}: {members}</td><td>{kind}</td>'
            f"<td><details><summary>{count}</summary><ul>{pairs}</ul></details></td></tr>")
