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


@pytest.mark.parametrize(("install", "run", "ok"), [(0, 1, True), (0, 0, True), (0, 2, False), (0, 3, False),
                                                    (1, 1, False)])
def test_the_set_up_exits_0_when_it_worked_and_the_stub_is_not_attempted(install, run, ok) -> None:
    """The set-up's own steps stand in for their outcomes: an install that fails, or a run that cannot grade, fails
    the command; a run of the stub (exit 1: its examples not attempted) is the set-up working."""
    import shutil
    import subprocess

    if not shutil.which("bash"):
        pytest.skip("no bash here")
    steps = _commands()[0].split(" && ")
    assert steps[0].startswith("python3 -m venv") and "pip install" in steps[1] and steps[2].startswith("source")
    tail = " && ".join(steps[3:])
    script = f"grader() {{ return {run}; }}; true && (exit {install}) && true && {tail}"
    assert subprocess.run(["bash", "-c", script], timeout=30).returncode == (0 if ok else 1)


def test_the_link_is_made_in_a_folder_the_set_up_creates() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    (link,) = re.findall(r"^.*\bln -s.*$", section, re.M)
    target = link.split()[-1]
    assert f"mkdir -p {target.rsplit('/', 1)[0]} && ln -s" in link, link
