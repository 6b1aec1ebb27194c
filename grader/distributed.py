"""The distributed ring suite: start N ranks, hold the whole group to one time limit, judge here."""

from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from grader import processes, ring_cases, wire
from grader.cases import Case
from grader.course import Exercise
from grader.errors import UsageError
from grader.results import CaseResult, Outcome, Report
from grader.supervisor import TORCH_IMPORT_LIMIT

COMM_FRACTION = 0.5  # gloo gives up after this share of the group limit, so survivors report in time
AFTERMATH = 1.0      # seconds the others get to report once one rank has failed outright
POLL = 0.2


@dataclass
class Rank:
    """One rank's process, its channels, and what it said or how it ended."""

    number: int
    process: Any
    to_rank: int
    from_rank: int
    stdout: processes.OutputCollector
    stderr: processes.OutputCollector
    state: str = "starting"  # starting, importing, ready, replied, ended
    reply: dict[str, Any] = field(default_factory=dict)
    ended: str = ""
    reader: threading.Thread | None = None


def run_ring_suite(exercise: Exercise, learner: Path, world: int, device: str, report: Report,
                   on_result: Callable[[CaseResult], None], solution: Any, time_limit: float | None = None) -> None:
    """Run every ring case for `world` ranks after the ordinary cases; results go into `report`."""
    if world < 2:
        raise UsageError(f"--ring needs at least 2 ranks, not {world}")
    use_cuda = False
    if device != "cpu":
        import torch

        use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world
        if not use_cuda:
            report.notes.append(f"The distributed suite ran on the CPU with gloo: fewer than {world} CUDA "
                                f"devices are present.")
    for case in ring_cases.ring_cases(exercise.ring, world):
        result = run_case(exercise, learner, case, use_cuda, solution, time_limit)
        report.results.append(result)
        on_result(result)


def run_case(exercise: Exercise, learner: Path, case: Case, use_cuda: bool, solution: Any,
             time_limit: float | None = None) -> CaseResult:
    """Start the ranks, wait for all of them within the group limit, kill them all, judge their replies."""
    inputs = ring_cases.build(case.params, solution)
    world = len(inputs.queries)
    limit = time_limit or case.time_limit or exercise.time_limit
    device = "cuda" if use_cuda else "cpu"
    result = CaseResult(case.name, case.suite, case.function, device, Outcome.FAILED, about=case.about,
                        inputs=inputs.summary + (", NCCL" if use_cuda else ", gloo"))
    folder = Path(tempfile.mkdtemp(prefix="grader-ring-"))
    ranks: list[Rank] = []
    try:
        for number in range(world):
            ranks.append(_start(exercise, learner, number, inputs, folder, use_cuda, limit))
        _supervise(ranks, limit, exercise.time_limit, exercise.memory_limit_mb << 20)
    finally:
        for rank in ranks:
            _stop(rank)
        shutil.rmtree(folder, ignore_errors=True)
    result.stdout = _joined(ranks, "stdout")
    result.stderr = _joined(ranks, "stderr")
    from grader.ring_verdict import judge

    judge(ranks, inputs, limit, exercise, result)
    return result


def _start(exercise: Exercise, learner: Path, number: int, inputs: Any, folder: Path, use_cuda: bool,
           limit: float) -> Rank:
    shard = {"query": inputs.queries[number], "key": inputs.keys[number], "value": inputs.values[number]}
    (folder / f"inputs-{number}").write_bytes(wire.encode(shard))
    to_rank_r, to_rank = os.pipe()
    from_rank, from_rank_w = os.pipe()
    config = {
        "learner": str(learner), "rank": number, "world_size": len(inputs.queries),
        "shards": [key.shape[-2] for key in inputs.keys], "inputs": str(folder / f"inputs-{number}"),
        # A FileStore in a private folder: no port to race for, and nothing listens beyond this machine.
        "store": str(folder / "store"), "backend": "nccl" if use_cuda else "gloo",
        "device": f"cuda:{number}" if use_cuda else "cpu", "comm_timeout": max(1.0, COMM_FRACTION * limit),
        "read_fd": to_rank_r, "write_fd": from_rank_w,
        "address_space_bytes": exercise.memory_limit_mb << 20, "may_use_cuda": use_cuda,
    }
    process = processes.spawn([sys.executable, "-m", "grader.ring_rank", json.dumps(config)],
                              (to_rank_r, from_rank_w), processes.child_env(GLOO_SOCKET_IFNAME="lo"), exercise.root)
    os.close(to_rank_r)
    os.close(from_rank_w)
    # The ranks never write this sentinel: each collector keeps one capped segment per rank.
    sentinel = ("\x00grader-ring-" + secrets.token_hex(8)).encode()
    return Rank(number, process, to_rank, from_rank, processes.OutputCollector(process.stdout, sentinel),
                processes.OutputCollector(process.stderr, sentinel))


