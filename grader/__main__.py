"""Entry point for `python -m grader`."""

from grader.cli import entry

entry()
