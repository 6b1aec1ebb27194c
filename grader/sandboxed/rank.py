"""One rank of a distributed suite: joins a torch.distributed process group and runs the exercise's rank program.

Started by grader/grading/distributed.py in a sandbox shared with the other ranks, as
`python -m grader.sandboxed.rank CONFIG_JSON`. On the grader's go it imports the learner's file and
joins the group; its own tensors arrive over its pipe (descriptor 3) with the grader's start, once
every rank has joined and the loopback's count has begun, so that nothing the learner's code does
before can move them uncounted. It then calls the exercise's rank program,
`run(learner, tensors, config) -> (output, stats)`, reporting on descriptor 4. A rank program calls
the learner through `call_learner`, so that what the learner's code raised is told apart from a
peer's failure. Everything here runs beside untrusted code, so nothing here decides pass or fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

from grader.channel import wire
from grader.inert import fit
from grader.sandboxed.worker import REPLY_FD, describe_exception, flush_output, load_learner, send, warm_up

TENSORS_FD = 3


class LearnerFailure(Exception):
    """Learner code raised, or returned what the rank program cannot use: the learner's failure, not a peer's."""

    def __init__(self, error: BaseException, seconds: float) -> None:
        super().__init__(str(error))
        self.error = error
        self.seconds = seconds


def call_learner(function: Callable, name: str, started: float, *args: Any, check: Callable | None = None) -> Any:
    """Call learner code; anything it raises, or a result `check` rejects (with a message), is its failure."""
    try:
        result = function(*args)
    except BaseException as error:  # noqa: BLE001  (every way out of learner code is reported)
        raise LearnerFailure(error, time.perf_counter() - started) from None
    problem = check(result) if check is not None else None
    if problem:
        raise LearnerFailure(TypeError(f"{name} {problem}"), time.perf_counter() - started)
    return result


def learner_function(module: Any, name: str) -> Callable:
    """The learner's function `name` from their module; where there is none, the learner's failure."""
    function = getattr(module, name, None)
    if not callable(function):
        raise LearnerFailure(AttributeError(f"your file has no function named {name}"), 0.0)
    return function


def main(config: dict[str, Any]) -> None:
    """Torch, the grader's go, the learner's file, the group, the start with this rank's tensors, the program; then
    wait."""
    import torch
    import torch.distributed as dist

    # N ranks share the machine's cores: one rank per core's worth of threads avoids oversubscription.
    torch.set_num_threads(config["threads"])
    warm_up(torch)
    send(REPLY_FD, {"kind": "torch-ready"})
    reader = wire.MessageReader(TENSORS_FD, 1 << 26)
    body, _ = reader.read()  # from the grader: trusted
    if body.get("kind") != "go":
        os._exit(0)
    try:
        program = _load_program(Path(config["program"]))
    except BaseException as error:  # noqa: BLE001  (the course's program: no learner code has run in this rank)
        flush_output()
        send(REPLY_FD, _program_error(error, Path(config["program"])))
        _wait_for_stop(reader)
        return
    learner = Path(config["learner"])
    module, load_error = load_learner(learner)
    if load_error:
        flush_output()
        send(REPLY_FD, {"kind": "load-error", **load_error})
        _wait_for_stop(reader)
        return
    device = config["device"]
    if device.startswith("cuda"):
        torch.cuda.set_device(device)
    try:
        dist.init_process_group(config["backend"], store=_store(config), rank=config["rank"],
                                world_size=config["world_size"], timeout=timedelta(seconds=config["comm_timeout"]))
    except Exception as error:  # noqa: BLE001  (a peer never arrived: the grader names which)
        flush_output()
        send(REPLY_FD, _communication_error(error, "joining the process group"))
        _wait_for_stop(reader)
        return
    send(REPLY_FD, {"kind": "ready"})
    body, received = reader.read()  # the start, once every rank has joined: what moves from here is counted
    if body.get("kind") != "start":
        os._exit(0)
    tensors = [item.tensor.to(device) for item in received]
    started = time.perf_counter()
    sent: list[Any] = []
    # Run as __main__, this file is a different module from the grader.sandboxed.rank a rank program imports.
    from grader.sandboxed.rank import LearnerFailure as ProgramsFailure

    try:
        output, stats = program.run(module, tensors, config)
        output = call_learner(lambda: output.detach().cpu(), "output", started)
        sent.append(output)
        reply = {"kind": "returned", "value": {"type": "tensor", "ref": 0, "device": device}, "stats": stats,
                 "seconds": time.perf_counter() - started, "phase": "learner"}
    except (LearnerFailure, ProgramsFailure) as failure:
        reply = {**describe_exception(failure.error, learner, failure.seconds, device), "phase": "learner"}
    except Exception as error:  # noqa: BLE001  (gloo/NCCL errors: a peer failed or timed out; or the program's bug)
        in_program = _raised_by_program(error, Path(config["program"]))
        reply = _program_error(error, Path(config["program"])) if in_program else \
            _communication_error(error, "exchanging data")
    flush_output()
    send(REPLY_FD, reply, tensors=sent)
    # Stay in the group until the grader has every reply: leaving early could cut a peer's last receive.
    _wait_for_stop(reader)


def _await_listener(host: str, port: int, deadline: float) -> None:
    """Wait, in steps of milliseconds, until rank 0's store accepts connections: a client refused once waits a
    backoff of up to a second before its next try, where the store is listening a few milliseconds later."""
    import socket

    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=1.0).close()
            return
        except OSError:
            time.sleep(0.002)


def _store(config: dict[str, Any]) -> Any:
    """Where the ranks meet: rank 0's TCP store on the sandbox's own loopback, or a file (no namespaces)."""
    import torch.distributed as dist

    kind, _, where = config["store"].partition(":")
    timeout = timedelta(seconds=config["comm_timeout"])
    if kind == "tcp":
        host, _, port = where.rpartition(":")
        if config["rank"] != 0:
            _await_listener(host, int(port), time.monotonic() + config["comm_timeout"])
        return dist.TCPStore(host, int(port), config["world_size"], config["rank"] == 0, timeout=timeout)
    return dist.FileStore(where, config["world_size"])


def _load_program(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("rank_program", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _communication_error(error: BaseException, doing: str) -> dict[str, Any]:
    text = str(error).splitlines()[0] if str(error) else ""
    if "] " in text:  # gloo prefixes its messages with a source path that means nothing to a learner
        text = text.split("] ", 1)[1]
    return {"kind": "raised", "phase": "communication", "exception": type(error).__name__,
            "message": f"while {doing}: {fit(text, 500)}", "traceback": ""}


def _raised_by_program(error: BaseException, program: Path) -> bool:
    """Whether the rank program's own code raised `error` (a NameError, a wrong index), not a collective that
    failed because a peer did: raised in the program's file, with no frame of torch.distributed, not one of its
    errors, and not a message of gloo's or NCCL's."""
    import torch.distributed as dist

    frames = traceback.extract_tb(error.__traceback__)
    if not any(Path(frame.filename) == program for frame in frames):
        return False
    if any(f"{os.sep}torch{os.sep}distributed{os.sep}" in frame.filename for frame in frames):
        return False
    text = str(error)
    if isinstance(error, getattr(dist, "DistError", ())) or "gloo" in text.lower() or "nccl" in text.lower() or (
            text.startswith("[") and "] " in text):
        return False
    return True


def _program_error(error: BaseException, program: Path) -> dict[str, Any]:
    """The rank program's own failure, as the grader reports it: the course's, with the program's line."""
    if isinstance(error, SyntaxError) and error.filename and Path(error.filename) == program:
        line = error.lineno
    else:
        lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if Path(frame.filename) == program]
        line = lines[-1] if lines else None
    message = error.msg if isinstance(error, SyntaxError) else str(error)
    return {"kind": "raised", "phase": "program", "exception": fit(type(error).__name__, 200),
            "message": fit(message.splitlines()[0] if message else "", 500), "traceback": "",
            "line": line if isinstance(line, int) and line > 0 else 0, "file": program.name}


def _wait_for_stop(reader: wire.MessageReader) -> None:
    try:
        reader.read()
    except (wire.ChannelClosed, wire.BadMessage, OSError):
        pass


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
