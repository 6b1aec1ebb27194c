"""What two sandboxes could both reach, tried from learner code at every containment level the kernel gives.

tests/fixtures/levels/channels.py makes the pairs as the grader makes them (two workers: the hidden cases' and a
visible one, or two learners of one cohort; two ranks of one distributed suite; a worker beside a rank) and has
tests/fixtures/levels/probe.py leave a token in every kernel object one could share and look for it from the
other: sockets of every kind, System V and POSIX IPC, record locks and flock, leases, inotify and dnotify, files
and FIFOs in every writable place, signals, process names and /proc, keyrings, cgroups, /proc/locks. The table
of docs/fairness ("What two sandboxes could both reach") lists each with how it is closed at each level.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO
from test_levels import CONFINE, _prerequisites, level_root

from grader.sandbox import machine, sealing
from grader.sandbox.box import Confinement, Sandbox, Spec

LEVELS = ("root", "user", "user-no-userns", "container", "off")
SEALED = ("root", "user")  # a network namespace for the ranks, and nothing else between them
LINK = {"tcp", "udp"}  # the ranks' loopback, the one link the traffic rule counts
RESIDUAL = {"meminfo"}  # the machine's own counters (memory, load): named in docs/fairness as residual
levels = pytest.mark.skipif(bool(_prerequisites()), reason=_prerequisites() or "ready")


def at_level(root: Path, level: str, *argv: str) -> list[str]:
    """`python ARGV...` as the kernel gives it at `level` (tests/fixtures/levels/confine.py), from root."""
    if level == "root":
        return [sys.executable, *argv]
    purelib = sysconfig.get_paths()["purelib"]
    return [sys.executable, str(CONFINE), level, str(root), purelib, str(REPO), "--", str(root / "venv/bin/python"),
            *argv]


@pytest.fixture(scope="module")
def channels():
    """What the probes found at each level, run once per level as it is asked for."""
    root = level_root("grader-objects-")
    found: dict[str, dict] = {}

    def at(level: str) -> dict:
        if level not in found:
            env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"} | ({"PYTHONPATH": str(REPO)} if level == "root" else {})
            done = subprocess.run(at_level(root, level, str(FIXTURES / "levels" / "channels.py")), cwd="/tmp",
                                  capture_output=True, text=True, timeout=300, env=env)
            lines = [line for line in done.stdout.splitlines() if line.startswith("CHANNELS ")]
            assert lines, done.stdout + done.stderr
            found[level] = json.loads(lines[0].removeprefix("CHANNELS "))
        return found[level]

    yield at
    shutil.rmtree(root, ignore_errors=True)


def carried(pair: dict) -> dict[str, str]:
    """The objects through which the token arrived, with what the sender did."""
    return {name: seen["sender"] for name, seen in pair.items()
            if seen["receiver"] == "carried" and name not in RESIDUAL and name != "loopback"}


@levels
@pytest.mark.parametrize("level", LEVELS)
def test_two_workers_share_nothing(channels, level) -> None:
    """The hidden cases' worker and a visible one, or two learners of one cohort graded at once."""
    found = channels(level)
    pair = found["pairs"]["workers"]
    assert "error" not in pair, pair
    assert carried(pair) == {}, found["containment"]
    for name in ("sysv_shm", "sysv_sem", "sysv_msg", "posix_mq", "ofd_lock", "posix_lock", "flock", "inotify",
                 "keyring", "netlink_usersock", "vsock"):
        assert pair[name]["receiver"].startswith("refused"), (name, pair[name])


@levels
@pytest.mark.parametrize("level", LEVELS)
def test_a_worker_reaches_no_rank_beside_it(channels, level) -> None:
    """The hidden cases beside the ring: nothing the hidden worker leaves reaches a rank, whose output is shown."""
    pair = channels(level)["pairs"]["worker_and_rank"]
    assert "error" not in pair, pair
    assert carried(pair) == {}


