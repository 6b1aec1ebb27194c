"""Lines that fit the width: prose wrapped with hanging indents, code cut with a mark, frames as `path:line`."""

from __future__ import annotations

import os
import re
from pathlib import Path

from rich.console import Console
from rich.cells import chop_cells
from rich.text import Text

from grader.inert import indented, show

NARROWEST = 20  # columns of text a line keeps, however deep its indent: below that, words would fold letter by letter
CUT_MARK = "…"  # ends a line of code cut at the width: code is never wrapped onto a line that is not its own


def wrap_width(console: Console) -> int | None:
    """The width lines are wrapped at: the terminal's, or COLUMNS where it is set (Rich reads it first, piped
    too); None where neither says one (piped without COLUMNS): each text then stays one line, for grep and logs."""
    if console.is_terminal or os.environ.get("COLUMNS", "").strip().isdigit():
        return console.width
    return None


def say(console: Console, markup: str, first: str = "", rest: str = "  ") -> None:
    """Print `markup` (its outside text already shown inert) with its first line after `first` and every later
    line, its own or one made by wrapping, after `rest`: a hanging indent, so that none of it starts a line
    where the grader's own lines start. Words are kept whole; only one longer than the line is folded."""
    width = wrap_width(console)
    if width is None:
        console.print(first + indented(markup, rest))
        return
    for number, line in enumerate(Text.from_markup(markup, emoji=False).split("\n", allow_blank=True)):
        lead = first if number == 0 else rest
        for piece in _hanging(console, line, max(width - len(lead), NARROWEST), max(width - len(rest), NARROWEST)):
            piece.rstrip()
            console.print(Text.assemble(lead, piece))
            lead = rest


def _hanging(console: Console, line: Text, first: int, rest: int) -> list[Text]:
    """`line` in pieces: the first at most `first` columns wide, every later one at most `rest`."""
    pieces = line.wrap(console, first, overflow="fold") or [Text()]
    if len(pieces) == 1 or first == rest:
        return list(pieces)
    taken = len(pieces[0].plain)
    remainder = line[taken:]
    remainder = remainder[len(remainder.plain) - len(remainder.plain.lstrip()):]
    return [pieces[0], *(remainder.wrap(console, rest, overflow="fold") or [])]


def verbatim(console: Console, line: str, first: str, rest: str) -> None:
    """Print one line of captured output (plain, inert text) after `first`, cut into pieces at the width rather
    than at its spaces (it is what a program wrote, not prose), every later piece after `rest`."""
    width = wrap_width(console)
    pieces = [line] if width is None else chop_cells(line, max(width - max(len(first), len(rest)), NARROWEST))
    for index, piece in enumerate(pieces or [""]):
        console.print(Text.assemble(rest if index else first, Text(piece.rstrip())))


def code(console: Console, line: str, lead: str, style: str = "code") -> None:
    """Print one line of code (plain text, not markup) after `lead`, whole where it fits, else cut at the width
    with a mark: wrapped, a line of Python would read as two."""
    text = Text(line, style=style)
    width = wrap_width(console)
    if width is not None and len(lead) + text.cell_len > width:
        text.truncate(max(width - len(lead), NARROWEST), overflow="ellipsis")
    text.rstrip()
    console.print(Text.assemble(lead, text))


# A frame of the learner's traceback as the worker writes it, naming the file only (its folder is the sandbox's).
FRAME = re.compile(r'(\s*)File "([^"\n]*)", line (\d+), in (.*)')


def frame_line(line: str, file: str) -> str | None:
    """'  exercises/07-ring-attention/ring_attention.py:16 in merge', a `path:line` an editor opens, for a frame
    in the graded file (`file`, as the report names it); None for any other line."""
    found = FRAME.fullmatch(line)
    if found is None or not file or found.group(2) != Path(file).name:
        return None
    indent, _, number, function = found.groups()
    return f"{indent}{file}:{number} in {function}"


def table(console: Console, found: dict, indent: str) -> None:
    """A case's table (a distributed case's per rank figures: {"caption", "columns", "rows"}, its text the course's)
    after `indent`, or a shallower one where that would not leave it room; no line ends in padding."""
    from rich.measure import Measurement
    from rich.table import Table

    shown = Table(box=None, padding=(0, 1), pad_edge=False, header_style="muted", caption_style="muted",
                  caption=show(str(found.get("caption", ""))), caption_justify="left")
    for column in found.get("columns", []):
        shown.add_column(show(str(column)), justify="right", no_wrap=True)
    for row in found.get("rows", []):
        shown.add_row(*(show(str(cell)) for cell in row))
    width = wrap_width(console) or console.width
    needed = Measurement.get(console, console.options, shown).maximum
    lead = indent if len(indent) + needed <= width else indent[:2]
    options = console.options.update(width=max(width - len(lead), NARROWEST))
    for line in console.render_lines(shown, options, pad=False):
        text = Text.assemble(*((segment.text, segment.style) for segment in line if not segment.control))
        text.rstrip()
        console.print(Text.assemble(lead, text))
