"""The worker process: imports the learner's file and calls its functions; it never judges them.

Started in a sandbox as `python -m grader.sandboxed.worker CONFIG_JSON`, with tasks arriving on a Unix
socket (descriptor 3, which also carries each case's shared-memory inputs) and replies leaving
on a pipe (descriptor 4). Once the learner's file is imported, everything in this process,
this module included, is under the learner's control: nothing here decides pass or fail, and
the grader treats every byte that comes back as hostile (grader/channel/replies.py).
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from grader.channel import wire
from grader.channel.shared_inputs import build_args, open_shared
from grader.inert import fit

MODULE_NAME = "submission"
TASK_FD, REPLY_FD = 3, 4
SAMPLE_FD = 5  # where faulthandler writes the stack of a call that runs long: a hint of where it was when stopped


def main(config: dict[str, Any]) -> None:
    """Import torch, wait for the grader's go, import the learner's file, then answer tasks until told to stop."""
    tasks = wire.MessageReader(TASK_FD, limit=1 << 24, sock=socket.socket(fileno=TASK_FD))
    name_temporary_folder()
    import torch  # paid for before the learner's import is timed

    torch.set_num_threads(1)
    warm_up(torch)
    send(REPLY_FD, {"kind": "torch-ready"})
    body, _ = tasks.read()
    if body.get("kind") != "go":
        os._exit(0)
    learner = Path(config["learner"])
    module, load_error = load_learner(learner)
    flush_output()
    if load_error:
        send(REPLY_FD, {"kind": "load-error", **load_error})
        os._exit(0)
    send(REPLY_FD, {"kind": "ready"})
    from functools import partial

    from grader.sandboxed.observe import Calls, observe

    calls = Calls()
    calls.install(module, str(learner))
    watched = partial(observe, calls=calls)
    while True:
        body, _ = tasks.read()
        if body.get("kind") != "case":
            # Straight out: tearing down an interpreter with torch loaded takes half a second, for nothing.
            flush_output()
            os._exit(0)
        tensors: list[Any] = []
        reply = run_task(module, learner, body, tasks.fds.pop(0), watched, tensors)
        flush_output()
        send(REPLY_FD, reply, body["id"], body.get("reply_limit", 1 << 30), tensors)


def name_temporary_folder() -> None:
    """Tell tempfile its folder: the sandbox's TMPDIR. Where no memory cgroup counts files, no file may grow
    (RLIMIT_FSIZE 0), and tempfile's own search, which writes a probe file, then finds no folder at all: a CUDA
    build of torch asks for one while it is imported (ctypes.util.find_library), and its import failed."""
    import tempfile

    folder = os.environ.get("TMPDIR", "")
    if tempfile.tempdir is None and os.path.isdir(folder) and os.access(folder, os.W_OK):
        tempfile.tempdir = folder


def warm_up(torch) -> None:
    """Run the common kernels once, so that the code pages they load count in torch's memory, not the learner's."""
    for dtype in (torch.float64, torch.float32, torch.bfloat16, torch.float16):
        a = torch.ones(64, 64, dtype=dtype)
        b = torch.exp(a @ a.transpose(-2, -1) - a.amax(dim=-1, keepdim=True))
        (b / b.sum(dim=-1, keepdim=True)).maximum(a).to(torch.float64).numpy()
        torch.softmax(a, dim=-1)
        torch.einsum("ij,kj->ik", a, a)


def send(fd: int, reply: dict[str, Any], task_id: int | None = None, limit: int = 1 << 30,
         tensors: list[Any] | tuple = ()) -> None:
    """Send a reply; one that cannot be sent as data becomes an error naming why."""
    if task_id is not None:
        reply["id"] = task_id
    try:
        data = wire.encode(reply, tensors)
        if len(data) > limit:
            raise ValueError(f"it is {len(data)} bytes, more than the {limit} this case allows")
    except Exception as error:  # noqa: BLE001  (a learner's tensor of an odd dtype, layout or device)
        data = wire.encode({"kind": "raised", "exception": type(error).__name__, "traceback": "", "id": task_id,
                            "message": f"the returned value could not be sent: {fit(_message(error), 500)}",
                            "seconds": float(reply.get("seconds", 0.0))})
    wire.write_bytes(fd, data)


def load_learner(path: Path) -> tuple[Any, dict | None]:
    """Import the learner's file as a module; on failure, say where and why in the learner's terms."""
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"{path.name} is not a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[MODULE_NAME] = module
        spec.loader.exec_module(module)
        return module, None
    except SyntaxError as error:
        return None, {"exception": type(error).__name__, "message": fit(_message(error.msg), 4000),
                      "line": error.lineno if isinstance(error.lineno, int) and error.lineno > 0 else None,
                      "text": fit((error.text or "").strip(), 1000), "traceback": ""}
    except BaseException as error:  # noqa: BLE001  (SystemExit and KeyboardInterrupt at import too)
        frames = learner_frames(error, path)
        line = frames[-1].lineno if frames else None
        text = (frames[-1].line or "").strip() if frames else ""
        return None, {"exception": _name(error), "message": _message(error), "line": line,
                      "text": fit(text, 1000), "traceback": format_frames(frames, error)}


def run_task(module: Any, learner: Path, task: dict[str, Any], fd: int, observe, tensors: list[Any]) -> dict[str, Any]:
    """Call one learner function on the task's inputs and describe what came back (its tensors into `tensors`)."""
    import torch

    try:
        inputs = open_shared(fd, task["size"], task["tensors"])
    except OSError as error:
        if error.errno != errno.ENOMEM:
            raise
        # The address space this process may have is used up (its limit where there is no cgroup): by the
        # learner's code, which has run in this process since its import.
        return {"kind": "out-of-memory", "exception": "MemoryError", "seconds": 0.0, "traceback": "",
                "message": "no room left in your process's memory to map this case's inputs"}
    device = task["device"]
    given = [tensor.to(device) for tensor in inputs] if device != "cpu" else inputs
    versions = [tensor._version for tensor in given]
    try:
        function = getattr(module, task["function"], None)
    except BaseException:  # noqa: BLE001  (a module-level __getattr__ that raises)
        function = None
    if not callable(function):
        return {"kind": "raised", "exception": "AttributeError", "seconds": 0.0, "traceback": "",
                "message": f"your file has no function named {task['function']}"}
    args = build_args(task["args"], given)
    from grader.sandboxed.observe import sampled

    observations: dict[str, Any] = {}
    started = time.perf_counter()
    try:
        with sampled(task, _sample_fd()), observe(task) as observations:
            result = function(*args)
            if device == "cuda":
                torch.cuda.synchronize()
    except BaseException as error:  # noqa: BLE001  (every way out of learner code is reported)
        reply = describe_exception(error, learner, time.perf_counter() - started, device)
        if observations.get("calls"):  # which of its own functions it reached before it raised
            reply["observations"] = {"calls": observations["calls"]}
        return reply
    seconds = time.perf_counter() - started
    if device != "cpu":  # what the learner did to the device copies goes back where the grader can see it
        for host, copy in zip(inputs, given):
            host.copy_(copy.cpu())
    observations["version_changed"] = [index for index, tensor in enumerate(given) if tensor._version != versions[index]]
    return {"kind": "returned", "value": describe(result, tensors, task.get("reply_limit", 1 << 30)),
            "seconds": seconds, "observations": observations}


