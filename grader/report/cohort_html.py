"""The cohort report as one static page a TA reads in one screen: no script, no network, plots drawn here.

First the summary, the score histogram and the mistakes most often diagnosed, side by side where the window
is wide; then the submissions found alike, the cases by function and suite (worst first, the rest folded),
and the submissions, each linked to the feedback file staff can send. The markup is templates/report.html.j2;
what it shows is worked out here, as plain data.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from grader.inert import cut
from grader.report.cohort_cases import COLOURS, Bar, bar, cases_section
from grader.report.cohort_roster import RosterSection
from grader.report.feedback import feedback_link
from grader.report.html_page import render
from grader.report.similarity_report import anchor, similar_to, similarity_section
from grader.results.cohort import NOT_GRADED, STATUSES, Entry, Summary
from grader.results.similarity import Similarity

__all__ = ["histogram", "mistakes_chart", "render_html"]

BINS = 10           # score histogram: tenths of the maximum
WIDTH = 520         # of the histogram's drawing; the page scales it to its column
HEIGHT, BASE, LEFT, TALLEST = 220, 180, 4, 150  # the drawing's height, its axis, its margin, the highest bar
SHOWN_MISTAKES = 8  # mistakes listed before the rest is folded
SHOWN_FAILURES = 3  # failing cases shown per submission, each cut to OUTPUT_CHARS
OUTPUT_CHARS = 1500


@dataclass(frozen=True)
class Scores:
    """The scores the headline is of (with a roster, those that count), as the summary says them: what they are,
    out of what, mean, median, of whom, lowest and highest; and the graded ones' mean and median where they differ."""

    label: str  # after "Score of 100": "", or " that counts"
    of: str  # " of 30"; "" without a maximum
    mean: str
    median: str
    what: str  # "12 graded", "13 learners: 1 missing (0), 2 adjusted"
    lowest: str
    highest: str
    graded: str = ""  # "graded: mean 60, median 70 (12 graded)", beside the scores that count


@dataclass(frozen=True)
class Overview:
    """The summary's lines: how many, by status; the scores (none graded: None); the copies flagged."""

    count: int
    statuses: list[tuple[str, int]]
    scores: Scores | None
    flagged: str  # "5 submissions in 1 cluster"; "" when none is


@dataclass(frozen=True)
class Column:
    """One bar of the histogram: where it is drawn, how many it counts, the scores it spans."""

    x: str
    y: int
    width: str
    height: int
    centre: str
    count: int
    low: str
    high: str


@dataclass(frozen=True)
class Histogram:
    """Submissions per tenth of the maximum score (no score graded: no column), drawn WIDTH by HEIGHT."""

    columns: list[Column]
    top: str
    counting: str = "submissions"  # or "learners": each by the score that counts
    width: int = WIDTH
    height: int = HEIGHT
    base: int = BASE
    left: int = LEFT
    colour: str = COLOURS["bar"]


@dataclass(frozen=True)
class Mistakes:
    """The mistakes most often diagnosed (none: no column), the first SHOWN_MISTAKES shown, the rest folded."""

    shown: list[Bar]
    rest: list[Bar]
    more: str  # "3 more mistakes"


@dataclass(frozen=True)
class Submission:
    """A row of the submissions: what it is, how it did and, when it failed, its first failing cases."""

    anchor: str
    link: str
    id: str
    name: str
    score: str
    status: str
    diagnosis: str
    similar: str
    graded: bool
    reason: str
    failing: list[tuple[str, str]]  # (case, its output cut) of the first SHOWN_FAILURES
    failed: int
    more: int                       # failing cases not shown
    outcomes: str = ""              # the failing cases by outcome: "137 crashed", "12 failed, 3 timed out"


