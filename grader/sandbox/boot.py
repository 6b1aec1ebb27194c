"""The sandbox launcher: namespaces, a read-only mount view, an unprivileged user, then the learner's programs.

Run by grader/sandbox/__init__.py as `python -I -S boot.py CONFIG_JSON`, before any learner code,
using nothing but the standard library (and lockdown.py beside it). In order:

  launcher   dies with the grader (PR_SET_PDEATHSIG); joins the sandbox's cgroups; unshares the
             mount, PID, network, IPC and UTS namespaces (and a user namespace when not root);
             forks `init`, waits for it, and exits.
  init       PID 1 of the new PID namespace, so every process started inside dies with it;
             builds the mount view (a fresh root: read-only binds of the system, Python and the
             grader; a private /tmp, /dev and /proc), pivots into it, brings up loopback, forks
             each program, reports each exit on the status pipe, and exits when all have.
  program    maps its file descriptors, sets its rlimits, drops to the sandbox user (when the
             launcher was root), drops every capability, forbids new privileges, joins a fresh
             keyring, installs the seccomp policy (and, without namespaces, Landlock), and execs.

With `mode: bubblewrap` the launcher joins the cgroups, drops to the sandbox user when root, and
execs bubblewrap, which builds the same namespaces and view and runs this file again inside as
`init` (`inside: true`). With `mode: none` (no namespaces to be had) the same launcher still gives
every program its descriptors, limits and clean environment, and `init` becomes a child subreaper
that kills every descendant it inherits when the programs end, or when the launcher dies.
"""

import ctypes
import errno
import fcntl
import json
import os
import signal
import socket
import struct
import sys

try:
    from grader.sandbox import lockdown  # imported with the package (the zygote forks the launcher)
except ImportError:  # run by path, isolated: the module beside this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import lockdown

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NAME, PR_SET_CHILD_SUBREAPER = 1, 4, 15, 36
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}

_libc = ctypes.CDLL(None, use_errno=True)


def _call(result, what):
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _prctl(option, value):
    if not sys.platform.startswith("linux"):
        return  # elsewhere the launcher gives what it can: descriptors, limits, a clean environment
    _call(_libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl {option}")


def _mount(source, target, fstype, flags, data=None):
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    _call(_libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data)),
          f"mount {target}")


class Status:
    """One JSON line per event on the status pipe, which only the grader reads."""

    def __init__(self, fd):
        self.fd = fd

    def send(self, **event):
        data = (json.dumps(event) + "\n").encode()
        try:
            os.write(self.fd, data)
        except OSError:
            pass


# ---------------------------------------------------------------- launcher

def launcher(config):
    status = Status(config["status_fd"])
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != config["parent"]:
        os._exit(1)  # the grader is already gone
    for path in config.get("cgroups", []):
        with open(path, "w") as handle:  # before anything else: every later process is counted
            handle.write(str(os.getpid()))
    if config["mode"] == "bubblewrap":
        bubblewrap(config)
    if config["mode"] == "namespaces":
        flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
        root = os.geteuid() == 0
        uid, gid = os.geteuid(), os.getegid()
        if not root:
            # Forked from the zygote, the launcher is non-dumpable as it is, and the kernel then gives this
            # process's /proc files to the host's root: the maps below could not be written. Dumpable only
            # while it writes them, before any learner process exists (init and each program set their own).
            _prctl(PR_SET_DUMPABLE, 1)
        _call(_libc.unshare(flags if root else flags | CLONE_NEWUSER), "unshare")
        if not root:
            # Map our own user to itself: the only mapping an unprivileged user may write.
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
            _prctl(PR_SET_DUMPABLE, 0)
    config["launcher"] = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            init(config, status)
        except BaseException as error:  # noqa: BLE001  (reported to the grader, never shown as learner output)
            status.send(event="error", message=f"{type(error).__name__}: {error}")
            os._exit(70)
        os._exit(0)
    _close_all_but(())
    while True:
        try:
            _, wait_status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            wait_status = 0
            break
        except InterruptedError:
            continue
    os._exit(os.waitstatus_to_exitcode(wait_status) & 0xFF if os.WIFEXITED(wait_status) else 71)


def bubblewrap(config):
    """Become bubblewrap, which builds the namespaces and the view and starts this file inside as init.

    Every program inside runs as the sandbox's one user: without root there, init cannot give each its own."""
    user = config.get("user")
    if user is not None and os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(user, user, user)
        os.setresuid(user, user, user)
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # a change of user clears it
    inside = json.dumps({**config, "inside": True, "bwrap": None})
    command = [*config["bwrap"], "--", sys.executable, "-I", "-S", os.path.abspath(__file__), inside]
    os.execv(command[0], command)


def _write(path, text):
    with open(path, "w") as handle:
        handle.write(text)


# ---------------------------------------------------------------- init

