"""The learner processes' seccomp policy, compiled from its data by libseccomp, or assembled from it without libseccomp.

Each check runs in a child interpreter: a filter can never be taken off the process that installed it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO

from grader.sandbox import seccomp, seccomp_bpf

# The child names system calls by their x86_64 numbers.
pytestmark = pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86_64 system call numbers")

try:
    seccomp.compiled()
    MISSING = ""
except seccomp.Unavailable as why:
    MISSING = str(why)

# Runs in a child: installs the filter given (hex), then tries each call.
CHILD = r"""
import ctypes, errno, json, os, socket, sys, threading
sys.path.insert(0, sys.argv[1])
from grader.sandbox import lockdown
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
KEY_SPEC_SESSION_KEYRING = -3
libc.syscall(248, b"user", b"staff-token", b"stand-in secret", 15, KEY_SPEC_SESSION_KEYRING)  # add_key
def search():  # keyctl(KEYCTL_SEARCH, the session keyring, "user", "staff-token", 0)
    ctypes.set_errno(0)
    found = libc.syscall(250, 10, KEY_SPEC_SESSION_KEYRING, b"user", b"staff-token", 0)
    return "found" if found >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
key_before = search()
lockdown.join_fresh_keyring()
key_after = search()
libc.prctl(38, 1, 0, 0, 0)
lockdown.install_filter(bytes.fromhex(sys.argv[2]))
NR = {"keyctl": 250, "add_key": 248, "request_key": 249, "unshare": 272, "setns": 308, "ptrace": 101,
      "process_vm_readv": 310, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "mount": 165,
      "io_uring_setup": 425, "clone3": 435, "mremap": 25}
def call(name, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(NR[name]), *[ctypes.c_long(a) for a in args])
    return errno.errorcode.get(ctypes.get_errno(), "?") if result == -1 else "ok"
out = {name: call(name, *args) for name, args in {
    "keyctl": (0, KEY_SPEC_SESSION_KEYRING, 0), "add_key": (0, 0, 0, 0, 0), "request_key": (0, 0, 0, 0),
    "unshare": (0x10000000,), "setns": (0, 0), "ptrace": (0, 0, 0, 0), "process_vm_readv": (1, 0, 0, 0, 0, 0),
    "bpf": (0, 0, 0), "perf_event_open": (0, 0, -1, -1, 0), "userfaultfd": (0,), "mount": (0, 0, 0, 0, 0),
    "io_uring_setup": (1, 0), "clone3": (0, 0), "mremap": (0, 4096, 8192, 1, 0)}.items()}
ran = []
thread = threading.Thread(target=lambda: ran.append(1))
thread.start(); thread.join()
out["thread"] = "ok" if ran else "failed"
out["key_before"], out["key_after"] = key_before, key_after
for name, attempt in (("fork", os.fork), ("socket", socket.socket), ("pipe", os.pipe)):
    try:
        made = attempt()
        if name == "fork" and made == 0:
            os._exit(0)
        out[name] = "ok"
    except OSError as error:
        out[name] = errno.errorcode.get(error.errno, "?")
import torch
out["torch"] = float((torch.ones(64, 64, dtype=torch.float64) @ torch.ones(64, 64, dtype=torch.float64)).sum())
print(json.dumps(out))
"""
REFUSED = ("keyctl", "add_key", "request_key", "unshare", "setns", "ptrace", "process_vm_readv", "bpf",
           "perf_event_open", "userfaultfd", "mount", "io_uring_setup")


def under(which: str) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(REPO), which], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(bool(MISSING), reason=MISSING or "libseccomp present")
def test_the_policy_refuses_what_docker_refuses_and_keeps_threads_and_torch() -> None:
    found = under(seccomp.compiled(frozenset({"cpu_only"})).hex())
    assert {name: found[name] for name in REFUSED} == dict.fromkeys(REFUSED, "EPERM")
    assert found["clone3"] == "ENOSYS" and found["mremap"] == "EPERM"
    assert (found["thread"], found["fork"], found["socket"], found["pipe"], found["torch"]) == (
        "ok", "ok", "ok", "ok", 64.0 ** 3)


@pytest.mark.skipif(bool(MISSING), reason=MISSING or "libseccomp present")
def test_a_single_process_starts_nothing_and_stores_nothing_outside_itself_but_threads_run() -> None:
    found = under(seccomp.compiled(frozenset({"single_process"})).hex())
    assert (found["fork"], found["socket"], found["pipe"]) == ("EPERM", "EPERM", "EPERM")
    assert found["thread"] == "ok" and found["torch"] == 64.0 ** 3
    assert found["mremap"] != "EPERM"  # a CUDA sandbox's driver may need it; only cpu_only refuses it


@pytest.mark.parametrize("kinds", [frozenset({"cpu_only"}), frozenset({"single_process", "cpu_only"})],
                         ids=["cpu_only", "single_process"])
def test_without_libseccomp_the_same_policy_refuses_the_same_calls(kinds) -> None:
    """The program assembled from seccomp.json and syscalls.json (tests/test_seccomp_fallback.py): what the
    launcher's own filter refused before it was derived, and everything else libseccomp's program refuses."""
    found = under(seccomp_bpf.assemble(seccomp.load_policy(), kinds, "x86_64").hex())
    assert (found["unshare"], found["keyctl"], found["add_key"], found["ptrace"]) == ("EPERM",) * 4
    assert (found["clone3"], found["thread"], found["torch"]) == ("ENOSYS", "ok", 64.0 ** 3)
    single = "single_process" in kinds
    assert (found["fork"], found["socket"], found["pipe"]) == (("EPERM",) * 3 if single else ("ok",) * 3)
    if not MISSING:
        assert found == under(seccomp.compiled(kinds).hex())


@pytest.mark.skipif(bool(MISSING), reason=MISSING or "libseccomp present")
def test_a_fresh_keyring_holds_nothing_of_the_parents() -> None:
    """The staff's key in the session keyring a program inherits is found before the join, and not after it."""
    found = under(seccomp.compiled().hex())
    assert (found["key_before"], found["key_after"]) == ("found", "ENOKEY")
    assert found["keyctl"] == "EPERM"  # and every key call is refused from then on


