"""Ctrl-C, SIGTERM, a closed pipe, a grader bug: each ends in one line and an exit status, never a traceback."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import REPO

from grader.cli import learner, main

# A command that sleeps, then cleans up slowly, as a grader stopping its workers does.
SLEEPER = """
import sys, time
from grader import cli
from grader.cli import learner

def slow(args, console):
    try:
        print("ready", flush=True)
        time.sleep(60)
    finally:
        print("cleaning up", flush=True)
        time.sleep(float(sys.argv[1]))
        print("cleaned up", flush=True)

learner.cmd_status = slow
raise SystemExit(cli.main(["status"]))
"""


def start(tmp_path, cleanup_seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SLEEPER, str(cleanup_seconds)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"})


def expect(process: subprocess.Popen, line: str, timeout: float = 60.0) -> None:
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, f"no {line!r} within {timeout} s"
    assert process.stdout.readline() == line + "\n"


def finish(process: subprocess.Popen) -> tuple[int, list[str], str]:
    out, err = process.communicate(timeout=60)
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err, out + err
    return process.returncode, out.splitlines(), err


@pytest.mark.parametrize(("first", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_the_command_cleanly_and_more_signals_are_ignored(tmp_path, first, code) -> None:
    process = start(tmp_path, cleanup_seconds=1.5)
    expect(process, "ready")
    process.send_signal(first)
    expect(process, "cleaning up")
    for again in (signal.SIGINT, signal.SIGINT, signal.SIGTERM):  # impatient: during the cleanup
        process.send_signal(again)
        time.sleep(0.05)
    returncode, lines, err = finish(process)
    assert returncode == code
    assert lines == ["cleaned up", "interrupted"]  # the cleanup ran to its end
    assert err == ""


def test_signals_while_the_process_exits_print_nothing_more(tmp_path) -> None:
    process = start(tmp_path, cleanup_seconds=0.0)
    expect(process, "ready")
    process.send_signal(signal.SIGINT)
    while process.poll() is None:  # keep pressing Ctrl-C until it is gone
        process.send_signal(signal.SIGINT)
        time.sleep(0.002)
    returncode, lines, err = finish(process)
    assert returncode == 130 and lines[-1] == "interrupted" and err == ""


def test_main_restores_the_signal_handlers_it_found(course, capsys, monkeypatch) -> None:
    found = [signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)]
    during = []

    def look(args, console):
        during.extend(signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM))
        return 0

    monkeypatch.setattr(learner, "cmd_status", look)
    assert main(["status"]) == 0
    assert during[0] is not found[0] and during[1] is not found[1]
    assert [signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)] == found

    def interrupted(args, console):
        raise KeyboardInterrupt

    monkeypatch.setattr(learner, "cmd_status", interrupted)
    assert main(["status"]) == 130
    assert capsys.readouterr().out == "interrupted\n"
    assert [signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)] == found


def test_main_outside_the_main_thread_leaves_signals_alone(course, capsys) -> None:
    codes = []
    thread = threading.Thread(target=lambda: codes.append(main(["status"])))
    thread.start()
    thread.join()
    assert codes == [0]


def test_a_closed_pipe_ends_quietly(course) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # `grader list | head -0`: nobody reads
    try:
        done = subprocess.run([sys.executable, "-m", "grader", "list"], stdout=writer, stderr=subprocess.PIPE,
                              text=True, cwd=course, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        os.close(writer)
    assert done.stderr == ""  # no BrokenPipeError, at exit either
    assert done.returncode == 1


def test_grader_errors_in_the_same_second_keep_every_report(course, capsys, monkeypatch) -> None:
    import grader.cli
    from grader.grading import pipeline

    fixed = time.localtime(1_800_000_000)
    monkeypatch.setattr(grader.cli, "now", lambda pattern="%Y%m%dT%H%M%S": time.strftime(pattern, fixed))
    for number in (1, 2):
        def broken(*args, number=number, **kwargs):
            raise ZeroDivisionError(f"bug number {number}")

        monkeypatch.setattr(pipeline, "grade", broken)
        assert main(["run"]) == 3
    capsys.readouterr()
    reports = sorted((course / ".grader" / "crashes").iterdir())
    assert len(reports) == 2
    assert {"bug number 1", "bug number 2"} == {
        line.split(": ", 1)[1] for report in reports for line in report.read_text().splitlines()
        if line.startswith("ZeroDivisionError")}


def test_error_lines_show_the_command_line_inert(course, capsys) -> None:
    assert main(["run", "08-\x1b[2Jnothing"]) == 2
    out = capsys.readouterr().out
    assert "\x1b" not in out and out.startswith("error: no exercise called '08-\\x1b[2Jnothing'")
