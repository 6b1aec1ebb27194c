"""What this machine lets the grader do with learner code, found once per process, and the words every report uses.

On Linux a sandbox is, in bubblewrap's terms (bubblewrap builds it, where it is installed and works;
the grader's own launcher otherwise):

    --unshare-pid --unshare-net --unshare-ipc --unshare-uts    (and --unshare-user when not root)
    --ro-bind  /usr /etc /bin /lib ...  the Python installation, the grader package, the learner's file
    --tmpfs /tmp  --dev /dev  --proc /proc  --clearenv  --die-with-parent
    one cgroup per sandbox: memory.max, pids.max, CPU time, cgroup.kill
    run as an unprivileged user when the grader is root

Where namespaces cannot be had (a container without CAP_SYS_ADMIN, a kernel that refuses user
namespaces) Landlock gives each program the same reach: the system, Python and the grader read-only,
a folder of its own, no TCP, no signal outside the sandbox, and seccomp refuses every other network
socket. Where no memory cgroup counts every process, the learner's code is kept to one process
storing nothing outside its own memory, so that what /proc says of it is all it used.
`containment()` says which level is in force, and what it cannot enforce, in words that go into
every report.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from grader.sandbox import cgroups, lockdown, seccomp
from grader.sandbox.box import Confinement, Program, Sandbox, Spec
from grader.sandbox.policy import base_env

SETTING = "GRADER_SANDBOX"   # auto (default), bubblewrap, namespaces, or off (unconfined: for debugging only)
KINDS = ("bubblewrap", "namespaces", "none")


@dataclass(frozen=True)
class Support:
    """What this machine lets the grader do, found once per process."""

    kind: str             # bubblewrap, namespaces, or none
    user: int | None      # the unprivileged uid learner code runs as (when the grader is root)
    reason: str           # why namespaces are not used, when they are not
    memory_cgroup: str = ""  # "cgroup v1" or "cgroup v2" where one counts every process's memory; "" where none
    landlock: int = 0     # the Landlock ABI that stands in for namespaces (none mode only); 0: none
    unconfined: bool = False  # GRADER_SANDBOX=off: no namespaces, and nothing refused for want of them
    no_user: str = ""     # root without namespaces, and no other uid could start this Python: why

    @property
    def namespaces(self) -> bool:
        return self.kind != "none"

    @property
    def confinement(self) -> Confinement:
        return Confinement(self.kind, self.user, landlock=bool(self.landlock))


_PROBING = threading.Lock()


def support() -> Support:
    """What this machine allows, probed once per process however many threads ask at once."""
    with _PROBING:
        return _support()


def open_sandbox(memory_bytes: int, **options: object) -> Sandbox:
    """A sandbox confined as this machine allows (options as box.Spec takes them). Ranks to be counted alone
    (`counted`) are built by the grader's own launcher where it works beside bubblewrap, whose /proc would show
    each rank the others."""
    spec = Spec(memory_bytes, **options)
    confinement = support().confinement
    if spec.counted and confinement.kind == "bubblewrap" and _own_launcher_works(confinement.user):
        confinement = Confinement("namespaces", confinement.user, confinement.landlock)
    return Sandbox(confinement, spec)


@cache
def _own_launcher_works(user: int | None) -> bool:
    with _PROBING:
        return _probe("namespaces", user) is None


def sandboxes_apart(use_cuda: bool = False) -> bool:
    """Whether two sandboxes running at once are kept from each other: each has PID, network, IPC and mount
    namespaces of its own, and what they would all reach by name is refused (sandbox/sealing.py). Only then does
    a memory-audited case, or the ring, run beside the hidden cases; where they share the host's /proc and
    network, one could hold the other's memory out of its count. Never for sandboxes that use CUDA (`use_cuda`):
    the GPU is one device they all share, its free memory seen by each."""
    return support().namespaces and not use_cuda


def probe_soon() -> None:
    """Start the probe on a thread: it waits on a sandboxed Python, while this process imports torch."""
    if _support.cache_info().currsize:
        return  # probed already in this process (a cohort or a validate grades many files)

    def probe() -> None:
        try:
            support()
        except Exception:  # noqa: BLE001  (asked again where it is needed, and reported there)
            pass

    threading.Thread(target=probe, name="grader-probe", daemon=True).start()


@cache
def _support() -> Support:
    """Probe: which sandbox starts a Python here (bubblewrap first, where installed), as which user, counted how?"""
    user = _sandbox_user() if os.geteuid() == 0 else None
    setting = os.environ.get(SETTING, "auto")
    if setting not in ("auto", "off", *KINDS):
        setting = "auto"
    memory = cgroups.memory_kind()
    reasons = []
    if setting == "off":
        reasons.append(f"{SETTING}=off")
    elif not sys.platform.startswith("linux"):
        reasons.append(f"no namespaces on {sys.platform}")
    else:
        wanted = [setting] if setting in KINDS[:2] else (["bubblewrap"] if shutil.which("bwrap") else []) + ["namespaces"]
        for kind in wanted:
            problem = _probe(kind, user)
            if problem is None:
                return Support(kind, user, "", memory)
            reasons.append(f"{kind}: {problem}")
    # No namespaces (a container without CAP_SYS_ADMIN, a kernel that forbids user namespaces): never run learner
    # code as root, which needs a Python installation another user can read.
    no_user = ""
    if user is not None and (problem := _probe("none", user)) is not None:
        user, no_user = None, problem
    landlock = lockdown.landlock_abi()
    return Support("none", user, "; ".join(reasons), memory, landlock, setting == "off", no_user)


def _clear() -> None:
    _support.cache_clear()
    _own_launcher_works.cache_clear()


support.cache_clear = _clear  # type: ignore[attr-defined]  (tests probe again)


def _sandbox_user() -> int:
    # One uid per grader process, far from real accounts: sandboxes cannot signal each other's processes.
    return 200_000 + secrets.randbelow(100_000)


def _probe(kind: str, user: int | None) -> str | None:
    """None when a sandbox of this kind runs the grader's Python; else what went wrong."""
    sandbox = Sandbox(Confinement(kind, user), Spec(512 << 20, processes=16))
    read, write = os.pipe()
    try:
        sandbox.start([Program([sys.executable, "-I", "-S", "-c", "pass"], base_env(), {1: write, 2: write})], write)
        os.close(write)
        write = -1
        code = sandbox.wait_exit(0, 20.0)
        output = _read_all(read)
        if code == "exit status 0":
            return None
        return sandbox.error or (output.decode(errors="replace").strip().splitlines() or [code or "no answer"])[-1]
    except OSError as error:
        return str(error)
    finally:
        if write >= 0:
            os.close(write)
        os.close(read)
        sandbox.close()


