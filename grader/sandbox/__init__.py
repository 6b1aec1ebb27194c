"""Learner processes in a sandbox: what it is made of on this machine, and one sandbox's life from start to kill.

On Linux a sandbox is, in bubblewrap's terms (and bubblewrap builds it, where it is installed and
works; the grader's own launcher otherwise):

    --unshare-pid --unshare-net --unshare-ipc --unshare-uts    (and --unshare-user when not root)
    --ro-bind  /usr /etc /bin /lib ...  the Python installation, the grader package, the learner's file
    --tmpfs /tmp  --dev /dev  --proc /proc  --clearenv  --die-with-parent
    one cgroup per sandbox: memory.max, pids.max, CPU time, cgroup.kill
    run as an unprivileged user when the grader is root

Elsewhere (macOS, or a kernel or container that forbids namespaces) the learner's programs run
unconfined but still with their own limits, environment and process tree; `containment()` says
which is in force, in words that go into every report.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from grader import PACKAGE
from grader.sandbox import cgroups, proctree, view, zygote
from grader.sandbox.policy import FILE_BYTES, TMP_BYTES, base_env

BOOT = PACKAGE / "sandbox" / "boot.py"  # run by path: stdlib only
SETTING = "GRADER_SANDBOX"   # auto (default), bubblewrap, namespaces, or off (unconfined: for debugging only)
KINDS = ("bubblewrap", "namespaces", "none")


@dataclass
class Program:
    """One process to start in a sandbox: its command, environment and descriptors."""

    argv: list[str]
    env: dict[str, str]
    fds: dict[int, int]  # descriptor number in the program -> descriptor in this process
    cwd: str = "/tmp"


@dataclass(frozen=True)
class Support:
    """What this machine lets the grader do, found once per process."""

    kind: str             # bubblewrap, namespaces, or none
    user: int | None      # the unprivileged uid learner code runs as (when the grader is root)
    reason: str           # why namespaces are not used, when they are not

    @property
    def namespaces(self) -> bool:
        return self.kind != "none"


_PROBING = threading.Lock()


def support() -> Support:
    """What this machine allows, probed once per process however many threads ask at once."""
    with _PROBING:
        return _support()


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
    """Probe: which sandbox starts a Python here (bubblewrap first, where installed), and as which user?"""
    user = _sandbox_user() if os.geteuid() == 0 else None
    setting = os.environ.get(SETTING, "auto")
    if setting not in ("auto", "off", *KINDS):
        setting = "auto"
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
                return Support(kind, user, "")
            reasons.append(f"{kind}: {problem}")
    # No namespaces (a container without CAP_SYS_ADMIN, a kernel that forbids user namespaces): at least
    # never run learner code as root, if the Python installation is readable by another user.
    if user is not None and _probe("none", user) is not None:
        user = None
    return Support("none", user, "; ".join(reasons))


support.cache_clear = _support.cache_clear  # type: ignore[attr-defined]  (tests probe again)


def _sandbox_user() -> int:
    # One uid per grader process, far from real accounts: sandboxes cannot signal each other's processes.
    return 200_000 + secrets.randbelow(100_000)


def _probe(kind: str, user: int | None) -> str | None:
    """None when a sandbox of this kind runs the grader's Python; else what went wrong."""
    sandbox = Sandbox(memory_bytes=512 << 20, processes=16, force=(kind, user))
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
    """One line for reports: what confines learner code on this machine."""
    found = support()
    who = f"as uid {found.user}" if found.user is not None else (
        "as root" if os.geteuid() == 0 else "as your user")
    if found.namespaces:
        user_ns = "" if found.user is not None and found.kind == "namespaces" else ", user"
        tool = "bubblewrap" if found.kind == "bubblewrap" else "namespaces"
        return (f"sandbox ({tool}): pid, mount, net, ipc, uts{user_ns} namespaces, read-only view, private /tmp, "
                f"no network, {who}")
    return f"no sandbox ({found.reason}): own process tree and limits only, {who}"


