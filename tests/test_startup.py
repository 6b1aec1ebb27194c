"""Before the first case: the sandbox probe runs once, on a thread, and the header waits for it only when printed."""

from __future__ import annotations

import io
import threading
import time

from grader import sandbox
from grader.render_terminal import TerminalRenderer, make_console
from grader.results import CaseResult, Outcome


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
