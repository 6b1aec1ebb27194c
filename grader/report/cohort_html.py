"""The cohort report as one static page a TA reads in one screen: no script, no network, plots drawn here.

First the summary, the score histogram and the mistakes most often diagnosed, side by side where the window
is wide; then the submissions found alike, the cases by function and suite (worst first, the rest folded),
and the submissions, each linked to the feedback file staff can send.
"""

from __future__ import annotations

from grader.inert import cut
from grader.report.cohort_cases import COLOURS, bars, cases_section, esc
from grader.report.feedback import feedback_link
from grader.report.similarity_report import anchor, similar_to, similarity_section
from grader.results.cohort import NOT_GRADED, STATUSES, Entry, Summary
from grader.results.similarity import Similarity

__all__ = ["esc", "histogram", "mistakes_chart", "render_html"]

BINS = 10           # score histogram: tenths of the maximum
WIDTH = 520         # of the histogram's drawing; the page scales it to its column
SHOWN_MISTAKES = 8  # mistakes listed before the rest is folded
SHOWN_FAILURES = 3  # failing cases shown per submission, each cut to OUTPUT_CHARS
OUTPUT_CHARS = 1500
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1em auto; max-width: 1360px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; margin: .3em 0; overflow-wrap: anywhere; }
h2 { font-size: 1.15em; margin: 1.4em 0 .5em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1em; margin: .8em 0 .2em; overflow-wrap: anywhere; }
nav { margin-bottom: .6em; } nav a { margin-right: 1.2em; }
.top { display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start; }
.top > section { flex: 2 1 380px; min-width: 0; } .top > section.summary { flex: 1 1 240px; }
.top h2 { margin-top: .4em; }
.summary ul { margin: .2em 0; padding-left: 1.2em; }
table { border-collapse: collapse; width: 100%; } td, th { border-bottom: 1px solid #eee; padding: 3px 6px;
  text-align: left; vertical-align: top; overflow-wrap: break-word; } th { background: #f5f5f5; white-space: nowrap; }
td.number, td.status { font-variant-numeric: tabular-nums; white-space: nowrap; } td.number { text-align: right; }
td.id { overflow-wrap: anywhere; min-width: 8em; } table.clusters th:first-child { width: 4em; }
table.bars td { border: 0; padding: 1px 4px; } table.bars td.label { width: 45%; }
table.bars td.bar { width: 40%; vertical-align: middle; } table.bars td.bar div { height: 11px; }
table.bars td.count { white-space: nowrap; font-variant-numeric: tabular-nums; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f7f7f7; padding: 6px; margin: 4px 0;
  font-size: 12px; }
details > summary { cursor: pointer; color: #333; }
.muted { color: #777; font-weight: normal; } .cluster p { margin: .3em 0; }
.passed { color: #2e7d32; } .failed { color: #c62828; } .error, .not-graded { color: #8e24aa; }
svg { width: 100%; height: auto; max-width: 620px; } svg text { font: 13px system-ui, sans-serif; fill: #333; }
.swatch { display: inline-block; width: .8em; height: .8em; margin-right: .4em; border-radius: 2px; }
details.group { margin: .25em 0; } details.group > table { margin: .2em 0 .6em 1.2em; width: calc(100% - 1.2em); }
table.clusters td:nth-child(2) { width: 60%; }
"""


def render_html(summary: Summary, entries: list[Entry], similarity: Similarity | None = None,
                learners: str = "") -> str:
    """The whole page, a function of the results alone: the same results give the same bytes.
    `learners`: the roster's section (grader/report/cohort_roster.py), before the submissions."""
    title = f"{summary.exercise or 'cohort'}: cohort report"
    similarity = similarity or Similarity()
    alike = similar_to(similarity)
    parts = [
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        # Nothing on this page may run or load anything, whatever a submission managed to put in it.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        '<nav><a href="#similar">Similar submissions</a><a href="#cases">Cases</a>'
        '<a href="#submissions">Submissions</a></nav>',
        '<div class="top">',
        f'<section class="summary"><h2>Summary</h2>{_overview(summary, similarity)}</section>',
        f"<section><h2>Scores</h2>{histogram(summary)}</section>",
        f"<section><h2>Mistakes most often diagnosed</h2>{mistakes_chart(summary)}</section>",
        "</div>",
        '<h2 id="similar">Similar submissions</h2>', similarity_section(similarity),
        '<h2 id="cases">Cases by function and suite, lowest pass rate first</h2>', cases_section(summary, entries),
        *([learners] if learners else []),
        '<h2 id="submissions">Submissions</h2>', _table(entries, alike),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _overview(summary: Summary, similarity: Similarity) -> str:
    counts = "".join(f'<li><span class="{status.replace(" ", "-")}">{summary.statuses[status]} {status}</span></li>'
                     for status in STATUSES if summary.statuses.get(status))
    line = f"<p><strong>{summary.count} submissions</strong></p><ul>{counts}</ul>"
    if summary.scores:
        of = f" of {summary.max_score:g}" if summary.max_score else ""
        line += (f"<p>Score{of}: mean <strong>{summary.mean:.4g}</strong>, median <strong>{summary.median:.4g}"
                 f"</strong> ({len(summary.scores)} graded; lowest {min(summary.scores):.4g}, highest "
                 f"{max(summary.scores):.4g})</p>")
    if similarity.clusters:
        flagged = sum(len(cluster.members) for cluster in similarity.clusters)
        line += (f'<p><a href="#similar">{flagged} submissions in {len(similarity.clusters)} '
                 f"cluster{'s' * (len(similarity.clusters) != 1)}</a> flagged as alike.</p>")
    return line


def _svg(height: int, label: str, body: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {WIDTH} {height}" '
            f'aria-label="{esc(label)}"><title>{esc(label)}</title>' + "".join(body) + "</svg>")


def histogram(summary: Summary) -> str:
    """Submissions per tenth of the maximum score, as vertical bars."""
    if not summary.scores:
        return "<p>Nothing was graded.</p>"
    top = summary.max_score or max(summary.scores) or 1.0
    counts = [0] * BINS
    for score in summary.scores:
        counts[min(int(score / top * BINS), BINS - 1)] += 1
    height, base, left = 220, 180, 4
    step = (WIDTH - left) / BINS
    most = max(counts)
    body = [f'<line x1="{left}" y1="{base}" x2="{WIDTH}" y2="{base}" stroke="#999"/>']
    for index, count in enumerate(counts):
        tall = round(150 * count / most) if most else 0
        x = left + index * step
        low, high = top * index / BINS, top * (index + 1) / BINS
        body.append(f'<rect x="{x + 3:.1f}" y="{base - tall}" width="{step - 6:.1f}" height="{tall}" '
                    f'fill="{COLOURS["bar"]}"><title>{count} scored {low:g} to {high:g}</title></rect>')
        body.append(f'<text x="{x + step / 2:.1f}" y="{base - tall - 4}" text-anchor="middle">{count}</text>')
        body.append(f'<text x="{x + step / 2:.1f}" y="{base + 17}" text-anchor="middle">{low:g}-{high:g}</text>')
    body.append(f'<text x="{left}" y="{height - 2}">score (submissions per tenth of {top:g})</text>')
    return _svg(height, "score histogram", body)


def mistakes_chart(summary: Summary) -> str:
    """How many submissions each catalogued mistake was diagnosed in, most frequent first; the tail folded."""
    if not summary.mistakes:
        return "<p>No catalogued mistake was diagnosed.</p>"
    most = summary.mistakes[0][1]
    graded = len(summary.scores)
    rows = [(title, count / most, f"{count} of {graded}", COLOURS["bar"]) for title, count in summary.mistakes]
    shown = bars(rows[:SHOWN_MISTAKES], "mistakes most often diagnosed")
    rest = rows[SHOWN_MISTAKES:]
    if rest:
        shown += (f"<details><summary>{len(rest)} more mistake{'s' * (len(rest) != 1)}</summary>"
                  f"{bars(rest, 'the other mistakes diagnosed')}</details>")
    return shown


def _table(entries: list[Entry], alike: dict[str, str]) -> str:
    rows = ["<table><tr><th>submission</th><th>found as</th><th>score</th><th>status</th><th>diagnosis</th>"
            "<th>similar to</th><th>what went wrong</th></tr>"]
    for entry in entries:
        graded = entry.status != NOT_GRADED
        score = f"{entry.score:g}" + (f" / {entry.max_score:g}" if entry.max_score else "") if graded else ""
        rows.append(f'<tr id="{esc(anchor(entry.id))}"><td class="id"><a href="{esc(feedback_link(entry.id))}">'
                    f"{esc(entry.id)}</a></td><td class=\"id\">{esc(entry.name)}</td><td class=\"number\">{score}</td>"
                    f"<td class=\"status {entry.status.replace(' ', '-')}\">{esc(entry.status)}</td>"
                    f"<td>{esc(entry.diagnosis)}</td><td>{esc(alike.get(entry.id, ''))}</td>"
                    f"<td>{_what_went_wrong(entry)}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _what_went_wrong(entry: Entry) -> str:
    if entry.status == NOT_GRADED:
        return esc(entry.reason)
    failing = [test for test in entry.tests if test.ran and not test.passed]
    if not failing:
        return ""
    shown = "".join(f"<pre>{esc(test.name)}\n{esc(cut(test.output, OUTPUT_CHARS))}</pre>"
                    for test in failing[:SHOWN_FAILURES])
    more = f"<p>and {len(failing) - SHOWN_FAILURES} more</p>" if len(failing) > SHOWN_FAILURES else ""
    return f"<details><summary>{len(failing)} failing</summary>{shown}{more}</details>"