class Sandbox:
    """One sandbox: its programs share one mount view, PID and network namespace, and one set of limits."""

    def __init__(self, memory_bytes: int, processes: int = 256, use_cuda: bool = False, loopback: bool = False,
                 hide: tuple[Path, ...] = (), force: tuple[str, int | None] | None = None,
                 apart: bool = False) -> None:
        """`apart`: each program gets a /tmp of its own and, when the grader is root, a uid of its own, so that
        the programs of one sandbox (the ranks of a ring) share nothing but the network."""
        self.memory_bytes = memory_bytes
        self.processes = processes
        self.use_cuda = use_cuda
        self.loopback = loopback
        self.hide = tuple(path.resolve() for path in hide)
        if force is None:
            found = support()
            self.kind, self.user = found.kind, found.user
        else:
            self.kind, self.user = force
        self.namespaces = self.kind != "none"
        self.folder = Path(tempfile.mkdtemp(prefix="grader-sandbox-"))
        self.apart = apart
        self.loopback_counted: int | None = None
        self.exposed: dict[str, Path] = {}  # folder name inside -> the host folder of copies shown there
        self.launcher: subprocess.Popen | None = None
        self.group: cgroups.Group | None = None
        self.error = ""
        self.exits: dict[int, str] = {}
        self.pids: list[int] = []
        self._status = -1
        self._pending = b""

    # ------------------------------------------------------------ setting up

    def add_file(self, host: Path, folder: str = "submission") -> str:
        """A read-only copy of `host` for the programs, in /`folder` inside; returns the path they see it at."""
        copies = self.folder / folder
        copies.mkdir(mode=0o755, exist_ok=True)
        copy = copies / host.name
        shutil.copyfile(host, copy)
        copy.chmod(0o644)
        copies.chmod(0o755)
        self.folder.chmod(0o755)
        self.exposed[folder] = copies
        return f"/{folder}/{host.name}" if self.namespaces else str(copy)

    def shared_folder(self, name: str) -> Path:
        """A folder every program may write to (without namespaces; inside one, /tmp is that)."""
        folder = self.folder / name
        folder.mkdir(exist_ok=True)
        folder.chmod(0o1777)
        self.folder.chmod(0o755)
        return folder

    def start(self, programs: list[Program], diagnostics: int | None = None) -> None:
        """Start every program in one sandbox; the descriptors named in each are handed to it.

        `diagnostics` receives what the launcher itself says (bubblewrap's errors), for probing.
        """
        self.group = cgroups.create(self.memory_bytes, self.processes)
        status_read, status_write = os.pipe()
        self._status = status_read
        os.set_blocking(status_read, False)
        passed = {status_write} | {fd for program in programs for fd in program.fds.values()}
        config = {
            "parent": os.getpid(), "status_fd": status_write, "mode": self.kind,
            "cgroups": self.group.procs_files, "user": self.user, "loopback": self.loopback,
            "root": str(self._root()), "tmp_bytes": TMP_BYTES, "rlimits": self._rlimits(),
            "private_tmp": self.apart, "separate_users": self.apart,
            "programs": [{"argv": p.argv, "env": p.env, "cwd": p.cwd if self.namespaces else str(self.folder),
                          "entry": _entry(p), "name": zygote.ENTRIES.get(_entry(p) or "", ""),
                          "fds": {str(target): source for target, source in p.fds.items()}}
                         for p in programs],
        }
        if self.namespaces:
            shown = view.build(self.hide, self.exposed, self.use_cuda)
            config.update(shown.for_boot())
            if self.kind == "bubblewrap":
                config["bwrap"] = [shutil.which("bwrap") or "bwrap", *shown.bwrap_args()]
        forks = zygote.get() if self.kind != "bubblewrap" and all(_entry(p) for p in programs) \
            and diagnostics is None else None
        try:
            self.launcher = None
            if forks is not None:
                # Forked from the preloaded zygote: the same sandbox, built the same way, torch already imported.
                try:
                    self.launcher = zygote.Child(forks.spawn(config, sorted(passed)))
                except OSError:
                    pass  # a fresh launcher instead, exactly as without a zygote
            if self.launcher is None:
                self.launcher = subprocess.Popen(
                    [sys.executable, "-I", "-S", str(BOOT), json.dumps(config)], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=diagnostics if diagnostics is not None else subprocess.DEVNULL,
                    pass_fds=tuple(passed), close_fds=True, start_new_session=True)
        finally:
            os.close(status_write)

    def _root(self) -> Path:
        root = self.folder / "root"
        root.mkdir(exist_ok=True)
        return root

    def _rlimits(self) -> dict[str, int]:
        limits = {"CORE": 0, "FSIZE": FILE_BYTES}
        if self.group is None or self.group.pids is None:
            if self.user is not None:  # a uid of its own: the per-user process count is this sandbox's
                limits["NPROC"] = self.processes
        if (self.group is None or self.group.memory is None) and not self.use_cuda:
            # No memory cgroup: each process gets the limit on its address space (CUDA's reservations need more).
            limits["AS"] = self.memory_bytes
        return limits

    # ------------------------------------------------------------ while it runs

    def poll_status(self) -> None:
        """Read what init reported: the programs' pids, each program's exit, or why the sandbox failed."""
        if self._status < 0:
            return
        while True:
            try:
                chunk = os.read(self._status, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                os.close(self._status)
                self._status = -1
                return
            self._pending += chunk
            *lines, self._pending = self._pending.split(b"\n")
            for line in lines:
                self._event(json.loads(line))

    def _event(self, event: dict) -> None:
        kind = event.get("event")
        if kind == "started":
            self.pids = self._host_pids(event.get("pids", []))
        elif kind == "exit":
            if "signal" in event:
                try:
                    how = signal.Signals(event["signal"]).name
                except ValueError:
                    how = f"signal {event['signal']}"
            else:
                how = f"exit status {event.get('code')}"
            self.exits[int(event["program"])] = how
            if isinstance(event.get("loopback"), int) and event["loopback"] >= 0:
                self.loopback_counted = max(self.loopback_counted or 0, event["loopback"])
        elif kind == "error":
            self.error = str(event.get("message", "the sandbox could not start"))

    def _host_pids(self, inside: list[int]) -> list[int]:
        if not self.namespaces or self.launcher is None:
            return list(inside)
        found = {proctree.namespace_pid(pid): pid for pid in proctree.descendants(self.launcher.pid)}
        return [found.get(pid, 0) for pid in inside]

    def wait_exit(self, index: int, timeout: float) -> str | None:
        """How program `index` ended ('SIGSEGV', 'exit status 3'), waiting up to `timeout`; None if unknown."""
        deadline = time.monotonic() + timeout
        while True:
            self.poll_status()
            if index in self.exits or self.error:
                return self.exits.get(index)
            if self._status < 0 or time.monotonic() >= deadline:
                return self.exits.get(index)
            time.sleep(0.005)

    def processes_now(self) -> list[int]:
        """Host pids of every process in the sandbox, the launcher and init included."""
        if self.launcher is None:
            return []
        return [self.launcher.pid, *proctree.descendants(self.launcher.pid)]

    def memory_bytes_now(self) -> int:
        current = self.group.memory_current() if self.group else None
        return current if current is not None else proctree.resident_bytes(self.processes_now())

    def memory_peak(self) -> int:
        """The most memory the sandbox held at once since the last reset, as the kernel counted it."""
        peak = self.group.memory_peak() if self.group else None
        return peak if peak is not None else proctree.peak_resident_bytes(self.processes_now())

    def reset_memory_peak(self) -> None:
        if not (self.group and self.group.reset_memory_peak()):
            proctree.reset_peaks(self.processes_now())

    def cpu_seconds(self) -> float:
        found = self.group.cpu_seconds() if self.group else None
        return found if found is not None else proctree.cpu_seconds(self.processes_now())

    def loopback_bytes(self) -> int | None:
        """Bytes that went over the sandbox's own loopback, from the kernel's counters; None without one."""
        self.poll_status()
        if not self.namespaces:
            return None
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/net/dev") as handle:
                    for line in handle:
                        name, _, numbers = line.partition(":")
                        if name.strip() == "lo":
                            return int(numbers.split()[0])
            except (OSError, ValueError, IndexError):
                continue
        return self.loopback_counted  # every program has ended: init counted at each end

    def oom_killed(self) -> bool:
        return self.oom_kills() > 0

    def oom_kills(self) -> int:
        """Processes the kernel killed at the sandbox's memory limit so far."""
        return self.group.oom_kills() if self.group else 0

    @property
    def peak_counts_shared_pages(self) -> bool:
        """Whether the peak includes pages the grader wrote and the programs mapped (processes' VmHWM does;
        a cgroup charges them to the grader, who wrote them first)."""
        return not (self.group and self.group.memory is not None)

    @property
    def memory_limited_by_kernel(self) -> bool:
        return bool(self.group and self.group.memory is not None)

    # ------------------------------------------------------------ ending

    def kill(self) -> None:
        """Kill every process in the sandbox, now; when this returns, none is left."""
        if self.group is not None:
            self.group.kill()
        if self.launcher is not None:
            if self.namespaces:
                # init first: its namespace dies with it, and the launcher, left with nothing, exits on its own.
                for pid in proctree.children(self.launcher.pid):
                    _kill(pid)
            else:
                proctree.kill_tree(self.launcher.pid)  # no PID namespace to take them all down
            try:
                self.launcher.wait(timeout=2)
            except subprocess.TimeoutExpired:
                _kill(self.launcher.pid)
                self.launcher.wait()
        if self.group is not None:
            self.group.kill()

    def close(self) -> None:
        """Kill what is left, read the last status, remove the cgroups and the temporary folder."""
        self.kill()
        self.poll_status()
        if self._status >= 0:
            os.close(self._status)
            self._status = -1
        if self.group is not None:
            self.group.remove()
        shutil.rmtree(self.folder, ignore_errors=True)


def _entry(program: Program) -> str | None:
    """The grader entry point a program runs (`python -m grader.sandboxed.worker ...`), which the zygote can fork."""
    if len(program.argv) >= 3 and program.argv[0] == sys.executable and program.argv[1] == "-m" \
            and program.argv[2] in zygote.ENTRIES:
        return program.argv[2]
    return None


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
