"""`grader watch`: a run at the start and after each save; Ctrl-C ends it with 130 and nothing left running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO, RING, own_processes, survivors

from grader.cli import main

WATCHING = "Watching "
EDITED = '''
def attention_chunk_stats(*args, **kwargs):
    raise ValueError("edited-by-the-test")
'''
SLEEPING = '''
import time

def attention_chunk_stats(*args, **kwargs):
    time.sleep(60)
'''


class Output:
    """The lines a process prints, read on a thread, so that a test can wait for one with a deadline."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_for(self, count: int, start: str = WATCHING, timeout: float = 120.0) -> None:
        """Until `count` lines starting with `start` have been printed."""
        with self._changed:
            done = self._changed.wait_for(lambda: sum(line.startswith(start) for line in self.lines) >= count,
                                          timeout)
        assert done, f"no {count} {start!r} lines within {timeout} s:\n" + "\n".join(self.lines)


def wait_for_new_process(known: dict[int, str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not set(own_processes()) - set(known):
        assert time.monotonic() < deadline, "the run after the save never started a worker"
        time.sleep(0.05)


def test_each_save_runs_again_and_ctrl_c_stops_everything(course: Path, tmp_path: Path) -> None:
    mine = tmp_path / "ring_attention.py"
    mine.write_bytes((course / "exercises" / RING / "ring_attention.py").read_bytes())
    before = own_processes()
    process = subprocess.Popen(
        [sys.executable, "-m", "grader", "watch", RING, "--file", str(mine), "-k", "stats-tiny", "--device", "cpu",
         "--no-record"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=course,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        output = Output(process)
        output.wait_for(1)  # the first run, as soon as it starts
        assert any(line.startswith("TODO") and "stats-tiny-by-hand" in line for line in output.lines)
        stub = "0 passed, 0 failed, 1 not attempted"  # a stub's cases are not attempted, not failed
        assert stub in output.lines
        mine.write_text(EDITED)
        output.wait_for(2)  # the save ran the examples again, on what was saved
        assert any("edited-by-the-test" in line for line in output.lines[output.lines.index(stub):]), \
            "\n".join(output.lines)
        # A save whose run is still going when Ctrl-C comes: its worker and sandbox must go too.
        between = own_processes()
        mine.write_text(SLEEPING)
        wait_for_new_process(between)
        time.sleep(1.0)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = "\n".join(output.lines)
    assert output.lines[-1] == "interrupted" and "Traceback" not in text, text
    assert sum(line.startswith(WATCHING) for line in output.lines) == 2, text  # the third run never finished
    assert survivors(before) == []
    assert not (course / ".grader").exists()  # --no-record


def test_without_watchfiles_it_says_how_to_install_it(course: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "watchfiles", None)  # an import of it now fails
    assert main(["watch", RING]) == 2
    from grader.learner.repro import python_command

    # The pip of the Python the grader runs in: a bare `pip` may install into another one.
    assert capsys.readouterr().out.splitlines() == [
        f"error: grader watch needs the watchfiles package: {python_command()} -m pip install watchfiles (the Python "
        f"the grader runs in)"]


def test_an_option_that_does_not_fit_ends_the_watch_at_once(course: Path, capsys) -> None:
    pytest.importorskip("watchfiles")
    before = own_processes()
    assert main(["watch", RING, "-k", "nothing-like-it", "--no-record"]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"error: -k 'nothing-like-it' matches no example of {RING}; its examples: stats-tiny-by-hand, "
                     "stats-shapes-d-differs-from-dv, merge-new-chunk-has-larger-max, "
                     "merge-accumulator-has-larger-max, ring-two-equal-chunks, ring-uneven-chunks, "
                     "ring-float32-chunks-of-one"]
    assert survivors(before) == []
    assert not any(thread.name == "grader-watch" for thread in threading.enumerate())
