"""A run is always bounded: every wait of the grader's has a deadline, and the watchdog ends a run that outlives them.

The hang these guard against: the zygote's channel read by two threads at once (one took the other's reply, and
that one waited on recv without end), a launcher left a zombie while the grader waited for it with no timeout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import REPO, own_processes, run_cli, survivors

from grader.grading import watchdog
from grader.grading.pipeline import grade
from grader.grading.request import Run
from grader.grading.worker_client import WorkerClient
from grader.sandbox import machine, zygote
from grader.sandbox.box import Program
from grader.sandbox.policy import base_env, module_command

RANK = "grader.sandboxed.rank"  # an entry point the zygote forks: it waits on its descriptor 3 for the grader


def _rank_sandbox():
    """A sandbox of one rank program that waits for its go, forked from the zygote where one is held."""
    box = machine.open_sandbox(256 << 20, processes=16, loopback=True, apart=True)
    null = os.open(os.devnull, os.O_RDONLY)
    read, write = os.pipe()
    arguments = json.dumps({"threads": 1})
    box.start([Program(module_command(RANK, arguments), base_env(), {0: null, 1: null, 2: null, 3: read, 4: write},
                       entry=RANK, args=(arguments,))])
    for fd in (null, read, write):
        os.close(fd)
    return box


@pytest.fixture
def fresh_zygote():
    """A zygote of this test's own, just started (not yet ready), stopped after; the session's is put back."""
    zygote.stop()
    zygote.prestart()
    yield
    zygote.stop()
    zygote.prestart()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the zygote is Linux's")
def test_threads_asking_a_zygote_that_is_still_starting_each_get_their_own_sandbox(fresh_zygote) -> None:
    boxes, errors = [], []

    def start() -> None:
        try:
            boxes.append(_rank_sandbox())
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert not any(thread.is_alive() for thread in threads), "a sandbox start never returned"
        assert not errors and len(boxes) == 3
        # Every one forked from the zygote: none fell back to a fresh launcher because its reply was taken.
        assert all(isinstance(box.launcher, zygote.Child) for box in boxes)
        assert len({box.launcher.pid for box in boxes}) == 3
    finally:
        for box in boxes:
            box.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the zygote is Linux's")
def test_a_launcher_is_reaped_even_while_the_zygote_cannot_run() -> None:
    box = _rank_sandbox()
    assert isinstance(box.launcher, zygote.Child)
    held = zygote.get()
    os.kill(held.process.pid, signal.SIGSTOP)  # no handler of the zygote's could run now
    try:
        started = time.monotonic()
        box.close()  # kills init; the launcher ends, and the kernel reaps it
        assert time.monotonic() - started < 5
        assert not os.path.exists(f"/proc/{box.launcher.pid}")
    finally:
        os.kill(held.process.pid, signal.SIGCONT)
    assert zygote.get() is held  # still the same zygote, still usable
    _rank_sandbox().close()


def test_a_zombie_has_ended_and_a_wait_for_a_live_process_has_a_deadline() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        time.sleep(0.2)  # a zombie now: nobody has waited for it
        assert zygote.Child(pid).wait(timeout=2) == 0
    finally:
        os.waitpid(pid, 0)
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        zygote.Child(os.getpid()).wait(timeout=0.2)
    assert time.monotonic() - started < 1


def test_the_watchdog_interrupts_a_wait_without_a_deadline_and_lets_a_finished_block_be() -> None:
    freed = []
    started = time.monotonic()
    with pytest.raises(watchdog.Stalled, match="the grader stalled"):
        with watchdog.Watchdog(0.3, on_stall=lambda: freed.append(True)):
            threading.Event().wait()  # a wait that no deadline ends
    assert freed == [True] and time.monotonic() - started < 5
    with watchdog.Watchdog(0.2) as quiet:
        pass
    time.sleep(0.4)
    assert not quiet.fired
    assert signal.getsignal(watchdog.SIGNAL) in (signal.SIG_DFL, None)


def test_a_stalled_grade_is_not_graded_and_leaves_nothing_running(exercise, monkeypatch, capsys) -> None:
    before = own_processes()
    monkeypatch.setattr("grader.grading.pipeline.stall_after", lambda *args: 3.0)
    # A grader bug of the kind the watchdog is for: a wait that nothing ends.
    monkeypatch.setattr(WorkerClient, "wait_ready", lambda self, limit: threading.Event().wait())
    started = time.monotonic()
    report = grade(Run(exercise, REPO / "solutions/07-ring-attention/ring_attention.py", "run", "cpu"))
    assert time.monotonic() - started < 30
    assert report.not_graded.startswith("the grader stalled") and not report.results
    assert not survivors(before)
    zygote.prestart()  # the watchdog stopped the session's zygote with the sandboxes it held
    code, lines = run_cli(capsys, "run", "--file", str(REPO / "solutions/07-ring-attention/ring_attention.py"),
                          "--device", "cpu", "--no-record")
    assert code == 3 and any(line.startswith("Not graded: the grader stalled") for line in lines), lines
    zygote.prestart()


def test_a_command_still_stuck_after_being_told_ends_with_status_3() -> None:
    script = ("import threading\nfrom grader.grading import watchdog\nfrom grader.cli import _stalled\n"
              "watchdog.GRACE = 0.5\nwatchdog.last_resort(_stalled)\n"
              "with watchdog.Watchdog(0.3):\n    while True:\n        try:\n            threading.Event().wait()\n"
              "        except watchdog.Stalled:\n            pass\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and done.stdout.startswith("Not graded: the grader stalled"), done
