"""The console every view prints on: its theme, colour only where it can show, and one console for a whole command.

On a terminal it writes colour; piped, or with NO_COLOR set, plain text without any escape code. In a notebook a
command's report is one output: the notebook hands a console of its own to `in_place`, and every make_console()
made during the command is that one (grader/notebook.py).
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.theme import Theme

THEME = Theme({
    "passed": "bold green", "failed": "bold red", "error": "bold magenta", "timed out": "bold yellow",
    "crashed": "bold red", "out of memory": "bold yellow", "skipped": "dim", "not attempted": "bold cyan",
    "detail": "default", "muted": "dim", "heading": "bold", "accepted": "bold green", "rejected": "bold red",
    "diagnosis": "bold yellow", "code": "cyan", "not graded": "bold magenta", "follows": "yellow",
    "not judged": "bold magenta",
})
_IN_PLACE: list[Console] = []  # a console every make_console() hands out instead, while one is set (in_place)


@contextmanager
def in_place(console: Console) -> Iterator[Console]:
    """While in this block, make_console() without a file hands out `console`: a notebook's cell shows a command's
    whole report as one output (grader/notebook.py), whichever of its parts made the console."""
    _IN_PLACE.append(console)
    try:
        yield console
    finally:
        _IN_PLACE.remove(console)


def make_console(file=None, width: int | None = None) -> Console:
    """Colour on a terminal; plain text when piped or when NO_COLOR is set."""
    if file is None and _IN_PLACE:
        return _IN_PLACE[-1]
    plain = bool(os.environ.get("NO_COLOR"))
    # With NO_COLOR there are no escape codes at all, bold included: plain text, as when piped.
    extra = {"color_system": None} if plain else {}
    return Console(file=file or sys.stdout, theme=THEME, width=width, no_color=plain, highlight=False,
                   soft_wrap=True, emoji=False, **extra)
