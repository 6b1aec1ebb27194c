"""The sandbox launcher: namespaces, a read-only mount view, an unprivileged user, then the learner's programs.

Run by grader/sandbox/box.py as `python -I -S boot.py CONFIG_JSON`, before any learner code, using
nothing but the standard library and the units beside this file, one per kernel facility (the
configuration's schema is launch_config.py; nothing else of the grader is imported). In order:

  launcher   (here) dies with the grader (PR_SET_PDEATHSIG); joins the sandbox's cgroups; unshares
             the mount, PID, network, IPC and UTS namespaces, and a user namespace when not root
             (namespaces.py); forks `init`, waits for it, and exits.
  init       (pid1.py) PID 1 of the new PID namespace, so every process started inside dies with it;
             builds the mount view (mounts.py: a fresh root of read-only binds of the system, Python
             and the grader; a private /tmp, /dev and /proc), pivots into it, brings up loopback,
             forks each program, reports each exit on the status pipe, and exits when all have.
  program    (program.py) maps its file descriptors, sets its rlimits, drops to the sandbox user
             (when the launcher was root), drops every capability, forbids new privileges, joins a
             fresh keyring, installs the seccomp policy (and, without namespaces, Landlock:
             lockdown.py), and execs.

With `mode: bubblewrap` the launcher joins the cgroups, drops to the sandbox user when root, and
execs bubblewrap, which builds the same namespaces and view and runs this file again inside as
`init` (`inside: true`). With `mode: none` (no namespaces to be had) the same launcher still gives
every program its descriptors, limits and clean environment, and `init` becomes a child subreaper
that kills every descendant it inherits when the programs end, or when the launcher dies.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import signal
import sys

if __package__:  # imported with the package (the zygote forks the launcher)
    from grader.sandbox import launch_config, lockdown, namespaces, pid1, program
else:  # run by path, isolated: the units beside this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import launch_config
    import lockdown
    import namespaces
    import pid1
    import program


def launcher(config: launch_config.LaunchConfig) -> None:
    """The launcher's whole life, for a launch_config.LaunchConfig: it never returns."""
    status = pid1.Status(config.status_fd)
    lockdown.prctl(lockdown.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != config.parent:
        os._exit(1)  # the grader is already gone
    for path in config.cgroups:
        with open(path, "w") as handle:  # before anything else: every later process is counted
            handle.write(str(os.getpid()))
    if config.mode == "bubblewrap":
        bubblewrap(config)
    if config.mode == "namespaces":
        namespaces.unshare_sandbox()
    launcher_pid = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            pid1.init(config, status, launcher_pid)
        except BaseException as error:  # noqa: BLE001  (reported to the grader, never shown as learner output)
            status.send(event="error", message=f"{type(error).__name__}: {error}")
            os._exit(70)
        os._exit(0)
    program.close_all_but(())
    while True:
        try:
            _, wait_status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            wait_status = 0
            break
        except InterruptedError:
            continue
    os._exit(os.waitstatus_to_exitcode(wait_status) & 0xFF if os.WIFEXITED(wait_status) else 71)


def bubblewrap(config: launch_config.LaunchConfig) -> None:
    """Become bubblewrap, which builds the namespaces and the view and starts this file inside as init.

    Every program inside runs as the sandbox's one user: without root there, init cannot give each its own."""
    user = config.user
    if user is not None and os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(user, user, user)
        os.setresuid(user, user, user)
        lockdown.prctl(lockdown.PR_SET_PDEATHSIG, signal.SIGKILL)  # a change of user clears it
    inside = launch_config.encode(dataclasses.replace(config, inside=True, bwrap=None))
    command = [*config.bwrap, "--", sys.executable, "-I", "-S", os.path.abspath(__file__), inside]
    os.execv(command[0], command)


def run_launcher(config: launch_config.LaunchConfig) -> None:
    """The launcher, with any failure to build the sandbox reported to the grader instead of raised."""
    try:
        if config.inside:
            pid1.init(config, pid1.Status(config.status_fd), os.getppid())
            os._exit(0)
        launcher(config)
    except OSError as error:
        pid1.Status(config.status_fd).send(event="error", message=str(error),
                                           errno=errno.errorcode.get(error.errno or 0, ""))
        os._exit(70)


def refuse(text: str, message: str) -> None:
    """A configuration not of the schema: no sandbox, and why, on the status pipe where the text names one, and on
    stderr; the grader reports it as the sandbox's failure to start."""
    try:
        status_fd = json.loads(text).get("status_fd")
    except (TypeError, ValueError, AttributeError):
        status_fd = None
    if type(status_fd) is int and status_fd > 2:
        pid1.Status(status_fd).send(event="error", message=message)
    try:
        os.write(2, f"sandbox launcher: {message}\n".encode())
    except OSError:
        pass
    os._exit(70)


def main() -> None:
    text = sys.argv[1] if len(sys.argv) > 1 else ""
    try:
        config = launch_config.decode(text)
    except launch_config.ConfigError as error:
        refuse(text, str(error))
    run_launcher(config)


if __name__ == "__main__":
    main()
