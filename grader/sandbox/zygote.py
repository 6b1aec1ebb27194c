"""A preloaded launcher: one process per grader imports torch once, then forks each sandbox's programs from it.

Starting a worker used to cost a fresh interpreter and a torch import (well over a second of CPU);
forked from a process that already holds both, it costs milliseconds. The zygote is the grader's
own, trusted process, started before any learner code and owning nothing of the course: it only
receives a sandbox's configuration and descriptors, forks, and the child builds the sandbox
exactly as grader/sandbox/boot.py's launcher does, then runs the program's Python entry point in
place of exec. It dies with the grader (PR_SET_PDEATHSIG), and its children with it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Iterator

from grader.channel import wire
from grader.sandbox import launch_config, spawn
from grader.sandbox.launch_config import LaunchConfig
from grader.sandbox.policy import base_env, module_command

# What a forked program may run (the grader's own entry points), and the name `ps` shows it by (15 characters
# at most). They are imported by name, in the zygote alone: the sandbox layer does not import what runs inside.
ENTRIES = {"grader.sandboxed.worker": "grader.worker", "grader.sandboxed.rank": "grader.rank"}
PRELOADED = (*ENTRIES, "grader.sandboxed.observe", "grader.api")  # what a worker or a rank program imports
READY_LIMIT = 180.0
REPLY_LIMIT = 10.0  # seconds either side waits for the other's next message of a request
IDLE_CHECK = 1.0    # the zygote, waiting for a request, looks this often whether the grader is still there
STOP_LIMIT = 5.0    # seconds a killed zygote, or a sandbox launcher it forked, has to be gone
MAX_FDS = 250  # descriptors one sandbox may be handed (a group of ranks has five each); SCM_RIGHTS allows 253


class Zygote:
    """The grader's side: start the zygote, ask it for sandboxes, know whether it can be used."""

    def __init__(self) -> None:
        self._socket, theirs = socket.socketpair()
        self.process = spawn.popen(
            module_command("grader.sandbox.zygote", str(theirs.fileno()), str(os.getpid())),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),), env=base_env(), cwd="/", start_new_session=True)
        theirs.close()
        # Never blocking: a read that select() found ready but another took first waits again, to its deadline.
        self._socket.setblocking(False)
        self._reader = wire.MessageReader(self._socket.fileno(), 1 << 20, sock=self._socket)
        self._lock = threading.Lock()
        self.ready: bool | None = None  # None: not known yet

    def wait_ready(self) -> bool:
        """Whether the zygote is ready, waiting for its word the first time. One thread at a time reads the channel:
        two reading at once would take each other's replies (a spawn's pid read as the word, and its own never)."""
        with self._lock:
            if self.ready is None:
                try:
                    body, _ = self._reader.read(time.monotonic() + READY_LIMIT)
                    self.ready = isinstance(body, dict) and body.get("kind") == "ready"
                except (wire.ChannelClosed, wire.ChannelTimeout, wire.BadMessage, OSError):
                    self.ready = False
            return self.ready

    def spawn(self, config: LaunchConfig, fds: list[int]) -> int:
        """Fork a sandbox from the zygote: its launcher's pid (the zygote's child, reaped by the zygote)."""
        request = {"kind": "spawn", "config": launch_config.encode(config), "fds": fds}
        with self._lock:
            try:
                wire.send_with_fds(self._socket, wire.encode(request), fds, time.monotonic() + REPLY_LIMIT)
                body, _ = self._reader.read(time.monotonic() + REPLY_LIMIT)
            except (wire.ChannelClosed, wire.ChannelTimeout, wire.BadMessage, OSError) as error:
                # Its replies may no longer match its requests: never asked again, and killed with anything
                # it may have half started.
                self.ready = False
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except OSError:
                    pass
                raise OSError(f"the zygote could not start a sandbox ({type(error).__name__})") from None
        if not isinstance(body, dict) or not isinstance(body.get("pid"), int):
            raise OSError("the zygote could not start a sandbox")
        return body["pid"]


_ZYGOTE: Zygote | None = None


def prestart() -> bool:
    """Start the zygote now, so that it imports torch while the grader does its own work; True if this call did."""
    global _ZYGOTE
    if _ZYGOTE is not None or not sys.platform.startswith("linux"):
        return False
    try:
        _ZYGOTE = Zygote()
    except OSError:
        return False
    return True


