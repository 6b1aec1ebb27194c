"""Exercise checkers: each builds a case's inputs and its float64 expected values."""

from __future__ import annotations

import importlib
from types import ModuleType

from grader.errors import ConfigError


def get_checker(name: str) -> ModuleType:
    """The checker module named in the course file."""
    try:
        return importlib.import_module(f"grader.checkers.{name}")
    except ModuleNotFoundError:
        raise ConfigError(f"the course names checker {name!r}, which grader/checkers/ does not have") from None
