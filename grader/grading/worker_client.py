"""The grader's side of a worker: start it in a sandbox, hand it tasks, enforce time and memory, read replies as hostile.

Time is CPU time, measured by the kernel for the whole sandbox, so a busy machine does not make
a correct solution time out; a wall-clock limit several times longer catches code that waits
instead of computing. Memory is one limit over every process in the sandbox (a cgroup where the
kernel offers one, else the resident memory of the process tree, watched from here).
"""

from __future__ import annotations

import ast
import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.channel import replies, wire
from grader.channel.output import OutputCollector
from grader.channel.stack_sample import Frame, Samples, where
from grader.course.rules import OBSERVATIONS as RULE_OBSERVATIONS
from grader.files import read_regular
from grader.grading.failure import timeout_detail
from grader.sandbox.box import Program, Sandbox
from grader.sandbox.machine import open_sandbox
from grader.sandbox.policy import base_env, module_command
from grader.sandbox.proctree import schedule_counted

WORKER = "grader.sandboxed.worker"  # the entry point the worker runs
TORCH_IMPORT_LIMIT = 180.0  # seconds of wall clock for the worker to import torch: not the learner's time
WALL_FACTOR = 3.0           # a case may wait (sleep, block) this many times its CPU limit
WALL_EXTRA = 2.0            # plus this, for starting and sending
WALL_CAP = 10.0             # the most wall-clock time a task is given, in times its waiting limit, however busy the machine
SEND_LIMIT = 5.0            # seconds a task may take to be accepted by the worker
POLL = 0.05                 # seconds between checks of time and memory
# What a worker's reply may report: the rules' observations, and what `grader scale` measures of a call on CUDA
# (grader/sandboxed/cuda_measure.py).
# The calls between the learner's own functions it saw (grader/sandboxed/observe.py, Calls) are a hint for the report.
OBSERVATIONS = {**RULE_OBSERVATIONS, "cuda_peak_bytes": (int, None), "cuda_microseconds": (int, None),
                replies.CALLS: (list, str)}
SAMPLE_FD = 5     # the worker's descriptor for stack samples (grader/sandboxed/worker.py)
SAMPLE_SHARE = 0.45  # a call is sampled every this much of its limit (wall-clock), so twice before it is stopped


def sampling(time_limit: float) -> dict[str, float]:
    """What a task carries to have its call's stack sampled while it runs long (a visible case's: a hidden case never
    shows where it was, so its call is not sampled at all)."""
    return {"sample_every": round(max(time_limit * SAMPLE_SHARE, 0.1), 3)}
LOAD_REPLY_BYTES = 1 << 20


@dataclass
class RawResult:
    """What came back from one task, before any judgement: a checked reply, or how the worker ended."""

    kind: str  # ready, load-error, returned, raised, not-attempted, out-of-memory, timed-out, crashed
    reply: replies.Reply | None = None
    loaded: replies.Loaded | None = None
    stdout: str = ""
    stderr: str = ""
    detail: str = ""
    signal: str = ""
    peak_bytes: int | None = None  # sandbox memory above its level before the learner's import, at its peak
    cpu_seconds: float = 0.0       # CPU the learner's processes used on the task, as the kernel counted it
    # Where a call stopped for its time was, from the worker's last stack sample (a hint: stack_sample.py).
    stopped_at: list[Frame] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.reply.seconds if self.reply else 0.0


@dataclass(frozen=True)
class Task:
    """One call for the worker: its message, the descriptors it hands over, and what the call and its reply may cost.

    `inputs`: how many tensors the message names; `shared_bytes`: the size of the inputs handed over in shared
    memory, never the learner's to pay for; `output=False`: what the call prints is never shown (a hidden case),
    so it is not collected for it."""

    message: dict
    fds: list[int]
    inputs: int
    time_limit: float  # CPU seconds
    reply_limit: int   # bytes
    shared_bytes: int = 0
    output: bool = True


