"""A learner program's own last steps before exec: limits, user, no capabilities, a fresh keyring, seccomp, Landlock.

Standard library only, as sandbox/boot.py, which runs these in each program's process (by path, or
forked from the zygote); nothing here returns an error to learner code: a step that must hold and
fails stops the program before anything of the learner's runs. Every unit of the launcher makes its
C-library calls through `call` and `prctl` here, and finds a system call's number with `syscall_number`
(syscalls.json beside this file, written from libseccomp).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import sys
from collections.abc import Iterable

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NAME, PR_SET_SECCOMP = 1, 4, 15, 22
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS, SECCOMP_MODE_FILTER = 36, 38, 2
KEYCTL_JOIN_SESSION_KEYRING = 1
SYS_LANDLOCK = (444, 445, 446)  # create_ruleset, add_rule, restrict_self: one number on every architecture
LINUX = sys.platform.startswith("linux")
NUMBERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "syscalls.json")

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def call(result: int, what: str) -> None:
    """Raise OSError, naming `what`, where a C-library call returned other than 0."""
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def prctl(option: int, value: int) -> None:
    """prctl(option, value), checked; elsewhere than Linux nothing (the launcher gives what it can there)."""
    if LINUX:
        call(libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl {option}")


def _numbers() -> dict[str, int | None] | None:
    """This architecture's numbers from syscalls.json ({} for one it does not number); None if it cannot be read."""
    try:
        with open(NUMBERS, encoding="utf-8") as handle:
            return json.load(handle)["arches"].get(os.uname().machine, {}).get("numbers", {})
    except (OSError, ValueError, KeyError, AttributeError):
        return None


_NUMBERED = _numbers()  # read once, before any change of user (and once in the zygote, for every sandbox)


def syscall_number(name: str) -> int | None:
    """The number of system call `name` here; None on an architecture syscalls.json does not number."""
    if _NUMBERED is None:
        raise OSError(errno.ENOENT, f"{NUMBERS} cannot be read: the package is incomplete")
    return _NUMBERED.get(name)


def set_limits(limits: dict[str, int]) -> None:
    """Each rlimit named (CORE, FSIZE, NPROC, AS, NOFILE: launch_config.RLIMITS) set to its value, soft and hard."""
    for name, value in limits.items():
        try:
            resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))
        except (ValueError, OSError):
            pass


def become(user: int | None) -> None:
    """The sandbox's unprivileged uid, when the launcher is root."""
    if user is not None and os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(user, user, user)
        os.setresuid(user, user, user)


def drop_capabilities() -> None:
    """No capability at all, even where a program forked (not exec'd) from a launcher that holds some in the
    sandbox's user namespace (the grader not root): else it could remount the view's binds writable."""
    if not LINUX:
        return
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()                 # effective, permitted, inheritable: twice 32 bits, all 0
    call(libc.capset(header, data), "capset")
    call(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def join_fresh_keyring() -> None:
    """A new anonymous session keyring: nothing of the staff's login session, inherited through fork, is
    possessed any more (keys are not namespaced). A kernel without keys (ENOSYS) or a container that already
    refuses keyctl (EPERM) leaves nothing to leave; the filter then refuses every key call."""
    number = syscall_number("keyctl") if LINUX else None
    if number is not None:
        libc.syscall(ctypes.c_long(number), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), ctypes.c_void_p(None))


def install_filter(program: bytes) -> None:
    """A compiled seccomp program (sock_filter[] bytes, from sandbox/seccomp.py), installed as it came."""
    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    if not LINUX or len(program) % 8 or not 0 < len(program) <= 8 * 4096:
        raise OSError(errno.EINVAL, "the seccomp program is malformed")
    code = ctypes.create_string_buffer(program, len(program))
    call(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
                      ctypes.byref(Program(len(program) // 8, ctypes.cast(code, ctypes.c_void_p))), 0, 0), "seccomp")


# Landlock: what the program may reach on the file system, the network and by signal, where no mount namespace
# gives it a view of its own. Rights per ABI version (the kernel's uapi/linux/landlock.h).
_FS_RIGHTS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
_READ = (1 << 0) | (1 << 2) | (1 << 3)  # execute, read a file, read a directory
_DEVICE_WRITE = 1 << 1  # write a file: /dev/null
_NET_TCP = (1 << 0) | (1 << 1)  # bind and connect (ABI 4)
_SCOPES = (1 << 0) | (1 << 1)  # abstract unix sockets and signals outside the domain (ABI 6)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (or a container's filter refuses it)."""
    if not LINUX:
        return 0
    found = libc.syscall(ctypes.c_long(SYS_LANDLOCK[0]), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(found), 0)


def landlock(read: Iterable[str], write: Iterable[str], devices: Iterable[str], network: bool) -> None:
    """Restrict this process to reading `read`, writing in `write` (its own folders) and `devices`, and, unless
    `network`, no TCP at all; signals and abstract sockets stay within the sandbox. Raises if it cannot hold."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError(errno.EOPNOTSUPP, "Landlock is not available")
    fs = _FS_RIGHTS[min(abi, 5)]
    fields = [fs, 0 if network or abi < 4 else _NET_TCP, _SCOPES if abi >= 6 else 0]
    attribute = (ctypes.c_uint64 * 3)(*fields)
    size = 8 * (3 if abi >= 6 else 2 if abi >= 4 else 1)
    ruleset = libc.syscall(ctypes.c_long(SYS_LANDLOCK[0]), ctypes.byref(attribute), ctypes.c_size_t(size),
                            ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        for paths, rights in ((read, _READ), (write, fs), (devices, _READ | _DEVICE_WRITE)):
            for path in paths:
                _allow(int(ruleset), path, rights & fs)
        call(libc.syscall(ctypes.c_long(SYS_LANDLOCK[2]), ctypes.c_int(ruleset), ctypes.c_uint32(0)),
              "landlock_restrict_self")
    finally:
        os.close(ruleset)


def landlock_domain() -> None:
    """A Landlock domain of this process's own that restricts no file: another process's /proc (with hidepid) and
    ptrace stay out of its reach (Landlock ABI 1), and so do its signals and abstract unix sockets (ABI 6). Nothing
    where Landlock is missing."""
    abi = landlock_abi()
    if abi < 1:
        return
    fs = _FS_RIGHTS[min(abi, 5)]
    attribute = (ctypes.c_uint64 * 3)(fs, 0, _SCOPES if abi >= 6 else 0)
    ruleset = libc.syscall(ctypes.c_long(SYS_LANDLOCK[0]), ctypes.byref(attribute),
                           ctypes.c_size_t(8 * (3 if abi >= 6 else 2 if abi >= 4 else 1)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        _allow(int(ruleset), "/", fs)  # every right beneath the root: a domain that only scopes
        call(libc.syscall(ctypes.c_long(SYS_LANDLOCK[2]), ctypes.c_int(ruleset), ctypes.c_uint32(0)),
             "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, rights: int) -> None:
    try:
        descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # not on this machine: nothing to allow
    try:
        if not os.path.isdir(path):
            rights &= (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)  # a file takes file rights only
        # struct landlock_path_beneath_attr, packed: __u64 allowed_access; __s32 parent_fd.
        attribute = ctypes.create_string_buffer(rights.to_bytes(8, sys.byteorder) + descriptor.to_bytes(4, sys.byteorder, signed=True))
        call(libc.syscall(ctypes.c_long(SYS_LANDLOCK[1]), ctypes.c_int(ruleset), ctypes.c_int(1), attribute,
                            ctypes.c_uint32(0)), f"landlock rule for {path}")
    finally:
        os.close(descriptor)
