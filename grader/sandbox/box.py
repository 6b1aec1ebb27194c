"""One sandbox's life, from start to kill: its launcher, its programs and its limits.

What the machine allows (namespaces or not, the user, the cgroups, Landlock, seccomp) is found once per
process by sandbox/machine.py, which makes each Sandbox; this module only builds and polices one, and
sandbox/running.py reads what its launcher reported and the kernel counted while it runs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader import PACKAGE
from grader.errors import UsageError
from grader.files import RefusedFile, read_regular
from grader.sandbox import cgroups, launch_config, proctree, sealing, seccomp, spawn, view, zygote
from grader.sandbox.launch_config import LaunchConfig, ProgramConfig, Reach
from grader.sandbox.policy import FILE_BYTES, TMP_BYTES
from grader.sandbox.running import Running

BOOT = PACKAGE / "sandbox" / "boot.py"  # run by path: standard library only


@dataclass
class Program:
    """One process to start in a sandbox: its command, environment and descriptors."""

    argv: list[str]
    env: dict[str, str]
    fds: dict[int, int]  # descriptor number in the program -> descriptor in this process
    cwd: str = "/tmp"
    entry: str | None = None  # the grader's entry point it runs (policy.module_command), which the zygote can fork
    args: tuple[str, ...] = ()  # that entry point's own arguments


@dataclass(frozen=True)
class Confinement:
    """How this machine confines a sandbox (sandbox/machine.py finds it): the launcher's kind, the uid learner
    code runs as when the grader is root, and whether Landlock stands in for namespaces."""

    kind: str = "namespaces"   # bubblewrap, namespaces, or none
    user: int | None = None
    landlock: bool = False

    @property
    def namespaces(self) -> bool:
        return self.kind != "none"


@dataclass(frozen=True)
class Spec:
    """What one sandbox is for: its memory and process limits, CUDA, a loopback for a ring, the folders it must not
    show, and whether its programs are kept apart. `apart`: each program gets a /tmp of its own and, when the
    grader is root, a uid of its own, so that the programs of one sandbox (the ranks of a ring) share nothing but
    the network. `counted`: what they move over the loopback is all they may exchange (every other channel between
    them refused; sandbox/sealing.py), and its count is given only where that holds."""

    memory_bytes: int
    processes: int = 256
    use_cuda: bool = False
    loopback: bool = False
    hide: tuple[Path, ...] = ()
    apart: bool = False
    counted: bool = False


class Sandbox(Running):
    """One sandbox: its programs share one mount view, PID and network namespace, and one set of limits."""

    def __init__(self, confinement: Confinement, spec: Spec) -> None:
        self.confinement = confinement
        self.memory_bytes = spec.memory_bytes
        self.processes = spec.processes
        self.use_cuda = spec.use_cuda
        self.loopback = spec.loopback
        self.hide = tuple(path.resolve() for path in spec.hide)
        self.kind, self.user = confinement.kind, confinement.user
        self.namespaces = confinement.namespaces
        self.folder = Path(tempfile.mkdtemp(prefix="grader-sandbox-"))
        self.folder.chmod(0o711)  # the programs reach their own folders in it, and list nothing
        self.apart = spec.apart
        self.counted = spec.counted
        self.kinds: frozenset[str] = frozenset()  # the seccomp policy's kinds, once its cgroups are known (start)
        self.host_loopback = sealing.HostLoopback()
        self.loopback_counted: int | None = None
        self.exposed: dict[str, Path] = {}  # folder name inside -> the host folder of copies shown there
        self.shared: list[Path] = []         # folders every program may write (without namespaces)
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
        # One descriptor that follows no link, checked (a regular file, within the size limit) and read: a file
        # swapped for a link after the grader looked at it is refused here, never copied from where it points.
        try:
            copy.write_bytes(read_regular(host))
        except RefusedFile as error:
            raise UsageError(f"{host}: not graded: {error.reason}") from None
        copy.chmod(0o644)
        copies.chmod(0o755)
        if self.user is not None and not self.apart and os.geteuid() == 0:
            # Its own uid's alone: without namespaces another sandbox's learner (a cohort) could otherwise read it.
            os.chown(copies, self.user, self.user)
            copies.chmod(0o500)
            os.chown(copy, self.user, self.user)
            copy.chmod(0o400)
        self.exposed[folder] = copies
        return f"/{folder}/{host.name}" if self.namespaces else str(copy)

    def shared_folder(self, name: str) -> Path:
        """A folder every program may write to (without namespaces; inside one, /tmp is that)."""
        folder = self.folder / name
        folder.mkdir(exist_ok=True)
        folder.chmod(0o1777)
        self.shared.append(folder)
        return folder

    def start(self, programs: list[Program], diagnostics: int | None = None) -> None:
        """Start every program in one sandbox; the descriptors named in each are handed to it.

        `diagnostics` receives what the launcher itself says (bubblewrap's errors), for probing.
        """
        if self.loopback and not self.namespaces:
            self.host_loopback.acquire()  # no other sandbox's ranks on the machine's loopback meanwhile
        self.group = cgroups.create(self.memory_bytes, self.processes)
        self.kinds = sealing.seccomp_kinds(self.namespaces, self.single_process, self.use_cuda, self.counted,
                                           self.loopback)
        status_read, status_write = os.pipe()
        self._status = status_read
        os.set_blocking(status_read, False)
        passed = {status_write} | {fd for program in programs for fd in program.fds.values()}
        scratch = self._scratch()
        # Without namespaces a program's home and temporary files are in a folder of its own, not the host's /tmp.
        home = {} if self.namespaces else {"HOME": str(scratch), "TMPDIR": str(scratch)}
        shown = view.build(self.hide, self.exposed, self.use_cuda)
        config = LaunchConfig(
            parent=os.getpid(), status_fd=status_write, mode=self.kind, cgroups=tuple(self.group.procs_files),
            user=self.user, separate_users=self.apart, private_tmp=self.apart, loopback=self.loopback,
            # NCCL's ranks on one machine meet in /dev/shm: theirs is one, and their traffic is not counted.
            shared_shm=self.apart and self.use_cuda,
            mounts=shown.for_boot(str(self._root()), TMP_BYTES) if self.namespaces else None,
            bwrap=(shutil.which("bwrap") or "bwrap", *shown.bwrap_args()) if self.kind == "bubblewrap" else None,
            landlock=self._reach(shown, scratch) if not self.namespaces and self.confinement.landlock else None,
            rlimits=self._rlimits(), address_space_above=self.memory_bytes,
            seccomp=seccomp.for_sandbox(self.kinds)[0], scoped=sealing.scoped(self.namespaces, self.use_cuda),
            programs=tuple(ProgramConfig(argv=tuple(p.argv), env={**p.env, **home}, fds=dict(p.fds),
                                         cwd=p.cwd if self.namespaces else str(scratch), entry=p.entry,
                                         args=tuple(p.args), name=zygote.ENTRIES.get(p.entry or "", ""))
                           for p in programs))
        forks = zygote.get() if self.kind != "bubblewrap" and all(p.entry for p in programs) \
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
                # From the spawning thread: the launcher's death signal then follows the grader, not this thread.
                self.launcher = spawn.popen(
                    [sys.executable, "-I", "-S", str(BOOT), launch_config.encode(config)], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=diagnostics if diagnostics is not None else subprocess.DEVNULL,
                    pass_fds=tuple(passed), close_fds=True, start_new_session=True)
        finally:
            os.close(status_write)

    def _reach(self, shown: view.View, scratch: Path) -> Reach:
        """The reach a mount view would give, on the host's own paths: read the system, Python, the grader and the
        learner's file; write only its own folders; no TCP but a ring's own (seccomp refuses every other socket of
        the machine's network: sandbox/sealing.py)."""
        read = {source for source, _, _ in shown.binds} | {str(folder) for folder in self.exposed.values()}
        # No /proc: the machine's, it shows every process, another sandbox's counters among them. gloo reads the
        # interfaces and the PCI devices (/sys/class/net, /sys/bus/pci, links into /sys/devices), never the cgroups.
        net = {"/sys/class/net", "/sys/bus/pci", "/sys/devices"} if self.loopback else set()
        return Reach(read=tuple(sorted(read | net)),
                     write=(str(scratch), *map(str, self.shared)), devices=tuple(shown.devices), network=self.loopback)

    def _root(self) -> Path:
        root = self.folder / "root"
        root.mkdir(exist_ok=True)
        return root

    def _scratch(self) -> Path:
        """The programs' own folder without namespaces (their /tmp, with them): theirs alone, gone at close."""
        scratch = self.folder / "scratch"
        scratch.mkdir(mode=0o700, exist_ok=True)
        if self.user is not None and os.geteuid() == 0:
            os.chown(scratch, self.user, self.user)
        return scratch

    @property
    def single_process(self) -> bool:
        """No memory cgroup counts every process: the learner's code stays one process and stores nothing outside
        its own memory (no child, file, socket, pipe or System V store), so /proc's figures for it are all it used.
        A ring's ranks need their sockets, and no memory rule is judged on them."""
        return not self.memory_limited_by_kernel and not self.loopback

    @property
    def memory_judged(self) -> bool:
        """Whether the most memory held at once can be measured honestly here: a cgroup counts every process, or
        the one process is all there is (a seccomp filter keeps it so; macOS has none)."""
        return self.memory_limited_by_kernel or (self.single_process and sys.platform.startswith("linux"))

    def _rlimits(self) -> dict[str, int]:
        # Without a memory cgroup nothing counts a file's pages (tmpfs, memfd, /dev/shm): no file may grow there.
        limits = {"CORE": 0, "FSIZE": 0 if self.single_process else FILE_BYTES}
        if self.group is None or self.group.pids is None:
            if self.user is not None:  # a uid of its own: the per-user process count is this sandbox's
                limits["NPROC"] = self.processes
        if (self.group is None or self.group.memory is None) and not self.use_cuda:
            # No memory cgroup: each process gets the limit on its address space (CUDA's reservations need more),
            # above what torch's import reserves: a CUDA build of torch maps gigabytes it never touches, even on
            # the CPU. A program forked from the zygote counts from its own size then (grader/sandbox/program.py).
            limits["AS"] = self.memory_bytes + _import_reserve()
        return limits

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
                try:
                    self.launcher.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass  # in the kernel's hands now (uninterruptible sleep): never waited on without end
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
        self.host_loopback.release()
        shutil.rmtree(self.folder, ignore_errors=True)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


IMPORT_RESERVE = 4 << 30  # address space torch's import may map, where this process has not imported it to measure


def _import_reserve() -> int:
    """The address space a Python that imported torch holds before any learner code: this process's own, once it
    has imported torch (the learner's processes import the same torch), else IMPORT_RESERVE."""
    own = proctree.address_space(os.getpid()) if "torch" in sys.modules else 0
    return own or IMPORT_RESERVE
