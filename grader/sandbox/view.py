"""What a sandbox shows: host paths bound read-only at the same place inside, for either launcher.

The view is the same whether the grader's own launcher (grader/sandbox/boot.py) or bubblewrap
builds it: the system, the Python installation and its import path, the grader package, the
learner's file at /submission, and nothing of the course checkout around them.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grader import PACKAGE
from grader.sandbox.launch_config import Bind, Mounts, Symlink

SYSTEM_PATHS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
DEV_NODES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
CUDA_DEV_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")


@dataclass
class View:
    """Read-only binds (source, inside, recursive), symlinks (target, inside) and device nodes."""

    binds: list[tuple[str, str, bool]] = field(default_factory=list)
    symlinks: list[tuple[str, str]] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)

    def for_boot(self, root: str, tmp_bytes: int) -> Mounts:
        """The part of the launcher's configuration that builds this view, on a tmpfs at the host folder `root`."""
        return Mounts(root, tmp_bytes, tuple(Bind(*bind) for bind in self.binds),
                      tuple(Symlink(*link) for link in self.symlinks), tuple(self.devices))

    def bwrap_args(self) -> list[str]:
        """The same view as bubblewrap options."""
        # The private /tmp first, so that binds of paths under /tmp (a checkout there) land on top of it.
        args = ["--unshare-all", "--die-with-parent", "--new-session", "--hostname", "sandbox",
                "--cap-drop", "ALL", "--clearenv", "--tmpfs", "/tmp", "--chdir", "/tmp"]
        for target, link in self.symlinks:
            args += ["--symlink", target, link]
        for source, inside, _ in self.binds:
            args += ["--ro-bind", source, inside]
        args += ["--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc"]
        for node in self.devices:
            if node not in DEV_NODES and os.path.exists(node):  # --dev already made the ordinary ones
                args += ["--dev-bind", node, node]
        return args


def build(hide: tuple[Path, ...], exposed: dict[str, Path], use_cuda: bool) -> View:
    """The view for a sandbox that must not show the folders in `hide` (the course checkout).

    `exposed` maps a folder name to a host folder shown read-only at /name: the learner's file in
    /submission, an exercise's rank program in /exercise.
    """
    view = View()
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            view.symlinks.append((os.readlink(path), path))
        elif os.path.isdir(path):
            view.binds.append((path, path, True))
    for path in python_paths(hide):
        view.binds.append((path, path, True))
    view.binds.append((str(PACKAGE), str(PACKAGE), True))
    for name, folder in sorted(exposed.items()):
        view.binds.append((str(folder), f"/{name}", True))
    # Only what torch reads (the CPUs; the PCI devices and the driver for CUDA): never /sys/fs/cgroup,
    # whose groups a learner process could otherwise try to leave.
    sysfs = ["/sys/devices/system/cpu"] + (["/sys/devices", "/sys/bus", "/sys/class", "/sys/module"] if use_cuda else [])
    view.binds += [(path, path, False) for path in sysfs if os.path.isdir(path)]
    view.devices = list(DEV_NODES)
    if use_cuda:
        view.devices += [str(path) for path in sorted(Path("/dev").glob("nvidia[0-9]*"))] + list(CUDA_DEV_NODES)
    view.binds = outermost(view.binds)
    return view


def python_paths(hide: tuple[Path, ...]) -> list[str]:
    """The Python installation: its prefixes, its site-packages folders and where torch and NumPy live.

    Nothing else on the import path is shown: a folder put there by PYTHONPATH or a test runner may be
    a whole checkout, its solutions included. The grader package itself is bound on its own.
    """
    venv = Path(sys.prefix).resolve()
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, sys.executable]
    candidates += [entry for entry in sys.path if Path(entry).name in ("site-packages", "dist-packages")]
    for module in ("torch", "numpy"):
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            candidates.append(str(Path(spec.origin).resolve().parent.parent))
    found = set()
    for raw in candidates:
        if not raw or not Path(raw).exists():
            continue
        path = Path(raw).resolve()
        if path.is_file():  # the interpreter
            path = path.parent
        if any(path == hidden or path in hidden.parents for hidden in hide):
            continue  # the course's folder or one above it
        if any(hidden in path.parents for hidden in hide) and not (path == venv or venv in path.parents):
            continue  # inside the course: only a virtual environment kept there is shown
        found.add(str(path))
    return sorted(found)


def outermost(binds: list[tuple[str, str, bool]]) -> list[tuple[str, str, bool]]:
    """Drop binds already inside another recursive bind of the same source."""
    kept: list[tuple[str, str, bool]] = []
    for bind in sorted(binds, key=lambda item: (item[1].count("/"), item[1])):
        inside = any(other[2] and (bind[1] == other[1] or bind[1].startswith(other[1].rstrip("/") + "/"))
                     and bind[0] == other[0] + bind[1][len(other[1]):] for other in kept)
        if not inside:
            kept.append(bind)
    return kept
