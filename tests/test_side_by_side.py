"""Two graders on one machine never share a port, a rendezvous or a file, and side by side neither hangs nor crosses.

The ranks of a distributed case meet at a fixed address only on their sandbox's own loopback (a network
namespace of its own: two sandboxes each bind it at once); without namespaces, where ports are the machine's,
through a file in their own sandbox's folder. benchmarks/side_by_side.py runs two graders' distributed suites
at once, 20 times by default; here twice, at the level this machine gives.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

from grader.grading import distributed
from grader.sandbox import machine
from grader.sandbox.box import Confinement, Program, Sandbox, Spec
from grader.sandbox.policy import base_env

HOLD = """
import os, socket, time
server = socket.socket()
server.bind(("127.0.0.1", {port}))
server.listen(1)
os.write(1, b"bound")
time.sleep(3)
"""


def test_without_namespaces_each_sandbox_meets_in_a_file_of_its_own() -> None:
    first, second = (Sandbox(Confinement("none"), Spec(64 << 20, loopback=True, apart=True)) for _ in range(2))
    try:
        stores = [distributed._file_store(box) for box in (first, second)]
        assert stores[0] != stores[1]
        assert stores[0].is_relative_to(first.folder) and stores[1].is_relative_to(second.folder)
    finally:
        first.close()
        second.close()


@pytest.mark.skipif(not sys.platform.startswith("linux") or not machine.support().namespaces,
                    reason="no network namespaces here: the ranks meet through a file (above)")
def test_the_ranks_fixed_address_is_each_sandboxs_own() -> None:
    port = int(distributed.STORE.rsplit(":", 1)[1])
    boxes, pipes = [], []
    try:
        for _ in range(2):
            box = machine.open_sandbox(256 << 20, processes=16, loopback=True, apart=True)
            read, write = os.pipe()
            box.start([Program([sys.executable, "-I", "-S", "-c", HOLD.format(port=port)], base_env(), {1: write})])
            os.close(write)
            boxes.append(box)
            pipes.append(read)
        said = []
        for read in pipes:
            ready = select.select([read], [], [], 60)[0]
            said.append(os.read(read, 64) if ready else b"")
        assert said == [b"bound", b"bound"], said  # both bound it at once: no port is shared
    finally:
        for read in pipes:
            os.close(read)
        for box in boxes:
            box.close()


def test_two_graders_side_by_side_neither_hang_nor_cross(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "side_by_side.py"), "--times", "2", "--levels",
                           "auto", "--timeout", "150", "--json", str(summary)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    (found,) = json.loads(summary.read_text())
    assert found == {**found, "level": "auto", "times": 2, "hung": 0, "crossed": 0}
    assert time.monotonic() - started < 600
