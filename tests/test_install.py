"""The set-up the README promises: the test command is what CI runs, and the torch range holds the torch in use."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

tomllib = pytest.importorskip("tomllib")  # Python 3.11 and newer

REPO = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, re.S)


def test_the_readme_has_two_set_up_commands_and_ci_runs_the_second() -> None:
    commands = _commands()
    assert len(commands) == 2, commands
    ci = (REPO / ".ci/run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci == commands[1]
    assert "grader run" in commands[0]


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.match(r"\d+(\.\d+)*", version).group().split("."))


def test_the_torch_in_use_is_in_the_range_the_project_declares() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (spec,) = [dep for dep in project["dependencies"] if re.match(r"torch\b", dep)]
    lower, upper = re.fullmatch(r"torch>=([\d.]+),<([\d.]+)", spec).groups()
    assert _release(lower) <= _release(torch.__version__) < _release(upper), (torch.__version__, spec)
    # The set-up commands ask for a release inside the range, so that they never fight the project's own pin.
    for command in _commands():
        pinned = re.search(r"torch==([\d.]+)", command)
        assert pinned and _release(lower) <= _release(pinned.group(1)) < _release(upper), command
