"""The staff's pages come from templates: learner text escaped wherever it lands, a missing name an error."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO, make_course
from test_cohort_report import RING_SOLUTIONS, _test, write_results

from grader.report.feedback import Block, feedback_link, file_name
from grader.report.html_page import TEMPLATES, environment, render
from grader.report.similarity_report import anchor
from grader.results.cohort import load_entries
from grader.results.learners import Learner, late_policy
from grader.staff import gradebook

HOSTILE = '<script>alert(1)</script>"&'
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&amp;"
# Each place a learner's text reaches report.html, marked so that each is found on its own.
ID, OTHER, NAME = "id" + HOSTILE, "copy" + HOSTILE, "file" + HOSTILE + ".py"
CASE, FUNCTION, MESSAGE, OUTPUT = "case" + HOSTILE, "function" + HOSTILE, "message" + HOSTILE, "output" + HOSTILE
MISTAKE, REASON, LEARNER = "mistake" + HOSTILE + "\u202e", "reason" + HOSTILE, "learner" + HOSTILE


class Page(HTMLParser):
    """What a browser reads of a page: its tags, each attribute's value and the text, entities decoded."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []
        self.text: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [(name, value or "") for name, value in attrs]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _hostile_gradebook(out: Path) -> Path:
    """Results whose every learner-controlled string is hostile: two copies (a flagged pair), a failure with a
    mistake, a file not graded; and a roster naming a learner as hostile."""
    reference = (RING_SOLUTIONS / "ring_attention.py").read_text()
    failing = _test(CASE, FUNCTION, "examples", "failed", MESSAGE, OUTPUT, (MISTAKE, "why", "help"))
    write_results(out, "one", [failing, _test("fine", FUNCTION, "examples", "passed")], "failed", reference,
                  name=NAME)
    write_results(out, "two", [_test(CASE, FUNCTION, "examples", "passed")], "passed", reference)
    write_results(out, "three", [], "not graded", None, reason=REASON)
    for path, submission_id in (("one", ID), ("two", OTHER)):  # ids no file may be named: they hold a "/"
        results = out / "results" / f"{path}.json"
        data = json.loads(results.read_text())
        data["extra_data"]["submission"]["id"] = submission_id
        results.write_text(json.dumps(data))
    roster = gradebook.Roster(out / "roster.csv", [Learner("a1", LEARNER, "a@x", NAME), Learner("b2", "B", "b@x")],
                              late_policy(None, None))
    gradebook.write_gradebook(out, load_entries(out), roster=roster)
    return out


def test_learner_text_is_escaped_everywhere_in_report_html(tmp_path) -> None:
    page = (_hostile_gradebook(tmp_path / "book") / "report.html").read_text(encoding="utf-8")
    assert "<script" not in page and "alert(1)</script>" not in page
    read = Page(page)
    assert set(read.tags) <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "nav", "a", "div",
                              "section", "p", "strong", "ul", "li", "span", "svg", "line", "rect", "text", "table",
                              "tr", "th", "td", "details", "summary", "pre", "code"}, read.tags
    text = "".join(read.text)
    # Each string is there whole as text: a quote or a tag in it ended nothing.
    for marker in (ID, OTHER, NAME, CASE, FUNCTION, OUTPUT, REASON, LEARNER):
        assert marker in text, marker
    # The mistake's bidi override is shown, not obeyed, in the text and in the attributes alike.
    shown = MISTAKE.replace("\u202e", "\\u202e")
    assert shown in text and "\u202e" not in page
    # Attributes: a bar's title and a table's label carry the mistake, the case and the function whole.
    titles = [value for name, value in read.attributes if name == "title"]
    labels = [value for name, value in read.attributes if name == "aria-label"]
    assert f"{shown}: 1 of 2" in titles and f"{CASE} [cpu]: 1/2 (50%)" in titles
    assert f"{FUNCTION} examples: cases failed" in labels
    # The ids reach attributes only as anchors and links, percent-encoded: nothing in them to escape.
    ids = {value for name, value in read.attributes if name == "id"}
    links = {value for name, value in read.attributes if name == "href"}
    assert {anchor(ID), anchor(OTHER)} <= ids and {feedback_link(ID), "#" + anchor(ID), "#" + anchor(OTHER)} <= links
    # And in the bytes: the escaped forms where each was put, the similarity section's pair included.
    for marker in ("id", "copy", "file", "case", "function", "output", "reason", "learner"):
        assert marker + ESCAPED in page, marker
    assert f"<li>copy{ESCAPED} and id{ESCAPED}: 100% (byte for byte)</li>" in page
    assert f'<a href="#{anchor(OTHER)}">copy{ESCAPED}</a>, <a href="#{anchor(ID)}">id{ESCAPED}</a>' in page
    assert f'<td class="label">mistake{ESCAPED}\\u202e</td>' in page


def test_learner_text_is_escaped_in_each_feedback_page(tmp_path) -> None:
    book = _hostile_gradebook(tmp_path / "book")
    pages = sorted((book / "feedback").rglob("*.html"))
    assert len(pages) == 4  # three entries, one roster learner with an entry
    for path in pages:
        page = path.read_text(encoding="utf-8")
        assert "<script" not in page and set(Page(page).tags) <= {
            "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "strong", "table", "tr", "th",
            "td", "pre"}, path
    page = (book / "feedback" / f"{file_name(ID)}.html").read_text(encoding="utf-8")
    text = "".join(Page(page).text)
    assert f"07-ring-attention: feedback on {NAME}" in text and f"failed: {MESSAGE}" in text
    assert f"<title>07-ring-attention: feedback on file{ESCAPED}.py</title>" in page
    assert f"<p><strong>Verdict:</strong> failed: message{ESCAPED}</p>" in page


def test_a_template_naming_what_it_was_not_given_fails() -> None:
    jinja2 = pytest.importorskip("jinja2")
    with pytest.raises(jinja2.UndefinedError, match="blocks"):
        render("feedback.html.j2", title="feedback")
    with pytest.raises(jinja2.UndefinedError, match="label"):
        environment().from_string("<p>{{ block.text }}: {{ block.label }}</p>").render(block=SimpleNamespace(text="x"))
    # Given everything, the same template renders; a value is text, a template's own markup is not escaped.
    page = render("feedback.html.j2", title="t&", blocks=[Block("field", "<b>", "Score")])
    assert "<title>t&amp;</title>" in page and "<p><strong>Score:</strong> &lt;b&gt;</p>" in page


def test_the_templates_are_shipped_with_the_package() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and newer
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["grader"]
    folder = REPO / "grader/report" / TEMPLATES
    names = [path.relative_to(REPO / "grader").as_posix() for path in folder.iterdir()]
    assert names and all(any(fnmatch.fnmatch(name, pattern) for pattern in patterns) for name in names), names


@pytest.mark.parametrize("argv", [["list"], ["run", "08-no-such-exercise"]])
def test_learner_commands_never_import_jinja2(tmp_path, argv) -> None:
    course = make_course(tmp_path / "course", ["01-stable-softmax"])
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "grader", *argv], cwd=course,
                          env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "GRADER_ROOT": str(course)},
                          capture_output=True, text=True, timeout=300)
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "grader.cli" in imported and not {"jinja2", "markupsafe"} & imported, done.stderr[-2000:]