def stop() -> None:
    """Stop the zygote (and anything it still holds): nothing of it outlives the command that started it."""
    global _ZYGOTE
    zygote, _ZYGOTE = _ZYGOTE, None
    if zygote is None:
        return
    # Killed first: a thread still waiting on its channel then reads the end of it, never a descriptor reused.
    try:
        os.killpg(zygote.process.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        zygote.process.wait(STOP_LIMIT)
    except subprocess.TimeoutExpired:
        pass  # in the kernel's hands (a process in uninterruptible sleep): not waited for longer
    held = zygote._lock.acquire(timeout=2 * REPLY_LIMIT)  # a spawn under way ends within its own deadlines
    try:
        zygote._socket.close()
    finally:
        if held:
            zygote._lock.release()


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A zygote for the duration of a block: started if none runs, stopped at the end if this block started it."""
    started = prestart()
    try:
        yield
    finally:
        if started:
            stop()


def get() -> Zygote | None:
    """The zygote held now, ready; None where none is held or it could not start (a fresh launcher is exec'd)."""
    if _ZYGOTE is not None and _ZYGOTE.wait_ready() and _ZYGOTE.process.poll() is None:
        return _ZYGOTE
    return None


class Child:
    """A sandbox launcher forked by the zygote: not this process's child, so waited for through a pidfd (or /proc).

    It has ended once it is gone or a zombie: a process that exited is never waited for as if it ran, whoever
    reaps it (the kernel, for the zygote), and a pid used again later is never taken for it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):  # a kernel before 5.3, or already gone
            self._pidfd = -1

    def poll(self) -> int | None:
        if self.returncode is None and self._ended():
            self.returncode = 0
            if self._pidfd >= 0:
                os.close(self._pidfd)
                self._pidfd = -1
        return self.returncode

    def _ended(self) -> bool:
        if self._pidfd >= 0:
            return bool(select.select([self._pidfd], [], [], 0)[0])  # readable once the process has exited
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                return stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
        except (OSError, IndexError):
            return True

    def wait(self, timeout: float = STOP_LIMIT) -> int:
        """Its end, within `timeout` seconds (never without one); subprocess.TimeoutExpired after."""
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired("sandbox", timeout)
            time.sleep(0.002)
        return self.returncode


# ---------------------------------------------------------------- the zygote itself

def main(fd: int, parent: int) -> None:
    """Import torch and the entry points once; then fork a sandbox for each request, until the grader goes."""
    from grader.sandbox import boot, lockdown

    lockdown.prctl(lockdown.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)
    lockdown.prctl(lockdown.PR_SET_DUMPABLE, 0)
    # No collection here, and everything imported frozen out of the children's: a collection in a child
    # would otherwise write to every inherited object and copy its page, which the learner's memory
    # would be charged for (Python's documentation on gc.freeze gives the recipe).
    gc.disable()
    import torch

    modules = [importlib.import_module(name) for name in PRELOADED]
    torch.set_num_threads(1)
    modules[0].warm_up(torch)
    gc.freeze()
    channel = socket.socket(fileno=fd)
    channel.setblocking(False)
    # The kernel reaps every launcher as it ends: no handler that a signal landing just before a blocking read
    # would leave unrun until the next request, with the launcher a zombie the grader waits on meanwhile.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    reader = wire.MessageReader(fd, 1 << 20, sock=channel, max_fds=MAX_FDS)
    _answer(fd, {"kind": "ready"})
    while True:
        try:
            body, _ = reader.read(time.monotonic() + IDLE_CHECK)
        except wire.ChannelTimeout:
            if os.getppid() != parent:
                os._exit(0)  # the grader is gone (its death signal missed): nothing more to fork for
            continue
        except (wire.ChannelClosed, wire.BadMessage, OSError):
            os._exit(0)
        received, reader.fds = reader.fds, []
        if len(received) != len(body["fds"]):  # never guess which descriptor is which
            for number in received:
                os.close(number)
            _answer(fd, {"kind": "refused"})
            continue
        try:
            config = _renumbered(launch_config.decode(body["config"]), body["fds"], received)
        except (launch_config.ConfigError, KeyError):  # not of the schema, or a descriptor it was not handed
            for number in received:
                os.close(number)
            _answer(fd, {"kind": "refused"})
            continue
        pid = os.fork()
        if pid == 0:
            gc.enable()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            channel.close()
            boot.run_launcher(config)
            os._exit(0)
        for number in received:
            os.close(number)
        _answer(fd, {"kind": "spawned", "pid": pid})


def _answer(fd: int, body: dict) -> None:
    """Reply to the grader, which reads within REPLY_LIMIT; a grader that stopped reading is gone for the zygote."""
    try:
        wire.write_message(fd, body, time.monotonic() + REPLY_LIMIT)
    except (wire.ChannelClosed, wire.ChannelTimeout, OSError):
        os._exit(0)


def _renumbered(config: LaunchConfig, theirs: list[int], ours: list[int]) -> LaunchConfig:
    """The configuration with the grader's descriptor numbers replaced by the ones they arrived as here, for a
    launcher that is this process's child, with the entry points imported."""
    mapping = dict(zip(theirs, ours))
    programs = tuple(dataclasses.replace(each, fds={target: mapping[source] for target, source in each.fds.items()})
                     for each in config.programs)
    return dataclasses.replace(config, status_fd=mapping[config.status_fd], programs=programs, parent=os.getpid(),
                               preloaded=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
