"""The sandbox's init: PID 1 of its PID namespace (without one, a subreaper), which starts, reaps and reports.

Standard library only, loaded by path beside sandbox/boot.py. Where the launcher made the namespaces,
init builds the mount view, names the host and brings up the loopback; then it starts every program
(sandbox/program.py), reports their pids and each exit on the status pipe, and exits when all have
ended. Without a PID namespace it kills every descendant it inherited before it goes, and when the
launcher dies.
"""

from __future__ import annotations

import json
import os
import signal

if __package__:
    from grader.sandbox import launch_config, lockdown, mounts, namespaces, program
else:  # run by path, beside boot.py
    import launch_config
    import lockdown
    import mounts
    import namespaces
    import program


class Status:
    """One JSON line per event on the status pipe, which only the grader reads."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send(self, **event: object) -> None:
        data = (json.dumps(event) + "\n").encode()
        try:
            os.write(self.fd, data)
        except OSError:
            pass


def init(config: launch_config.LaunchConfig, status: Status, launcher: int) -> None:
    """Init's whole life, for a launch_config.LaunchConfig; `launcher` is the pid of the launcher that forked it."""
    namespaced = config.mode != "none"
    if namespaced:
        # If the launcher dies (the grader killed it, or died itself), so does init, and with it the namespace.
        lockdown.prctl(lockdown.PR_SET_PDEATHSIG, signal.SIGKILL)
    else:
        # No PID namespace takes everything down: told of the launcher's death, init kills every process it
        # holds (daemons came to it as subreaper) before it goes, else they would outlive a killed grader.
        signal.signal(signal.SIGTERM, _on_launcher_death)
        lockdown.prctl(lockdown.PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != launcher:
            _on_launcher_death(signal.SIGTERM, None)  # gone already, before the signal was asked for
    lockdown.prctl(lockdown.PR_SET_DUMPABLE, 0)  # no learner process may read init's memory or its descriptors
    if config.inside:
        pass  # bubblewrap built the namespaces, the view and the loopback
    elif namespaced:
        mounts.build_view(config.mounts)
        namespaces.set_hostname()
        if config.loopback:
            namespaces.loopback_up()
    else:
        lockdown.prctl(lockdown.PR_SET_CHILD_SUBREAPER, 1)  # orphans, daemons included, become init's to kill
    started = {}
    for index, each in enumerate(config.programs):
        started[program.start(each, index, config)] = index
    status.send(event="started", pids=sorted(started, key=started.get))
    for each in config.programs:
        for fd in each.fds.values():
            program.close(fd)
    _reap(started, status, namespaced)
    if not namespaced:
        _kill_descendants()


def _reap(started: dict[int, int], status: Status, namespaced: bool) -> None:
    """Wait for every program (and reap whatever else ends), reporting each program's exit."""
    while started:
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        index = started.pop(pid, None)
        if index is not None:
            # The loopback's byte count goes with every exit: read here, it survives the programs' end.
            counted = {"loopback": namespaces.loopback_bytes()} if namespaced else {}
            if os.WIFSIGNALED(wait_status):
                status.send(event="exit", program=index, signal=os.WTERMSIG(wait_status), **counted)
            else:
                status.send(event="exit", program=index, code=os.waitstatus_to_exitcode(wait_status), **counted)


def _on_launcher_death(signum: int, frame: object) -> None:
    lockdown.prctl(lockdown.PR_SET_CHILD_SUBREAPER, 1)
    _kill_descendants()
    os._exit(0)


def _kill_descendants() -> None:
    """Without a PID namespace, orphans came to init as subreaper: kill them until none is left.

    Each wait blocks until one has died, so a process is never abandoned while still dying: its
    own children would then be re-parented past init, out of reach.
    """
    while True:
        for pid in _children(os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def _children(pid: int) -> list[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(child) for child in handle.read().split()]
    except OSError:
        pass
    return found
