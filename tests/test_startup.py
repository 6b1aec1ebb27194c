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
    renderer.case(CaseResult("a-case", "examples", "ring_attention", "cpu", Outcome.PASSED))
    assert asked == [1]
    assert "sandbox (test)" in out.getvalue() and "a-case" in out.getvalue()


def test_the_command_skips_the_interpreters_teardown_but_not_its_output_or_status(tmp_path) -> None:
    """`python -m grader` leaves with os._exit: what it printed into a pipe arrives whole, and its status too."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "GRADER_ROOT": str(repo), "COLUMNS": "100"}
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
