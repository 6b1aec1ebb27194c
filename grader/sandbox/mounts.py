"""The sandbox's mount view: a fresh root of read-only binds, its own /dev, /proc and /tmp, pivoted into.

Standard library only, loaded by path beside sandbox/boot.py. Init builds the view (`build_view`) in
the sandbox's new mount namespace; a program of a sandbox whose programs are kept apart gets a /tmp
and /dev/shm of its own (`private_tmp`) in a mount namespace of its own (sandbox/namespaces.py).
"""

from __future__ import annotations

import ctypes
import errno
import os

if __package__:
    from grader.sandbox import launch_config, lockdown
else:  # run by path, beside boot.py
    import launch_config
    import lockdown

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """mount(2), checked."""
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    lockdown.call(lockdown.libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags),
                                      encode(data)), f"mount {target}")


def build_view(mounts: launch_config.Mounts) -> None:
    """A fresh root on tmpfs holding only what the programs need, most of it read-only (a launch_config.Mounts)."""
    root = mounts.root
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here leaks back to the host
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4m")
    # The private /tmp first: a checkout (and its virtual environment) may itself live under /tmp, and its
    # binds must land on top of the fresh tmpfs, not under it.
    _makedirs(root + "/tmp")
    mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={mounts.tmp_bytes}")
    for link in mounts.symlinks:
        _makedirs(os.path.dirname(root + link.link))
        os.symlink(link.target, root + link.link)
    for bind in mounts.binds:
        _bind(bind.source, root + bind.inside, read_only=True, recursive=bind.recursive)
    _build_dev(root, mounts)
    _makedirs(root + "/proc")
    try:
        # hidepid: a process another may not ptrace (another uid, or another Landlock domain) is not shown at all,
        # so that no program reads another's name, command line or counters.
        mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    except OSError:
        pass  # a host that masks parts of its /proc refuses a fresh one: the programs go without
    os.chdir(root)
    number = lockdown.syscall_number("pivot_root")
    if number is None:
        raise OSError(errno.ENOSYS, f"no system-call number for pivot_root on {os.uname().machine}")
    lockdown.call(lockdown.libc.syscall(ctypes.c_long(number), b".", b"."), "pivot_root")
    lockdown.call(lockdown.libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")
    mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _build_dev(root: str, mounts: launch_config.Mounts) -> None:
    dev = root + "/dev"
    _makedirs(dev)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for node in mounts.devices:
        if os.path.exists(node):
            _bind(node, root + node, read_only=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{dev}/{name}")
    _makedirs(dev + "/shm")
    mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={mounts.tmp_bytes}")
    # Read-only once made: an ordinary user's own tmpfs would otherwise be one more folder every program may write.
    mount(None, dev, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)


def private_tmp(mounts: launch_config.Mounts, shm: bool = True) -> None:
    """A fresh /tmp and (where `shm`) /dev/shm over the view's, in this program's own mount namespace (made already).

    Binds that live under /tmp (a checkout kept there, with its virtual environment) are held open now and
    bound again on top of the fresh /tmp, where they were."""
    kept = [(bind.inside, os.open(bind.inside, os.O_PATH)) for bind in mounts.binds
            if bind.inside.startswith("/tmp/") and os.path.exists(bind.inside)]
    for target in ("/tmp", "/dev/shm") if shm else ("/tmp",):
        mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={mounts.tmp_bytes}")
    for inside, fd in kept:
        _bind(f"/proc/self/fd/{fd}", inside, read_only=True)
        os.close(fd)


def _bind(source: str, target: str, read_only: bool, recursive: bool = True) -> None:
    if os.path.isdir(source):
        _makedirs(target)
    else:
        _makedirs(os.path.dirname(target))
        if not os.path.exists(target):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    mount(source, target, None, MS_BIND | (MS_REC if recursive else 0))
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | _locked_flags(source) | (MS_RDONLY if read_only else 0)
    if read_only:
        flags |= MS_NODEV
    mount(None, target, None, flags)


def _locked_flags(path: str) -> int:
    """The source mount's flags, which a remount inside a user namespace must keep."""
    found = os.statvfs(path).f_flag
    flags = 0
    for statvfs_flag, mount_flag in ((os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
                                     (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME),
                                     (os.ST_RELATIME, MS_RELATIME), (os.ST_RDONLY, MS_RDONLY)):
        if found & statvfs_flag:
            flags |= mount_flag
    return flags


def _makedirs(path: str) -> None:
    os.makedirs(path, mode=0o755, exist_ok=True)
