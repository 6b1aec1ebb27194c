"""Control groups for one sandbox: one memory limit, one process limit, CPU time and a kill switch for all of it.

The kernel offers these in two shapes. cgroup v2 (one tree) where a subtree is delegated to us;
cgroup v1 (one tree per controller) where its hierarchies are writable. Each sandbox gets a fresh
group in whichever tree offers each controller, and the group is removed when the sandbox closes.
What could not be had is simply absent: the caller measures processes itself then.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Hierarchy:
    """Where one cgroup tree is mounted and which group this process is in there."""

    version: int
    mount: Path
    own: Path  # this process's group, as a folder under `mount`
    controllers: tuple[str, ...]


def _hierarchies() -> list[Hierarchy]:
    """The cgroup trees this process is in, from /proc/self/cgroup and /proc/self/mountinfo."""
    try:
        membership = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        root, point = fields[3], Path(fields[4])
        version = 2 if tail[0] == "cgroup2" else 1
        names = tuple(option for option in tail[2].split(",") if option not in ("rw", "ro") and "=" not in option)
        for entry in membership:
            number, _, rest = entry.partition(":")
            listed, _, path = rest.partition(":")
            if (version == 2) != (number == "0" and listed == ""):
                continue
            if version == 1 and not set(listed.split(",")) & set(names):
                continue
            relative = os.path.relpath(path, root) if path.startswith(root) else None
            if relative is None or relative.startswith(".."):
                continue
            own = point if relative == "." else point / relative
            found.append(Hierarchy(version, point, own, names))
    return found


@dataclass
class Group:
    """One sandbox's groups: per controller the folder that holds its files (None when not to be had)."""

    memory: Path | None = None
    memory_version: int = 0
    pids: Path | None = None
    cpu: Path | None = None
    cpu_version: int = 0
    kill_switch: Path | None = None  # a v2 group with cgroup.kill
    folders: list[Path] = field(default_factory=list)  # every folder made, to join and to remove

    @property
    def procs_files(self) -> list[str]:
        """The cgroup.procs files a process writes its pid to, to join every group."""
        return [str(folder / "cgroup.procs") for folder in self.folders]

    def describe(self) -> str:
        parts = []
        if self.memory:
            parts.append(f"memory (cgroup v{self.memory_version})")
        if self.pids:
            parts.append("process count")
        if self.cpu:
            parts.append("CPU time")
        return ", ".join(parts) if parts else "none"

    # ------------------------------------------------------------ readings

    def memory_current(self) -> int | None:
        if self.memory is None:
            return None
        name = "memory.current" if self.memory_version == 2 else "memory.usage_in_bytes"
        return _read_int(f"{self.memory}/{name}")

    def memory_peak(self) -> int | None:
        if self.memory is None:
            return None
        name = "memory.peak" if self.memory_version == 2 else "memory.max_usage_in_bytes"
        return _read_int(f"{self.memory}/{name}")

    def reset_memory_peak(self) -> bool:
        """Start the peak again from the current usage; False where the kernel cannot."""
        if self.memory is None:
            return False
        try:
            if self.memory_version == 2:
                # Linux 6.12+: a write resets the peak as seen through this same file.
                return False
            (self.memory / "memory.max_usage_in_bytes").write_text("0")
            return True
        except OSError:
            return False

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the memory limit."""
        if self.memory is None:
            return 0
        name = "memory.events" if self.memory_version == 2 else "memory.oom_control"
        try:
            for line in _text(f"{self.memory}/{name}").splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def cpu_seconds(self) -> float | None:
        if self.cpu is None:
            return None
        if self.cpu_version == 2:
            try:
                for line in _text(f"{self.cpu}/cpu.stat").splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) / 1e6
            except (OSError, ValueError):
                return None
            return None
        value = _read_int(f"{self.cpu}/cpuacct.usage")
        return None if value is None else value / 1e9

    # ------------------------------------------------------------ ending

    def kill(self) -> None:
        """Kill every process in the groups at once (v2), else each one listed (v1)."""
        if self.kill_switch is not None:
            try:
                (self.kill_switch / "cgroup.kill").write_text("1")
            except OSError:
                pass
        for folder in self.folders:
            for pid in _pids(folder):
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass

    def remove(self, wait: float = 2.0) -> None:
        """Remove the groups once their processes are gone (the kernel refuses while any remain)."""
        deadline = time.monotonic() + wait
        for folder in reversed(self.folders):
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() >= deadline:
                        break
                    self.kill()
                    time.sleep(0.01)


def _read_int(path: Path | str) -> int | None:
    try:
        return int(_text(str(path)).split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _text(path: str) -> str:
    """A small cgroup file's text, read whole: three system calls, no buffering (read several times a case)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 1 << 16).decode(errors="replace")
    finally:
        os.close(fd)


