"""Starting untrusted processes, capturing their output within a cap, and killing all they leave behind."""

from __future__ import annotations

import ctypes
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

OUTPUT_CAP = 64 * 1024
PR_SET_CHILD_SUBREAPER = 36
_live: set[int] = set()
# Every learner process and its descendants inherit this mark, so a sweep kills theirs and nobody else's.
MARK_VARIABLE = "GRADER_SANDBOX"
_MARK = f"{MARK_VARIABLE}={secrets.token_hex(8)}".encode()
_reaper_set = False


def become_subreaper() -> None:
    """Make orphans of our workers (double-forked daemons included) our children, so a sweep finds them."""
    global _reaper_set
    if _reaper_set or not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    _reaper_set = True


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a learner process: the grader importable from wherever it was installed."""
    here = str(Path(__file__).resolve().parent.parent)
    existing = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": here + (os.pathsep + existing if existing else ""),
           "PYTHONDONTWRITEBYTECODE": "1", MARK_VARIABLE: _MARK.split(b"=", 1)[1].decode(), **extra}
    env.pop("PYTHONSTARTUP", None)
    return env


def spawn(command: list[str], pass_fds: tuple[int, ...], env: dict[str, str], cwd: Path) -> subprocess.Popen:
    """Start an untrusted process in its own session: no stdin, stdout and stderr to pipes."""
    become_subreaper()
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        pass_fds=pass_fds, env=env, cwd=cwd, start_new_session=True,
    )
    _live.add(process.pid)
    return process


def kill_group(process: subprocess.Popen, grace: float = 0.5) -> None:
    """SIGTERM the process group, SIGKILL it after `grace` seconds, reap, then sweep orphans."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    # Even after the leader exited, others in its group may live on: make sure of them.
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _live.discard(process.pid)
    sweep_orphans()


def sweep_orphans(rounds: int = 20) -> int:
    """Kill and reap every orphan of our workers that became our child; returns how many were killed.

    Only processes that carry this grader's sandbox mark in their environment are touched: the program
    that runs the grader may have children of its own (a test runner, multiprocessing's helpers).
    """
    killed = 0
    quiet = 0
    for _ in range(rounds):
        strays = [pid for pid in _children(os.getpid()) if pid not in _live and _marked(pid)]
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        quiet = 0 if strays else quiet + 1
        if quiet >= 2:
            break
        time.sleep(0.02)
    return killed


def _marked(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return _MARK in handle.read().split(b"\0")
    except OSError:
        return False


def _process_stats() -> list[tuple[int, list[bytes]]]:
    """(pid, fields after the command name) of every process in /proc/PID/stat: ppid is [1], pgrp [2]."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                found.append((int(entry.name), handle.read().rsplit(b")", 1)[1].split()))
        except OSError:
            continue
    return found


def _children(parent: int) -> list[int]:
    return [pid for pid, fields in _process_stats() if int(fields[1]) == parent]


def group_rss_bytes(pgid: int) -> int:
    """Resident memory of every process in a process group."""
    page = os.sysconf("SC_PAGE_SIZE")
    return sum(int(fields[21]) * page for _, fields in _process_stats() if int(fields[2]) == pgid)


def signal_name(returncode: int | None) -> str:
    """'SIGSEGV' for -11, 'exit status 3' for 3."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


class OutputCollector(threading.Thread):
    """Drains one pipe without ever blocking the writer; splits it into segments at a sentinel; closes it at its end.

    Each segment keeps its first OUTPUT_CAP bytes and counts the rest, so a flood of output
    costs time, never memory or a stuck worker.
    """

    def __init__(self, stream, sentinel: bytes, cap: int = OUTPUT_CAP) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self._sentinel = sentinel
        self._cap = cap
        self._kept = bytearray()
        self._dropped = 0
        self._segments: list[tuple[bytes, int]] = []
        self._ready = threading.Condition()
        self.start()

    def run(self) -> None:
        fd = self._stream.fileno()
        pending = b""
        keep = len(self._sentinel) - 1
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            pending += chunk
            while (at := pending.find(self._sentinel)) >= 0:
                self._append(pending[:at])
                self._close_segment()
                pending = pending[at + len(self._sentinel):]
            if len(pending) > keep:
                self._append(pending[:-keep] if keep else pending)
                pending = pending[-keep:] if keep else b""
        self._append(pending)
        # This thread owns the pipe and is the only one to close it, after its end: a descriptor closed
        # under a blocked read would be reused by the next pipe, and this read would steal its bytes.
        self._stream.close()
        with self._ready:
            self._ready.notify_all()

    def _append(self, data: bytes) -> None:
        room = self._cap - len(self._kept)
        with self._ready:
            self._kept += data[:max(room, 0)]
            self._dropped += max(len(data) - max(room, 0), 0)

    def _close_segment(self) -> None:
        with self._ready:
            self._segments.append((bytes(self._kept), self._dropped))
            self._kept, self._dropped = bytearray(), 0
            self._ready.notify_all()

    def take(self, timeout: float) -> str:
        """The next finished segment; after `timeout`, whatever has arrived so far."""
        deadline = time.monotonic() + timeout
        with self._ready:
            while not self._segments and self.is_alive() and time.monotonic() < deadline:
                self._ready.wait(max(deadline - time.monotonic(), 0.001))
            if self._segments:
                kept, dropped = self._segments.pop(0)
            else:
                kept, dropped = bytes(self._kept), self._dropped
                self._kept, self._dropped = bytearray(), 0
        text = kept.decode("utf-8", errors="replace")
        if dropped:
            text += f"\n[... {dropped} more bytes not kept: output is capped at {self._cap // 1024} KiB per case]"
        return text
