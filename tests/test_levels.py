"""Every containment level as the kernel gives it, dropped to from root: the same promises, or a clear refusal.

Levels (tests/fixtures/levels/confine.py makes each): root with cgroups and namespaces (this machine as
it is); an ordinary user with user namespaces (a learner's Linux laptop); an ordinary user without them
(Ubuntu's default for unprivileged users); root in a Docker-like container (no CAP_SYS_ADMIN, namespaces
refused by seccomp, cgroups read-only: Gradescope); and GRADER_SANDBOX=off. At each: the reference is
accepted, a submission that hides its memory is rejected, learner code reads nothing of the course and
reaches no host listener, and nothing it starts outlives the grader.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO

FIXTURES = Path(__file__).parent / "fixtures"
CONFINE = FIXTURES / "levels" / "confine.py"
SYSTEM_PYTHON = Path("/usr/bin/python3")
LEVELS = ("root", "user", "user-no-userns", "container", "off")
NOBODY = 65534
CASES = """\
cases:
  - name: ring-two-equal-chunks
    function: ring_attention
    about: two chunks of the same length
    lq: 3
    d: 4
    dv: 4
    chunks: [4, 4]
    seed: 1
  - name: stats-small
    function: attention_chunk_stats
    about: one small chunk
    lq: 2
    d: 3
    dv: 3
    lk: 5
    seed: 2
