"""A sandbox started on a thread that then ends lives on: its launcher's death signal follows the grader process.

The kernel sends PR_SET_PDEATHSIG when the parent *thread* exits (prctl(2)); the hidden cases' worker is
readied on a thread of its own that ends before the worker does, so its sandbox must not be that thread's.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from grader.sandbox import machine, spawn
from grader.sandbox.box import Program
from grader.sandbox.policy import base_env

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
SLEEPER = "import time, os; time.sleep(1.5); os.write(1, b'still here')"


def _started_on_a_thread_that_ends(kind: str) -> tuple[str | None, bytes]:
    """Start a sandbox (a fresh launcher: a program without an entry point is never forked from the zygote) on a
    thread that waits until the program runs, then ends; how the program ended and what it wrote."""
    found = machine.support()
    sandbox = machine.Sandbox(machine.Confinement(kind, found.user, landlock=bool(found.landlock)),
                              machine.Spec(512 << 20, processes=16))
    read, write = os.pipe()
    try:
        def start() -> None:
            sandbox.start([Program([sys.executable, "-I", "-S", "-c", SLEEPER], base_env(), {1: write})])
            deadline = time.monotonic() + 20
            while not sandbox.pids and not sandbox.error and time.monotonic() < deadline:
                sandbox.poll_status()
                time.sleep(0.01)
            time.sleep(0.3)  # the launcher has long asked for its death signal by now

        thread = threading.Thread(target=start)
        thread.start()
        thread.join()
        os.close(write)
        write = -1
        how = sandbox.wait_exit(0, 30)
        os.set_blocking(read, False)
        try:
            written = os.read(read, 100)
        except BlockingIOError:
            written = b""
        return how, written
    finally:
        if write >= 0:
            os.close(write)
        os.close(read)
        sandbox.close()


def test_a_sandbox_started_on_a_thread_that_ends_runs_to_its_end() -> None:
    kind = machine.support().kind
    assert _started_on_a_thread_that_ends(kind) == ("exit status 0", b"still here")


def test_under_bubblewrap_too(monkeypatch) -> None:
    """bubblewrap's --die-with-parent is the same death signal, asked for by the launcher's process after exec."""
    monkeypatch.setenv(machine.SETTING, "bubblewrap")
    machine.support.cache_clear()
    try:
        found = machine.support()
        if found.kind != "bubblewrap":
            pytest.skip(f"bubblewrap is not usable here ({found.reason or 'not installed'})")
        assert _started_on_a_thread_that_ends("bubblewrap") == ("exit status 0", b"still here")
    finally:
        monkeypatch.delenv(machine.SETTING)
        machine.support.cache_clear()


def test_every_start_is_made_on_one_thread_that_raises_back_what_failed() -> None:
    threads = set()
    for _ in range(3):
        worker = threading.Thread(target=lambda: threads.add(spawn.on_spawning_thread(threading.get_ident)))
        worker.start()
        worker.join()
    assert len(threads) == 1 and threading.get_ident() not in threads
    with pytest.raises(FileNotFoundError):
        spawn.popen(["/nonexistent/program"])