def init(config, status):
    namespaces = config["mode"] != "none"
    if namespaces:
        # If the launcher dies (the grader killed it, or died itself), so does init, and with it the namespace.
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    else:
        # No PID namespace takes everything down: told of the launcher's death, init kills every process it
        # holds (daemons came to it as subreaper) before it goes, else they would outlive a killed grader.
        signal.signal(signal.SIGTERM, _on_launcher_death)
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != config.get("launcher"):
            _on_launcher_death(signal.SIGTERM, None)  # gone already, before the signal was asked for
    _prctl(PR_SET_DUMPABLE, 0)  # no learner process may read init's memory or its descriptors
    if config.get("inside"):
        pass  # bubblewrap built the namespaces, the view and the loopback
    elif namespaces:
        build_view(config)
        _set_hostname("sandbox")
        if config.get("loopback"):
            _loopback_up()
    else:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans, daemons included, become init's to kill
    programs = {}
    for index, program in enumerate(config["programs"]):
        programs[_start({**program, "index": index}, config)] = index
    status.send(event="started", pids=sorted(programs, key=programs.get))
    for program in config["programs"]:
        for fd in program["fds"].values():
            _close(fd)
    while programs:
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        index = programs.pop(pid, None)
        if index is not None:
            # The loopback's byte count goes with every exit: read here, it survives the programs' end.
            counted = {"loopback": _loopback_bytes()} if namespaces else {}
            if os.WIFSIGNALED(wait_status):
                status.send(event="exit", program=index, signal=os.WTERMSIG(wait_status), **counted)
            else:
                status.send(event="exit", program=index, code=os.waitstatus_to_exitcode(wait_status), **counted)
    if not namespaces:
        _kill_descendants()


def _on_launcher_death(signum, frame):
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _kill_descendants()
    os._exit(0)


def _start(program, config):
    pid = os.fork()
    if pid:
        return pid
    try:
        _enter(program, config)
    except BaseException as error:  # noqa: BLE001
        message = f"could not start {program['argv'][0]}: {type(error).__name__}: {error}\n"
        try:
            os.write(2, message.encode())
        except OSError:
            pass
    os._exit(127)


def _enter(program, config):
    """In the program's own process: descriptors, limits, user, then exec; nothing here returns."""
    _prctl(PR_SET_DUMPABLE, 1)
    fds = {int(target): source for target, source in program["fds"].items()}
    # Move every source out of the way first, so that one mapping cannot clobber another's source.
    moved = {target: os.dup(source) for target, source in fds.items()}
    for target, source in moved.items():
        os.dup2(source, target, inheritable=True)
    _close_all_but(set(fds))
    if config.get("private_tmp") and config["mode"] != "none":
        _private_tmp(config)
    os.chdir(program.get("cwd", "/"))
    os.setsid()
    limits = dict(config.get("rlimits", {}))
    if "AS" in limits and config.get("preloaded") and program.get("entry"):
        # Forked from the zygote, torch already imported: the learner's share counts from this process's size.
        now = _address_space()
        if now:
            limits["AS"] = now + config.get("address_space_above", 0)
    lockdown.set_limits(limits)
    user = config.get("user")
    if user is not None and config.get("separate_users"):
        user += program["index"]  # programs of one sandbox cannot signal or read each other
    lockdown.become(user)
    lockdown.drop_capabilities()  # and no new privileges, ever
    lockdown.join_fresh_keyring()  # before the filter, which refuses every key call
    if config.get("landlock"):
        reach = config["landlock"]
        lockdown.landlock(reach["read"], reach["write"], reach["devices"], reach["network"])
    if config.get("seccomp"):
        lockdown.install_filter(bytes.fromhex(config["seccomp"]))
    if config["mode"] == "none":
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if config.get("preloaded") and program.get("entry"):
        _run_entry(program)
    os.execve(program["argv"][0], program["argv"], program["env"])


def _address_space():
    """This process's virtual address space in bytes (VmSize); 0 where /proc does not say."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _run_entry(program):
    """In a process forked from the zygote: the program's Python entry point, already imported, in place of exec."""
    os.environ.clear()
    os.environ.update(program["env"])
    sys.argv = [program["entry"], *program["args"]]
    _libc.prctl(PR_SET_NAME, ctypes.c_char_p(program["name"].encode()[:15]), 0, 0, 0)  # `ps`: grader.worker
    code = 0
    try:
        sys.modules[program["entry"]].main(json.loads(program["args"][-1]))
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # noqa: BLE001  (as a crashed interpreter would: a non-zero exit)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        pass
    os._exit(code)


