"""A statement longer than the screen goes through a pager on a terminal: `less` (or $PAGER), the screen given back."""

from __future__ import annotations

import os
import shlex
import subprocess

from rich.console import Console

# less: -F quits at once when the text fits one screen, -R shows the colours, -X leaves the text on the screen.
LESS = "FRX"


def wanted(console: Console, lines: int) -> bool:
    """A person reads this on a terminal that can show a pager, and it is longer than the screen."""
    return console.is_terminal and not console.is_dumb_terminal and lines > console.height - 2


def page(console: Console, text: str, lines: int) -> bool:
    """Show `text` (`lines` long, rendered for this console) through the pager; False where it was not paged
    (not wanted, no pager, PAGER set to nothing or cat): then the caller prints it."""
    if not wanted(console, lines):
        return False
    try:
        command = shlex.split(os.environ.get("PAGER", "less"))
    except ValueError:  # a PAGER that is not a command line: no pager rather than an error
        return False
    if not command or command == ["cat"]:
        return False
    environment = dict(os.environ)
    environment.setdefault("LESS", LESS)
    try:
        subprocess.run(command, input=text, text=True, env=environment, check=False)
    except OSError:  # no such program here: the text is printed instead
        return False
    return True