def describe(value: Any, sent: list[Any], limit: int, depth: int = 0) -> dict[str, Any]:
    """What the learner returned, as plain data: tensors travel, anything else is named, nothing is called."""
    import torch

    try:
        if isinstance(value, torch.Tensor):
            tensor = value.as_subclass(torch.Tensor) if type(value) is not torch.Tensor else value
            size = tensor.numel() * tensor.element_size()
            if tensor.is_meta or size > limit or wire.dtype_name(tensor.dtype) not in wire.DTYPE_NAMES:
                # Too big to send, or nothing to send: its shape and dtype still say what is wrong.
                return {"type": "omitted", "shape": list(tensor.shape), "dtype": _dtype(tensor),
                        "device": str(tensor.device)}
            sent.append(tensor.detach())
            return {"type": "tensor", "ref": len(sent) - 1, "device": str(tensor.device)}
        if isinstance(value, (tuple, list)) and depth < 4 and len(value) <= 16:
            # A named tuple is a tuple: what counts is what it holds.
            return {"type": "sequence", "kind": "tuple" if isinstance(value, tuple) else "list",
                    "items": [describe(item, sent, limit, depth + 1) for item in list(value)]}
        return {"type": "other", "name": _type_name(value)}
    except Exception:  # noqa: BLE001  (a learner's object that misbehaves when looked at)
        return {"type": "other", "name": "an object that could not be inspected"}


