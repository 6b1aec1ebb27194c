"""Checks that run inside the worker around the learner's call and report what they observed."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def observe(task: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Watch one call; the grader reads the observations and decides what they mean."""
    observations: dict[str, Any] = {}
    yield observations