def _pids(folder: Path) -> list[int]:
    try:
        return [int(line) for line in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _make(parent: Path, name: str) -> Path | None:
    folder = parent / name
    try:
        folder.mkdir()
    except OSError:
        return None
    if os.access(folder / "cgroup.procs", os.W_OK):
        return folder
    try:
        folder.rmdir()
    except OSError:
        pass
    return None


def create(memory_bytes: int, max_processes: int) -> Group:
    """Fresh groups for one sandbox, with the limits set wherever a controller could be had."""
    name = f"grader-{os.getpid()}-{secrets.token_hex(4)}"
    group = Group()
    for hierarchy in _hierarchies():
        if hierarchy.version == 2:
            folder = _make(hierarchy.own, name)
            if folder is None:
                continue
            group.folders.append(folder)
            if (folder / "cgroup.kill").exists():
                group.kill_switch = folder
            if group.cpu is None and (folder / "cpu.stat").exists():
                group.cpu, group.cpu_version = folder, 2
            available = _controllers(folder)
            if "memory" in available and group.memory is None and _write(folder / "memory.max", memory_bytes):
                _write(folder / "memory.swap.max", 0)
                group.memory, group.memory_version = folder, 2
            if "pids" in available and group.pids is None and _write(folder / "pids.max", max_processes):
                group.pids = folder
            continue
        wanted = {"memory", "pids", "cpuacct"} & set(hierarchy.controllers)
        if not wanted:
            continue
        folder = _make(hierarchy.own, name)
        if folder is None:
            continue
        group.folders.append(folder)
        if "memory" in wanted and group.memory is None and _write(folder / "memory.limit_in_bytes", memory_bytes):
            # Without swap accounting the limit covers RAM alone; machines that grade have no swap to speak of.
            _write(folder / "memory.memsw.limit_in_bytes", memory_bytes)
            group.memory, group.memory_version = folder, 1
        if "pids" in wanted and group.pids is None and _write(folder / "pids.max", max_processes):
            group.pids = folder
        if "cpuacct" in wanted and (group.cpu is None or group.cpu_version == 2) and (folder / "cpuacct.usage").exists():
            group.cpu, group.cpu_version = folder, 1
    return group


def memory_kind() -> str:
    """'cgroup v1' or 'cgroup v2' where a sandbox here gets a memory limit that counts every process; '' otherwise.
    Found by making one group (and removing it), after sweeping away the groups of graders that are gone."""
    sweep()
    group = create(64 << 20, 16)
    try:
        return f"cgroup v{group.memory_version}" if group.memory is not None else ""
    finally:
        group.remove()


def sweep() -> None:
    """Remove the empty groups a killed grader left (its pid is in their name, and it no longer runs). A group that
    still holds processes is left alone: they may be another namespace's, whose pids mean nothing here."""
    for hierarchy in _hierarchies():
        try:
            names = [entry for entry in os.listdir(hierarchy.own) if entry.startswith("grader-")]
        except OSError:
            continue
        for name in names:
            owner = name.split("-")[1]
            if owner.isdigit() and int(owner) != os.getpid() and not os.path.exists(f"/proc/{owner}"):
                try:
                    (hierarchy.own / name).rmdir()
                except OSError:
                    pass


def _controllers(folder: Path) -> set[str]:
    try:
        return set((folder / "cgroup.controllers").read_text().split())
    except OSError:
        return set()


def _write(path: Path, value: int) -> bool:
    try:
        path.write_text(str(value))
        return True
    except OSError:
        return False