def render_html(summary: Summary, entries: list[Entry], similarity: Similarity | None = None,
                learners: RosterSection | None = None) -> str:
    """The whole page, a function of the results alone: the same results give the same bytes.
    `learners`: the roster's section (grader/report/cohort_roster.py), before the submissions."""
    similarity = similarity or Similarity()
    alike = similar_to(similarity)
    return render("report.html.j2", title=f"{summary.exercise or 'cohort'}: cohort report",
                  overview=_overview(summary, similarity), histogram=histogram(summary),
                  mistakes=mistakes_chart(summary), similarity=similarity_section(similarity),
                  cases=cases_section(summary, entries), learners=learners,
                  submissions=[_submission(entry, alike) for entry in entries])


def _overview(summary: Summary, similarity: Similarity) -> Overview:
    statuses = [(status, summary.statuses[status]) for status in STATUSES if summary.statuses.get(status)]
    scores, shown, of = None, summary.headline, f" of {summary.max_score:g}" if summary.max_score else ""
    if shown:
        counted = summary.counted
        graded = (f"graded: mean {summary.mean:.4g}, median {summary.median:.4g} ({len(summary.scores)} graded)"
                  if counted is not None and summary.scores else "")
        scores = Scores(" that counts" if counted is not None else "", of,
                        f"{statistics.fmean(shown):.4g}", f"{statistics.median(shown):.4g}",
                        counted.words() if counted is not None else f"{len(shown)} graded", f"{min(shown):.4g}",
                        f"{max(shown):.4g}", graded)
    flagged = ""
    if similarity.clusters:
        clusters = len(similarity.clusters)
        flagged = (f"{sum(len(cluster.members) for cluster in similarity.clusters)} submissions in {clusters} "
                   f"cluster{'s' * (clusters != 1)}")
    return Overview(summary.count, statuses, scores, flagged)


def histogram(summary: Summary) -> Histogram:
    """Submissions (with a roster, learners, by the score that counts) per tenth of the maximum, as vertical bars."""
    shown = summary.headline
    if not shown:
        return Histogram([], "")
    top = summary.max_score or max(shown) or 1.0
    counts = [0] * BINS
    for score in shown:
        counts[min(int(score / top * BINS), BINS - 1)] += 1
    step = (WIDTH - LEFT) / BINS
    most = max(counts)
    columns = []
    for index, count in enumerate(counts):
        tall = round(TALLEST * count / most) if most else 0
        x = LEFT + index * step
        columns.append(Column(f"{x + 3:.1f}", BASE - tall, f"{step - 6:.1f}", tall, f"{x + step / 2:.1f}", count,
                              f"{top * index / BINS:g}", f"{top * (index + 1) / BINS:g}"))
    return Histogram(columns, f"{top:g}", "learners" if summary.counted is not None else "submissions")


def mistakes_chart(summary: Summary) -> Mistakes:
    """How many submissions each catalogued mistake was diagnosed in, most frequent first; the tail folded."""
    if not summary.mistakes:
        return Mistakes([], [], "")
    most = summary.mistakes[0][1]
    graded = len(summary.scores)
    rows = [bar(title, count / most, f"{count} of {graded}", COLOURS["bar"]) for title, count in summary.mistakes]
    rest = rows[SHOWN_MISTAKES:]
    return Mistakes(rows[:SHOWN_MISTAKES], rest, f"{len(rest)} more mistake{'s' * (len(rest) != 1)}")


def _submission(entry: Entry, alike: dict[str, str]) -> Submission:
    graded = entry.status != NOT_GRADED
    score = f"{entry.score:g}" + (f" / {entry.max_score:g}" if entry.max_score else "") if graded else ""
    failing = [test for test in entry.tests if test.ran and not test.passed] if graded else []
    return Submission(anchor(entry.id), feedback_link(entry.id), entry.id, entry.name, score, entry.status,
                      entry.diagnosis, alike.get(entry.id, ""), graded, entry.reason,
                      [(test.name, cut(test.output, OUTPUT_CHARS)) for test in failing[:SHOWN_FAILURES]],
                      len(failing), max(len(failing) - SHOWN_FAILURES, 0),
                      ", ".join(f"{count} {outcome}" for outcome, count in Counter(
                          test.outcome for test in failing).most_common()))
