"""How many CPUs this process may use: its affinity mask (what Slurm and cpusets give it) and its cgroup's CPU quota
(what a container's or a pod's CPU limit gives it), not the machine's core count."""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def usable_cpus(cgroup_root: Path = CGROUP_ROOT, proc_cgroup: Path = Path("/proc/self/cgroup")) -> tuple[int, str]:
    """The CPUs this process may keep busy at once (at least 1), and a phrase saying where the number comes from."""
    try:
        mask = len(os.sched_getaffinity(0))
        said = f"{mask} CPU{'s' * (mask != 1)} in this process's affinity mask"
    except (AttributeError, OSError):  # no affinity on this platform: the machine's count is all there is
        mask = os.cpu_count() or 1
        said = f"{mask} CPU{'s' * (mask != 1)} on this machine"
    quota = cgroup_quota(cgroup_root, proc_cgroup)
    if quota is not None and quota < mask:
        return quota, f"{said}, {quota} by its cgroup's CPU quota"
    return max(1, mask), said


def cgroup_quota(cgroup_root: Path = CGROUP_ROOT, proc_cgroup: Path = Path("/proc/self/cgroup")) -> int | None:
    """The tightest CPU quota of this process's cgroup and its ancestors, rounded up to whole CPUs; None if none.

    cgroup v2 (`cpu.max`, "max 100000" or "200000 100000") and v1 (`cpu.cfs_quota_us` over `cpu.cfs_period_us`).
    Anything unreadable or unexpected counts as no quota: the affinity mask still holds."""
    try:
        lines = proc_cgroup.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    quotas = []
    for line in lines:
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        relative = path.lstrip("/")
        if number == "0" and controllers == "":
            quotas += [_v2(cgroup_root / folder) for folder in _ancestors(relative)]
        elif "cpu" in controllers.split(","):
            for name in (controllers, "cpu"):
                base = cgroup_root / name
                if base.is_dir():
                    quotas += [_v1(base / folder) for folder in _ancestors(relative)]
                    break
    found = [quota for quota in quotas if quota is not None]
    return min(found) if found else None


def _ancestors(relative: str) -> list[str]:
    """'a/b' -> ['a/b', 'a', '']: the cgroup and every one above it, each of which may hold a quota."""
    parts = [part for part in relative.split("/") if part]
    return ["/".join(parts[:end]) for end in range(len(parts), -1, -1)]


def _v2(folder: Path) -> int | None:
    try:
        quota, period = (folder / "cpu.max").read_text(encoding="utf-8").split()[:2]
        return None if quota == "max" else _whole(int(quota), int(period))
    except (OSError, ValueError):
        return None


def _v1(folder: Path) -> int | None:
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text(encoding="utf-8"))
        period = int((folder / "cpu.cfs_period_us").read_text(encoding="utf-8"))
        return None if quota <= 0 else _whole(quota, period)
    except (OSError, ValueError):
        return None


def _whole(quota: int, period: int) -> int | None:
    # Half a CPU still grades one submission at a time: rounded up, never below one.
    return max(1, math.ceil(quota / period)) if period > 0 else None
