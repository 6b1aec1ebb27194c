"""The cohort report as one static page: no script, no network, plots drawn here as inline SVG."""

from __future__ import annotations

import html

from grader.inert import cut, inert
from grader.results.cohort import NOT_GRADED, STATUSES, Entry, Summary

BINS = 10           # score histogram: tenths of the maximum
WIDTH = 720         # of every plot, in px
LABEL_WIDTH = 300   # of the names left of a horizontal bar
ROW = 18            # height of one horizontal bar's row
SHOWN_FAILURES = 3  # failing cases shown per submission, each cut to OUTPUT_CHARS
OUTPUT_CHARS = 1500
COLOURS = {"good": "#2e7d32", "middling": "#f9a825", "bad": "#c62828", "bar": "#3f51b5"}
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; width: 100%; } td, th { border-bottom: 1px solid #eee; padding: 4px 6px;
  text-align: left; vertical-align: top; } th { background: #f5f5f5; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
pre { white-space: pre-wrap; background: #f7f7f7; padding: 6px; margin: 4px 0; font-size: 12px; }
.passed { color: #2e7d32; } .failed { color: #c62828; } .error, .not-graded { color: #8e24aa; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
"""


def esc(text: object) -> str:
    """Text for the page: controls made visible (inert), then HTML-escaped, quotes included."""
    return html.escape(inert(str(text)), quote=True)


def render_html(summary: Summary, entries: list[Entry], learners: str = "") -> str:
    """The whole page, a function of the results alone: the same results give the same bytes.
    `learners`: the roster's section (grader/report/cohort_roster.py), before the submissions."""
    title = f"{summary.exercise or 'cohort'}: cohort report"
    parts = [
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        # Nothing on this page may run or load anything, whatever a submission managed to put in it.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1>", _overview(summary),
        "<h2>Scores</h2>", histogram(summary),
        "<h2>Mistakes most often diagnosed</h2>", mistakes_chart(summary),
        "<h2>Pass rate of every case</h2>", pass_rates(summary),
        *([learners] if learners else []), "<h2>Submissions</h2>", _table(entries),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _overview(summary: Summary) -> str:
    counts = ", ".join(f'<span class="{status.replace(" ", "-")}">{summary.statuses[status]} {status}</span>'
                       for status in STATUSES if summary.statuses.get(status))
    line = f"<p>{summary.count} submissions: {counts}.</p>"
    if summary.scores:
        of = f" of {summary.max_score:g}" if summary.max_score else ""
        line += (f"<p>Score{of}: mean {summary.mean:.4g}, median {summary.median:.4g} "
                 f"({len(summary.scores)} graded).</p>")
    return line


def _svg(height: int, label: str, body: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" aria-label="{esc(label)}"><title>{esc(label)}</title>'
            + "".join(body) + "</svg>")


def histogram(summary: Summary) -> str:
    """Submissions per tenth of the maximum score, as vertical bars."""
    if not summary.scores:
        return "<p>Nothing was graded.</p>"
    top = summary.max_score or max(summary.scores) or 1.0
    counts = [0] * BINS
    for score in summary.scores:
        counts[min(int(score / top * BINS), BINS - 1)] += 1
    height, base, left = 240, 200, 40
    step = (WIDTH - left) / BINS
    most = max(counts)
    body = [f'<line x1="{left}" y1="{base}" x2="{WIDTH}" y2="{base}" stroke="#999"/>']
    for index, count in enumerate(counts):
        tall = round(170 * count / most) if most else 0
        x = left + index * step
        low, high = top * index / BINS, top * (index + 1) / BINS
        body.append(f'<rect x="{x + 3:.1f}" y="{base - tall}" width="{step - 6:.1f}" height="{tall}" '
                    f'fill="{COLOURS["bar"]}"><title>{count} scored {low:g} to {high:g}</title></rect>')
        body.append(f'<text x="{x + step / 2:.1f}" y="{base - tall - 4}" text-anchor="middle">{count}</text>')
        body.append(f'<text x="{x + step / 2:.1f}" y="{base + 16}" text-anchor="middle">{low:g}-{high:g}</text>')
    body.append(f'<text x="{left}" y="{height - 4}">score (submissions per tenth of {top:g})</text>')
    return _svg(height, "score histogram", body)


def _bars(rows: list[tuple[str, float, str, str]], label: str) -> str:
    """Horizontal bars: (name, fraction of the full width, text after the bar, colour) each."""
    height = ROW * len(rows) + 8
    room = WIDTH - LABEL_WIDTH - 110
    body = []
    for index, (name, fraction, text, colour) in enumerate(rows):
        y = 4 + index * ROW
        body.append(f'<text x="{LABEL_WIDTH - 6}" y="{y + 12}" text-anchor="end">{esc(cut(name, 48))}</text>')
        body.append(f'<rect x="{LABEL_WIDTH}" y="{y + 2}" width="{max(fraction * room, 1):.1f}" height="{ROW - 5}" '
                    f'fill="{colour}"><title>{esc(name)}: {esc(text)}</title></rect>')
        body.append(f'<text x="{LABEL_WIDTH + fraction * room + 6:.1f}" y="{y + 12}">{esc(text)}</text>')
    return _svg(height, label, body)


def pass_rates(summary: Summary) -> str:
    """Every case's pass rate, in case order, coloured by how many are stuck there."""
    if not summary.cases:
        return "<p>No case ran.</p>"
    rows = []
    for name, passed, ran in summary.cases:
        rate = passed / ran if ran else 0.0
        colour = COLOURS["good"] if rate >= 0.9 else COLOURS["middling"] if rate >= 0.5 else COLOURS["bad"]
        rows.append((name, rate, f"{passed}/{ran} ({rate:.0%})", colour))
    note = (f"<p>{summary.left_out} submissions whose file did not import are not counted here: they fail every "
            f"case alike.</p>") if summary.left_out else ""
    return note + _bars(rows, "pass rate of every case")


def mistakes_chart(summary: Summary) -> str:
    """How many submissions each catalogued mistake was diagnosed in, most frequent first."""
    if not summary.mistakes:
        return "<p>No catalogued mistake was diagnosed.</p>"
    most = summary.mistakes[0][1]
    graded = len(summary.scores)
    rows = [(title, count / most, f"{count} of {graded}", COLOURS["bar"]) for title, count in summary.mistakes]
    return _bars(rows, "mistakes most often diagnosed")


def _table(entries: list[Entry]) -> str:
    rows = ["<table><tr><th>submission</th><th>found as</th><th>score</th><th>status</th><th>diagnosis</th>"
            "<th>what went wrong</th></tr>"]
    for entry in entries:
        graded = entry.status != NOT_GRADED
        score = f"{entry.score:g}" + (f" / {entry.max_score:g}" if entry.max_score else "") if graded else ""
        rows.append(f"<tr><td>{esc(entry.id)}</td><td>{esc(entry.name)}</td><td class=\"number\">{score}</td>"
                    f"<td class=\"{entry.status.replace(' ', '-')}\">{esc(entry.status)}</td>"
                    f"<td>{esc(entry.diagnosis)}</td><td>{_what_went_wrong(entry)}</td></tr>")
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
