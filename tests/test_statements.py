"""Statements and hints as a learner reads them: every list item, paragraph and code line whole, at any width."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from conftest import REPO
from markdown_it import MarkdownIt

from grader.cli import main
from grader.report.markdown import print_markdown
from grader.report.terminal import make_console

WIDTHS = (60, 80, 120)
DOCUMENTS = sorted(REPO.glob("exercises/*/README.md")) + sorted(REPO.glob("hints/*/*.md"))
# Rich's own escapes on a terminal: colours and styles (CSI ... m) and hyperlinks (OSC 8).
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\]8;[^\x1b]*\x1b\\")


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def normalized(text: str) -> str:
    return " ".join(text.split())


def blocks(markdown: str, code: bool = False) -> list[str]:
    """The plain text of every paragraph, heading and list item paragraph, as written; with `code`, every code
    line instead.

    A list item's own paragraphs are taken one by one (a nested list sits between them when printed);
    table cells are left out: a table wraps each cell within its column."""
    found, in_table = [], False
    for token in MarkdownIt("commonmark").enable("table").parse(markdown):
        if token.type in ("table_open", "table_close"):
            in_table = token.type == "table_open"
        elif token.type == "inline" and not in_table and not code:
            found.append("".join(_plain(child) for child in token.children or []))
        elif token.type in ("fence", "code_block") and code:
            found += [line for line in token.content.splitlines() if line.strip()]
    return [block for block in found if block.strip()]


def unwrapped_code(rendered: str, markdown: str) -> list[str]:
    """The code lines not printed as lines: each must be on one line, whole or cut at the width with a mark
    (never wrapped onto the next line, where it would read as code of its own). Those that are not: returned."""
    shown = [line.strip() for line in ESCAPES.sub("", rendered).splitlines()]
    return [line for line in blocks(markdown, code=True)
            if line.strip() not in shown and not any(row.endswith("…") and line.strip().startswith(row[:-1])
                                                     for row in shown if len(row) > 1)]


def _plain(token) -> str:
    if token.type in ("text", "code_inline"):
        return token.content
    return " " if token.type in ("softbreak", "hardbreak") else ""


def missing_from(rendered: str, markdown: str) -> list[str]:
    shown = normalized(ESCAPES.sub("", rendered))
    return [block for block in blocks(markdown) if normalized(block) not in shown]


def test_the_course_has_statements_and_hints_with_list_items() -> None:
    assert any(path.name == "README.md" for path in DOCUMENTS) and any("hints" in path.parts for path in DOCUMENTS)
    items = [line for path in DOCUMENTS for line in path.read_text().splitlines() if re.match(r"\s*(-|\d+\.) ", line)]
    assert len(items) > 10  # the test below has list items to find


@pytest.mark.parametrize("terminal", (False, True), ids=("piped", "terminal"))
@pytest.mark.parametrize("width", WIDTHS)
def test_every_list_item_and_paragraph_is_printed_whole(width: int, terminal: bool, monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for path in DOCUMENTS:
        markdown = path.read_text(encoding="utf-8")
        console = make_console(file=FakeTerminal() if terminal else io.StringIO(), width=width)
        print_markdown(console, markdown)
        out = console.file.getvalue()
        assert ("\x1b[" in out) == terminal  # the terminal path really ran (colours), the piped one did not
        assert not missing_from(out, markdown), f"{path.relative_to(REPO)} at {width} columns"
        assert not unwrapped_code(out, markdown), f"{path.relative_to(REPO)} at {width} columns"
        # Nothing is padded to the width: a line ends where its text does, piped and on a terminal.
        assert all(line == line.rstrip() for line in ESCAPES.sub("", out).splitlines() if not terminal), path
        if not terminal:
            # Wrapped, not cropped and not left long: no line is wider than the console.
            assert max(len(line.rstrip()) for line in out.splitlines()) <= width, path


def test_the_check_fails_on_cropped_output() -> None:
    """The check above can fail: with the console's soft wrap (what `grader show` used to do), items are cropped."""
    markdown = (REPO / "exercises" / "07-ring-attention" / "README.md").read_text(encoding="utf-8")
    console = make_console(file=FakeTerminal(), width=60)
    from rich.markdown import Markdown

    console.print(Markdown(markdown))
    assert missing_from(console.file.getvalue(), markdown)
    # Rich's own code blocks wrap a long line of code onto the next: the check on code lines fails on them.
    wrapped = make_console(file=io.StringIO(), width=60)
    wrapped.print(Markdown(markdown), soft_wrap=False, crop=False)
    assert unwrapped_code(wrapped.file.getvalue(), markdown)


def test_a_long_statement_is_paged_on_a_terminal_and_printed_when_piped(course: Path, tmp_path: Path,
                                                                        monkeypatch) -> None:
    from grader.report.markdown import page_markdown

    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("PAGER", f"sh -c 'cat > {paged}'")
    monkeypatch.setenv("LINES", "30")
    markdown = (REPO / "exercises" / "07-ring-attention" / "README.md").read_text(encoding="utf-8")
    terminal = make_console(file=FakeTerminal(), width=80)
    page_markdown(terminal, markdown, after=["Your file: ring_attention.py."])
    assert not missing_from(paged.read_text(), markdown)  # the whole statement went to the pager
    assert terminal.file.getvalue().strip() == "Your file: ring_attention.py."  # only what follows it on screen
    paged.unlink()
    page_markdown(terminal, "# A short one\n\nIt fits.", after=[])
    assert not paged.exists() and "It fits." in terminal.file.getvalue()  # fits the screen: no pager
    piped = make_console(file=io.StringIO(), width=80)
    page_markdown(piped, markdown)
    assert not paged.exists() and not missing_from(piped.file.getvalue(), markdown)


def test_show_and_hint_wrap_at_columns_when_piped(course: Path, capsys, monkeypatch) -> None:
    from grader.course.hints import read_hint

    monkeypatch.setenv("COLUMNS", "60")
    assert main(["show"]) == 0
    out = capsys.readouterr().out
    statement = (course / "exercises" / "07-ring-attention" / "README.md").read_text(encoding="utf-8")
    assert not missing_from(out, statement) and not unwrapped_code(out, statement)
    assert max(len(line) for line in out.splitlines()) <= 60  # nothing padded, nothing wider
    hints = sorted((course / "hints" / "07-ring-attention").glob("*.md"))
    for _ in hints:
        assert main(["hint"]) == 0
    out = capsys.readouterr().out
    for hint in hints:
        assert not missing_from(out, read_hint(hint).text), hint.name  # its front matter is not shown
        assert not any(line.strip().startswith(("function:", "---")) for line in out.splitlines())
