"""Each learner's feedback as a file staff can send (feedback/ID.md and .html): score, failed cases, mistakes.

A learner is told here what `grader submit` would have told them, no more: a hidden case by its name, its
outcome and its message (which carries only what the grader chose, README's *Hidden cases stay hidden*),
never its checks, inputs or traceback; a mistake seen only in hidden cases is named, with how many, and its
why and help are left out, since they would say what those cases test (grader/report/summary.py does so too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from grader.files import write_atomic
from grader.inert import cut, inert
from grader.report.html_page import render
from grader.results import verdict_text
from grader.results.cohort import NOT_GRADED, Entry, Test, suites
from grader.results.groups import Cause, Group, blame, cases, grouped, named

NAMES_SHOWN = 8     # cases named under one mistake before "and N more"
DETAIL_CHARS = 1500  # of the details of the one visible case a cause shows
MISTAKE_LINE = "likely mistake: "  # how a results file's case output ends when a mistake was named


@dataclass(frozen=True)
class Block:
    """One piece of the feedback: a heading, a paragraph, a labelled line, a table or a block of code."""

    kind: str          # "h1", "h2", "h3", "p", "field", "table", "code"
    text: str = ""
    label: str = ""
    rows: tuple[tuple[str, ...], ...] = ()


def feedback(entry: Entry) -> list[Block]:
    """What one learner is told, as blocks the Markdown and HTML writers share."""
    blocks = [Block("h1", f"{entry.exercise}: feedback on {entry.name}")]
    if entry.status == NOT_GRADED:
        return blocks + [Block("field", entry.reason, "Not graded"),
                         Block("p", "Nothing of it was run: hand it in again as the course asks, or ask staff.")]
    of = f" of {entry.max_score:g}" if entry.max_score else ""
    blocks.append(Block("field", f"{entry.score:.4g}{of} ({entry.status})", "Score"))
    failing = [test for test in entry.tests if test.ran and not test.passed and test.outcome != "not attempted"]
    if entry.status == "error":
        first = failing[0] if failing else None
        blocks.append(Block("p", f"Your file could not be imported, so none of its {len(entry.tests)} cases ran:"))
        if first is not None:
            blocks.append(Block("code", first.message or first.output))
        return blocks
    blocks.append(Block("table", rows=(("suite", "passed"), *_suite_rows(entry))))
    required = [test for test in failing if test.required]
    if required:
        first = next((test for test in required if not test.hidden), required[0])
        shown = "A hidden case" if first.hidden else first.name
        blocks.append(Block("p", f"{shown} is required for acceptance and it {blame(first.outcome, first.cause)}, so "
                                 f"the score is 0 whatever the other cases earn."))
    blocks += _mistakes(failing)
    todo = sorted({test.function for test in entry.tests if test.outcome == "not attempted" and test.function})
    if todo:
        blocks.append(Block("field", ", ".join(todo) + " (still raising NotImplementedError)", "Not attempted yet"))
    if failing:
        groups = grouped(failing, lambda test: Cause(test.caller or test.function, test.outcome, test.cause),
                         lambda test: test.hidden)
        causes = f", for {len(groups)} causes" if len(groups) > 1 else ""
        blocks.append(Block("h2", f"Failed cases ({len(failing)}{causes})"))
        for group in groups:
            blocks += _group(group)
    elif not todo:
        blocks.append(Block("p", "Every test passes."))
    return blocks


def _suite_rows(entry: Entry) -> list[tuple[str, ...]]:
    rows = []
    for suite in suites([entry]):
        tests = [test for test in entry.tests if test.suite == suite and test.ran]
        rows.append((suite, f"{sum(test.passed for test in tests)}/{len(tests)}"))
    return rows


def _mistakes(failing: list[Test]) -> list[Block]:
    """Each mistake once with the cases it explains; its why and help only when a visible case showed it."""
    explained: dict[str, list[Test]] = {}
    for test in failing:
        if test.diagnosis:
            explained.setdefault(test.diagnosis, []).append(test)
    if not explained:
        return []
    blocks = [Block("h2", "Likely mistakes")]
    for title, tests in explained.items():
        shown = list(dict.fromkeys(test.name for test in tests if not test.hidden))
        hidden = len({test.name for test in tests if test.hidden})
        if not shown:
            blocks.append(Block("field", f"{title} ({_cases(hidden, 'hidden ')}). Stuck? grader hint opens one "
                                         f"hint at a time.", "Hidden cases suggest"))
            continue
        names = ", ".join(shown[:NAMES_SHOWN]) + (f" and {_cases(len(shown) - NAMES_SHOWN, '')} more"
                                                  if len(shown) > NAMES_SHOWN else "")
        names += f"; and {_cases(hidden, 'hidden ')}" if hidden else ""
        visible = next(test for test in tests if not test.hidden)
        blocks += [Block("h3", title), Block("field", names, "Explains")]
        blocks += [Block("field", visible.rationale, "Why")] if visible.rationale else []
        blocks += [Block("field", visible.help, "Help")] if visible.help else []
    return blocks


def _group(group: Group[Test]) -> list[Block]:
    """One cause of failure: what failed and in how many cases, one case of it in full (a visible one where there
    is one), and the others named (a hidden case by its name only)."""
    cause, shown = group.cause, group.example
    blocks = [Block("h3", f"{cause.who}: {cause.what} ({cases(group.count)})" if cause.who else cause.what),
              Block("field", f"{shown.name}{' (hidden)' if shown.hidden else ''}", "Example"),
              Block("field", verdict_text(shown.outcome, shown.message), "Verdict")]
    if not shown.hidden:  # a hidden case's checks, inputs and traceback are never shown (see above)
        lines = shown.output.split("\n")[1:]
        if lines and lines[-1].startswith(MISTAKE_LINE):
            lines.pop()  # said once, under the mistakes
        if "\n".join(lines).strip():
            blocks.append(Block("code", cut("\n".join(lines), DETAIL_CHARS)))
    others = [test.name for test in group.cases if not test.hidden and test is not shown]
    hidden = group.hidden - shown.hidden
    if others or hidden:
        also = named(list(dict.fromkeys(others)), NAMES_SHOWN)
        more = _cases(hidden, "hidden ") if hidden else ""
        blocks.append(Block("field", f"{also}{'; and ' if also and more else ''}{more}", "Also"))
    return blocks


def _cases(count: int, kind: str) -> str:
    return f"{count} {kind}case{'s' * (count != 1)}"


# What Markdown could read as markup anywhere in a line; a list marker matters only where a line starts.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~&])")
_LIST_START = re.compile(r"^(\s*)([-+]|\d+[.)])")


def _md(text: str) -> str:
    """Text as Markdown: every character Markdown could act on escaped, so that a learner's text is never markup."""
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", inert(text)).replace("\n", " ")
    return _LIST_START.sub(lambda match: match.group(1) + match.group(2)[:-1] + "\\" + match.group(2)[-1], escaped)


