"""Before the first case: the sandbox probe runs once, on a thread, and the header waits for it only when printed."""

from __future__ import annotations

import io
import threading
import time

from grader.report.terminal import TerminalRenderer, make_console
from grader.results import CaseResult, Outcome
from grader.sandbox import machine as sandbox


def test_the_probe_runs_once_however_many_threads_ask(monkeypatch) -> None:
    calls = []

    def slow_probe(kind, user):
        calls.append(kind)
        time.sleep(0.2)
        return None

    monkeypatch.setattr(sandbox, "_probe", slow_probe)
    sandbox.support.cache_clear()
    try:
        sandbox.probe_soon()
        askers = [threading.Thread(target=sandbox.support) for _ in range(3)]
        for asker in askers:
            asker.start()
        found = sandbox.support()
        for asker in askers:
            asker.join()
        assert found.namespaces and len(calls) == 1
    finally:
        sandbox.support.cache_clear()


def test_a_probe_that_fails_on_its_thread_prints_nothing(monkeypatch, capfd) -> None:
    def broken(kind, user):
        raise RuntimeError("no")

    monkeypatch.setattr(sandbox, "_probe", broken)
    sandbox.support.cache_clear()
    try:
        sandbox.probe_soon()
        time.sleep(0.3)
        assert capfd.readouterr().err == ""
    finally:
        sandbox.support.cache_clear()


def test_the_header_asks_for_the_containment_only_when_the_first_result_is_printed() -> None:
    asked = []
    out = io.StringIO()
    renderer = TerminalRenderer(make_console(out, width=100))
    renderer.header("07-ring-attention", "run", "ring_attention.py", lambda: asked.append(1) or "sandbox (test)")
    assert asked == []
    renderer.finished(CaseResult("a-case", "examples", "ring_attention", "cpu", Outcome.PASSED))
    assert asked == [1]
    assert "sandbox (test)" in out.getvalue() and "a-case" in out.getvalue()


def test_the_command_skips_the_interpreters_teardown_but_not_its_output_or_status(tmp_path) -> None:
    """`python -m grader` leaves with os._exit: what it printed into a pipe arrives whole, and its status too."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "GRADER_ROOT": str(repo), "COLUMNS": "100", "PYTHONPATH": str(repo)}
    shown = subprocess.run([sys.executable, "-m", "grader", "show", "07-ring-attention"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert len(shown.stdout) > 2000 and " ".join(shown.stdout.split()).endswith("grader hint 07-ring-attention, grader submit 07-ring-attention.")
    missing = subprocess.run([sys.executable, "-m", "grader", "show", "no-such-exercise"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no-such-exercise" in missing.stdout + missing.stderr


def test_a_thread_still_at_work_is_waited_for(monkeypatch) -> None:
    """Where one of the grader's own threads has not finished, the interpreter exits as usual (and waits)."""
    import pytest

    from grader import cli

    finished = threading.Event()
    release = threading.Event()

    def command() -> int:
        def work() -> None:
            release.wait(5)
            finished.set()

        threading.Thread(target=work).start()  # not a daemon: its work must not be cut short
        return 1

    monkeypatch.setattr(cli, "main", command)
    monkeypatch.setattr(cli.os, "_exit", lambda status: pytest.fail("exited with a thread at work"))
    with pytest.raises(SystemExit) as leaving:
        cli.entry()
    assert leaving.value.code == 1
    release.set()
    assert finished.wait(5)


def test_without_threads_at_work_it_runs_the_exit_handlers_then_leaves_at_once(monkeypatch) -> None:
    import pytest

    from grader import cli

    handlers, left = [], []

    class Left(Exception):
        pass

    def leave(status: int) -> None:
        left.append(status)
        raise Left

    monkeypatch.setattr(cli, "main", lambda: 3)
    monkeypatch.setattr(cli.atexit, "_run_exitfuncs", lambda: handlers.append(1))
    monkeypatch.setattr(cli.os, "_exit", leave)
    monkeypatch.setattr(cli.threading, "enumerate", lambda: [threading.main_thread()])
    with pytest.raises(Left):
        cli.entry()
    assert handlers == [1] and left == [3]


QUICK = [["list"], ["show", "07-ring-attention"], ["hint", "07-ring-attention"], ["status"], ["history"],
         ["run", "08-no-such-exercise"], ["submit", "--file", "nowhere.py"], ["rnu"], ["restore", "01"]]