def _private_tmp(config):
    """A /tmp and /dev/shm of this program's own, in a mount namespace of its own: nothing passes between
    programs through files. Under bubblewrap (no capabilities left) a nested user namespace gives the right."""
    uid, gid = os.geteuid(), os.getegid()
    if _libc.unshare(CLONE_NEWNS) != 0:
        if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
            return  # the programs share /tmp; the grader's report says what the sandbox holds
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    # Binds that live under /tmp (a checkout kept there, with its virtual environment) are held open
    # now and bound again on top of the fresh /tmp, where they were.
    kept = [(inside, os.open(inside, os.O_PATH)) for _, inside, _ in config.get("binds", [])
            if inside.startswith("/tmp/") and os.path.exists(inside)]
    for target in ("/tmp", "/dev/shm"):
        _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={config['tmp_bytes']}")
    for inside, fd in kept:
        _bind(f"/proc/self/fd/{fd}", inside, read_only=True)
        os.close(fd)


def _close_all_but(keep):
    for fd in _open_fds():
        if fd > 2 and fd not in keep:
            _close(fd)


def _open_fds():
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 1024))


def _close(fd):
    try:
        os.close(fd)
    except OSError:
        pass


def _kill_descendants():
    """Without a PID namespace, orphans came to init as subreaper: kill them until none is left.

    Each wait blocks until one has died, so a process is never abandoned while still dying: its
    own children would then be re-parented past init, out of reach.
    """
    while True:
        for pid in _children(os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def _children(pid):
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(child) for child in handle.read().split()]
    except OSError:
        pass
    return found


# ---------------------------------------------------------------- the mount view

def build_view(config):
    """A fresh root on tmpfs holding only what the programs need, most of it read-only."""
    root = config["root"]
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here leaks back to the host
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4m")
    # The private /tmp first: a checkout (and its virtual environment) may itself live under /tmp, and its
    # binds must land on top of the fresh tmpfs, not under it.
    _makedirs(root + "/tmp")
    _mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={config['tmp_bytes']}")
    for target, link in config.get("symlinks", []):
        _makedirs(os.path.dirname(root + link))
        os.symlink(target, root + link)
    for source, inside, recursive in config.get("binds", []):
        _bind(source, root + inside, read_only=True, recursive=recursive)
    _build_dev(root, config)
    _makedirs(root + "/proc")
    try:
        _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        pass  # a host that masks parts of its /proc refuses a fresh one: the programs go without
    os.chdir(root)
    _call(_libc.syscall(SYS_PIVOT_ROOT[os.uname().machine], b".", b"."), "pivot_root")
    _call(_libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")
    _mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _build_dev(root, config):
    dev = root + "/dev"
    _makedirs(dev)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for node in config.get("devices", []):
        if os.path.exists(node):
            _bind(node, root + node, read_only=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{dev}/{name}")
    _makedirs(dev + "/shm")
    _mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={config['tmp_bytes']}")


def _bind(source, target, read_only, recursive=True):
    if os.path.isdir(source):
        _makedirs(target)
    else:
        _makedirs(os.path.dirname(target))
        if not os.path.exists(target):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    _mount(source, target, None, MS_BIND | (MS_REC if recursive else 0))
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | _locked_flags(source) | (MS_RDONLY if read_only else 0)
    if read_only:
        flags |= MS_NODEV
    _mount(None, target, None, flags)


def _locked_flags(path):
    """The source mount's flags, which a remount inside a user namespace must keep."""
    found = os.statvfs(path).f_flag
    flags = 0
    for statvfs_flag, mount_flag in ((os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
                                     (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME),
                                     (os.ST_RELATIME, MS_RELATIME), (os.ST_RDONLY, MS_RDONLY)):
        if found & statvfs_flag:
            flags |= mount_flag
    return flags


def _makedirs(path):
    os.makedirs(path, mode=0o755, exist_ok=True)


def _set_hostname(name):
    data = name.encode()
    _call(_libc.sethostname(data, len(data)), "sethostname")


def _loopback_up():
    """A new network namespace has only `lo`, and it is down: the ranks of a ring talk over it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sH22s", b"lo", 0, b"")
        flags = struct.unpack("16sH22s", fcntl.ioctl(probe.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe.fileno(), SIOCSIFFLAGS, struct.pack("16sH22s", b"lo", flags | IFF_UP, b""))


def _loopback_bytes():
    try:
        with open("/proc/self/net/dev") as handle:
            for line in handle:
                name, _, numbers = line.partition(":")
                if name.strip() == "lo":
                    return int(numbers.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return -1


def run_launcher(config):
    """The launcher, with any failure to build the sandbox reported to the grader instead of raised."""
    try:
        if config.get("inside"):
            init(config, Status(config["status_fd"]))
            os._exit(0)
        launcher(config)
    except OSError as error:
        Status(config["status_fd"]).send(event="error", message=str(error),
                                         errno=errno.errorcode.get(error.errno or 0, ""))
        os._exit(70)


def main():
    run_launcher(json.loads(sys.argv[1]))


if __name__ == "__main__":
    main()
