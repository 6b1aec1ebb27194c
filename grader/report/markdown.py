"""Statements and hints in the terminal: prose wrapped at the console's width, code never wrapped, nothing padded."""

from __future__ import annotations

from typing import ClassVar, Iterable

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, Markdown, MarkdownElement
from rich.segment import Segment
from rich.syntax import Syntax
from rich.text import Text

from grader.report.layout import NARROWEST, say


class UnwrappedCodeBlock(CodeBlock):
    """A code block whose lines stay lines: each is whole where it fits, else cut at the width with a mark.

    Rich wraps a long line of code onto the next row, where it reads as a line of its own: invalid Python."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        room = max(options.max_width - 2, NARROWEST)  # a column of padding on each side
        lines = []
        for line in str(self.text).rstrip().expandtabs(4).split("\n"):
            text = Text(line)
            if text.cell_len > room:
                text.truncate(room, overflow="ellipsis")
            lines.append(text.plain)
        yield Syntax("\n".join(lines), self.lexer_name, theme=self.theme, word_wrap=False, padding=1)


class Statement(Markdown):
    """Markdown whose code blocks are never wrapped."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements, "fence": UnwrappedCodeBlock, "code_block": UnwrappedCodeBlock}


class _Lines:
    """Rendered lines printed as they are: Rich neither wraps nor pads them again."""

    def __init__(self, lines: list[list[Segment]]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines:
            yield from line
            yield Segment.line()


def rendered(console: Console, text: str) -> list[list[Segment]]:
    """A statement or a hint as lines of the console's width, with no padding at their ends where nothing shows
    it (Rich pads every paragraph to the width: piped, each line would end in spaces)."""
    lines = console.render_lines(Statement(text), console.options, pad=False)
    return [_stripped(line, keep_background=console.is_terminal and console.color_system is not None)
            for line in lines]


def print_markdown(console: Console, text: str) -> None:
    """Print a statement or a hint, every paragraph and list item wrapped at the console's width, code whole or
    cut with a mark. Piped, the width is COLUMNS when set, else 80 (Rich's choice for a file)."""
    console.print(_Lines(rendered(console, text)), crop=False, soft_wrap=True)


def page_markdown(console: Console, text: str, after: Iterable[str] = ()) -> None:
    """`print_markdown`, through a pager where a person reads a statement longer than the screen (`less`, or
    $PAGER); `after` (markup lines) is printed below it, on the screen, once the pager is closed."""
    from grader.report.pager import page

    lines = rendered(console, text)
    with console.capture() as captured:
        console.print(_Lines(lines), crop=False, soft_wrap=True)
    if not page(console, captured.get(), len(lines)):
        console.print(_Lines(lines), crop=False, soft_wrap=True)
    for line in after:
        say(console, line)


def _stripped(line: list[Segment], keep_background: bool) -> list[Segment]:
    """`line` without the spaces at its end, but for those a background colour shows (a code block's, in colour)."""
    line = list(line)
    while line and not line[-1].control:
        last = line[-1]
        if keep_background and last.style is not None and last.style.bgcolor is not None:
            break
        text = last.text.rstrip(" ")
        if text:
            line[-1] = Segment(text, last.style, last.control)
            break
        line.pop()
    return line
