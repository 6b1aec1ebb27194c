"""What keeps sandboxes from reaching each other through kernel objects they could all name, and what seals the ranks.

Two sandboxes running at once (the hidden cases' worker and a visible one, a worker beside a ring's
ranks, two learners of one cohort) must share nothing their code can write and the other read. Their
own namespaces (PID, mount, network, IPC, UTS) scope most kernel objects; what every sandbox still
reaches by name (the read-only files of the system, Python and the grader, which locks, leases and
inotify would turn into channels; the IPC namespace of the machine without namespaces; sockets of
families that cross network namespaces) is refused by the seccomp policy (seccomp.json), each kind of
sandbox named here. Each program also gets a Landlock domain of its own (`scoped`), so that signals,
abstract unix sockets and another process's /proc (mounted with hidepid) stay within its own processes.

The ranks of one distributed suite share a sandbox, and the traffic rule counts what they move over its
loopback: where every other channel between them is closed (`unsealed` says why not), that count is all
they exchanged; elsewhere the rule is not judged. Without namespaces, ranks use the machine's own
loopback: one such sandbox at a time on the machine (HostLoopback), so that no rank reaches another
learner's.
"""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
from pathlib import Path

from grader.sandbox import lockdown

SCOPES_ABI = 6  # Landlock's scopes (signals, abstract unix sockets): Linux 6.12
LOCK_FILE = "grader-host-loopback.lock"


def seccomp_kinds(namespaces: bool, single_process: bool, use_cuda: bool, counted: bool,
                  loopback: bool) -> frozenset[str]:
    """The kinds (seccomp.KINDS) whose entries of seccomp.json apply to a sandbox like this."""
    kinds = set()
    if single_process:
        kinds.add("single_process")
    if not use_cuda:
        kinds.add("cpu_only")
        if counted and namespaces:
            kinds.add("counted_ranks")  # gloo's TCP on the loopback is their only link
    if loopback and not namespaces:
        kinds.add("file_store")  # ranks without namespaces meet through a file torch's FileStore locks
    if not loopback and not namespaces:
        kinds.add("host_network")  # the machine's own network: no socket of IPv4 or IPv6 at all
    return frozenset(kinds)


def scoped(namespaces: bool, use_cuda: bool) -> bool:
    """Whether each program gets a Landlock domain of its own where namespaces confine it (without them, the
    Landlock reach does). Not under CUDA: NCCL's ranks meet on abstract unix sockets, and no two CUDA sandboxes
    run at once (machine.sandboxes_apart)."""
    return namespaces and not use_cuda and lockdown.landlock_abi() >= 1


def unsealed(kind: str, use_cuda: bool, filtered: bool, own_uids: bool) -> str:
    """Why the ranks of one sandbox could exchange data out of their loopback's count ('' where nothing but the
    loopback joins them). `own_uids`: each rank runs as a uid of its own (the grader is root)."""
    if kind == "none":
        return "the ranks have no network namespace of their own: they share the machine's loopback and files"
    if kind == "bubblewrap":
        return "bubblewrap's /proc shows each rank the others (no hidepid), and the grader's own launcher is refused"
    if use_cuda:
        return ("NCCL joins CUDA ranks through shared memory, unix sockets and the GPUs themselves, out of the "
                "loopback's count")
    if not filtered:
        return "no seccomp filter refuses the other channels here"
    if not own_uids and lockdown.landlock_abi() < SCOPES_ABI:
        return (f"the ranks run as one uid, and signals between them are scoped only by Landlock ABI {SCOPES_ABI} "
                f"(Linux 6.12; this kernel has {lockdown.landlock_abi()})")
    return ""


class HostLoopback:
    """Held while ranks use the machine's own loopback (no namespaces): no two such sandboxes, of any learner graded
    on this machine, run at once. A file the grader's processes lock; learner code reaches neither it nor flock
    on it (Landlock, seccomp)."""

    def __init__(self) -> None:
        self.fd = -1

    def acquire(self) -> bool:
        """Wait for the machine's loopback; False where the lock file cannot be had (another user's, unreadable)."""
        if not sys.platform.startswith("linux"):
            return False
        path = Path(tempfile.gettempdir()) / LOCK_FILE
        try:
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o666)
            if os.fstat(self.fd).st_uid == os.geteuid():
                os.fchmod(self.fd, 0o666)  # every user's grader on this machine waits on the same file
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            return True
        except OSError:
            self.release()
            return False

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # the lock goes with the descriptor
            self.fd = -1