def test_a_policy_with_an_unknown_word_is_refused(tmp_path) -> None:
    policy = json.loads(seccomp.POLICY.read_text())
    policy["syscalls"][0]["when"] = "sometimes"
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    with pytest.raises(ValueError, match="unknown `when`"):
        seccomp.load_policy(tmp_path / "policy.json")


# Runs in a child: installs the filter given (hex), then tries what two sandboxes could both name.
SHARED = r"""
import ctypes, errno, fcntl, json, os, socket, sys
sys.path.insert(0, sys.argv[1])
from grader.sandbox import lockdown
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.prctl(38, 1, 0, 0, 0)
lockdown.install_filter(bytes.fromhex(sys.argv[2]))
fd = os.open(os.__file__, os.O_RDONLY)
lock = ctypes.create_string_buffer(32)  # struct flock: a read lock on byte 0
def raw(number, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    if result >= 0 and number == 41:
        os.close(result)
    return errno.errorcode.get(ctypes.get_errno(), "?") if result == -1 else "ok"
upper = 1 << 32
print(json.dumps({
    "shmget": raw(29, 0, 4096, 0o1600), "semget": raw(64, 0, 1, 0o1600), "msgget": raw(68, 0, 0o1600),
    "mq_open": raw(240, ctypes.addressof(ctypes.create_string_buffer(b"/q")), os.O_CREAT | os.O_RDWR, 0o600, 0),
    "inotify_init1": raw(294, 0), "flock": raw(73, fd, fcntl.LOCK_SH),
    "F_OFD_SETLK": raw(72, fd, 37, ctypes.addressof(lock)),
    "F_OFD_SETLK upper": raw(72, fd, upper | 37, ctypes.addressof(lock)),
    "F_GETLK": raw(72, fd, 5, ctypes.addressof(lock)), "F_SETLEASE": raw(72, fd, 1024, 0),
    "F_NOTIFY": raw(72, fd, 1026, 1),
    "F_GETFD": raw(72, fd, 1, 0),
    "unix": raw(41, 1, 1, 0), "unix upper": raw(41, upper | 1, 1, 0), "inet": raw(41, 2, 1, 0),
    "inet6": raw(41, 10, 2, 0),
    "vsock": raw(41, 40, 1, 0), "packet": raw(41, 17, 3, 0), "appletalk": raw(41, 5, 2, 0),
    "netlink route": raw(41, 16, 3, 0), "netlink usersock": raw(41, 16, 3, 2),
}))
"""


def shared_under(kinds: frozenset[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", SHARED, str(REPO), seccomp.compiled(kinds).hex()],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(bool(MISSING), reason=MISSING or "libseccomp present")
def test_what_two_sandboxes_could_both_name_is_refused_and_the_rest_kept() -> None:
    """System V and POSIX IPC, inotify, leases, dnotify, locks and the socket families that cross sandboxes; an
    argument's upper half changes nothing of that (the kernel reads 32 bits)."""
    cpu = shared_under(frozenset({"cpu_only"}))
    refused = ("shmget", "semget", "msgget", "mq_open", "inotify_init1", "flock", "F_OFD_SETLK", "F_OFD_SETLK upper",
               "F_GETLK", "F_SETLEASE", "F_NOTIFY", "unix upper", "vsock", "packet", "appletalk", "netlink usersock")
    assert {name: cpu[name] for name in refused} == dict.fromkeys(refused, "EPERM")
    assert {name: cpu[name] for name in ("F_GETFD", "unix", "inet", "inet6", "netlink route")} == dict.fromkeys(
        ("F_GETFD", "unix", "inet", "inet6", "netlink route"), "ok")
    ranks = shared_under(frozenset({"cpu_only", "counted_ranks"}))
    assert (ranks["unix"], ranks["inet"], ranks["netlink route"]) == ("EPERM", "ok", "ok")
    store = shared_under(frozenset({"cpu_only", "file_store"}))  # ranks without namespaces: torch's FileStore
    assert (store["flock"], store["F_OFD_SETLK"], store["unix"]) == ("ok", "EPERM", "ok")
    cuda = shared_under(frozenset())  # a CUDA driver's sandbox: its locks and netlink stay, IPC does not
    assert (cuda["flock"], cuda["F_OFD_SETLK"], cuda["netlink usersock"]) == ("ok", "ok", "ok")
    assert (cuda["shmget"], cuda["inotify_init1"], cuda["vsock"], cuda["F_SETLEASE"]) == ("EPERM",) * 4
    alone = shared_under(frozenset({"cpu_only", "host_network"}))  # no namespaces, no ring: the machine's network
    assert (alone["inet"], alone["inet6"], alone["unix"]) == ("EPERM", "EPERM", "ok")
