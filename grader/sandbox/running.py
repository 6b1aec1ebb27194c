"""A running sandbox, as its launcher reports it and the kernel counts it: pids, exits, memory, CPU, loopback.

The half of box.Sandbox that reads (sandbox/box.py builds, starts and kills): what init says on the status
pipe (sandbox/pid1.py), and what the sandbox's cgroups, or its processes in /proc, counted.
"""

from __future__ import annotations

import json
import os
import signal
import time
from typing import TYPE_CHECKING

from grader.sandbox import proctree, sealing, seccomp

if TYPE_CHECKING:
    import subprocess

    from grader.sandbox import cgroups, zygote


class Running:
    """What a sandbox's launcher reported and the kernel counted, while its programs run and once they have ended;
    box.Sandbox sets every attribute named here."""

    kind: str                      # bubblewrap, namespaces or none
    namespaces: bool
    user: int | None
    use_cuda: bool
    counted: bool                  # its programs' loopback is to be all they exchange (box.Spec)
    kinds: frozenset[str]          # its seccomp policy's kinds
    launcher: subprocess.Popen | zygote.Child | None
    group: cgroups.Group | None
    error: str
    exits: dict[int, str]
    pids: list[int]
    loopback_counted: int | None
    _status: int
    _pending: bytes

    def poll_status(self) -> None:
        """Read what init reported: the programs' pids, each program's exit, or why the sandbox failed."""
        if self._status < 0:
            return
        while True:
            try:
                chunk = os.read(self._status, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                os.close(self._status)
                self._status = -1
                return
            self._pending += chunk
            *lines, self._pending = self._pending.split(b"\n")
            for line in lines:
                self._event(json.loads(line))

    def _event(self, event: dict) -> None:
        kind = event.get("event")
        if kind == "started":
            self.pids = self._host_pids(event.get("pids", []))
        elif kind == "exit":
            if "signal" in event:
                try:
                    how = signal.Signals(event["signal"]).name
                except ValueError:
                    how = f"signal {event['signal']}"
            else:
                how = f"exit status {event.get('code')}"
            self.exits[int(event["program"])] = how
            if isinstance(event.get("loopback"), int) and event["loopback"] >= 0:
                self.loopback_counted = max(self.loopback_counted or 0, event["loopback"])
        elif kind == "error":
            self.error = str(event.get("message", "the sandbox could not start"))

    def _host_pids(self, inside: list[int]) -> list[int]:
        if not self.namespaces or self.launcher is None:
            return list(inside)
        found = {proctree.namespace_pid(pid): pid for pid in proctree.descendants(self.launcher.pid)}
        return [found.get(pid, 0) for pid in inside]

    def wait_exit(self, index: int, timeout: float) -> str | None:
        """How program `index` ended ('SIGSEGV', 'exit status 3'), waiting up to `timeout`; None if unknown."""
        deadline = time.monotonic() + timeout
        while True:
            self.poll_status()
            if index in self.exits or self.error:
                return self.exits.get(index)
            if self._status < 0 or time.monotonic() >= deadline:
                return self.exits.get(index)
            time.sleep(0.005)

    def processes_now(self) -> list[int]:
        """Host pids of every process in the sandbox, the launcher and init included."""
        if self.launcher is None:
            return []
        return [self.launcher.pid, *proctree.descendants(self.launcher.pid)]

    def memory_bytes_now(self) -> int:
        current = self.group.memory_current() if self.group else None
        return current if current is not None else proctree.resident_bytes(self.processes_now())

    def memory_peak(self) -> int:
        """The most memory the sandbox held at once since the last reset, as the kernel counted it."""
        peak = self.group.memory_peak() if self.group else None
        return peak if peak is not None else proctree.peak_resident_bytes(self.processes_now())

    def reset_memory_peak(self) -> None:
        if not (self.group and self.group.reset_memory_peak()):
            proctree.reset_peaks(self.processes_now())

    def queued_seconds(self) -> float:
        """Time its processes were ready to run but waited for a core: what a busy machine adds to the wall clock."""
        return proctree.queued_seconds(self.processes_now())

    def cpu_seconds(self) -> float:
        found = self.group.cpu_seconds() if self.group else None
        return found if found is not None else proctree.cpu_seconds(self.processes_now())

    @property
    def unsealed(self) -> str:
        """Why the programs of a counted sandbox could exchange data out of the loopback's count ('' where they
        cannot; sandbox/sealing.py)."""
        filtered = seccomp.for_sandbox(self.kinds)[0] is not None
        own_uids = self.user is not None and os.geteuid() == 0
        return sealing.unsealed(self.kind, self.use_cuda, filtered, own_uids)

    def loopback_bytes(self) -> int | None:
        """Bytes that went over the sandbox's own loopback, from the kernel's counters; None without one, or where
        its programs are to be counted (`counted`) and could exchange data beside it."""
        self.poll_status()
        if not self.namespaces or (self.counted and self.unsealed):
            return None
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/net/dev") as handle:
                    for line in handle:
                        name, _, numbers = line.partition(":")
                        if name.strip() == "lo":
                            return int(numbers.split()[0])
            except (OSError, ValueError, IndexError):
                continue
        return self.loopback_counted  # every program has ended: init counted at each end

    def oom_killed(self) -> bool:
        return self.oom_kills() > 0

    def oom_kills(self) -> int:
        """Processes the kernel killed at the sandbox's memory limit so far."""
        return self.group.oom_kills() if self.group else 0

    @property
    def peak_counts_shared_pages(self) -> bool:
        """Whether the peak includes pages the grader wrote and the programs mapped (processes' VmHWM does;
        a cgroup charges them to the grader, who wrote them first)."""
        return not (self.group and self.group.memory is not None)

    @property
    def memory_limited_by_kernel(self) -> bool:
        return bool(self.group and self.group.memory is not None)
