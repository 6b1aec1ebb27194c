"""Running a distributed suite: N ranks in one sandbox, held to one time and memory limit, judged here.

The ranks share one sandbox (one PID and network namespace, so gloo can use their private
loopback, and one cgroup). Each rank's tensors reach it over its own pipe, never through a file
another rank could read, and the bytes the ranks moved over loopback are read from the kernel's
counters, so a group that was meant to exchange data and did not cannot pass.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple

from grader.channel import replies, wire
from grader.channel.output import OutputCollector
from grader.course.cases import Case
from grader.course.distributed import DistributedInputs, DistributedSuite
from grader.errors import UsageError
from grader.grading.budget import Budget
from grader.grading.request import Listener, Run
from grader.grading.worker_client import TORCH_IMPORT_LIMIT, WALL_FACTOR
from grader.results import CaseResult, Outcome, Report
from grader.sandbox.box import Program, Sandbox
from grader.sandbox.machine import open_sandbox
from grader.sandbox.policy import base_env, module_command

COMM_FRACTION = 0.5  # gloo gives up after this share of the suite's limit, so survivors report in time
AFTERMATH = 1.0      # seconds the others get to report once one rank has failed outright
POLL = 0.05
RANK_REPLY_BYTES = 16 << 20
STORE = "tcp:127.0.0.1:29400"
MAX_MESSAGES = 3  # torch-ready, ready, the reply: a rank that sends more is ignored from then on
RANK = "grader.sandboxed.rank"  # the entry point each rank runs
PROGRAM = "exercise"  # the folder, inside the sandbox, that holds the exercise's rank program


@dataclass
class Rank:
    """One rank's channels, and what it said or how it ended."""

    number: int
    to_rank: int
    from_rank: int
    stdout: OutputCollector
    stderr: OutputCollector
    state: str = "starting"  # starting, torch-ready, importing, ready, replied, ended
    reply: dict[str, Any] = field(default_factory=dict)
    ended: str = ""
    reader: threading.Thread | None = None


class DistributedRun(NamedTuple):
    """A distributed suite as one run runs it: the suite, its world size, the reference its inputs are built with,
    and a limit for each of its cases in place of their own (None: each case's, a learner's extra time included)."""

    suite: DistributedSuite
    world: int
    reference: Any = None
    limit: float | None = None


def choose_suite(run: Run, suites: dict[str, DistributedSuite], reference: Any = None) -> DistributedRun | None:
    """The distributed suite to run and its world size: the one asked for (`--ranks N`, or the suite's own name,
    such as 07's `--ring N`), else, for a submission, the one exercise.yaml declares; None where none runs.
    A world size none of the suite's cases needs is a usage error, never a run of nothing."""
    exercise, requested = run.exercise, run.distributed
    if requested is None:
        if run.mode != "submit" or exercise.distributed is None or not suites:
            return None
        requested = ("ranks", exercise.distributed.ranks)
    option, world = requested
    if world < 2:
        raise UsageError(f"--{option} needs at least 2 ranks, not {world}")
    if not suites:
        raise UsageError(f"--{option}: {exercise.name} has no distributed suite")
    suite = next(iter(suites.values())) if option == "ranks" else suites.get(option)
    if suite is None:
        raise UsageError(f"--{option}: {exercise.name} has no {option} suite (it has: "
                         f"{', '.join(f'--{name}' for name in suites)}, or --ranks)")
    if not suite.cases(world):
        sizes = sorted({suite.world_of(case) for case in suite.all_cases()})
        raise UsageError(f"--{option} {world}: {exercise.name}'s {suite.option} suite has no case for {world} ranks"
                         + (f" (its cases need {', '.join(map(str, sizes))})" if sizes else ""))
    return DistributedRun(suite, world, reference)


def run_distributed_suite(run: Run, listener: Listener, suite_run: DistributedRun, report: Report, budget: Budget | None = None,
                    stop: threading.Event | None = None) -> None:
    """Run every case of the suite for its world size after the ordinary cases (those of `run.only`, if it names
    some); results go into `report`, each handed to `listener`. With a `budget`, cases are not run once the suite
    has timed out a few times or the budget is used up. Once `stop` is set (from another thread), the case running
    ends within a poll and no other starts."""
    suite, world, exercise = suite_run.suite, suite_run.world, run.exercise
    use_cuda = False
    if run.device != "cpu":
        import torch

        use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world
        if not use_cuda:
            report.notes.append(f"The {suite.option} suite ran on the CPU with gloo: fewer than {world} CUDA "
                                f"devices are present.")
    budget = budget or Budget(None)
    for case in suite.cases(world):
        if run.only is not None and case.name not in run.only:
            continue
        if stop is not None and stop.is_set():
            return
        refusal = budget.refusal(case, tuple(suite.uses))  # its program calls them: a stopped one is not run again
        if refusal:
            result = budget.not_run(case, "cuda" if use_cuda else "cpu", refusal, tuple(suite.uses))
            result.extra["ranks"] = world
        else:
            result = budget.count(run_case(run, suite_run, case, use_cuda, stop))
        if exercise.distributed is not None and not exercise.distributed.counts:
            result.points = 0.0  # shown, and its verdict kept; worth nothing toward the score
        report.results.append(result)
        listener.finished(result)


