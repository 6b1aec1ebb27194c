"""Statements and hints in the terminal: Markdown wrapped to the console's width, never cropped."""

from __future__ import annotations

from rich.console import Console
from rich.markdown import Markdown


def print_markdown(console: Console, text: str) -> None:
    """Print a statement or a hint, every paragraph and list item wrapped at the console's width.

    The grader's console soft-wraps (a report line stays one line, for grep and CI logs); Markdown
    printed that way comes out cropped, each list item cut to one row. So wrapping is asked for
    here, and cropping is turned off: a line that cannot be broken runs past the edge, where the
    terminal folds it, rather than losing its end. Piped, the width is COLUMNS when set, else 80
    (Rich's choice for a file).
    """
    console.print(Markdown(text), soft_wrap=False, crop=False)