def _supervise(ranks: list[Rank], limit: float, import_limit: float, memory_limit: int) -> None:
    """Collect replies until all are in, one rank fails outright (then briefly more), or time runs out."""
    inbox: queue.Queue = queue.Queue()
    for rank in ranks:
        rank.reader = threading.Thread(target=_read, args=(rank, inbox), daemon=True)
        rank.reader.start()
    now = time.monotonic()
    deadline, phase = now + TORCH_IMPORT_LIMIT, "torch"
    while any(rank.state not in ("replied", "ended") for rank in ranks):
        try:
            number, message = inbox.get(timeout=POLL)
            _receive(ranks[number], message)
        except queue.Empty:
            pass
        now = time.monotonic()
        for rank in ranks:
            if rank.state not in ("replied", "ended") and processes.group_rss_bytes(rank.process.pid) > memory_limit:
                rank.state, rank.ended = "ended", f"out-of-memory:{memory_limit >> 20}"
        # The clock that matters moves on once every rank has passed the phase before it.
        if phase == "torch" and all(rank.state != "starting" for rank in ranks):
            deadline, phase = now + import_limit + max(1.0, COMM_FRACTION * limit), "import"
        if phase == "import" and all(rank.state not in ("starting", "importing") for rank in ranks):
            deadline, phase = now + limit, "ring"
        if any(_failed_outright(rank) for rank in ranks) and phase != "aftermath":
            deadline, phase = min(deadline, now + AFTERMATH), "aftermath"
        if now >= deadline:
            for rank in ranks:
                if rank.state not in ("replied", "ended"):
                    rank.ended = f"timeout:{rank.state}"
            return


def _read(rank: Rank, inbox: queue.Queue) -> None:
    reader = wire.MessageReader(rank.from_rank)
    while True:
        try:
            inbox.put((rank.number, reader.read()))
        except (wire.ChannelClosed, OSError):
            inbox.put((rank.number, {"kind": "closed"}))
            return
        except wire.BadMessage as error:
            inbox.put((rank.number, {"kind": "closed", "detail": f"sent a malformed reply ({error})"}))
            return


def _receive(rank: Rank, message: dict[str, Any]) -> None:
    kind = message.get("kind")
    if kind == "torch-ready":
        rank.state = "importing"
    elif kind == "ready":
        rank.state = "ready"
    elif kind == "closed":
        if rank.state != "replied":
            try:
                rank.process.wait(timeout=2)
            except Exception:  # noqa: BLE001  (it closed its channel but lives: killed in _stop)
                pass
            rank.state, rank.ended = "ended", message.get("detail") or processes.signal_name(rank.process.poll())
    elif rank.state != "replied":
        rank.state, rank.reply = "replied", message


def _failed_outright(rank: Rank) -> bool:
    """A rank that ended, or whose own code raised: what the others do next is only a consequence."""
    if rank.state == "ended":
        return True
    return rank.state == "replied" and rank.reply.get("kind") not in ("returned",) and \
        rank.reply.get("phase") != "communication"


def _stop(rank: Rank) -> None:
    """Closing its inbound pipe lets a rank that replied leave on its own; the group is killed either way."""
    try:
        os.close(rank.to_rank)
    except OSError:
        pass
    processes.kill_group(rank.process, grace=0.3)
    # Close the reply pipe only once its reader has seen the end: never close an fd another thread reads.
    if rank.reader is not None:
        rank.reader.join(timeout=2)
    if rank.reader is None or not rank.reader.is_alive():
        try:
            os.close(rank.from_rank)
        except OSError:
            pass


def _joined(ranks: list[Rank], stream: str) -> str:
    """Every rank's output, each line marked with the rank that printed it."""
    parts = []
    for rank in ranks:
        text = getattr(rank, stream).take(0.5)
        parts += [f"[rank {rank.number}] {line}" for line in text.splitlines()]
    return "\n".join(parts) + ("\n" if parts else "")