def _dtype(tensor: Any) -> str:
    name = wire.dtype_name(tensor.dtype)
    return name if name in wire.DTYPE_NAMES else "float64"


def _type_name(value: Any) -> str:
    kind = type(value)
    name = f"{kind.__module__}.{kind.__qualname__}".removeprefix("builtins.")
    if name == "NoneType":
        return "None"
    if name == "numpy.ndarray":
        name += f" of shape {tuple(value.shape)}"
    elif name in ("tuple", "list"):
        name = f"a {name} of {len(value)}"
    return fit(name, 200)


def describe_exception(error: BaseException, learner: Path, seconds: float, device: str) -> dict[str, Any]:
    """An exception from learner code, classified, with only the learner's own frames."""
    from grader.sandboxed.observe import StoppedCall

    kind = "raised"
    name = _name(error)
    message = _message(error)
    if isinstance(error, StoppedCall):  # it called a function the grader stopped for this run
        return {"kind": "stopped", "message": fit(str(error.function), 200), "seconds": seconds, "traceback": ""}
    if isinstance(error, NotImplementedError):
        kind = "not-attempted"
    elif name == "OutOfMemoryError" or isinstance(error, MemoryError) or (
            isinstance(error, RuntimeError) and "can't allocate memory" in message):
        kind = "out-of-memory"
    elif isinstance(error, SystemExit):
        message = f"your code called sys.exit({fit(_message(error), 100)}) (or raised SystemExit)"
    restart = device == "cuda" and ("CUDA error" in message or name == "AcceleratorError")
    return {"kind": kind, "exception": name, "message": message, "seconds": seconds, "restart": restart,
            "traceback": format_frames(learner_frames(error, learner), error)}


def learner_frames(error: BaseException, learner: Path) -> list[traceback.FrameSummary]:
    """The traceback's frames that are in the learner's file; the grader's own never show."""
    target = str(learner.resolve())
    try:
        frames = traceback.extract_tb(error.__traceback__)
    except Exception:  # noqa: BLE001
        return []
    return [frame for frame in frames if _resolve(frame.filename) == target]


def format_frames(frames: list[traceback.FrameSummary], error: BaseException, keep: int = 8) -> str:
    """A short traceback: the learner's frames (the last `keep` of them) and the exception line."""
    lines = []
    if len(frames) > keep:
        lines.append(f"  ... {len(frames) - keep} earlier frames in your file not shown")
        frames = frames[-keep:]
    for frame in frames:
        lines.append(f'  File "{Path(frame.filename).name}", line {frame.lineno}, in {frame.name}')
        if frame.line:
            lines.append(f"    {fit(frame.line.strip(), 300)}")
    lines.append(f"{_name(error)}: {_message(error)}")
    return fit("\n".join(lines), 16000)


def _resolve(filename: str) -> str:
    try:
        return str(Path(filename).resolve())
    except (OSError, RuntimeError, ValueError):
        return filename


def _name(error: BaseException) -> str:
    try:
        return fit(str(type(error).__name__), 200)
    except Exception:  # noqa: BLE001
        return "Exception"


def _message(error: Any) -> str:
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001  (a learner's exception whose __str__ fails)
        text = "<message could not be shown>"
    return fit(text, 2000)


def _sample_fd() -> int | None:
    """The descriptor stack samples go to, where the grader handed one (never blocking: a full pipe drops them)."""
    try:
        os.set_blocking(SAMPLE_FD, False)
        return SAMPLE_FD
    except OSError:
        return None


def flush_output() -> None:
    """Flush what the learner printed into the pipes before the reply is sent: the grader cuts there."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001  (the learner may have replaced or closed it)
            pass


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
