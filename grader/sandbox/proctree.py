"""A process and its descendants, read from /proc: memory, CPU time, peaks, and killing them all."""

from __future__ import annotations

import functools
import os
import signal
import time

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def children(pid: int) -> list[int]:
    """Direct children of `pid` (every thread's), from /proc/PID/task/*/children."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(child) for child in handle.read().split()]
        except (OSError, ValueError):
            continue
    return found


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, breadth first."""
    found, queue = [], [pid]
    while queue:
        for child in children(queue.pop(0)):
            if child not in found:
                found.append(child)
                queue.append(child)
    return found


def _stat(pid: int) -> list[bytes]:
    """/proc/PID/stat's fields after the command name: state is [0], ppid [1], utime [11], rss [21]."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _status(pid: int, key: str) -> list[str]:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return line.split()[1:]
    except OSError:
        pass
    return []


def address_space(pid: int) -> int:
    """A process's virtual address space in bytes (VmSize); 0 where /proc does not say."""
    found = _status(pid, "VmSize")
    return int(found[0]) * 1024 if found else 0


def namespace_pid(pid: int) -> int:
    """A process's pid inside its own (innermost) PID namespace."""
    found = _status(pid, "NSpid")
    return int(found[-1]) if found else pid


def resident_bytes(pids: list[int]) -> int:
    return sum(int(fields[21]) * PAGE for pid in pids if len(fields := _stat(pid)) > 21)


def peak_resident_bytes(pids: list[int]) -> int:
    """The sum of each process's own peak resident memory (VmHWM): at least the combined peak."""
    total = 0
    for pid in pids:
        found = _status(pid, "VmHWM")
        if found:
            total += int(found[0]) * 1024
    return total


def reset_peaks(pids: list[int]) -> None:
    """Start each process's VmHWM again from its current resident memory."""
    for pid in pids:
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as handle:
                handle.write("5")
        except OSError:
            pass


def cpu_seconds(pids: list[int]) -> float:
    """User and system time of each process and of its children that have been reaped."""
    ticks = 0
    for pid in pids:
        fields = _stat(pid)
        if len(fields) > 14:
            ticks += sum(int(value) for value in fields[11:15])
    return ticks / TICKS


@functools.cache
def schedule_counted() -> bool:
    """Whether the kernel counts how long each thread waited for a core (schedstat): else queued_seconds is 0."""
    return os.path.exists("/proc/self/schedstat")


def queued_seconds(pids: list[int]) -> float:
    """Time the processes' threads were runnable but waiting for a core (schedstat's run delay): the machine's
    load, not their own doing. 0 where the kernel keeps no schedule statistics."""
    delay = 0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as handle:
                    delay += int(handle.read().split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return delay / 1e9


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return bool(fields) and fields[0] != b"Z"


def kill_tree(pid: int, rounds: int = 200) -> None:
    """Kill every process below `pid`, its direct children last.

    Everything found is stopped first, so that nothing forks away between two looks. The direct
    children (the sandbox's init, a subreaper) go last: orphans of the others are re-parented to
    them and so stay in the tree until they too are killed.
    """
    for _ in range(rounds):
        top = set(children(pid))
        found = [child for child in descendants(pid) if _alive(child)]
        below = [child for child in found if child not in top]
        for sig, targets in ((signal.SIGSTOP, found), (signal.SIGKILL, below)):
            for child in targets:
                try:
                    os.kill(child, sig)
                except OSError:
                    pass
        if not below:
            break
        time.sleep(0.005)  # let the killed ones die, so that their orphans are found at init next time
    for child in children(pid):
        try:
            os.kill(child, signal.SIGKILL)
        except OSError:
            pass