def to_markdown(blocks: list[Block]) -> str:
    """The feedback as Markdown, for an e-mail or a learning platform's message."""
    out = []
    for block in blocks:
        if block.kind in ("h1", "h2", "h3"):
            out.append(f"{'#' * int(block.kind[1])} {_md(block.text)}")
        elif block.kind == "field":
            out.append(f"**{_md(block.label)}:** {_md(block.text)}")
        elif block.kind == "table":
            header, *rows = block.rows
            out.append("\n".join(["| " + " | ".join(map(_md, header)) + " |", "|" + " --- |" * len(header),
                                  *("| " + " | ".join(map(_md, row)) + " |" for row in rows)]))
        elif block.kind == "code":
            text = inert(block.text).rstrip("\n")
            fence = "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)
            out.append(f"{fence}text\n{text}\n{fence}")
        else:
            out.append(_md(block.text))
    return "\n\n".join(out) + "\n"


def to_html(blocks: list[Block]) -> str:
    """The feedback as one static page (templates/feedback.html.j2: no script, nothing loaded), every learner
    string escaped."""
    title = next((block.text for block in blocks if block.kind == "h1"), "feedback")
    return render("feedback.html.j2", title=title, blocks=blocks)


FEEDBACK = "feedback"


def file_name(entry_id: str) -> str:
    """The feedback files' name, without its suffix: the id itself when it is a plain name (a submission's id
    always is), else percent-encoded, so that no id can name a file outside feedback/."""
    name = quote(entry_id, safe="")
    return "%2E" + name[1:] if name.startswith(".") or not name else name


def feedback_link(entry_id: str) -> str:
    """Where an entry's feedback page is, from report.html."""
    return f"{FEEDBACK}/{quote(file_name(entry_id), safe='')}.html"


def write_feedback(out: Path, entries: list[Entry]) -> dict[str, list[Block]]:
    """feedback/ID.md and feedback/ID.html for every entry, each written whole (by renaming); the blocks, by id."""
    written = {}
    for entry in entries:
        blocks = written[entry.id] = feedback(entry)
        _write(out / FEEDBACK / f"{file_name(entry.id)}.md", to_markdown(blocks))
        _write(out / FEEDBACK / f"{file_name(entry.id)}.html", to_html(blocks))
    return written


LEARNERS = "learners"  # feedback/learners/ID.md: a roster's learner's own copy, under their roster id


def write_learner_feedback(out: Path, rows: list[Any], written: dict[str, list[Block]]) -> None:
    """feedback/learners/ID.md and .html for every roster learner with an entry (grader/results/learners.py Row):
    their entry's feedback (`written`, by entry id, as write_feedback made it) with one score, the one that counts
    for them, and the adjustments as they may read them (an override's reason only where the roster shows it)."""
    for row in rows:
        if row.learner is None or row.entry is None:
            continue
        blocks = list(written[row.entry.id])
        if row.shared and row.score is not None and row.entry.status != NOT_GRADED:
            of = f" of {row.entry.max_score:g}" if row.entry.max_score else ""
            graded = [f"graded {row.graded:.4g}{of}"] if row.graded is not None and row.score != row.graded else []
            at = next(index for index, block in enumerate(blocks) if block.label == "Score")
            blocks[at:at + 1] = [Block("field", f"{row.score:.4g}{of} ({row.entry.status})", "Score"),
                                 Block("field", "; ".join(graded + row.shared), "Adjusted")]
        name = file_name(row.learner.id)
        _write(out / FEEDBACK / LEARNERS / f"{name}.md", to_markdown(blocks))
        _write(out / FEEDBACK / LEARNERS / f"{name}.html", to_html(blocks))


def _write(path: Path, text: str) -> None:
    # A rerun that grades nothing new leaves hundreds of files as they are, without a write (and an fsync) each.
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except (OSError, ValueError):
        pass
    write_atomic(path, text)