class Group(NamedTuple):
    """One case's group of ranks as it ran: the verdict, each rank (what it said), the inputs, the bytes moved."""

    result: CaseResult
    ranks: list[Rank]
    inputs: DistributedInputs
    traffic: int | None


def run_case(run: Run, suite_run: DistributedRun, case: Case, use_cuda: bool = False,
             stop: threading.Event | None = None,
             on_traffic: Callable[[int | None, DistributedInputs], None] | None = None) -> CaseResult:
    """One of the suite's cases on `run.file` (run_group), its failure named after the catalogued mistake it agrees
    with where `run.diagnose` (grader/grading/distributed_diagnosis.py). `on_traffic` gets the bytes the kernel
    counted between the ranks (None where it cannot count them) and the case's inputs."""
    group = run_group(run, suite_run, case, use_cuda, stop)
    if on_traffic is not None:
        on_traffic(group.traffic, group.inputs)
    if run.diagnose and group.result.outcome in (Outcome.FAILED, Outcome.ERROR):
        from grader.grading.distributed_diagnosis import diagnose

        diagnose(run, suite_run, case, group, run_group, stop)
    return group.result


def run_group(run: Run, suite_run: DistributedRun, case: Case, use_cuda: bool = False,
              stop: threading.Event | None = None) -> Group:
    """Start the ranks of one of the suite's cases on `run.file`, wait for all of them within the suite's limit, kill
    them all, judge their replies."""
    exercise, suite = run.exercise, suite_run.suite
    inputs = suite.build(case, suite_run.reference)
    world = inputs.world
    limit = suite_run.limit or (case.time_limit * exercise.time_factor if case.time_limit else exercise.time_limit)
    device = "cuda" if use_cuda else "cpu"
    result = CaseResult(case.name, case.suite, case.function, device, Outcome.FAILED, about=case.about,
                        inputs=inputs.summary + (", NCCL" if use_cuda else ", gloo"), points=case.points,
                        visibility=case.visibility, required=case.required,
                        extra={"ranks": world}, reached=list(suite.uses))  # the course's program calls these
    sandbox = open_sandbox((exercise.memory_limit_mb << 20) * world, processes=128 * world, use_cuda=use_cuda,
                           loopback=True, hide=(exercise.root,), apart=True, counted=True)
    ranks: list[Rank] = []
    traffic = None
    try:
        ranks = _start(sandbox, suite, run.file, inputs, use_cuda, limit)
        before = _supervise(run, ranks, sandbox, inputs, limit, stop)
        after = sandbox.loopback_bytes()
        # Only what the ranks moved once every one had joined the group: the rank programs' (and learner's) own.
        traffic = after - before if after is not None and before is not None else None
    finally:
        sandbox.kill()
        for rank in ranks:
            _stop(rank)
        sandbox.close()
    result.stdout, platform_out = _joined(ranks, "stdout")
    result.stderr, platform_err = _joined(ranks, "stderr")
    result.platform_output = platform_out + platform_err
    from grader.grading.distributed_verdict import judge

    judge(ranks, inputs, limit, exercise, result, traffic)
    stats = [rank.reply.get("stats") or [] for rank in ranks]
    table = suite.table(stats, inputs) if any(stats) else None
    if table:
        result.extra["table"] = table
    return Group(result, ranks, inputs, traffic)


