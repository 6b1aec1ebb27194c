"""The grader's side of a worker: start it, hand it tasks, enforce time and memory, restart it after a kill."""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import processes, wire

TORCH_IMPORT_LIMIT = 180.0  # seconds for the worker to import torch: not the learner's time
PROTOCOL_GRACE = 1.0        # seconds on top of a case's limit for sending inputs and outputs
POLL = 0.2                  # seconds between memory checks


@dataclass
class RawResult:
    """What came back from one task, before any judgement: a reply, or how the worker ended."""

    kind: str                  # returned, raised, not-attempted, out-of-memory, timed-out, crashed, load-error
    body: dict[str, Any] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""
    detail: str = ""


class Worker:
    """One learner process that answers tasks in turn; killed and restarted when a task goes wrong."""

    def __init__(self, learner: Path, root: Path, memory_limit_mb: int, use_cuda: bool) -> None:
        self.learner = learner
        self.root = root
        self.memory_limit = memory_limit_mb * 1024 * 1024
        self.use_cuda = use_cuda
        self.process = None
        self.load_result: RawResult | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the process; it imports torch while the grader prepares inputs."""
        to_worker_r, self._to_worker = os.pipe()
        self._from_worker, from_worker_w = os.pipe()
        self._reader = wire.MessageReader(self._from_worker)
        self._sentinel = "\n\x00grader-end-" + secrets.token_hex(8) + "\x00\n"
        config = {
            "learner": str(self.learner), "read_fd": to_worker_r, "write_fd": from_worker_w,
            "sentinel": self._sentinel,
            # The worker skips the address-space cap when it will use CUDA; the RSS watch holds then.
            "address_space_bytes": self.memory_limit, "may_use_cuda": self.use_cuda,
        }
        self.process = processes.spawn([sys.executable, "-m", "grader.worker", json.dumps(config)],
                                       (to_worker_r, from_worker_w), processes.child_env(), self.root)
        os.close(to_worker_r)
        os.close(from_worker_w)
        self._stdout = processes.OutputCollector(self.process.stdout, self._sentinel.encode())
        self._stderr = processes.OutputCollector(self.process.stderr, self._sentinel.encode())
        self.load_result = None

    def wait_ready(self, import_limit: float) -> RawResult:
        """Wait for torch, then for the learner's file to import; a RawResult says how that went."""
        if self.load_result is not None:
            return self.load_result
        first = self._receive(TORCH_IMPORT_LIMIT, import_limit, phase="torch")
        if first.kind == "returned" and first.body.get("kind") == "torch-ready":
            first = self._receive(import_limit, import_limit, phase="import")
        if first.kind == "returned":
            kind = "ready" if first.body.get("kind") == "ready" else "load-error"
            first = RawResult(kind, first.body, detail=first.detail)
        first.stdout, first.stderr = self._output()
        if first.kind != "ready":
            self.stop()
        self.load_result = first
        return first

    def stop(self) -> None:
        """Ask the worker to finish, then make sure it and everything it started are gone."""
        if self.process is None:
            return
        try:
            wire.write_message(self._to_worker, {"kind": "stop"})
        except OSError:
            pass
        for fd in (self._to_worker, self._from_worker):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.process.wait(timeout=2)  # a well-behaved worker leaves on its own
        except Exception:  # noqa: BLE001  (it did not: it is killed below)
            pass
        processes.kill_group(self.process, grace=0.3)
        # stdout and stderr are closed by their collectors once drained, never here (see OutputCollector).
        self.process = None

    @property
    def alive(self) -> bool:
        return self.process is not None

    # ------------------------------------------------------------ tasks

    def run(self, task: dict[str, Any], time_limit: float) -> RawResult:
        """Send one task and wait for its reply, at most `time_limit` seconds plus a little grace."""
        try:
            wire.write_message(self._to_worker, task)
        except OSError:
            return self._ended(RawResult("crashed"), "before the case started")
        result = self._receive(time_limit + PROTOCOL_GRACE, time_limit, phase="case")
        if result.kind == "returned":
            result = RawResult(result.body.get("kind", "crashed"), result.body)
        result.stdout, result.stderr = self._output()
        if result.kind in ("timed-out", "crashed", "out-of-memory") or result.body.get("restart"):
            self.stop()
        return result

    def _receive(self, wait: float, limit: float, phase: str) -> RawResult:
        deadline = time.monotonic() + wait
        while True:
            step = min(deadline, time.monotonic() + POLL)
            try:
                return RawResult("returned", self._reader.read(step))
            except wire.ChannelTimeout:
                pass
            except wire.ChannelClosed:
                return self._ended(RawResult("crashed"), _during(phase))
            except wire.BadMessage as error:
                return self._ended(RawResult("crashed"), f"sent a malformed reply ({error})")
            if processes.group_rss_bytes(self.process.pid) > self.memory_limit:
                processes.kill_group(self.process)
                return RawResult("out-of-memory", detail=f"used more than {self.memory_limit >> 20} MiB")
            if time.monotonic() >= deadline:
                if phase == "torch":
                    return RawResult("crashed", detail=f"the worker could not import torch in {wait:.0f} s")
                processes.kill_group(self.process)
                return RawResult("timed-out", detail=f"{limit:g} s")

    def _ended(self, result: RawResult, when: str) -> RawResult:
        try:
            self.process.wait(timeout=2)
        except Exception:  # noqa: BLE001  (still running: it is killed below either way)
            pass
        how = processes.signal_name(self.process.poll())
        processes.kill_group(self.process)
        result.detail = f"the worker process ended ({how}) {when}"
        result.body = {"signal": how}
        return result

    def _output(self) -> tuple[str, str]:
        wait = 1.0 if self.process is not None and self.process.poll() is None else 0.2
        return self._stdout.take(wait), self._stderr.take(wait)


def _during(phase: str) -> str:
    return {"torch": "while importing torch", "import": "while your file was being imported",
            "case": "while running this case"}[phase]