def _grader(argv: list[str], cwd, *flags: str):
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(repo), "NO_COLOR": "1"}
    env.pop("GRADER_ROOT", None)
    started = time.monotonic()
    done = subprocess.run([sys.executable, *flags, "-m", "grader", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    return done, time.monotonic() - started


def _bare_torch_seconds() -> float:
    import subprocess
    import sys
    import time

    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import torch"], check=True, timeout=300)
    return time.monotonic() - started


def test_commands_that_need_no_torch_never_import_it(tmp_path) -> None:
    """Usage errors, list, show, hint, status, history: answered without torch, well within a bare import of it."""
    from conftest import make_course

    course = make_course(tmp_path / "course", ["01-stable-softmax", "07-ring-attention"])
    for argv in QUICK:
        done, _ = _grader(argv, course, "-X", "importtime")
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
        assert imported and not {name for name in imported if name == "torch" or name.startswith("torch.")}, argv
    torch_seconds = _bare_torch_seconds()
    for argv in QUICK:
        done, seconds = _grader(argv, course)
        assert done.returncode in (0, 2) and "Traceback" not in done.stdout + done.stderr, (argv, done.stdout)
        assert seconds < 0.3 * torch_seconds, (argv, seconds, torch_seconds)


def _on_a_terminal(argv: list[str], cwd, env: dict) -> tuple[int, list[str]]:
    """Run `argv` with a pseudo-terminal as its standard streams, as a learner's shell runs it: status and lines."""
    import os
    import pty
    import select
    import subprocess

    master, slave = pty.openpty()
    child = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env)
    os.close(slave)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 300)
            if not ready:
                break
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not data:
                break
            chunks.append(data)
        status = child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(master)
    return status, b"".join(chunks).decode(errors="replace").replace("\r", "").splitlines()


def test_run_prints_its_header_before_torch_is_imported(tmp_path) -> None:
    """On a terminal the header is the first thing printed, before torch is imported (piped, it waits for the first
    result, so that an error before any case stays one line)."""
    import os
    import sys
    from pathlib import Path

    from conftest import make_course

    course = make_course(tmp_path / "course", ["07-ring-attention"])
    watch = ("import sys, importlib.abc\n"
             "class Watch(importlib.abc.MetaPathFinder):\n"
             "    def find_spec(self, name, path, target=None):\n"
             "        if name == 'torch':\n"
             "            print('<<torch imported here>>', flush=True)\n"
             "            sys.meta_path.remove(self)\n"
             "        return None\n"
             "sys.meta_path.insert(0, Watch())\n"
             "from grader.cli import main\n"
             "sys.exit(main(['run', '-k', 'stats-tiny-by-hand', '--no-record', '--device', 'cpu']))\n")
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(repo), "NO_COLOR": "1", "GRADER_ROOT": str(course), "COLUMNS": "200"}
    status, lines = _on_a_terminal([sys.executable, "-c", watch], course, env)
    lines = [line.strip() for line in lines if line.strip()]
    assert status == 1, lines  # the stub: its one example not attempted
    assert lines[0] == "07-ring-attention: exercises/07-ring-attention/ring_attention.py on examples", lines
    assert lines[1] == "<<torch imported here>>", lines
    assert lines[-1] == "0 passed, 0 failed, 1 not attempted", lines


def test_the_readme_leaves_grader_usable_in_a_new_login_shell(tmp_path) -> None:
    """The README's set-up activates the virtual environment and says to do so in each new shell; done so in a
    fresh `bash -lc`, `grader` is found and grades the exercise of the folder it is typed in."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import pytest
    from conftest import make_course

    repo = Path(__file__).resolve().parent.parent
    readme = (repo / "README.md").read_text(encoding="utf-8")
    setup = readme[readme.index("## Set up"):readme.index("## For learners")]
    assert "&& source .venv/bin/activate" in setup and "source .venv/bin/activate" in setup.split("```")[2]
    activate = Path(sys.prefix) / "bin" / "activate"
    if not activate.is_file() or not (Path(sys.prefix) / "bin" / "grader").is_file() or not shutil.which("bash"):
        pytest.skip("this Python is not a virtual environment with the grader installed")
    course = make_course(tmp_path / "course", ["01-stable-softmax", "07-ring-attention"])
    env = {key: value for key, value in os.environ.items() if key not in ("GRADER_ROOT", "VIRTUAL_ENV")}
    env.update(PYTHONPATH=str(repo), NO_COLOR="1", PATH="/usr/bin:/bin")
    done = subprocess.run(["bash", "-lc", f"source {activate} && cd exercises/07-ring-attention && grader show"],
                          cwd=course, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Ring attention" in done.stdout.splitlines()[0] + done.stdout.splitlines()[1]


def test_a_grader_execd_after_an_install_counts_its_time_from_its_own_start(tmp_path) -> None:
    """`bash -c 'pip install ... && grader run'` execs the grader in the shell's process, which began with the
    install: the duration a report shows starts where the grader's own process began to load, not there."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import pytest

    if not shutil.which("bash"):
        pytest.skip("no bash here")
    repo = Path(__file__).resolve().parent.parent
    probe = ("import time; from grader.cli.common import RAN_OTHERS, process_started; "
             "print(RAN_OTHERS, round(time.monotonic() - process_started(), 2))")
    install = f"{sys.executable} -c 'sum(range(10**7))' && sleep 2"  # CPU time waited for, then a pause
    env = {**os.environ, "PYTHONPATH": str(repo)}
    for before, ran_others in ((f"{install} && ", "True"), ("", "False")):
        done = subprocess.run(["bash", "-c", f"{before}exec {sys.executable} -c {probe!r}"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        said, seconds = done.stdout.split()
        assert said == ran_others and float(seconds) < 1.5, done.stdout + done.stderr
