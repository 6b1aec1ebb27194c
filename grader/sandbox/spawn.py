"""Every sandbox launcher and zygote is started from one long-lived thread, so that it dies with the grader alone.

A launcher (sandbox/boot.py), bubblewrap (`--die-with-parent`) and the zygote each ask the kernel for a
death signal when their parent goes (PR_SET_PDEATHSIG). The kernel's parent is the thread that forked
them, not its process (prctl(2)): a sandbox started on a thread that then ends (the next phase's
worker, readied beside the cases before it) would be killed with that thread, its case "crashed".
Here each such start is made on the process's own spawning thread, which lives as long as the
process: the death signal then follows the grader, whichever thread asked.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

_LOCK = threading.Lock()
_REQUESTS: queue.SimpleQueue | None = None
_OWNER = 0  # the pid the spawning thread belongs to: a forked child makes its own
_THREAD = 0  # that thread's identifier


@dataclass
class _Request:
    """One start, made on the spawning thread: its result or what it raised, and when it is done."""

    call: Callable[[], Any]
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None


def _serve(requests: queue.SimpleQueue) -> None:
    global _THREAD
    _THREAD = threading.get_ident()
    while True:
        request = requests.get()
        try:
            request.result = request.call()
        except BaseException as error:  # noqa: BLE001  (raised again in the thread that asked)
            request.error = error
        finally:
            request.done.set()


def _requests() -> queue.SimpleQueue:
    """This process's spawning thread's queue, the thread started on first use (again in a forked child)."""
    global _REQUESTS, _OWNER
    with _LOCK:
        if _REQUESTS is None or _OWNER != os.getpid():
            _REQUESTS, _OWNER = queue.SimpleQueue(), os.getpid()
            threading.Thread(target=_serve, args=(_REQUESTS,), name="grader-spawner", daemon=True).start()
        return _REQUESTS


def on_spawning_thread(call: Callable[[], Any]) -> Any:
    """`call()` made on the process's spawning thread; its result, or what it raised, raised here."""
    if threading.get_ident() == _THREAD and _OWNER == os.getpid():
        return call()  # already there (a start that starts another)
    request = _Request(call)
    _requests().put(request)
    request.done.wait()
    if request.error is not None:
        raise request.error
    return request.result


def popen(args: list[str], **options: Any) -> subprocess.Popen:
    """subprocess.Popen(args, **options), forked from the spawning thread: a child that asks for a death signal
    gets it when the grader ends, never when the thread that asked does."""
    return on_spawning_thread(lambda: subprocess.Popen(args, **options))

