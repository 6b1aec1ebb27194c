"""The sandbox's namespaces: user, mount, PID, network (its loopback), IPC and UTS (its hostname), unshared.

Standard library only, loaded by path beside sandbox/boot.py. The launcher unshares them all before
it forks init (`unshare_sandbox`); init names the host and brings up the loopback; a program kept
apart from the others of its sandbox takes a mount namespace of its own (`own_mount_namespace`).
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct

if __package__:
    from grader.sandbox import lockdown
else:  # run by path, beside boot.py
    import lockdown

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
SANDBOX = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
HOSTNAME = "sandbox"


def unshare_sandbox() -> None:
    """The mount, PID, network, IPC and UTS namespaces of a new sandbox, in a user namespace when not root."""
    root = os.geteuid() == 0
    uid, gid = os.geteuid(), os.getegid()
    if not root:
        # Forked from the zygote, the launcher is non-dumpable as it is, and the kernel then gives this
        # process's /proc files to the host's root: the maps below could not be written. Dumpable only
        # while it writes them, before any learner process exists (init and each program set their own).
        lockdown.prctl(lockdown.PR_SET_DUMPABLE, 1)
    lockdown.call(lockdown.libc.unshare(SANDBOX if root else SANDBOX | CLONE_NEWUSER), "unshare")
    if not root:
        _map_own_user(uid, gid)
        lockdown.prctl(lockdown.PR_SET_DUMPABLE, 0)


def own_mount_namespace() -> bool:
    """A mount namespace of this process's own; under bubblewrap (no capabilities left) a nested user namespace
    gives the right. False where neither can be had."""
    uid, gid = os.geteuid(), os.getegid()
    if lockdown.libc.unshare(CLONE_NEWNS) == 0:
        return True
    if lockdown.libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        return False
    _map_own_user(uid, gid)
    return True


def _map_own_user(uid: int, gid: int) -> None:
    """Map our own user to itself: the only mapping an unprivileged user may write."""
    _write_file("/proc/self/setgroups", "deny")
    _write_file("/proc/self/uid_map", f"{uid} {uid} 1")
    _write_file("/proc/self/gid_map", f"{gid} {gid} 1")


def _write_file(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def set_hostname(name: str = HOSTNAME) -> None:
    """The UTS namespace's host name."""
    data = name.encode()
    lockdown.call(lockdown.libc.sethostname(data, len(data)), "sethostname")


def loopback_up() -> None:
    """A new network namespace has only `lo`, and it is down: the ranks of a ring talk over it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sH22s", b"lo", 0, b"")
        flags = struct.unpack("16sH22s", fcntl.ioctl(probe.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe.fileno(), SIOCSIFFLAGS, struct.pack("16sH22s", b"lo", flags | IFF_UP, b""))


def loopback_bytes() -> int:
    """Bytes received on this network namespace's loopback so far; -1 where /proc does not say."""
    try:
        with open("/proc/self/net/dev") as handle:
            for line in handle:
                name, _, numbers = line.partition(":")
                if name.strip() == "lo":
                    return int(numbers.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return -1