class WorkerClient:
    """One learner process that answers tasks in turn; killed and restarted when a task goes wrong."""

    def __init__(self, learner: Path, root: Path, memory_limit_mb: int, use_cuda: bool) -> None:
        self.learner = learner
        self.root = root
        self.memory_limit = memory_limit_mb * 1024 * 1024
        self.use_cuda = use_cuda
        self.sandbox: Sandbox | None = None
        self.load_result: RawResult | None = None
        self.baseline = 0
        self.last_cpu = 0.0  # CPU seconds of the last task that replied
        self.warmed: set[str] = set()  # functions this worker has made its first call of (grader/grading/warm_up.py)
        self._next_id = 1
        self._in_flight: list[Sent] = []  # tasks sent whose replies are not read yet, in the order sent
        # Where each of the file's own functions lies, as the grader parsed it: a hidden case names a line only in one.
        self.learner_lines, self.learner_functions = file_layout(learner)
        self.abandoned = threading.Event()  # set from another thread: what is waited on ends now (abandon)

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the process in a fresh sandbox; it imports torch while the grader prepares everything else."""
        self.sandbox = open_sandbox(self.memory_limit, use_cuda=self.use_cuda, hide=(self.root,))
        self.warmed = set()
        try:
            learner = self.sandbox.add_file(self.learner)
        except BaseException:  # a file that cannot be copied in (refused, unreadable): no worker, nothing left
            self.sandbox.close()
            self.sandbox = None
            raise
        self._inside = learner
        self._tasks, worker_tasks = socket.socketpair()
        reply_read, reply_write = os.pipe()
        sample_read, sample_write = os.pipe()
        self._samples = Samples(sample_read)  # closed by stop(), whatever happens from here
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        config = json.dumps({"learner": learner})
        program = Program(module_command(WORKER, config), base_env(),
                          {0: null, 1: out_write, 2: err_write, 3: worker_tasks.fileno(), 4: reply_write,
                           SAMPLE_FD: sample_write},
                          entry=WORKER, args=(config,))
        try:
            self.sandbox.start([program])
        finally:
            for fd in (null, out_write, err_write, reply_write, sample_write):
                os.close(fd)
            worker_tasks.close()
        self._tasks.setblocking(False)
        self._replies = reply_read
        self._reader = wire.MessageReader(reply_read, LOAD_REPLY_BYTES)
        self._stdout = OutputCollector(os.fdopen(out_read, "rb", buffering=0))
        self._stderr = OutputCollector(os.fdopen(err_read, "rb", buffering=0))
        self.load_result = None

    def wait_ready(self, import_limit: float) -> RawResult:
        """Wait for torch, then let the learner's file be imported; a RawResult says how that went.

        The grader calls this only once everything it trusts is loaded: no learner code runs before.
        """
        if self.load_result is not None:
            return self.load_result
        first = self._receive(TORCH_IMPORT_LIMIT, TORCH_IMPORT_LIMIT, "torch", LOAD_REPLY_BYTES)
        if first.kind != "message" and first.kind != "sandbox-error":
            # Nothing of the learner's has run yet: a worker that dies importing torch is this machine's failure.
            first = RawResult("sandbox-error", detail=f"the worker could not start here ({first.detail})")
        if first.kind == "message":
            try:
                replies.parse_kind(first.reply, ("torch-ready",))
                # Memory is measured from here: torch is loaded, the learner's code not yet.
                self.sandbox.reset_memory_peak()
                self.baseline = self.sandbox.memory_bytes_now()
                self._send({"kind": "go"}, [])
                first = self._receive(import_limit, import_limit, "import", LOAD_REPLY_BYTES)
            except (wire.BadMessage, wire.ChannelClosed, wire.ChannelTimeout) as error:
                first = self._ended(RawResult("crashed"), _problem(error))
        if first.kind == "message":
            try:
                loaded = replies.parse_loaded(first.reply)
                first = RawResult(loaded.kind, loaded=loaded)
            except wire.BadMessage as error:
                first = self._ended(RawResult("crashed"), _problem(error))
        first.stdout, first.stderr = self._output()
        if first.kind != "ready":
            self.stop()
        self.load_result = first
        return first

    def stop(self) -> None:
        """Ask the worker to finish, then make sure it and everything it started are gone."""
        if self.sandbox is None:
            return
        try:
            self._send({"kind": "stop"}, [], deadline=0.2)
            self.sandbox.wait_exit(0, 1.0)  # a well-behaved worker leaves on its own
        except (wire.ChannelClosed, wire.ChannelTimeout, OSError):
            pass
        self.sandbox.close()
        self._in_flight = []
        self._tasks.close()
        self._samples.close()
        try:
            os.close(self._replies)
        except OSError:
            pass
        # stdout and stderr are closed by their collectors once drained, never here (see OutputCollector).
        self.sandbox = None

    @property
    def alive(self) -> bool:
        return self.sandbox is not None

    def twin(self, use_cuda: bool | None = None) -> "WorkerClient":
        """A client of the same file and limits (and of the same devices, unless `use_cuda` says): a worker of its
        own, to run beside this one or after it."""
        return WorkerClient(self.learner, self.root, self.memory_limit >> 20,
                            use_cuda=self.use_cuda if use_cuda is None else use_cuda)

    def abandon(self) -> None:
        """From any thread: the wait for this worker (its start, its import, a task) ends within a poll, its processes
        killed. The caller sends it nothing after, and stops it once no other thread uses it."""
        self.abandoned.set()

    # ------------------------------------------------------------ tasks

    def run(self, task: Task) -> RawResult:
        """Send one task and wait for its checked reply, within its time limit in CPU seconds."""
        sent = self.send(task)
        return sent if isinstance(sent, RawResult) else self.finish(sent)

    def send(self, task: Task) -> "Sent | RawResult":
        """Send one task now and read its reply later (`finish`): the worker computes it while the grader judges
        the one before. Tasks are answered in the order sent; how the task ended, if it could not be sent."""
        if not self._in_flight and self._reader.pending():
            # Something arrived that nobody asked for: this worker's replies can no longer be matched to tasks.
            result = self._ended(RawResult("crashed"), "the worker sent a message nobody asked for (a protocol "
                                                       "violation)")
            result.stdout, result.stderr = self._output()
            self.stop()
            return result
        task_id = self._next_id
        self._next_id += 1
        sandbox = self.sandbox
        kills = sandbox.oom_kills()
        since = (time.monotonic(), sandbox.cpu_seconds(), None)
        try:
            self._send({**task.message, "id": task_id, "reply_limit": task.reply_limit}, task.fds)
        except (wire.ChannelClosed, wire.ChannelTimeout, OSError) as error:
            result = self._ended(RawResult("crashed"), _problem(error, "before the case started"))
            result.stdout, result.stderr = self._output()
            self.stop()
            return result
        sent = Sent(sandbox, task_id, task.inputs, task.time_limit, task.reply_limit, task.shared_bytes,
                    "memory" in task.message.get("audit", ()), kills, since, task.output)
        self._in_flight.append(sent)
        return sent

    def sent_to(self, sent: "Sent | RawResult") -> bool:
        """Whether `sent` went to the worker running now (a task that could not be sent, or went to a worker since
        stopped, will get no reply from it)."""
        return isinstance(sent, Sent) and sent.sandbox is self.sandbox and self.sandbox is not None

    def finish(self, sent: "Sent") -> RawResult | None:
        """The checked reply to a task `send` sent; None if the worker it went to is gone (send it again)."""
        if not self.sent_to(sent) or not self._in_flight or self._in_flight[0] is not sent:
            return None  # its worker is gone, or it was not the next to be answered: it gets no reply read here
        self._in_flight.pop(0)
        result = self._receive(sent.time_limit, sent.time_limit * WALL_FACTOR + WALL_EXTRA, "case", sent.reply_limit,
                               sent.since)
        samples = self._samples.drain()
        if result.kind == "timed-out":
            result.stopped_at = where(samples, self._inside, self.learner_lines)
        if self._in_flight and self.sandbox is not None:
            # The worker starts the next task as it answers this one: that task's clocks start now, not when it was
            # sent, so that none of this task's time is counted against it.
            self._in_flight[0].since = (time.monotonic(), self.sandbox.cpu_seconds(), None)
        if result.kind == "message":
            try:
                reply = replies.parse_case(result.reply, result.tensors, sent.task_id, sent.inputs, OBSERVATIONS)
                result = RawResult(reply.kind, reply=reply, cpu_seconds=self.last_cpu)
            except wire.BadMessage as error:
                result = self._ended(RawResult("crashed"), _problem(error))
        if self.sandbox is not None and result.kind != "out-of-memory" and self.sandbox.oom_kills() > sent.kills:
            # The function returned, but a process it started was killed at the memory limit: all of them count.
            self.sandbox.kill()
            result = RawResult("out-of-memory", detail=f"a process of your code went over the {self.memory_limit >> 20} "
                                                       f"MiB that all of them share, and the kernel killed it")
        if self.sandbox is not None and sent.audited and self.sandbox.memory_judged:
            # Measured for a memory-audited call only; where nothing counts every process there is no figure at all.
            shared = sent.shared_bytes if self.sandbox.peak_counts_shared_pages else 0
            result.peak_bytes = max(self.sandbox.memory_peak() - self.baseline - shared, 0)
        if sent.output:
            result.stdout, result.stderr = self._output()
        if result.kind in ("timed-out", "crashed", "out-of-memory") or (result.reply and result.reply.restart):
            self.stop()
        return result

    def reset_memory_peak(self) -> None:
        if self.sandbox is not None:
            self.sandbox.reset_memory_peak()

    def rebase_memory(self, allowance: int) -> None:
        """Measure memory from the level the worker holds now (after the learner's import and first call), as far
        as it is at most `allowance` above the level before the import; beyond that it still counts."""
        if self.sandbox is not None:
            self.baseline += max(0, min(self.sandbox.memory_bytes_now() - self.baseline, allowance))
            self.sandbox.reset_memory_peak()

    def _send(self, body: dict, fds: list[int], deadline: float = SEND_LIMIT) -> None:
        wire.send_with_fds(self._tasks, wire.encode(body), fds, time.monotonic() + deadline)

    def _receive(self, cpu_limit: float, wall_limit: float, phase: str, limit: int,
                 since: tuple[float, float, float | None] | None = None) -> "_Message | RawResult":
        """The next message, or how the task ended: over its CPU limit, or waiting (asleep, blocked: not running and
        not queued for a core) for longer than `wall_limit`. Time spent queued behind other work on a busy machine
        is the machine's, so a verdict does not depend on the load; WALL_CAP times the limit bounds it all."""
        sandbox = self.sandbox
        self._reader.limit = limit
        started, cpu_start, queued_start = since or (time.monotonic(), sandbox.cpu_seconds(), None)
        self.last_cpu = 0.0
        while True:
            now = time.monotonic()
            try:
                body, tensors = self._reader.read(min(now + POLL, started + wall_limit * WALL_CAP))
                self.last_cpu = max(sandbox.cpu_seconds() - cpu_start, 0.0)
                return _Message(body, tensors)
            except wire.ChannelTimeout:
                pass
            except wire.ChannelClosed:
                return self._ended(RawResult("crashed"), _during(phase), ended=True)
            except wire.BadMessage as error:
                return self._ended(RawResult("crashed"), _problem(error))
            if self.abandoned.is_set():
                sandbox.kill()
                return RawResult("crashed", detail="the grader stopped waiting for this worker")
            if queued_start is None:
                # Read once the task has run a poll's length (most answer sooner): time spent queued for a core
                # before then counts as waiting, at most POLL of a wall limit of seconds.
                queued_start = sandbox.queued_seconds()
            if not sandbox.memory_limited_by_kernel and (now_bytes := sandbox.memory_bytes_now()) > self.memory_limit:
                sandbox.kill()
                return RawResult("out-of-memory", detail=f"used {now_bytes >> 20} MiB, measured by the operating "
                                                         f"system, over the {self.memory_limit >> 20} MiB limit")
            if phase == "torch":
                if time.monotonic() - started >= wall_limit:
                    sandbox.kill()
                    return RawResult("crashed", detail=f"the worker could not import torch in {wall_limit:.0f} s")
                continue
            used = sandbox.cpu_seconds() - cpu_start
            elapsed = time.monotonic() - started
            if used <= cpu_limit and elapsed - used < wall_limit:
                continue  # neither limit can be reached yet: the threads' schedule statistics are not read
            queued = sandbox.queued_seconds() - queued_start
            if used > cpu_limit or elapsed - used - queued >= wall_limit or elapsed >= wall_limit * WALL_CAP:
                sandbox.kill()
                how, detail = timeout_detail(cpu_limit, used, elapsed, queued if schedule_counted() else None,
                                             wall_limit)
                return RawResult("timed-out", detail=detail, signal=how, cpu_seconds=used)

    def _ended(self, result: RawResult, what: str, ended: bool = False) -> RawResult:
        """The worker is gone, or is killed now: say how, from what the sandbox's init reported."""
        sandbox = self.sandbox
        how = (sandbox.wait_exit(0, 2.0) if ended else None) or "killed"
        oom = sandbox.oom_killed()
        sandbox.kill()
        if sandbox.error:  # the launcher said why the sandbox could not be built: never the learner's doing
            return RawResult("sandbox-error", detail=f"the sandbox could not start ({sandbox.error})")
        if oom:
            return RawResult("out-of-memory", detail=f"used more than {self.memory_limit >> 20} MiB (stopped by the "
                                                     f"kernel)")
        result.detail = f"the worker process ended ({how}) {what}" if ended else what
        result.signal = how if ended else ""
        return result

    def _output(self) -> tuple[str, str]:
        wait = 1.0 if self.sandbox is not None else 0.2
        return self._stdout.take(wait), self._stderr.take(wait)


@dataclass
class Sent:
    """A task handed to the worker whose reply is still to be read, and the clocks as they stood when it was sent."""

    sandbox: Sandbox
    task_id: int
    inputs: int
    time_limit: float
    reply_limit: int
    shared_bytes: int
    audited: bool
    kills: int
    since: tuple[float, float, float | None]  # wall clock, CPU, time queued for a core (None: not read yet)
    output: bool = True                       # whether what it printed is collected for it


@dataclass
class _Message:
    """A whole, decoded message not yet checked against any schema."""

    reply: object
    tensors: list = field(default_factory=list)
    kind: str = "message"


def file_layout(path: Path) -> tuple[int, dict[str, tuple[int, int]]]:
    """How many lines the file has (a last line without a newline counts), and the first and last line of every
    function it defines at its top level, from the grader's own parse of the bytes graded; 0 and none where it
    cannot be read, no functions where it cannot be parsed (a file that does not parse never runs a case)."""
    try:
        data = read_regular(path)
    except OSError:
        return 0, {}
    lines = data.count(b"\n") + (bool(data) and not data.endswith(b"\n"))
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return lines, {}
    return lines, {node.name: (node.lineno, node.end_lineno or node.lineno) for node in tree.body
                   if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _problem(error: Exception, when: str = "") -> str:
    """What went wrong in talking to the worker, as the learner reads it."""
    if isinstance(error, wire.ChannelTimeout):
        return "the worker stopped reading its tasks" + (f" {when}" if when else "")
    if isinstance(error, wire.BadMessage):
        return f"the worker sent a malformed reply ({error})"
    return f"the worker's channel closed {when}".rstrip()


def _during(phase: str) -> str:
    return {"torch": "while importing torch", "import": "while your file was being imported",
            "case": "while running this case"}[phase]