"""


def _prerequisites() -> str:
    if os.geteuid() != 0:
        return "dropping to the other levels needs root"
    if not shutil.which("setpriv") and not SYSTEM_PYTHON.exists():
        return f"no {SYSTEM_PYTHON}"
    if not SYSTEM_PYTHON.exists():
        return f"no {SYSTEM_PYTHON} for an ordinary user's environment"
    found = subprocess.run([str(SYSTEM_PYTHON), "-c", "import sys; print(sys.version_info[:2])"],
                           capture_output=True, text=True).stdout.strip()
    if found != str(tuple(sys.version_info[:2])):
        return f"{SYSTEM_PYTHON} is Python {found}, not {tuple(sys.version_info[:2])}: the packages would not load"
    return ""


pytestmark = pytest.mark.skipif(bool(_prerequisites()), reason=_prerequisites() or "ready")


def level_root(prefix: str) -> Path:
    """A world-traversable folder holding an ordinary user's virtual environment (Debian's Python, with this one's
    packages and the checkout that confine.py binds at ROOT/site and ROOT/repo), at ROOT/venv."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o755)
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    site = subprocess.run([str(root / "venv/bin/python"), "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "grader-levels.pth").write_text(f"{root / 'site'}\n{root / 'repo'}\n")
    return root


@pytest.fixture(scope="module")
def world():
    """An ordinary user's virtual environment (level_root), the course (07 cut to two examples and its memory
    cases) that user owns, the learner files, a TCP listener on the host's loopback, and a mark for processes."""
    root = level_root("grader-levels-")
    try:
        course = root / "course"
        for name in ("exercises", "solutions", "hints"):
            shutil.copytree(REPO / name, course / name)
        cases = course / "exercises/07-ring-attention/cases"
        (cases / "examples.yaml").write_text(CASES)
        for path in (cases / "hidden").glob("*.yaml"):
            if path.name != "constraints.yaml":
                path.unlink()
        (cases / "ring.yaml").unlink(missing_ok=True)
        mark = f"grader-level-mark-{secrets.token_hex(4)}"
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        threading.Thread(target=_answer, args=(listener,), daemon=True).start()
        base = (FIXTURES / "attacks" / "_base.py").read_text()
        for name in ("hides_memory", "reaches_out", "outlives_the_grader"):
            text = (FIXTURES / "attacks" / f"{name}.py").read_text()
            for key, value in (("COURSE", str(course)), ("PORT", str(port)), ("MARK", mark)):
                text = text.replace(f'{key} = "none"', f'{key} = "{value}"')
            (course / f"{name}.py").write_text(base + "\n\n" + text)
        for path in [course, *course.rglob("*")]:
            os.chown(path, NOBODY, -1)
        yield {"root": root, "course": course, "python": root / "venv/bin/python", "mark": mark}
        listener.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _answer(listener: socket.socket) -> None:
    while True:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection:
            connection.sendall(b"HOST")


def command_at(world: dict, level: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """The grader's command line at `level`, and its environment."""
    grader = [*args, "--device", "cpu", "--no-record"]
    if level == "root":
        return ([sys.executable, "-m", "grader", *grader],
                {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(world["root"])})
    purelib = sysconfig.get_paths()["purelib"]
    return ([sys.executable, str(CONFINE), level, str(world["root"]), purelib, str(REPO), "--",
             str(world["python"]), "-m", "grader", *grader], {"HOME": str(world["course"])})


def grade_at(world: dict, level: str, *args: str) -> subprocess.CompletedProcess:
    command, env = command_at(world, level, *args)
    return subprocess.run(command, cwd=world["course"], capture_output=True, text=True, timeout=300, env=env)


def marked(mark: str) -> list[int]:
    """Live processes carrying this module's mark: its own attack's, nothing else."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if mark.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("level", LEVELS)
def test_the_reference_is_accepted(world, level) -> None:
    done = grade_at(world, level, "submit", "07", "--file", "solutions/07-ring-attention/ring_attention.py")
    assert done.returncode == 0 and "Score 100 of 100" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("level", LEVELS)
def test_memory_kept_where_nothing_measures_it_is_still_rejected(world, level) -> None:
    done = grade_at(world, level, "submit", "07", "--file", "hides_memory.py")
    audited = [line for line in done.stdout.splitlines() if "ring-memory-" in line]
    assert done.returncode == 1 and audited and not any(line.startswith("PASS") for line in audited), done.stdout
    assert "Score 0 of 100" in done.stdout


@pytest.mark.parametrize("level", LEVELS)
def test_learner_code_reaches_nothing_and_leaves_nothing(world, level) -> None:
    done = grade_at(world, level, "run", "07", "--file", "reaches_out.py", "-k", "ring-two")
    match = re.search(r"FOUND (\{.*?\})", done.stdout.replace("\n", " "))
    assert match, done.stdout + done.stderr
    found = json.loads(match.group(1))
    assert found["reference"].startswith("refused") and found["hidden"].startswith("refused"), found
    assert found["listener"].startswith("refused"), found
    # Where a cgroup counts every process, a daemon may start, and is gone with the sandbox; elsewhere none starts.
    assert found["daemon"] == ("started" if level in ("root", "off") else "refused (Operation not permitted)"), found
    assert marked(world["mark"]) == [], found


@pytest.mark.parametrize("level", ["root", "off"])  # elsewhere no process of the learner's may start at all
def test_a_daemon_dies_with_a_grader_killed_by_sigkill(world, level) -> None:
    command, env = command_at(world, level, "run", "07", "--file", "outlives_the_grader.py", "-k", "ring-two")
    # A grader killed so leaves its sandbox's folder behind (nothing of its own runs): this test's, removed below.
    own_tmp = Path(tempfile.mkdtemp(prefix="grader-killed-"))
    own_tmp.chmod(0o1777)  # as /tmp is: the level's grader may run as an ordinary user
    grader = subprocess.Popen(command, cwd=world["course"], env={**env, "TMPDIR": str(own_tmp)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not marked(world["mark"]):
            time.sleep(0.1)
        assert marked(world["mark"]), "the daemon never started"
        grader.kill()  # no cleanup of its own runs: only what the kernel and the sandbox's init do
        grader.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and marked(world["mark"]):
            time.sleep(0.1)
        assert marked(world["mark"]) == []
    finally:
        grader.kill()
        grader.wait()
        for pid in marked(world["mark"]):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(own_tmp, ignore_errors=True)


def test_a_container_without_landlock_grades_only_a_course_private_to_root(world) -> None:
    """An older Docker's profile refuses Landlock too: the course must then be root's alone, as setup.sh leaves it."""
    reference = ("submit", "07", "--file", "solutions/07-ring-attention/ring_attention.py")
    done = grade_at(world, "container-no-landlock", *reference)
    assert done.returncode == 3 and "Not graded:" in done.stdout and "chmod -R go-rwx" in done.stdout, done.stdout
    private = [world["course"] / "exercises", world["course"] / "solutions"]
    try:
        for folder in private:
            for path in [folder, *folder.rglob("*")]:
                path.chmod(path.stat().st_mode & ~0o077)
        done = grade_at(world, "container-no-landlock", *reference)
        assert done.returncode == 0 and "Score 100 of 100" in done.stdout, done.stdout + done.stderr
        assert "no Landlock" in done.stdout
        done = grade_at(world, "container-no-landlock", "run", "07", "--file", "reaches_out.py", "-k", "ring-two")
        found = json.loads(re.search(r"FOUND (\{.*?\})", done.stdout.replace("\n", " ")).group(1))
        assert found["reference"].startswith("refused") and found["hidden"].startswith("refused"), found
    finally:
        for folder in private:
            for path in [folder, *folder.rglob("*")]:
                path.chmod(path.stat().st_mode | (0o055 if path.is_dir() else 0o044))
