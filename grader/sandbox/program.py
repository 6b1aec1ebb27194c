"""One program's own process, from init's fork to exec: its descriptors, its /tmp, limits, user, and lockdown.

Standard library only, loaded by path beside sandbox/boot.py. Nothing here returns to init: the
program execs (or, forked from the zygote, runs the grader's entry point already imported), or it
exits 127 with the reason on its own stderr, before any learner code runs.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys

if __package__:
    from grader.sandbox import launch_config, lockdown, mounts, namespaces
else:  # run by path, beside boot.py
    import launch_config
    import lockdown
    import mounts
    import namespaces


def start(program: launch_config.ProgramConfig, index: int, config: launch_config.LaunchConfig) -> int:
    """Fork program `index` of the sandbox (a launch_config.ProgramConfig): its pid, in init."""
    pid = os.fork()
    if pid:
        return pid
    try:
        _enter(program, index, config)
    except BaseException as error:  # noqa: BLE001
        message = f"could not start {program.argv[0]}: {type(error).__name__}: {error}\n"
        try:
            os.write(2, message.encode())
        except OSError:
            pass
    os._exit(127)


def _enter(program: launch_config.ProgramConfig, index: int, config: launch_config.LaunchConfig) -> None:
    """In the program's own process: descriptors, limits, user, then exec; nothing here returns."""
    lockdown.prctl(lockdown.PR_SET_DUMPABLE, 1)
    # Move every source out of the way first, so that one mapping cannot clobber another's source.
    moved = {target: os.dup(source) for target, source in program.fds.items()}
    for target, source in moved.items():
        os.dup2(source, target, inheritable=True)
    close_all_but(set(program.fds))
    if config.private_tmp and config.mode != "none" and namespaces.own_mount_namespace():
        # Nothing passes between programs through files. Where no mount namespace of its own can be had, the
        # programs share /tmp; the grader's report says what the sandbox holds.
        mounts.private_tmp(config.mounts, shm=not config.shared_shm)
    os.chdir(program.cwd)
    os.setsid()
    limits = dict(config.rlimits)
    if "AS" in limits and config.preloaded and program.entry:
        # Forked from the zygote, torch already imported: the learner's share counts from this process's size.
        now = _address_space()
        if now:
            limits["AS"] = now + config.address_space_above
    lockdown.set_limits(limits)
    user = config.user
    if user is not None and config.separate_users:
        user += index  # programs of one sandbox cannot signal or read each other
    lockdown.become(user)
    lockdown.drop_capabilities()  # and no new privileges, ever
    lockdown.join_fresh_keyring()  # before the filter, which refuses every key call
    if config.landlock is not None:
        reach = config.landlock
        lockdown.landlock(reach.read, reach.write, reach.devices, reach.network)
    elif config.scoped:
        lockdown.landlock_domain()  # signals, abstract unix sockets and /proc stay within this program's processes
    if config.seccomp:
        lockdown.install_filter(config.seccomp)
    if config.mode == "none":
        lockdown.prctl(lockdown.PR_SET_PDEATHSIG, signal.SIGKILL)
    if config.preloaded and program.entry:
        _run_entry(program)
    os.execve(program.argv[0], program.argv, program.env)


def _address_space() -> int:
    """This process's virtual address space in bytes (VmSize); 0 where /proc does not say."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _run_entry(program: launch_config.ProgramConfig) -> None:
    """In a process forked from the zygote: the program's Python entry point, already imported, in place of exec."""
    os.environ.clear()
    os.environ.update(program.env)
    sys.argv = [program.entry, *program.args]
    lockdown.libc.prctl(lockdown.PR_SET_NAME, ctypes.c_char_p(program.name.encode()[:15]), 0, 0, 0)  # `ps`
    code = 0
    try:
        sys.modules[program.entry].main(json.loads(program.args[-1]))
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # noqa: BLE001  (as a crashed interpreter would: a non-zero exit)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        pass
    os._exit(code)


def close_all_but(keep: set[int] | tuple[int, ...]) -> None:
    """Close every descriptor above 2 but those in `keep`."""
    for fd in _open_fds():
        if fd > 2 and fd not in keep:
            close(fd)


def _open_fds() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 1024))


def close(fd: int) -> None:
    """Close `fd`, if it is open."""
    try:
        os.close(fd)
    except OSError:
        pass