def _read_all(fd: int) -> bytes:
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 1 << 16)
    except OSError:
        return b""


def containment() -> str:
    """One line for reports: which level confines learner code on this machine, and what it cannot enforce there."""
    found = support()
    who = f"as uid {found.user}" if found.user is not None else ("as root" if os.geteuid() == 0 else "as your user")
    counted = (f"memory, processes and CPU counted by {found.memory_cgroup}" if found.memory_cgroup else
               "no cgroup: your code runs as one process storing nothing outside its memory (no child, file, socket "
               "or pipe), its memory and CPU read from /proc")
    kinds = {"cpu_only"} | ({"single_process"} if not found.memory_cgroup else set())
    filtered = seccomp.for_sandbox(frozenset(kinds))[1]
    if found.namespaces:
        user_ns = "" if found.user is not None and found.kind == "namespaces" else ", user"
        tool = "bubblewrap" if found.kind == "bubblewrap" else "namespaces"
        return (f"sandbox ({tool}): pid, mount, net, ipc, uts{user_ns} namespaces, read-only view, private /tmp, "
                f"no network; {counted}; {filtered}; {who}")
    if not sys.platform.startswith("linux"):
        return (f"no sandbox ({found.reason}): own process tree and limits only, {who}; not enforced here: "
                f"the course and the network are within reach, and memory-audited cases are not judged")
    if found.landlock:
        return (f"no sandbox ({found.reason}): Landlock (ABI {found.landlock}): the system, Python and the grader "
                f"read-only, a folder of its own, no network, no signal outside; {counted}; {filtered}; {who}")
    # The machine's network is out of reach here too: seccomp refuses every IPv4 and IPv6 socket but a ring's.
    reach = ("the course (where its files are readable by every user) within reach"
             if found.user is not None else "your code runs as you: the course within its reach")
    return f"no sandbox ({found.reason}, no Landlock): own process tree and limits only; {reach}; {counted}; {filtered}; {who}"


def refusal(course: list[Path], confined: bool) -> str:
    """Why learner code may not run here at all ('' where it may): it would run as root with nothing to confine it,
    or could read the course (`course`: the trusted files beside the grader's own) or, for a cohort or an
    autograder (`confined`), reach the results as the grader's own user."""
    found = support()
    if found.namespaces or found.unconfined:
        return ""
    if os.geteuid() == 0 and found.user is None:
        return (f"learner code would run as root here, with no namespace to confine it: no other user can start "
                f"this Python ({found.no_user}); make the Python installation readable by every user")
    if found.landlock:
        return ""
    if found.user is not None:
        readable = [path for path in course if _readable_by_others(path)]
        if readable:
            return (f"{len(readable)} course files ({readable[0]} among them) can be read by learner code here (no "
                    f"namespaces, no Landlock: it runs as uid {found.user}, and they are readable by every user); "
                    f"make the course readable by the grader's user only (chmod -R go-rwx on its exercises/ and "
                    f"solutions/)")
        return ""
    if confined:
        return ("nothing here keeps learner code from the course and the results (no namespaces, no Landlock, and it "
                "would run as you): install bubblewrap, allow unprivileged user namespaces, or grade as root")
    return ""


def _readable_by_others(path: Path) -> bool:
    """Whether any user may read `path`: it is readable by others and every folder above it lets others through."""
    try:
        if not path.stat().st_mode & 0o004:
            return False
        return all(folder.stat().st_mode & 0o001 for folder in path.resolve().parents)
    except OSError:
        return False