def _start(sandbox: Sandbox, suite: DistributedSuite, learner: Path, inputs: DistributedInputs, use_cuda: bool,
           limit: float) -> list[Rank]:
    inside = sandbox.add_file(learner)
    program = sandbox.add_file(suite.rank_program, PROGRAM)
    # The ranks meet over their private loopback (no file any rank could use for more); without namespaces,
    # where ports are the machine's, through a file in a folder of the sandbox's.
    store = STORE if sandbox.namespaces else "file:" + str(_file_store(sandbox))
    programs, ranks, close = [], [], []
    world = inputs.world
    null = os.open(os.devnull, os.O_RDONLY)
    close.append(null)
    for number in range(world):
        to_rank_read, to_rank = os.pipe()
        from_rank, from_rank_write = os.pipe()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        close += [to_rank_read, from_rank_write, out_write, err_write]
        config = {
            **inputs.config, "learner": inside, "program": program, "rank": number, "world_size": world,
            "store": store, "backend": "nccl" if use_cuda else "gloo", "device": f"cuda:{number}" if use_cuda else "cpu",
            "comm_timeout": max(1.0, COMM_FRACTION * limit), "threads": max(1, (os.cpu_count() or 1) // world),
        }
        arguments = json.dumps(config)
        programs.append(Program(module_command(RANK, arguments), base_env(GLOO_SOCKET_IFNAME="lo"),
                                {0: null, 1: out_write, 2: err_write, 3: to_rank_read, 4: from_rank_write},
                                entry=RANK, args=(arguments,)))
        os.set_blocking(to_rank, False)
        ranks.append(Rank(number, to_rank, from_rank, OutputCollector(os.fdopen(out_read, "rb", buffering=0)),
                          OutputCollector(os.fdopen(err_read, "rb", buffering=0))))
    try:
        sandbox.start(programs)
    finally:
        for fd in close:
            os.close(fd)
    return ranks


def _supervise(run: Run, ranks: list[Rank], sandbox: Sandbox, inputs: DistributedInputs, limit: float,
               stop: threading.Event | None = None) -> int | None:
    """Collect replies until all are in, one rank fails outright (then briefly more), or time runs out; the
    loopback's byte count when every rank had joined the group (None before that, or without a loopback).
    Importing the learner's file may take the run's per-case limit."""
    import_limit, world = run.exercise.time_limit, inputs.world
    inbox: queue.Queue = queue.Queue()
    now = time.monotonic()
    # The readers' own deadline: past every phase's below, whatever the ranks do (they are killed by then).
    last = now + TORCH_IMPORT_LIMIT + (import_limit + max(1.0, COMM_FRACTION * limit) + limit) * WALL_FACTOR + 10
    for rank in ranks:
        rank.reader = threading.Thread(target=_read, args=(rank, inbox, world, last), daemon=True)
        rank.reader.start()
    deadline, phase = now + TORCH_IMPORT_LIMIT, "torch"
    cpu_start, cpu_limit = 0.0, float("inf")
    before: int | None = None
    while any(rank.state not in ("replied", "ended") for rank in ranks):
        try:
            number, message = inbox.get(timeout=POLL)
            _receive(ranks[number], message, sandbox, inputs)
        except queue.Empty:
            pass
        sandbox.poll_status()
        if stop is not None and stop.is_set():  # the run ended elsewhere: this case's result is never shown
            for rank in ranks:
                if rank.state not in ("replied", "ended"):
                    rank.state, rank.ended = "ended", "stopped by the grader"
            sandbox.kill()
            return before
        now = time.monotonic()
        for rank in ranks:
            if rank.state not in ("replied", "ended") and rank.number in sandbox.exits and rank.reader is not None \
                    and not rank.reader.is_alive():
                rank.state, rank.ended = "ended", sandbox.exits[rank.number]
        if sandbox.oom_killed() or (not sandbox.memory_limited_by_kernel
                                    and sandbox.memory_bytes_now() > sandbox.memory_bytes):
            for rank in ranks:
                if rank.state not in ("replied", "ended"):
                    rank.state, rank.ended = "ended", f"out-of-memory:{sandbox.memory_bytes >> 20}"
            sandbox.kill()
            return before
        # Every rank gets its go once all have torch: no learner code runs while a peer is still starting.
        if phase == "torch" and all(rank.state != "starting" for rank in ranks):
            for rank in ranks:
                if rank.state == "torch-ready":
                    _go(rank)
        # The clock that matters moves on once every rank has passed the phase before it.
        if phase == "torch" and all(rank.state != "starting" for rank in ranks):
            deadline, phase = now + (import_limit + max(1.0, COMM_FRACTION * limit)) * WALL_FACTOR, "import"
        if phase == "import" and all(rank.state not in ("starting", "importing") for rank in ranks):
            deadline, phase = now + limit * WALL_FACTOR, "ranks"
            cpu_start, cpu_limit = sandbox.cpu_seconds(), limit * world
            # Every rank has joined (or failed to): the traffic counted from here on is the programs' alone.
            before = sandbox.loopback_bytes()
            for rank in ranks:
                if rank.state == "ready":
                    _start_program(rank, inputs)
        if any(_failed_outright(rank) for rank in ranks) and phase != "aftermath":
            deadline, phase = min(deadline, now + AFTERMATH), "aftermath"
        if now >= deadline or sandbox.cpu_seconds() - cpu_start > cpu_limit:
            for rank in ranks:
                if rank.state not in ("replied", "ended"):
                    rank.ended = f"timeout:{rank.state}"
            return before
    return before


def _read(rank: Rank, inbox: queue.Queue, world: int, deadline: float) -> None:
    """One rank's messages, each checked, until `deadline`; anything malformed, or one too many, ends the
    conversation."""
    reader = wire.MessageReader(rank.from_rank, RANK_REPLY_BYTES)
    for _ in range(MAX_MESSAGES):
        try:
            body, tensors = reader.read(deadline)
            message = replies.parse_rank(body, tensors, world)
        except (wire.ChannelClosed, wire.ChannelTimeout, OSError):
            inbox.put((rank.number, {"kind": "closed"}))
            return
        except wire.BadMessage as error:
            inbox.put((rank.number, {"kind": "closed", "detail": f"sent a malformed reply ({error})"}))
            return
        except Exception as error:  # noqa: BLE001  (whatever a rank sends, this thread ends quietly)
            inbox.put((rank.number, {"kind": "closed", "detail": f"sent an unreadable reply ({type(error).__name__})"}))
            return
        inbox.put((rank.number, message))
        if message.get("kind") not in ("torch-ready", "ready"):
            return  # the reply: nothing more is read from this rank, so nothing more can pile up here


def _receive(rank: Rank, message: dict[str, Any], sandbox: Sandbox, inputs: DistributedInputs) -> None:
    from grader.inert import inert

    message = {key: inert(value) if isinstance(value, str) else value for key, value in message.items()}
    kind = message.get("kind")
    if kind == "torch-ready" and rank.state == "starting":
        rank.state = "torch-ready"
    elif kind == "ready" and rank.state == "importing":
        rank.state = "ready"
    elif kind == "closed":
        if rank.state != "replied":
            how = sandbox.wait_exit(rank.number, 2.0)
            rank.state, rank.ended = "ended", message.get("detail") or how or "killed"
    elif kind in ("torch-ready", "ready"):
        rank.state, rank.ended = "ended", "sent a message out of turn (a protocol violation)"
    elif rank.state != "replied":
        rank.state, rank.reply = "replied", message


def _go(rank: Rank) -> None:
    """The grader's go: import the learner's file and join the group (the tensors come with the start)."""
    rank.state = "importing"
    try:
        wire.write_message(rank.to_rank, {"kind": "go"}, time.monotonic() + 5)
    except (wire.ChannelClosed, wire.ChannelTimeout, OSError):
        rank.state, rank.ended = "ended", "stopped reading its pipe"


def _file_store(sandbox: Sandbox) -> Path:
    """The ranks' meeting file, made here, readable and writable by every rank: each may run as a uid of its own."""
    path = sandbox.shared_folder("store") / "store"
    path.touch()
    path.chmod(0o666)
    return path


def _start_program(rank: Rank, inputs: DistributedInputs) -> None:
    """The grader's start, once every rank has joined the group and the loopback's count has begun, with this rank's
    own tensors: no other rank ever sees them, and none is in reach of the learner's code before."""
    try:
        wire.write_message(rank.to_rank, {"kind": "start"}, time.monotonic() + 5, tensors=inputs.tensors[rank.number])
    except (wire.ChannelClosed, wire.ChannelTimeout, OSError):
        rank.state, rank.ended = "ended", "stopped reading its pipe"


def _failed_outright(rank: Rank) -> bool:
    """A rank that ended, or whose own code raised: what the others do next is only a consequence."""
    if rank.state == "ended":
        return True
    return rank.state == "replied" and rank.reply.get("kind") not in ("returned",) and \
        rank.reply.get("phase") != "communication"


def _stop(rank: Rank) -> None:
    """Close the grader's ends once the sandbox is gone; never close an fd another thread still reads."""
    try:
        os.close(rank.to_rank)
    except OSError:
        pass
    if rank.reader is not None:
        rank.reader.join(timeout=2)
    if rank.reader is None or not rank.reader.is_alive():
        try:
            os.close(rank.from_rank)
        except OSError:
            pass


def _joined(ranks: list[Rank], stream: str) -> tuple[str, str]:
    """Every rank's output, each line marked with the rank that printed it: the learner's code's, and what torch
    printed on its own about the sandbox (grader/channel/noise.py)."""
    from grader.channel.noise import split_platform
    from grader.inert import inert

    own: list[str] = []
    platform: list[str] = []
    for rank in ranks:
        learner, torch_own = split_platform(inert(getattr(rank, stream).take(0.5)))
        own += [f"[rank {rank.number}] {line}" for line in learner.splitlines()]
        platform += [f"[rank {rank.number}] {line}" for line in torch_own.splitlines()]
    return tuple("\n".join(lines) + ("\n" if lines else "") for lines in (own, platform))