@levels
@pytest.mark.parametrize("level", LEVELS)
def test_ranks_meet_only_on_their_counted_loopback_or_are_not_counted(channels, level) -> None:
    pair = channels(level)["pairs"]["ranks"]
    assert "error" not in pair, pair
    count, unsealed = pair["loopback"]["receiver"], pair["loopback"]["sender"]
    if level in SEALED:
        assert unsealed == "" and int(count) > 0, pair["loopback"]
        assert set(carried(pair)) == LINK, carried(pair)
        for name in ("abstract_unix", "path_unix", "sysv_shm", "sysv_sem", "posix_mq", "ofd_lock", "flock",
                     "netlink_usersock"):
            assert pair[name]["receiver"].startswith("refused"), (name, pair[name])
    else:
        # No network namespace of their own: they share the machine's loopback and a folder, and no count is given
        # (the traffic rule is then not judged).
        assert count == "None" and "no network namespace" in unsealed, pair["loopback"]


def test_a_counted_sandbox_gives_no_count_where_its_ranks_are_not_sealed() -> None:
    spec = Spec(1 << 30, loopback=True, apart=True, counted=True)
    assert "no network namespace" in Sandbox(Confinement("none"), spec).unsealed
    assert "bubblewrap" in Sandbox(Confinement("bubblewrap"), spec).unsealed
    cuda = Sandbox(Confinement("namespaces"), Spec(1 << 30, use_cuda=True, loopback=True, apart=True, counted=True))
    assert "NCCL" in cuda.unsealed and cuda.loopback_bytes() is None
    for box in (cuda, Sandbox(Confinement("none"), spec)):
        shutil.rmtree(box.folder, ignore_errors=True)


def test_the_seccomp_kinds_follow_the_sandbox() -> None:
    kinds = sealing.seccomp_kinds
    assert kinds(True, False, False, True, True) == {"cpu_only", "counted_ranks"}
    assert kinds(True, False, True, True, True) == frozenset()  # CUDA's ranks: NCCL needs unix sockets and locks
    assert kinds(False, True, False, False, False) == {"single_process", "cpu_only", "host_network"}
    assert kinds(False, False, False, True, True) == {"cpu_only", "file_store"}  # meet through FileStore's flock


def test_cuda_sandboxes_never_run_beside_each_other() -> None:
    assert machine.sandboxes_apart(use_cuda=True) is False
    assert machine.sandboxes_apart() == machine.support().namespaces


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="flock")
def test_ranks_on_the_machines_loopback_run_one_sandbox_at_a_time(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sealing.tempfile, "gettempdir", lambda: str(tmp_path))
    first, second = sealing.HostLoopback(), sealing.HostLoopback()
    assert first.acquire()
    taken = []
    waiting = threading.Thread(target=lambda: taken.append(second.acquire()))
    waiting.start()
    time.sleep(0.3)
    assert taken == []  # waits while the first holds the loopback
    first.release()
    waiting.join(5)
    assert taken == [True]
    second.release()
    assert os.stat(tmp_path / sealing.LOCK_FILE).st_mode & 0o777 == 0o666


@pytest.mark.skipif(not machine.support().namespaces, reason="namespaces: each rank's /tmp is its own")
def test_cuda_ranks_share_one_dev_shm_for_nccl() -> None:
    """NCCL's ranks on one machine meet in /dev/shm (and on abstract sockets): CUDA's ranks keep one, each its own
    /tmp still; their traffic is not counted anyway. The CPU's ranks each have their own (the probes above)."""
    from grader.sandbox.box import Program
    from grader.sandbox.policy import base_env

    writer = "import os, time; open('/dev/shm/nccl-probe', 'w').write('x'); open('/tmp/own', 'w'); time.sleep(3)"
    reader = ("import os, time; time.sleep(1.5); "
              "print(os.path.exists('/dev/shm/nccl-probe'), os.path.exists('/tmp/own'), flush=True)")
    found = {}
    for cuda in (True, False):
        box = machine.open_sandbox(1 << 30, use_cuda=cuda, loopback=True, apart=True, counted=True)
        read, write = os.pipe()
        try:
            box.start([Program([sys.executable, "-I", "-S", "-c", code], base_env(), {1: write} if code is reader else {})
                       for code in (writer, reader)])
            os.close(write)
            write = -1
            box.wait_exit(1, 30)
            found[cuda] = os.read(read, 100).decode().split()
        finally:
            for fd in (read, write):
                if fd >= 0:
                    os.close(fd)
            box.close()
    assert found == {True: ["True", "False"], False: ["False", "False"]}
